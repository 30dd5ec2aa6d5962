package fs

// Tests of the mount through an outage: every syscall that waits on the
// service gives up within --io-timeout, while cached content is served and
// uploads wait for the service.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// In a black hole (connections taken, nothing answered), a listing of a
// folder not cached, a lookup in it, computers/, a read of a file not cached
// and a read of a file being streamed each fail with EIO or ETIMEDOUT within
// the I/O timeout, not after the client's retries; statfs answers; a file
// read before the outage reads from the cache; a file written during it
// uploads once the service answers again. The silence is found by a probe
// within the I/O timeout of the first wait (api/reach.go): the mount is
// offline, and every operation after answers at once. Each operation that
// failed logs one warning naming what it waited for. Before the outage, a
// read on a slow link outlasts the I/O timeout: it is not cut while content
// comes.
func TestBlackHoleBoundsEverySyscall(t *testing.T) {
	const ioTimeout = time.Second
	// The kernel retries a failed read-ahead with a read of its own: two
	// waits; the rest is slack for a loaded machine.
	const bound = 3*ioTimeout + 2*time.Second
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	const dirTTL = 4 * time.Second
	e := newEnv(t, envOptions{Log: logger, IOTimeout: ioTimeout, DirTTL: dirTTL, Client: api.Options{IOTimeout: ioTimeout}})
	root := e.root(0)
	cached := testkit.RandBytes(3<<20+17, 1)
	e.put(0, root, "cached.bin", cached)
	e.put(0, root, "cold.txt", []byte("never read before the outage\n"))
	big := testkit.RandBytes(32<<20, 2)
	e.put(0, root, "big.bin", big)
	folder := e.mkdir(0, root, "folder")
	e.put(0, folder, "inside.txt", []byte("listed only after the outage\n"))

	if b, err := os.ReadFile(e.Path("shared", "cached.bin")); err != nil || !bytes.Equal(b, cached) {
		t.Fatalf("reading cached.bin before the outage: %d bytes, %v", len(b), err)
	}
	dropKernelCache(t, e.Path("shared", "cached.bin")) // its reads come to the mount's cache
	// A reader streams big.bin slowly, with read-ahead in flight.
	rate := int64(256 << 10)
	e.Emu.ChangePlay(emulator.PlayChange{StreamRate: &rate})
	streamed, err := os.Open(e.Path("shared", "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer streamed.Close()
	head := make([]byte, 1<<20)
	start := time.Now()
	if _, err := io.ReadFull(streamed, head); err != nil || !bytes.Equal(head, big[:len(head)]) {
		t.Fatalf("streaming big.bin before the outage: %v after %v", err, time.Since(start))
	}
	// A read on a slow link is not cut: it waits while content comes.
	if took := time.Since(start); took < ioTimeout {
		t.Fatalf("the first MiB of big.bin came in %v: the link is not slow enough to show a read outlasting --io-timeout", took)
	}

	// The root is listed anew just before the outage; its listing expires
	// during it.
	e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	if _, err := os.ReadDir(e.Path("shared")); err != nil {
		t.Fatal(err)
	}
	listed := time.Now()
	e.Emu.SetOutage(emulator.OutageBlackHole)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	timedOut := func(err error) bool { return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ETIMEDOUT) }
	offline := false // the probe found the silence: what fails, fails at once
	for _, c := range []struct {
		name string
		op   func() error
		// warns: how many timeout warnings, each naming what it waited for:
		// one per operation that gave up (the kernel sends a read-ahead as
		// several reads, and reads a page again after its read-ahead failed).
		fail        bool // wants EIO or ETIMEDOUT; else success
		warns, upTo int
	}{
		{"ls of a folder not cached", func() error { _, err := os.ReadDir(e.Path("shared", "folder")); return err }, true, 1, 1},
		{"stat in a folder not cached", func() error { _, err := os.Stat(e.Path("shared", "folder", "inside.txt")); return err }, true, 1, 1},
		{"ls computers/", func() error { _, err := os.ReadDir(e.Path("computers")); return err }, true, 1, 1},
		{"cat of a file not cached", func() error { _, err := os.ReadFile(e.Path("shared", "cold.txt")); return err }, true, 1, 1},
		{"cat already streaming", func() error { _, err := io.Copy(io.Discard, streamed); return err }, true, 1, 8},
		// The root's own record (the quota) was never listed: statfs shows a large disk.
		{"statfs", func() error { var st syscall.Statfs_t; return syscall.Statfs(e.Path("shared"), &st) }, false, 0, 1},
		{"cat of a cached file", func() error {
			b, err := os.ReadFile(e.Path("shared", "cached.bin"))
			if err == nil && !bytes.Equal(b, cached) {
				err = errors.New("wrong content")
			}
			return err
		}, false, 0, 0},
		{"write of a new file", func() error {
			return os.WriteFile(e.Path("shared", "during.txt"), []byte("written during the outage\n"), 0o644)
		}, false, 0, 0},
		// fsync waits while its upload sends bytes; none go in a black hole.
		// The mount knows it is offline by now: the file is made durable
		// on this desk, and goes up at the return.
		{"fsync", func() error {
			f, err := os.Create(e.Path("shared", "fsynced.txt"))
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := f.WriteString("fsynced during the outage\n"); err != nil {
				return err
			}
			return f.Sync()
		}, false, 0, 0},
	} {
		hook.Reset()
		start = time.Now()
		err := c.op()
		took := time.Since(start)
		t.Logf("%s: %v after %v", c.name, err, took.Round(time.Millisecond))
		switch {
		case c.fail && !timedOut(err):
			t.Errorf("%s in the black hole: %v, want EIO or ETIMEDOUT", c.name, err)
		case !c.fail && err != nil:
			t.Errorf("%s in the black hole: %v, want success", c.name, err)
		}
		if took > bound {
			t.Errorf("%s in the black hole took %v, want at most %v (--io-timeout %v)", c.name, took, bound, ioTimeout)
		}
		if offline && took > ioTimeout*3/4 {
			t.Errorf("%s once the mount is offline took %v, want at once (an operation that waits takes --io-timeout, %v)", c.name, took, ioTimeout)
		}
		if !offline {
			offline = !e.Client.Reachability().Online
		}
		var warnings []string
		for _, en := range hook.AllEntries() {
			late := c.name != "cat already streaming" && strings.Contains(fmt.Sprint(en.Data), "big.bin")
			if en.Level <= logrus.WarnLevel && (strings.Contains(en.Message, "io-timeout") || strings.Contains(en.Message, "offline")) && !late { // the kernel's read-ahead of the stream may time out after it
				warnings = append(warnings, fmt.Sprintf("%s %v", en.Message, en.Data))
			}
		}
		if len(warnings) < c.warns || len(warnings) > c.upTo {
			t.Errorf("%s: %d timeout warnings, want %d to %d:\n%s", c.name, len(warnings), c.warns, c.upTo, strings.Join(warnings, "\n"))
		}
		for _, w := range warnings {
			if !strings.Contains(w, "waited_for") {
				t.Errorf("%s: the timeout warning names nothing it waited for: %s", c.name, w)
			}
		}
	}

	// The root's listing expired in the outage: it shows as last listed, and
	// the cached file in it still reads, at once (the service is known to be
	// silent: nothing waits for it).
	time.Sleep(time.Until(listed.Add(dirTTL + 100*time.Millisecond)))
	start = time.Now()
	if names := fstest.ListNames(t, e.Path("shared")); !slices.Contains(names, "cached.bin") || time.Since(start) > ioTimeout/2 {
		t.Errorf("ls shared/ after its listing expired in the outage: %v after %v", names, time.Since(start))
	}
	start = time.Now()
	if b, err := os.ReadFile(e.Path("shared", "cached.bin")); err != nil || !bytes.Equal(b, cached) || time.Since(start) > ioTimeout/2 {
		t.Errorf("cat of the cached file after its folder's listing expired in the outage: %d bytes, %v after %v", len(b), err, time.Since(start))
	}
	if e.Store.Dirs.Stats().Stale == 0 {
		t.Error("no listing was answered as last listed")
	}
	if r := e.Client.Reachability(); r.Online || !r.Silent {
		t.Errorf("reachability in the black hole: %+v, want offline, silent", r)
	}

	e.Emu.SetOutage(emulator.OutageNone)
	e.settle()
	if got := e.serviceBytes("during.txt"); string(got) != "written during the outage\n" {
		t.Errorf("the file written during the outage is %q on the service", got)
	}
	if got := e.serviceBytes("fsynced.txt"); string(got) != "fsynced during the outage\n" {
		t.Errorf("the file fsynced in the outage is %q on the service", got)
	}
	if names := listNamesEventually(t, e.Path("shared", "folder")); len(names) != 1 || names[0] != "inside.txt" {
		t.Errorf("after the outage, folder lists %v", names)
	}
	// The service answers again: shared/ is listed anew, with what another
	// writer put there meanwhile.
	e.put(0, root, "after.txt", []byte("put after the outage\n"))
	testkit.WaitFor(t, 30*time.Second, "shared/ listed anew after the outage", func() bool {
		names, err := os.ReadDir(e.Path("shared"))
		return err == nil && slices.ContainsFunc(names, func(en os.DirEntry) bool { return en.Name() == "after.txt" })
	})
}

// listNamesEventually lists dir once the service answers again (a listing
// that failed in the outage may still be on its way).
func listNamesEventually(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	testkit.WaitFor(t, 30*time.Second, "a listing of "+dir, func() bool {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return false
		}
		names = names[:0]
		for _, en := range ents {
			names = append(names, en.Name())
		}
		return true
	})
	return names
}

