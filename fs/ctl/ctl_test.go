package ctl

// Tests of .ctl: every file read and every action written, checked against
// the service through the API client (never through the mount); and the
// test env, a mount with .ctl (package fstest's, the control tree added).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

// testEnv is an emulator with a mount of one of its organizations, .ctl
// included.
type testEnv struct {
	*fstest.Env
}

// envOptions shape a testEnv.
type envOptions = fstest.Options

// ctlEnv is a mount of the demo organization with fast state machines.
func ctlEnv(t *testing.T, o envOptions) *testEnv {
	t.Helper()
	o.Seed = emulator.SeedDemo
	if o.Emu.StepDelay == 0 {
		o.Emu.StepDelay = 150 * time.Millisecond
	}
	return &testEnv{fstest.Start(t, o, func(env *fstest.Env, dir string) (*fuse.Server, error) {
		mount := fs.New(fs.Deps{Store: env.Store, Log: env.Log},
			fs.Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Umask: 0o022, ReadOnly: env.Opts.ReadOnly})
		tree := New(Deps{Mount: mount, Store: env.Store, Admin: env.Client, Log: env.Log}, Options{DirCacheTime: env.Opts.DirTTL})
		return fs.Mount(dir, mount, fs.MountOptions{Ctl: tree.Root()})
	})}
}

func (e *testEnv) ctl(parts ...string) string { return e.Path(append([]string{".ctl"}, parts...)...) }

// read returns a control file's content.
func (e *testEnv) read(parts ...string) string {
	e.T.Helper()
	b, err := os.ReadFile(e.ctl(parts...))
	if err != nil {
		e.T.Fatalf("reading .ctl/%s: %v", strings.Join(parts, "/"), err)
	}
	return string(b)
}

// readJSON decodes a control file.
func (e *testEnv) readJSON(v any, parts ...string) {
	e.T.Helper()
	s := e.read(parts...)
	if !strings.HasSuffix(s, "\n") {
		e.T.Errorf(".ctl/%s does not end in a newline", strings.Join(parts, "/"))
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		e.T.Fatalf(".ctl/%s is not JSON: %v\n%s", strings.Join(parts, "/"), err, s)
	}
}

