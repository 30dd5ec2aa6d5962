package ctl

// Tests of the actions of .ctl: computers, images, balances, links, and
// every refusal, each checked against the service through the API client.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

func TestCtlComputerLife(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	fx := e.Emu.Fixtures(e.Org)
	id := fmt.Sprint(fx.StoppedMachine)
	m := func(f string) []string { return []string{"machines", id, f} }

	// Bad words and numbers are refused before any request.
	e.refused(syscall.EINVAL, "launch\n", m("power")...)
	e.refused(syscall.EINVAL, "yes\n", m("reset")...)
	for _, bad := range []string{"abc\n", "0\n", "-5\n", "1.5\n", "\n x"} {
		e.refused(syscall.EINVAL, bad, m("assign")...)
	}
	e.refused(syscall.EINVAL, "ten\n", m("access")...)
	if n := e.Requests("POST /usage/assign") + e.Requests("POST /machines/{id}/start"); n != 0 {
		t.Fatalf("refused writes sent %d requests", n)
	}

	// live/ of a computer that is off: EBUSY, with the reason in result.
	if _, err := os.ReadDir(e.ctl("machines", id, "live")); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("ls live/ of a stopped computer: %v, want EBUSY", err)
	}
	if r := e.result("machines", id); r.Errno != "EBUSY" || !strings.Contains(r.Message, "off") {
		t.Errorf("result after ls live/: %+v", r)
	}

	// Start, and wait for it to run.
	e.mustWrite("start\n", m("power")...)
	if r := e.result("machines", id); !r.OK || r.Code != 200 || !strings.Contains(r.Action, "start") {
		t.Errorf("result after start: %+v", r)
	}
	e.waitStatus(fx.StoppedMachine, "running")
	if s := e.seat(fx.StoppedMachine); !s.Running() {
		t.Fatalf("the service has computer %s %s", id, s.FriendlyStatus)
	}
	// Starting a running computer, resetting it, or making an image of it: EBUSY.
	e.refused(syscall.EBUSY, "start\n", m("power")...)
	e.refused(syscall.EBUSY, "reset\n", m("reset")...)
	e.refused(syscall.EBUSY, fmt.Sprintf(`{"machine_id": %s}`, id), "images", "new")
	if r := e.result("images"); r.Code != api.CodeComputerNotStopped {
		t.Errorf("image of a running computer: %+v, want code 4209", r)
	}

	// live/ browses the running computer as list-content shows it.
	want, err := e.Client.ListContent(t.Context(), fx.StoppedMachine, `C:\Users`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range want {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if got := fstest.ListNames(t, e.ctl("machines", id, "live", "C:", "Users")); !slices.Equal(got, names) {
		t.Errorf("live/C:/Users lists %v, service %v", got, names)
	}
	if st, err := os.Stat(e.ctl("machines", id, "live", "C:", "Windows")); err != nil || !st.IsDir() {
		t.Errorf("live/C:/Windows: %v %v", st, err)
	}

	// Balances move.
	before, team := e.seat(fx.StoppedMachine).RemainingUsage, e.teamMinutes()
	e.mustWrite("10\n", m("assign")...)
	e.mustWrite("4", m("retrieve")...) // printf: no newline
	if got := e.seat(fx.StoppedMachine).RemainingUsage; got != before+6 {
		t.Errorf("after assign 10, retrieve 4: the computer has %d minutes, want %d", got, before+6)
	}
	if got := e.teamMinutes(); got != team-6 {
		t.Errorf("after assign 10, retrieve 4: the team has %d minutes, want %d", got, team-6)
	}
	var info api.Seat
	e.readJSON(&info, m("info")...)
	if info.RemainingUsage != before+6 {
		t.Errorf("info after the moves: %d minutes, want %d (re-read after a write)", info.RemainingUsage, before+6)
	}
	e.refused(syscall.EDQUOT, "99999999\n", m("assign")...)

	// An access link: 0600, the link readable, never in the result.
	e.mustWrite("30\n", m("access")...)
	st, err := os.Stat(e.ctl(m("access")...))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("access: %v %v, want mode 0600", st, err)
	}
	link := strings.TrimSpace(e.read(m("access")...))
	if !strings.HasPrefix(link, "https://") {
		t.Errorf("access reads %q, want the link", link)
	}
	if res := e.read(m("result")...); strings.Contains(res, link) || !strings.Contains(res, "expires_at") {
		t.Errorf("the result shows the link, or not its expiry: %s", res)
	}

	// The performance type, by id, checked on the service.
	e.mustWrite("2\n", m("machine-type")...)
	if s := e.seat(fx.StoppedMachine); s.Machine == nil || s.Machine.MachineType != "Ocean" {
		t.Errorf("machine type after writing 2: %+v", s.Machine)
	}
	e.refused(syscall.EINVAL, "99\n", m("machine-type")...)

	// Stop, then reset needs its word.
	e.mustWrite("stop graceful\n", m("power")...)
	e.waitStatus(fx.StoppedMachine, "off")
	e.mustWrite("reset\n", m("reset")...)
	if n := e.countLogs("machine_reset", fx.StoppedMachine); n != 1 {
		t.Errorf("%d machine_reset records for computer %s, want 1", n, id)
	}
}