// Offline (the service refusing every connection, as when the network or
// the VPN is down), nothing waits on the network: every folder listed
// before lists as last seen, though its listing expired; a file whose
// content is whole in the cache reads; a new file is written, shows at once
// and reaches the service when it is back; what the mount cannot serve (a
// folder never listed, content not cached, a change the service must make
// now) answers EIO at once; fsync makes the file durable on this desk. All in well under a second each, never
// ECONNREFUSED. The first operation after the service's return finds it
// back (no wait for the probe's backoff).
func TestOfflineAnswersFromWhatIsKnown(t *testing.T) {
	const dirTTL = 500 * time.Millisecond
	e := newEnv(t, envOptions{DirTTL: dirTTL, IOTimeout: 10 * time.Second})
	root := e.root(0)
	docs := e.mkdir(0, root, "docs")
	report := []byte("the report, read before the outage\n")
	e.put(0, docs, "report.txt", report)
	e.put(0, root, "cold.txt", []byte("never read\n"))
	never := e.mkdir(0, root, "never-listed")
	e.put(0, never, "inside.txt", []byte("x"))
	if b, err := os.ReadFile(e.Path("shared", "docs", "report.txt")); err != nil || !bytes.Equal(b, report) {
		t.Fatalf("reading before the outage: %q %v", b, err)
	}
	before := fstest.ListNames(t, e.Path("shared"))

	e.Emu.SetOutage(emulator.OutageRefuse)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	time.Sleep(2 * dirTTL) // every listing expired
	const atOnce = time.Second
	for _, c := range []struct {
		name string
		op   func() error
		fail bool // wants EIO; else success
	}{
		{"ls of a folder listed before", func() error {
			if got := fstest.ListNames(t, e.Path("shared")); !slices.Equal(got, before) {
				return fmt.Errorf("lists %v, want %v", got, before)
			}
			return nil
		}, false},
		{"cat of a cached file", func() error {
			b, err := os.ReadFile(e.Path("shared", "docs", "report.txt"))
			if err == nil && !bytes.Equal(b, report) {
				err = fmt.Errorf("reads %q", b)
			}
			return err
		}, false},
		{"write of a new file", func() error {
			return os.WriteFile(e.Path("shared", "docs", "offline.txt"), []byte("written offline\n"), 0o644)
		}, false},
		{"cat of the file written offline", func() error {
			b, err := os.ReadFile(e.Path("shared", "docs", "offline.txt"))
			if err == nil && string(b) != "written offline\n" {
				err = fmt.Errorf("reads %q", b)
			}
			return err
		}, false},
		{"cat of a file not cached", func() error { _, err := os.ReadFile(e.Path("shared", "cold.txt")); return err }, true},
		{"ls of a folder never listed", func() error { _, err := os.ReadDir(e.Path("shared", "never-listed")); return err }, true},
		{"mkdir", func() error { return os.Mkdir(e.Path("shared", "docs", "new"), 0o755) }, false},
		{"fsync", func() error {
			f, err := os.OpenFile(e.Path("shared", "docs", "offline.txt"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Sync() // durable on this desk; it goes up at the return
		}, false},
	} {
		start := time.Now()
		err := c.op()
		took := time.Since(start)
		t.Logf("%s offline: %v after %v", c.name, err, took.Round(time.Millisecond))
		switch {
		case c.fail && !errors.Is(err, syscall.EIO):
			t.Errorf("%s offline: %v, want EIO", c.name, err)
		case !c.fail && err != nil:
			t.Errorf("%s offline: %v, want success", c.name, err)
		}
		if took > atOnce {
			t.Errorf("%s offline took %v, want under %v", c.name, took, atOnce)
		}
	}
	if r := e.Client.Reachability(); r.Online || r.Reason == "" {
		t.Errorf("reachability offline: %+v, want offline with a reason", r)
	}

	e.Emu.SetOutage(emulator.OutageNone)
	start := time.Now()
	if names := fstest.ListNames(t, e.Path("shared", "docs")); !slices.Contains(names, "offline.txt") {
		t.Errorf("ls once back: %v", names)
	}
	// The listing answered as last seen; its fetch, started at once, finds
	// the service back: no probe's backoff to wait for.
	testkit.WaitFor(t, atOnce, "the mount to be online after the first operation once back", func() bool { return e.Client.Reachability().Online })
	t.Logf("online %v after the service's return", time.Since(start).Round(time.Millisecond))
	e.settle()
	if got := e.serviceBytes("docs/offline.txt"); string(got) != "written offline\n" {
		t.Errorf("the file written offline is %q on the service", got)
	}
}

// Offline, rm of a file on the service and rmdir of a folder listed empty
// are taken at once and kept in the write side's journal, across a
// restart; at the service's return each is made if the service still holds
// what the mount removed: a folder another desk wrote into meanwhile is
// kept, and shows again with its content. orgfs sync waits for them.
func TestOfflineDeletionsAreMadeAtTheReturn(t *testing.T) {
	const dirTTL = 500 * time.Millisecond
	e := newEnv(t, envOptions{DirTTL: dirTTL, IOTimeout: 10 * time.Second})
	root := e.root(0)
	e.put(0, root, "gone.txt", []byte("deleted offline\n"))
	e.mkdir(0, root, "empty")
	theirs := e.mkdir(0, root, "theirs")
	for _, name := range []string{"", "empty", "theirs"} {
		fstest.ListNames(t, e.Path("shared", name))
	}
	// A file this mount uploaded: its listing holds the mount's own record
	// of it until the folder is listed again.
	if err := os.WriteFile(e.Path("shared", "mine.txt"), []byte("uploaded here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()

	e.Emu.SetOutage(emulator.OutageRefuse)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	time.Sleep(2 * dirTTL) // every listing expired
	for _, c := range []struct {
		name string
		op   func() error
	}{
		{"rm of a file on the service", func() error { return os.Remove(e.Path("shared", "gone.txt")) }},
		{"rm of a file this mount uploaded", func() error { return os.Remove(e.Path("shared", "mine.txt")) }},
		{"rmdir of a folder listed empty", func() error { return os.Remove(e.Path("shared", "empty")) }},
		{"rmdir of a folder another desk writes into meanwhile", func() error { return os.Remove(e.Path("shared", "theirs")) }},
	} {
		start := time.Now()
		if err := c.op(); err != nil || time.Since(start) > time.Second {
			t.Fatalf("%s offline: %v after %v, want done at once", c.name, err, time.Since(start))
		}
	}
	if names := fstest.ListNames(t, e.Path("shared")); slices.ContainsFunc(names, func(n string) bool { return n == "gone.txt" || n == "mine.txt" || n == "empty" || n == "theirs" }) {
		t.Fatalf("ls offline after the removals: %v", names)
	}
	e.put(0, theirs, "new.txt", []byte("another desk's\n")) // server-side: the outage does not stop it
	if n := e.Store.Staging.Stats().Journaled; n != 4 {
		t.Fatalf("%d deletions journaled, want 4", n)
	}

	// A restart while offline keeps them (the journal is on disk).
	e.Unmount(nil)
	e.Emu.SetOutage(emulator.OutageNone)
	e.Mount()
	testkit.WaitFor(t, 10*time.Second, "the journal made at the start", func() bool { return e.Store.Staging.Stats().Journaled == 0 })
	for name, want := range map[string]bool{"gone.txt": false, "mine.txt": false, "empty": false, "theirs": true, "theirs/new.txt": true} {
		if _, ok := e.serviceFile(name); ok != want {
			t.Errorf("shared/%s on the service after the return: %v, want %v", name, ok, want)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the kept folder shown again", func() bool {
		e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
		names, err := os.ReadDir(e.Path("shared"))
		return err == nil && slices.ContainsFunc(names, func(d os.DirEntry) bool { return d.Name() == "theirs" })
	})
}

// Offline, a folder whose only file was renamed out of it, then the folder
// removed, goes at the return, though its deletion is made before the
// file's copy is up (the journal first, then the uploads): the file is the
// staging's to delete, and its copy is staged.
func TestOfflineRmdirOfAFolderAFileLeft(t *testing.T) {
	const dirTTL = 500 * time.Millisecond
	e := newEnv(t, envOptions{DirTTL: dirTTL, IOTimeout: 10 * time.Second})
	data := []byte("renamed out, then its folder removed\n")
	e.put(0, e.mkdir(0, e.root(0), "moved-out"), "m.txt", data)
	fstest.ListNames(t, e.Path("shared"))
	if b, err := os.ReadFile(e.Path("shared", "moved-out", "m.txt")); err != nil || !bytes.Equal(b, data) { // cached: renamed offline
		t.Fatal(b, err)
	}
	e.Emu.SetOutage(emulator.OutageRefuse)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	time.Sleep(2 * dirTTL)
	if err := os.Rename(e.Path("shared", "moved-out", "m.txt"), e.Path("shared", "m.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.Path("shared", "moved-out")); err != nil {
		t.Fatal(err)
	}
	e.Emu.SetOutage(emulator.OutageNone)
	e.Store.Staging.Resume()
	testkit.WaitFor(t, 10*time.Second, "the journal made", func() bool { return len(e.Store.Journal()) == 0 })
	e.settle()
	if got := e.serviceBytes("m.txt"); !bytes.Equal(got, data) {
		t.Errorf("the file renamed out: %q on the service", got)
	}
	if _, ok := e.serviceFile("moved-out"); ok {
		t.Error("the folder removed offline is still on the service")
	}
}

// Offline, mkdir (and mkdir -p) is taken at once: the folder stands under
// a provisional id, files are written in it, it is renamed and removed as
// any folder, chmod sticks; its making is journaled, across a restart. At
// the service's return the folders are made in order, each file goes into
// its folder, and the mount's nodes stand for the folders made, with their
// inode numbers. A folder of the same name another desk made meanwhile is
// taken, with what it holds.
func TestOfflineMkdirIsMadeAtTheReturn(t *testing.T) {
	const dirTTL = 500 * time.Millisecond
	e := newEnv(t, envOptions{DirTTL: dirTTL, IOTimeout: 10 * time.Second})
	docs := e.mkdir(0, e.root(0), "docs")
	e.mkdir(0, docs, "listed-empty")
	fstest.ListNames(t, e.Path("shared"))
	fstest.ListNames(t, e.Path("shared", "docs"))
	fstest.ListNames(t, e.Path("shared", "docs", "listed-empty"))
	sh := func(p ...string) string { return e.Path(append([]string{"shared"}, p...)...) }

	e.Emu.SetOutage(emulator.OutageRefuse)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	time.Sleep(2 * dirTTL) // every listing expired
	for _, c := range []struct {
		name string
		op   func() error
	}{
		{"mkdir", func() error { return os.Mkdir(sh("docs", "new"), 0o755) }},
		{"mkdir -p", func() error { return os.MkdirAll(sh("docs", "new", "a", "b"), 0o755) }},
		{"write in a folder made offline", func() error { return os.WriteFile(sh("docs", "new", "one.txt"), []byte("one\n"), 0o644) }},
		{"write two folders down", func() error { return os.WriteFile(sh("docs", "new", "a", "b", "deep.txt"), []byte("deep\n"), 0o644) }},
		{"chmod of a folder made offline", func() error { return os.Chmod(sh("docs", "new"), 0o750) }},
		{"mkdir of a file manager's new folder", func() error { return os.Mkdir(sh("docs", "Untitled Folder"), 0o755) }},
		{"write in it", func() error { return os.WriteFile(sh("docs", "Untitled Folder", "x.txt"), []byte("x\n"), 0o644) }},
		{"rename of a folder made offline, with its file", func() error { return os.Rename(sh("docs", "Untitled Folder"), sh("docs", "named")) }},
		{"mkdir then rmdir", func() error {
			if err := os.Mkdir(sh("docs", "tmp"), 0o755); err != nil {
				return err
			}
			return os.Remove(sh("docs", "tmp"))
		}},
		{"mkdir of an empty folder", func() error { return os.Mkdir(sh("empty"), 0o755) }},
		{"rename of a folder listed empty", func() error { return os.Rename(sh("docs", "listed-empty"), sh("docs", "renamed-empty")) }},
	} {
		start := time.Now()
		err := c.op()
		took := time.Since(start)
		t.Logf("%s offline: %v", c.name, took.Round(time.Microsecond))
		if err != nil || took > time.Second {
			t.Fatalf("%s offline: %v after %v, want done at once", c.name, err, took)
		}
	}
	if got := fstest.ListNames(t, sh("docs")); !slices.Equal(got, []string{"named", "new", "renamed-empty"}) {
		t.Fatalf("ls docs offline: %v", got)
	}
	if got := fstest.ListNames(t, sh("docs", "named")); !slices.Equal(got, []string{"x.txt"}) {
		t.Fatalf("ls docs/named offline: %v", got)
	}
	before, err := os.Stat(sh("docs", "new"))
	if err != nil || before.Mode().Perm() != 0o750 || !before.IsDir() {
		t.Fatalf("stat docs/new offline: %v, %v", before, err)
	}
	ino := before.Sys().(*syscall.Stat_t).Ino
	if n := len(e.Store.Journal()); n != 7 { // new, a, b, named, empty; renamed-empty, and listed-empty's deletion
		t.Fatalf("%d changes journaled, want 7: %+v", n, e.Store.Journal())
	}
	theirs := e.mkdir(0, docs, "new") // another desk, meanwhile
	e.put(0, theirs, "theirs.txt", []byte("another desk's\n"))

	e.Emu.SetOutage(emulator.OutageNone)
	e.Store.Staging.Resume() // as the probe does when it finds the service back
	testkit.WaitFor(t, 10*time.Second, "the folders made", func() bool { return len(e.Store.Journal()) == 0 })
	e.settle()
	for path, want := range map[string]string{"docs/new/one.txt": "one\n", "docs/new/a/b/deep.txt": "deep\n", "docs/named/x.txt": "x\n", "docs/new/theirs.txt": "another desk's\n"} {
		if got := e.serviceBytes(path); string(got) != want {
			t.Errorf("shared/%s on the service: %q, want %q", path, got, want)
		}
	}
	if f, ok := e.serviceFile("docs/new"); !ok || f.ID != theirs {
		t.Errorf("docs/new on the service: %+v, want the other desk's folder %d", f, theirs)
	}
	for path, want := range map[string]bool{"empty": true, "docs/tmp": false, "docs/Untitled Folder": false, "docs/listed-empty": false, "docs/renamed-empty": true} {
		if _, ok := e.serviceFile(path); ok != want {
			t.Errorf("shared/%s on the service: %v, want %v", path, ok, want)
		}
	}
	after, err := os.Stat(sh("docs", "new"))
	if err != nil || after.Sys().(*syscall.Stat_t).Ino != ino || after.Mode().Perm() != 0o750 {
		t.Errorf("stat docs/new once made: %v, %v; want inode %d and mode 0750", after, err, ino)
	}
	if got := fstest.ListNames(t, sh("docs", "new")); !slices.Equal(got, []string{"a", "one.txt", "theirs.txt"}) {
		t.Errorf("ls docs/new once made: %v", got)
	}
	if err := os.WriteFile(sh("docs", "new", "a", "later.txt"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if got := e.serviceBytes("docs/new/a/later.txt"); string(got) != "later\n" {
		t.Errorf("a file written in a folder made offline, once made: %q", got)
	}

	// Across a restart offline: the journal and the files staged in the
	// folders made are on disk, and made at the return.
	e.Emu.SetOutage(emulator.OutageRefuse)
	time.Sleep(2 * dirTTL)
	fstest.ListNames(t, sh("docs")) // as last listed
	if err := os.MkdirAll(sh("docs", "trip", "day1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sh("docs", "trip", "day1", "notes.txt"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if left := e.UnmountLeaving(nil); left == nil {
		t.Fatal("the drain offline says nothing is left, with a file staged in a folder made offline")
	}
	e.Mount()
	if n := len(e.Store.Journal()); n != 2 {
		t.Fatalf("%d changes journaled after a restart, want 2: %+v", n, e.Store.Journal())
	}
	e.Emu.SetOutage(emulator.OutageNone)
	e.Store.Staging.Resume()
	testkit.WaitFor(t, 10*time.Second, "the folders made after the restart", func() bool { return len(e.Store.Journal()) == 0 })
	e.settle()
	if got := e.serviceBytes("docs/trip/day1/notes.txt"); string(got) != "notes\n" {
		t.Errorf("a file written in folders made offline before a restart: %q", got)
	}
	if got := fstest.ListNames(t, sh("docs", "trip", "day1")); !slices.Equal(got, []string{"notes.txt"}) {
		t.Errorf("ls docs/trip/day1 after the return: %v", got)
	}
}

// Offline, a folder whose content is all in the cache (or staged) is
// renamed at once: the new folders are made later, the files staged there,
// the old folder retired at the return. One with content not cached
// answers EXDEV at once (mv copies what it can read), and stays listed.
func TestOfflineFolderRename(t *testing.T) {
	const dirTTL = 500 * time.Millisecond
	e := newEnv(t, envOptions{DirTTL: dirTTL, IOTimeout: 10 * time.Second})
	tree := e.mkdir(0, e.root(0), "tree")
	e.put(0, tree, "a.txt", []byte("a\n"))
	e.put(0, e.mkdir(0, tree, "sub"), "b.txt", []byte("b\n"))
	e.put(0, e.mkdir(0, e.root(0), "cold"), "c.txt", []byte("never read\n"))
	for _, p := range []string{"tree/a.txt", "tree/sub/b.txt"} {
		if _, err := os.ReadFile(e.Path("shared", p)); err != nil {
			t.Fatal(err)
		}
	}
	fstest.ListNames(t, e.Path("shared", "cold"))
	e.Emu.SetOutage(emulator.OutageRefuse)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	time.Sleep(2 * dirTTL)
	start := time.Now()
	if err := os.Rename(e.Path("shared", "tree"), e.Path("shared", "moved")); err != nil || time.Since(start) > time.Second {
		t.Fatalf("rename of a folder all cached, offline: %v after %v", err, time.Since(start))
	}
	t.Logf("rename of a folder all cached, offline: %v", time.Since(start).Round(time.Microsecond))
	start = time.Now()
	if err := os.Rename(e.Path("shared", "cold"), e.Path("shared", "cold2")); !errors.Is(err, syscall.EXDEV) || time.Since(start) > time.Second {
		t.Errorf("rename of a folder not cached, offline: %v after %v, want EXDEV at once", err, time.Since(start))
	}
	if got := fstest.ListNames(t, e.Path("shared")); !slices.Equal(got, []string{"cold", "moved"}) {
		t.Errorf("ls offline after the renames: %v", got)
	}
	if b, err := os.ReadFile(e.Path("shared", "moved", "sub", "b.txt")); err != nil || string(b) != "b\n" {
		t.Errorf("a file of the folder renamed, offline: %q, %v", b, err)
	}
	e.Emu.SetOutage(emulator.OutageNone)
	e.Store.Staging.Resume()
	testkit.WaitFor(t, 10*time.Second, "the journal made", func() bool { return len(e.Store.Journal()) == 0 })
	e.settle()
	testkit.WaitFor(t, 10*time.Second, "the old folder retired", func() bool { _, ok := e.serviceFile("tree"); return !ok })
	for path, want := range map[string]string{"moved/a.txt": "a\n", "moved/sub/b.txt": "b\n", "cold/c.txt": "never read\n"} {
		if got := e.serviceBytes(path); string(got) != want {
			t.Errorf("shared/%s on the service: %q", path, got)
		}
	}
}