// write writes s to a control file as echo does (one write, O_TRUNC) and
// returns the error of the write or the close.
func (e *testEnv) write(s string, parts ...string) error {
	f, err := os.OpenFile(e.ctl(parts...), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(s)
	cerr := f.Close()
	return errors.Join(werr, cerr)
}

// mustWrite writes and fails the test on error, with the folder's result.
func (e *testEnv) mustWrite(s string, parts ...string) {
	e.T.Helper()
	if err := e.write(s, parts...); err != nil {
		dir := parts[:len(parts)-1]
		e.T.Fatalf("writing %q to .ctl/%s: %v; result: %s", s, strings.Join(parts, "/"), err, e.read(append(dir, "result")...))
	}
}

// result reads a folder's result.
func (e *testEnv) result(dir ...string) Result {
	e.T.Helper()
	var r Result
	e.readJSON(&r, append(dir, "result")...)
	return r
}

// refused checks that writing s fails with want, says why in the folder's
// result and, for bad input, sends no request that could act.
func (e *testEnv) refused(want syscall.Errno, s string, parts ...string) Result {
	e.T.Helper()
	before := e.actingRequests()
	err := e.write(s, parts...)
	if !errors.Is(err, want) {
		e.T.Fatalf("writing %q to .ctl/%s: %v, want %v", s, strings.Join(parts, "/"), err, want)
	}
	r := e.result(parts[:len(parts)-1]...)
	if r.OK || r.Errno != errnoName(want) || r.Message == "" {
		e.T.Errorf("result after %q: %+v, want errno %s and a reason", s, r, errnoName(want))
	}
	if want == syscall.EINVAL {
		if n := e.actingRequests() - before; n != 0 {
			e.T.Errorf("refusing %q sent %d requests", s, n)
		}
	}
	return r
}

// actingRequests counts the requests answered that are not reads.
func (e *testEnv) actingRequests() int64 {
	var n int64
	for route, c := range e.Emu.Stats().Requests {
		if !strings.HasPrefix(route, "GET ") && route != "POST /machines/{id}/list-content" {
			n += c
		}
	}
	return n
}

// seat returns computer id as the service has it now.
func (e *testEnv) seat(id int64) api.Seat {
	e.T.Helper()
	seats, err := api.Collect(e.Client.Seats(e.T.Context(), ""))
	if err != nil {
		e.T.Fatal(err)
	}
	for _, s := range seats {
		if s.ID == id {
			return s
		}
	}
	e.T.Fatalf("no computer %d on the service", id)
	return api.Seat{}
}

// waitStatus waits until .ctl/machines/<id>/status reads want.
func (e *testEnv) waitStatus(id int64, want string) {
	e.T.Helper()
	testkit.WaitFor(e.T, 30*time.Second, fmt.Sprintf("computer %d %s", id, want), func() bool {
		return e.read("machines", fmt.Sprint(id), "status") == want+"\n"
	})
}

// serviceState is what reading must never change: the action log, every
// computer, image and balance.
func (e *testEnv) serviceState() string {
	e.T.Helper()
	ctx := e.T.Context()
	now := e.Emu.Now()
	logs, err := e.Client.UserActionLogs(ctx, api.LogsRequest{Start: now.Add(-31 * 24 * time.Hour), End: now.Add(time.Hour)})
	if err != nil {
		e.T.Fatal(err)
	}
	seats, err := api.Collect(e.Client.Seats(ctx, ""))
	if err != nil {
		e.T.Fatal(err)
	}
	images, err := api.Collect(e.Client.Images(ctx, ""))
	if err != nil {
		e.T.Fatal(err)
	}
	usage, err := e.Client.Usage(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	b, _ := json.Marshal([]any{logs.Logs, seats, images, usage})
	return string(b)
}

func TestCtlReadingChangesNothing(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	fx := e.Emu.Fixtures(e.Org)
	before := e.serviceState()
	p0 := e.actingRequests()
	for round := range 2 {
		cmd := exec.Command("find", ".ctl", "-type", "f", "-exec", "cat", "{}", "+")
		cmd.Dir = e.Dir
		data, _ := cmd.Output() // live/ of stopped computers is EBUSY: find reports it and goes on
		if len(data) < 10000 {
			t.Fatalf("round %d: find | cat read %d bytes", round, len(data))
		}
		for _, want := range []string{`"usage_minutes"`, `"base_images"`, `"action_type"`, `"friendly_status"`} {
			if !strings.Contains(string(data), want) {
				t.Errorf("round %d: the files read hold no %s", round, want)
			}
		}
	}
	if got := e.serviceState(); got != before {
		t.Errorf("reading every control file changed the service:\nbefore %s\nafter  %s", before, got)
	}
	if n := e.actingRequests() - p0; n != 0 {
		t.Errorf("reading sent %d requests that are not reads", n)
	}
	// The running computer's live/ was walked.
	if e.Requests("POST /machines/{id}/list-content") == 0 {
		t.Errorf("find did not walk live/ of the running computer %d", fx.RunningMachine)
	}
}

func TestCtlFilesShowTheService(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	ctx := t.Context()
	fx := e.Emu.Fixtures(e.Org)

	var usage api.AccountUsage
	e.readJSON(&usage, "usage")
	want, err := e.Client.Usage(ctx)
	if err != nil || usage != *want {
		t.Errorf("usage: %+v, service %+v (%v)", usage, want, err)
	}
	st, err := os.Stat(e.ctl("usage"))
	if err != nil || st.Size() != int64(len(e.read("usage"))) || st.Mode().Perm() != 0o444 {
		t.Errorf("stat usage: %v, mode %v; want the content's size and 0444", st, err)
	}
	var sw api.SoftwareCatalog
	e.readJSON(&sw, "software")
	wsw, _ := e.Client.Software(ctx)
	if len(sw.Software) != len(wsw.Software) || len(sw.BaseImages) != len(wsw.BaseImages) || len(sw.Software) == 0 {
		t.Errorf("software: %d software, %d base images; service %d, %d", len(sw.Software), len(sw.BaseImages), len(wsw.Software), len(wsw.BaseImages))
	}

	seats, _ := api.Collect(e.Client.Seats(ctx, ""))
	var shown []api.Seat
	e.readJSON(&shown, "seats")
	names := fstest.ListNames(t, e.ctl("machines"))
	var ids []string
	for i, s := range seats {
		ids = append(ids, fmt.Sprint(s.ID))
		if shown[i].ID != s.ID || shown[i].Name != s.Name {
			t.Errorf("seats[%d] = %d %q, service %d %q", i, shown[i].ID, shown[i].Name, s.ID, s.Name)
		}
	}
	slices.Sort(ids)
	if !reflect.DeepEqual(names, ids) {
		t.Errorf("machines/ lists %v, service %v", names, ids)
	}
	run := fmt.Sprint(fx.RunningMachine)
	var info api.Seat
	e.readJSON(&info, "machines", run, "info")
	if info.ID != fx.RunningMachine || info.FriendlyStatus != api.SeatReady {
		t.Errorf("info of %s: %+v", run, info)
	}
	if s := e.read("machines", run, "status"); s != "running\n" {
		t.Errorf("status of the running computer: %q", s)
	}
	if s := e.read("machines", fmt.Sprint(fx.StoppedMachine), "status"); s != "off\n" {
		t.Errorf("status of the stopped computer: %q", s)
	}
	var mu api.MachineUsage
	e.readJSON(&mu, "machines", run, "usage")
	wmu, _ := e.Client.MachineUsage(ctx, fx.RunningMachine)
	if mu != *wmu {
		t.Errorf("machine usage %+v, service %+v", mu, wmu)
	}
	var types []api.MachineType
	e.readJSON(&types, "machines", run, "machine-types")
	wtypes, _ := e.Client.MachineTypes(ctx, fx.RunningMachine)
	if len(types) == 0 || len(types) != len(wtypes) || types[0].ID != wtypes[0].ID {
		t.Errorf("machine-types %+v, service %+v", types, wtypes)
	}
	link, err := os.Readlink(e.ctl("machines", run, "files"))
	if err != nil || !strings.HasPrefix(link, "../../../computers/") {
		t.Errorf("files link: %q %v", link, err)
	} else if _, err := os.Stat(e.ctl("machines", run, "files")); err != nil {
		t.Errorf("files link does not lead to the computer's storage: %v", err)
	}

	im := fmt.Sprint(fx.BuildingImage)
	var image api.Image
	e.readJSON(&image, "images", im, "info")
	wim, _ := e.Client.GetImage(ctx, fx.BuildingImage)
	if image.ID != wim.ID || image.Status != wim.Status || image.Name != wim.Name {
		t.Errorf("image %s: %+v, service %+v", im, image, wim)
	}
	for _, f := range []string{"README", "stats"} {
		if len(e.read(f)) < 100 {
			t.Errorf(".ctl/%s is nearly empty", f)
		}
	}
	checkLogs(e)
}

// checkLogs compares today's log files with the service's records.
func checkLogs(e *testEnv) {
	t := e.T
	days := fstest.ListNames(t, e.ctl("logs"))
	if len(days) != logDays+3 {
		t.Errorf("logs/ has %d entries, want %d days and 3 filter folders: %v", len(days), logDays, days)
	}
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	var total int
	for i := range 3 {
		d := day.AddDate(0, 0, -i)
		want, err := e.Client.UserActionLogs(t.Context(), api.LogsRequest{Start: d, End: d.Add(24*time.Hour - time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(e.read("logs", d.Format(dayFormat)+".jsonl"), "\n"), "\n")
		if lines[0] == "" {
			lines = nil
		}
		if len(lines) != len(want.Logs) {
			t.Errorf("logs of %s: %d lines, service %d records", d.Format(dayFormat), len(lines), len(want.Logs))
		}
		for _, l := range lines {
			var r api.LogRecord
			if err := json.Unmarshal([]byte(l), &r); err != nil || r.ID == 0 {
				t.Errorf("log line %q: %v", l, err)
			}
		}
		total += len(lines)
	}
	if total == 0 {
		t.Errorf("no log record in the last three days")
	}
	fx := e.Emu.Fixtures(e.Org)
	for d := range 3 {
		name := day.AddDate(0, 0, -d).Format(dayFormat) + ".jsonl"
		for _, l := range strings.Split(strings.TrimSpace(e.read("logs", "by-machine", fmt.Sprint(fx.RunningMachine), name)), "\n") {
			if l == "" {
				continue
			}
			var r api.LogRecord
			if json.Unmarshal([]byte(l), &r) != nil || r.MachineID == nil || *r.MachineID != fx.RunningMachine {
				t.Errorf("by-machine/%d holds %s", fx.RunningMachine, l)
			}
		}
	}
}