func (e *testEnv) teamMinutes() int64 {
	e.T.Helper()
	u, err := e.Client.Usage(e.T.Context())
	if err != nil {
		e.T.Fatal(err)
	}
	return u.UsageMinutes
}

// countLogs counts today's records of an action on a computer, on the service.
func (e *testEnv) countLogs(action string, machine int64) int {
	e.T.Helper()
	now := e.Emu.Now()
	ls, err := e.Client.UserActionLogs(e.T.Context(), api.LogsRequest{Start: now.Add(-time.Hour), End: now.Add(time.Minute), ActionType: action, MachineID: machine})
	if err != nil {
		e.T.Fatal(err)
	}
	return len(ls.Logs)
}

func TestCtlImageLife(t *testing.T) {
	e := ctlEnv(t, envOptions{Emu: emulatorSteps(1500 * time.Millisecond)})
	fx := e.Emu.Fixtures(e.Org)

	// A name over 30 characters, wrong types, bad JSON: EINVAL, no request.
	e.refused(syscall.EINVAL, `{"name": "0123456789012345678901234567890"}`+"\n", "images", "install")
	e.refused(syscall.EINVAL, `{"machine_id": "12"}`+"\n", "images", "new")
	e.refused(syscall.EINVAL, `{"machine_id": 12, "colour": "red"}`+"\n", "images", "new")
	e.refused(syscall.EINVAL, `{"machine_id": 12,,}`+"\n", "images", "new")
	if n := e.Requests("POST /images") + e.Requests("POST /images/install"); n != 0 {
		t.Fatalf("refused writes sent %d requests", n)
	}

	// install → pending → building (delete refused) → available.
	sw, _ := e.Client.Software(t.Context())
	body := fmt.Sprintf(`{"name": "orgfs ctl test", "software_ids": [%d], "base_image_id": %d}`, sw.Software[0].ID, sw.BaseImages[0].ID)
	e.mustWrite(body, "images", "install")
	r := e.result("images")
	rec, _ := r.Record.(map[string]any)
	idf, _ := rec["id"].(float64)
	img := int64(idf)
	if !r.OK || img == 0 || rec["status"] != api.ImagePending {
		t.Fatalf("install result: %+v", r)
	}
	id := fmt.Sprint(img)
	status := func() string {
		var im api.Image
		e.readJSON(&im, "images", id, "info")
		return im.Status
	}
	testkit.WaitFor(t, 20*time.Second, "the image to build", func() bool { return status() == api.ImageBuilding })
	e.refused(syscall.EBUSY, "delete\n", "images", id, "delete")
	if r := e.result("images", id); r.Code != api.CodeImageBuilding {
		t.Errorf("delete while building: %+v, want code 4213", r)
	}
	testkit.WaitFor(t, 20*time.Second, "the image to be available", func() bool { return status() == api.ImageAvailable })

	// assign (to a stopped computer), then delete with its word.
	e.refused(syscall.EINVAL, "twelve\n", "images", id, "assign")
	e.mustWrite(fmt.Sprintf("%d\n", fx.StoppedMachine), "images", id, "assign")
	if s := e.seat(fx.StoppedMachine); s.AssignedImageID == nil || *s.AssignedImageID != img {
		t.Errorf("computer %d has image %v, want %d", fx.StoppedMachine, s.AssignedImageID, img)
	}
	e.refused(syscall.EFBIG, fmt.Sprint(fx.StoppedMachine), "images", fmt.Sprint(fx.LargeImage), "assign")
	e.refused(syscall.EBUSY, fmt.Sprint(fx.StoppedMachine), "images", fmt.Sprint(fx.PendingImage), "assign")
	e.refused(syscall.EINVAL, "remove\n", "images", id, "delete")
	e.mustWrite("delete\n", "images", id, "delete")
	if r := e.result("images"); !r.OK || !strings.Contains(r.Action, "image delete "+id) {
		t.Errorf("images/result after the delete: %+v", r)
	}
	if _, err := e.Client.GetImage(t.Context(), img); !api.IsNotFound(err) {
		t.Errorf("the image is still on the service: %v", err)
	}
	if _, err := os.Stat(e.ctl("images", id)); !os.IsNotExist(err) {
		t.Errorf("images/%s still shows: %v; images/ lists %v", id, err, fstest.ListNames(t, e.ctl("images")))
	}

	// An image from a stopped computer.
	e.mustWrite(fmt.Sprintf(`{"machine_id": %d, "name": "from a computer"}`, fx.StoppedMachine), "images", "new")
	if r := e.result("images"); !r.OK {
		t.Errorf("images/new: %+v", r)
	}
}

