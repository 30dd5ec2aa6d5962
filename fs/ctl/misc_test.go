package ctl

// Tests of .ctl beyond computers and images: task bundles and download jobs,
// the upload queue, stats, refresh, permissions, read-only mounts, entries
// that cannot be removed, and an organization without permission or feature.

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

func TestCtlTaskBundleAndDownloads(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	fx := e.Emu.Fixtures(e.Org)
	m := fmt.Sprint(fx.RunningMachine)

	if names := fstest.ListNames(t, e.ctl("machines", m, "tasks")); len(names) != 0 {
		t.Errorf("tasks/ lists %v; tasks are not listed", names)
	}
	if _, err := os.ReadFile(e.ctl("machines", m, "tasks", "999999.zip")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("an unknown task: %v, want ENOENT", err)
	}
	zipped, err := os.ReadFile(e.ctl("machines", m, "tasks", fmt.Sprintf("%d.zip", fx.Task)))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatalf("the task's ZIP (%d bytes) does not open: %v", len(zipped), err)
	}
	folders := map[string]bool{}
	for _, f := range zr.File {
		folders[strings.Split(f.Name, "/")[0]] = true
	}
	if len(folders) < 2 {
		t.Errorf("the task's ZIP holds %v, want its output and recording folders", folders)
	}

	// The job shows under downloads/, as the service has it; abort of a job
	// already done is EALREADY.
	jobs := fstest.ListNames(t, e.ctl("downloads"))
	if len(jobs) != 2 || jobs[1] != "result" {
		t.Fatalf("downloads/ lists %v, want the job and result", jobs)
	}
	var job api.DownloadJob
	e.readJSON(&job, "downloads", jobs[0])
	want, err := e.Client.DownloadStatus(t.Context(), job.ID, false)
	if err != nil || job.Status != want.Status || job.Status != api.DownloadUploaded {
		t.Errorf("downloads/%s: %+v, service %+v (%v)", jobs[0], job, want, err)
	}
	if st, _ := os.Stat(e.ctl("downloads", jobs[0])); st.Mode().Perm() != 0o600 {
		t.Errorf("downloads/%s has mode %v, want 0600 (it holds a link)", jobs[0], st.Mode().Perm())
	}
	e.refused(syscall.EINVAL, "stop\n", "downloads", jobs[0])
	e.refused(syscall.EALREADY, "abort\n", "downloads", jobs[0])
}

func TestCtlTaskReadAbortedAbortsTheJob(t *testing.T) {
	e := ctlEnv(t, envOptions{Emu: emulatorSteps(2 * time.Second)})
	fx := e.Emu.Fixtures(e.Org)
	f, err := os.Open(e.ctl("machines", fmt.Sprint(fx.RunningMachine), "tasks", fmt.Sprintf("%d.zip", fx.Task)))
	if err != nil {
		t.Fatal(err)
	}
	// Close before the job is done: it is cancelled on the service.
	var jobs []string
	testkit.WaitFor(t, 10*time.Second, "the job to start", func() bool {
		jobs = fstest.ListNames(t, e.ctl("downloads"))
		return len(jobs) == 2
	})
	f.Close()
	testkit.WaitFor(t, 10*time.Second, "the job to be cancelled", func() bool {
		var job api.DownloadJob
		fmt.Sscan(jobs[0], &job.ID)
		j, err := e.Client.DownloadStatus(t.Context(), job.ID, false)
		return err == nil && j.Status == api.DownloadCancelled
	})
}