// emulatorSteps is emulator options with a state-machine step.
func emulatorSteps(d time.Duration) (o emulator.Options) {
	o.StepDelay = d
	return o
}

func TestCtlOtherOrganizationsIDs(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	other := e.Emu.Fixtures("org-b")
	for _, p := range [][]string{
		{"machines", fmt.Sprint(other.RunningMachine)},
		{"images", fmt.Sprint(other.AvailableImage)},
		{"machines", "999999999"},
	} {
		if _, err := os.Stat(e.ctl(p...)); !os.IsNotExist(err) {
			t.Errorf(".ctl/%s: %v, want ENOENT", strings.Join(p, "/"), err)
		}
	}
}

func TestCtlWritesSplitAndClose(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	fx := e.Emu.Fixtures(e.Org)
	// A JSON body in two writes is one action, run when it is complete.
	f, err := os.OpenFile(e.ctl("images", "new"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"machine_id": `); err != nil {
		t.Fatal(err)
	}
	if n := e.Requests("POST /images"); n != 0 {
		t.Fatalf("half a body acted (%d requests)", n)
	}
	if _, err := fmt.Fprintf(f, `%d, "name": "split"}`, fx.StoppedMachine); err != nil {
		t.Fatalf("second write: %v (%s)", err, e.read("images", "result"))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n := e.Requests("POST /images"); n != 1 {
		t.Errorf("one body made %d requests", n)
	}
	// A body cut short is refused at close, and said in result.
	f, _ = os.OpenFile(e.ctl("images", "new"), os.O_WRONLY|os.O_TRUNC, 0)
	f.WriteString(`{"machine_id": 1`)
	if err := f.Close(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("close after half a body: %v, want EINVAL", err)
	}
	if r := e.result("images"); r.OK || r.Errno != "EINVAL" {
		t.Errorf("result after half a body: %+v", r)
	}
	// Write-only files read empty; read-only ones refuse writing.
	if s := e.read("machines", fmt.Sprint(fx.StoppedMachine), "power"); s != "" {
		t.Errorf("power reads %q", s)
	}
	if err := e.write("x", "usage"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("writing usage: %v, want EACCES", err)
	}
}