func TestCtlUploadsQueue(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	// A folder full to the byte: the upload fails for good (450).
	if err := e.Emu.SetStorageQuota(e.Org, 0, 1); err != nil {
		t.Fatal(err)
	}
	data := testkit.RandBytes(5000, 1)
	f, err := os.Create(e.Path("shared", "too big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	if err := f.Sync(); err == nil {
		t.Fatal("fsync of a file the storage cannot hold succeeded")
	}
	f.Close()
	q := e.read("uploads")
	if !strings.Contains(q, "failed shared/too big.bin 5000 bytes") || !strings.Contains(q, "error") {
		t.Fatalf("uploads reads %q, want the failed file with its path and error", q)
	}
	var st Stats
	e.readJSON(&st, "stats")
	if st.Uploads.Failed != 1 || st.Errors["450"] == 0 || st.Requests["POST /files (file)"].Requests == 0 {
		t.Errorf("stats: %+v", st)
	}
	e.refused(syscall.EINVAL, "drop\n", "uploads")
	e.refused(syscall.ENOENT, "discard shared/other.bin\n", "uploads")
	// The retry sends the upload again (one more POST /files reaches the
	// service), which fails again: the storage is still full. The failed
	// state alone proves nothing, it was there before the retry.
	creates := e.Requests("POST /files")
	e.mustWrite("retry\n", "uploads")
	testkit.WaitFor(t, 10*time.Second, "the retried upload to reach the service and fail", func() bool {
		return e.Requests("POST /files") > creates && strings.HasPrefix(e.read("uploads"), "failed ")
	})
	e.mustWrite("discard shared/too big.bin\n", "uploads")
	if q := e.read("uploads"); q != "" {
		t.Errorf("uploads after the discard: %q", q)
	}
	if _, err := os.Stat(e.Path("shared", "too big.bin")); !os.IsNotExist(err) {
		t.Errorf("the discarded file still shows: %v", err)
	}
	if e.Store.Staging.Stats().StagedBytes != 0 {
		t.Errorf("the discarded file is still staged: %+v", e.Store.Staging.Stats())
	}
}

// A file renamed when the storage is full: the new name's upload fails for
// good, and discarding it brings the file back at its old name, in the
// mount as on the service (it was hidden until a restart).
func TestCtlDiscardedRenameShowsTheOriginal(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	root, err := e.Emu.RootID(e.Org, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Emu.CreateFile(e.Org, 0, root, "orig.txt", strings.NewReader("original")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.Path("shared", "orig.txt")); err != nil {
		t.Fatal(err)
	}
	if err := e.Emu.SetStorageQuota(e.Org, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(e.Path("shared", "orig.txt"), e.Path("shared", "moved.txt")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the renamed file's upload to fail", func() bool {
		return strings.HasPrefix(e.read("uploads"), "failed shared/moved.txt")
	})
	if _, err := os.Stat(e.Path("shared", "orig.txt")); !os.IsNotExist(err) {
		t.Fatalf("the old name shows before the discard: %v", err)
	}
	// Held open across the discard: its inode, which kept the original's
	// number through the rename, stays known to the kernel.
	moved, err := os.Open(e.Path("shared", "moved.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Close()
	movedSt, err := moved.Stat()
	if err != nil {
		t.Fatal(err)
	}
	e.mustWrite("discard shared/moved.txt\n", "uploads")
	// The kernel may keep its "no such file" of the stat above for its
	// negative-entry time (1 s).
	testkit.WaitFor(t, 5*time.Second, "the old name to read again", func() bool {
		b, err := os.ReadFile(e.Path("shared", "orig.txt"))
		return err == nil && string(b) == "original"
	})
	entries, err := os.ReadDir(e.Path("shared"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range entries {
		names = append(names, d.Name())
	}
	if !slices.Contains(names, "orig.txt") || slices.Contains(names, "moved.txt") {
		t.Fatalf("the folder lists %v after the discard, want orig.txt and no moved.txt", names)
	}
	if st, err := os.Stat(e.Path("shared", "orig.txt")); err != nil || os.SameFile(st, movedSt) {
		t.Fatalf("the old name shows the inode of the discarded file held open (%v)", err)
	}
}

func TestCtlRefreshAndFreshness(t *testing.T) {
	e := ctlEnv(t, envOptions{DirTTL: time.Hour})
	fx := e.Emu.Fixtures(e.Org)
	var u api.AccountUsage
	e.readJSON(&u, "usage")
	// A change made elsewhere shows after refresh, not before.
	if _, err := e.Client.AssignUsage(t.Context(), fx.StoppedMachine, 7); err != nil {
		t.Fatal(err)
	}
	var again api.AccountUsage
	e.readJSON(&again, "usage")
	if again != u {
		t.Errorf("usage changed within the cache time: %+v then %+v", u, again)
	}
	e.mustWrite("\n", "refresh")
	e.readJSON(&again, "usage")
	if again.UsageMinutes != u.UsageMinutes-7 {
		t.Errorf("usage after refresh: %d, want %d", again.UsageMinutes, u.UsageMinutes-7)
	}
}

func TestCtlModesAndReadOnly(t *testing.T) {
	e := ctlEnv(t, envOptions{ReadOnly: true})
	fx := e.Emu.Fixtures(e.Org)
	m := fmt.Sprint(fx.StoppedMachine)
	for _, c := range []struct {
		path []string
		mode os.FileMode
	}{
		{[]string{"usage"}, 0o444},
		{[]string{"seats"}, 0o444},
		{[]string{"machines", m, "power"}, 0},
		{[]string{"machines", m, "access"}, 0o400},
	} {
		st, err := os.Stat(e.ctl(c.path...))
		if err != nil || st.Mode().Perm() != c.mode {
			t.Errorf("read-only mount: .ctl/%s has mode %v (%v), want %v", strings.Join(c.path, "/"), st.Mode().Perm(), err, c.mode)
		}
	}
	if err := e.write("start\n", "machines", m, "power"); !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing power on a read-only mount: %v, want EROFS", err)
	}
	if n := e.actingRequests(); n != 0 {
		t.Errorf("a read-only mount sent %d requests that act", n)
	}
}

// TestCtlEntriesCannotBeRemoved: .ctl in the root and the control files and
// folders answer EPERM to rmdir, rm and mv, and stay (the other fixed
// folders: package fs's TestFixedFoldersCannotBeRemoved).
func TestCtlEntriesCannotBeRemoved(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	for _, c := range []struct {
		op   string
		path string
	}{
		{"rmdir", ".ctl"}, {"rm", ".ctl/usage"}, {"rmdir", ".ctl/machines"}, {"mv", ".ctl/usage"},
	} {
		fstest.CannotRemove(t, c.op, e.Path(c.path))
	}
}

func TestCtlWithoutPermissionOrFeature(t *testing.T) {
	// A task bundle refused for want of the multiple_file_download feature
	// (4710) is EACCES. The demo gives only org-a a task, and org-a has the
	// feature: the service's refusal is played on it.
	a := ctlEnv(t, envOptions{})
	afx := a.Emu.Fixtures(a.Org)
	if afx.Task == 0 {
		t.Fatal("the demo seed gives org-a no task")
	}
	a.Emu.InjectError("POST /files/download", api.CodePermissionRequired, 1000)
	_, err := os.ReadFile(a.ctl("machines", fmt.Sprint(afx.RunningMachine), "tasks", fmt.Sprintf("%d.zip", afx.Task)))
	if !errors.Is(err, syscall.EACCES) {
		t.Errorf("a task bundle without the feature: %v, want EACCES", err)
	}

	e := ctlEnv(t, envOptions{Org: emulator.OrgB})
	fx := e.Emu.Fixtures(e.Org)
	// Logs refused for want of permission: EACCES.
	e.Emu.InjectError("GET /user-action-logs", api.CodePermissionRequired, 1000)
	day := time.Now().UTC().Format(dayFormat) + ".jsonl"
	if _, err := os.ReadFile(e.ctl("logs", day)); !errors.Is(err, syscall.EACCES) {
		t.Errorf("logs without permission: %v, want EACCES", err)
	}
	// An action refused for want of permission says so in result.
	e.Emu.InjectError("POST /usage/assign", api.CodePermissionRequired, 1)
	r := e.refused(syscall.EACCES, "5\n", "machines", fmt.Sprint(fx.StoppedMachine), "assign")
	if r.Code != api.CodePermissionRequired {
		t.Errorf("result: %+v, want code 4710", r)
	}
	// A failed transfer reads as EIO, not as a wrong answer.
	e.Emu.InjectError("GET /usage", 500, 1000)
	e.mustWrite("\n", "refresh")
	if _, err := os.ReadFile(e.ctl("usage")); !errors.Is(err, syscall.EIO) {
		t.Errorf("usage while the service fails: %v, want EIO", err)
	}
}

func TestCtlSeatsCreateAndSecretsStayOut(t *testing.T) {
	logs := &testkit.SyncBuffer{}
	log := logrus.New()
	log.SetOutput(logs)
	log.SetLevel(logrus.DebugLevel)
	e := ctlEnv(t, envOptions{Log: log})
	fx := e.Emu.Fixtures(e.Org)
	before := len(fstest.ListNames(t, e.ctl("machines")))

	e.refused(syscall.EINVAL, `{"seat_plan_id": 1, "quantity": 0}`, "seats")
	e.refused(syscall.EINVAL, `{"seat_plan_id": 1, "quantity": 1, "colour": 3}`, "seats")
	e.refused(syscall.EINVAL, `[1, 2]`, "seats")
	e.mustWrite(`{"seat_plan_id": 1, "quantity": 2, "software_ids": [], "base_image_id": null}`+"\n", "seats")
	r := e.result()
	if created, _ := r.Record.([]any); !r.OK || len(created) != 2 {
		t.Fatalf("result after creating 2 computers: %+v", r)
	}
	seats, _ := api.Collect(e.Client.Seats(t.Context(), ""))
	if got := len(fstest.ListNames(t, e.ctl("machines"))); got != before+2 || len(seats) != before+2 {
		t.Errorf("after creating 2: machines/ has %d, the service %d, want %d", got, len(seats), before+2)
	}

	// The access link: readable in access only; not in any log line, result or stats.
	m := fmt.Sprint(fx.RunningMachine)
	e.mustWrite("15\n", "machines", m, "access")
	link := strings.TrimSpace(e.read("machines", m, "access"))
	if link == "" {
		t.Fatal("no link")
	}
	for name, s := range map[string]string{"the log": logs.String(), "result": e.read("machines", m, "result"), "stats": e.read("stats")} {
		if strings.Contains(s, link) || strings.Contains(s, strings.TrimPrefix(link, "https://")) {
			t.Errorf("%s holds the access link", name)
		}
	}
	if !strings.Contains(logs.String(), "access link for 15 minutes") {
		t.Errorf("the action is not in the log:\n%s", logs.String())
	}
}

// TestCtlActionRefreshesEveryFile: after an action anywhere in .ctl, the
// files elsewhere that it moved (the team balance, the computer list,
// today's log) show it at their next read, whatever the cache time.
func TestCtlActionRefreshesEveryFile(t *testing.T) {
	e := ctlEnv(t, envOptions{DirTTL: time.Hour})
	fx := e.Emu.Fixtures(e.Org)
	m := fmt.Sprint(fx.StoppedMachine)
	day := time.Now().UTC().Format(dayFormat) + ".jsonl"
	var u api.AccountUsage
	e.readJSON(&u, "usage")
	lines := strings.Count(e.read("logs", day), "\n")
	var seats []api.Seat
	e.readJSON(&seats, "seats")
	e.mustWrite("10\n", "machines", m, "assign")
	e.mustWrite("start\n", "machines", m, "power")
	var after api.AccountUsage
	e.readJSON(&after, "usage")
	if after.UsageMinutes != u.UsageMinutes-10 {
		t.Errorf(".ctl/usage after assign 10: %d, want %d", after.UsageMinutes, u.UsageMinutes-10)
	}
	if n := strings.Count(e.read("logs", day), "\n"); n < lines+2 {
		t.Errorf("today's log has %d lines after two actions, had %d", n, lines)
	}
	e.readJSON(&seats, "seats")
	for _, s := range seats {
		if s.ID == fx.StoppedMachine && s.FriendlyStatus == api.SeatOff {
			t.Errorf(".ctl/seats still shows computer %s off after start", m)
		}
	}
}

// .ctl/conflicts lists a change that met another writer's: a file staged
// here from a version that a script replaced meanwhile went up beside it.
func TestCtlConflicts(t *testing.T) {
	e := ctlEnv(t, envOptions{WriteBack: time.Hour, Desk: "desk-t"})
	if got := e.read("conflicts"); got != "" {
		t.Fatalf("conflicts before any: %q", got)
	}
	p := e.Path("shared", "plan.txt")
	if err := os.WriteFile(p, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustWrite("shared/plan.txt", "sync")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(" and mine")
	f.Close()
	// A script replaces it before this desk's upload.
	if _, err := e.Client.Upload(t.Context(), api.UploadRequest{Name: "plan.txt", Size: 6, Overwrite: true, Body: strings.NewReader("theirs")}); err != nil {
		t.Fatal(err)
	}
	e.mustWrite("shared/plan.txt", "sync")

	line := e.read("conflicts")
	if !strings.Contains(line, " shared/plan.txt kept as shared/plan (conflict ") || !strings.Contains(line, " desk-t).txt (11 bytes)") {
		t.Fatalf(".ctl/conflicts: %q", line)
	}
	var cs []struct {
		Path   string `json:"path"`
		Copy   string `json:"copy"`
		Theirs int64  `json:"their_id"`
		Ours   int64  `json:"our_id"`
		Size   int64  `json:"size"`
	}
	e.readJSON(&cs, "conflicts.json")
	if len(cs) != 1 || cs[0].Path != "shared/plan.txt" || !strings.HasPrefix(cs[0].Copy, "shared/plan (conflict ") || cs[0].Theirs == 0 || cs[0].Ours == 0 || cs[0].Size != 11 {
		t.Fatalf(".ctl/conflicts.json: %+v", cs)
	}
	var st struct {
		Uploads struct {
			Conflicts int64 `json:"conflicts"`
		} `json:"uploads"`
	}
	e.readJSON(&st, "stats")
	if st.Uploads.Conflicts != 1 {
		t.Fatalf("stats: %d conflicts", st.Uploads.Conflicts)
	}
}

// .ctl/stats counts what the kernel asked the daemon for files: a lookup,
// an open and a read of a file; a read leaves the access time stale (the
// kernel asks for the attributes at the next stat), and stats after that
// ask nothing more while the kernel keeps them.
func TestCtlStatsCountsWhatTheKernelAsks(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	root, err := e.Emu.RootID(e.Org, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Emu.CreateFile(e.Org, 0, root, "k.txt", strings.NewReader("kernel")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(e.Path("shared", "k.txt")); err != nil || string(b) != "kernel" {
		t.Fatalf("read %q, %v", b, err)
	}
	var st Stats
	e.readJSON(&st, "stats")
	k := st.Kernel
	if k.Lookups < 1 || k.Opens != 1 || k.Reads < 1 {
		t.Fatalf("stats kernel after a read: %+v", k)
	}
	if _, err := os.Stat(e.Path("shared", "k.txt")); err != nil {
		t.Fatal(err)
	}
	e.readJSON(&st, "stats")
	k = st.Kernel
	for range 3 {
		if _, err := os.Stat(e.Path("shared", "k.txt")); err != nil {
			t.Fatal(err)
		}
	}
	e.readJSON(&st, "stats")
	if st.Kernel.Lookups != k.Lookups || st.Kernel.Getattrs != k.Getattrs {
		t.Errorf("a stat of a kept file asked the daemon: %+v, then %+v", k, st.Kernel)
	}
	// Read again, now whole in the cache: in passthrough where the kernel
	// has it (CI's has), the open counted there and no read asked.
	pt := st.Passthrough
	if b, err := os.ReadFile(e.Path("shared", "k.txt")); err != nil || string(b) != "kernel" {
		t.Fatalf("read again %q, %v", b, err)
	}
	e.readJSON(&st, "stats")
	switch {
	case pt.Mode == "on":
		if st.Passthrough.Opens != pt.Opens+1 || st.Kernel.Reads != k.Reads {
			t.Errorf("a read of a cached file in passthrough: %+v %+v, then %+v %+v", pt, k, st.Passthrough, st.Kernel)
		}
	case os.Getenv("CI") != "" || !strings.HasPrefix(pt.Mode, "off: "):
		t.Errorf("stats passthrough %+v", pt)
	}
}

// Offline, .ctl/stats says so (since when, why, what waits), and
// .ctl/uploads lists the deletions made offline beside the uploads.
func TestCtlShowsTheMountOffline(t *testing.T) {
	e := ctlEnv(t, envOptions{DirTTL: 500 * time.Millisecond})
	root, err := e.Emu.RootID(e.Org, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Emu.CreateFile(e.Org, 0, root, "old.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadDir(e.Path("shared")); err != nil {
		t.Fatal(err)
	}
	var st Stats
	e.readJSON(&st, "stats")
	if !st.Service.Online || st.Service.OfflineSince != nil {
		t.Fatalf("stats online: %+v", st.Service)
	}
	e.Emu.SetOutage(emulator.OutageRefuse)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	time.Sleep(time.Second) // the listing expired
	if err := os.Remove(e.Path("shared", "old.txt")); err != nil {
		t.Fatalf("rm offline: %v", err)
	}
	if err := os.WriteFile(e.Path("shared", "new.txt"), []byte("y"), 0o644); err != nil {
		t.Fatalf("write offline: %v", err)
	}
	e.readJSON(&st, "stats")
	if st.Service.Online || st.Service.OfflineSince == nil || st.Service.OfflineReason == "" || st.Service.ChangesWaiting != 2 {
		t.Errorf("stats offline: %+v, want offline since a time, a reason, 2 changes waiting", st.Service)
	}
	if q := e.read("uploads"); !strings.Contains(q, "delete shared/old.txt") {
		t.Errorf("uploads offline reads %q, want the deletion made offline", q)
	}
}
