package fs

// Rows of docs/SEMANTICS.md that no other test held: the errno of each
// service error, the waits of the changes in an outage, the read-ahead, the
// cost of an open for writing, readers of a file changed after their open,
// the rmdir race, statfs without a quota, and where GLib finds
// x-gvfs-notrash.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"golang.org/x/sys/unix"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

// Each service error a change meets reaches the program as the errno of
// the mapping (errno.go), here through mkdir, whose one request answers the
// code injected at the emulator (one attempt per call: the client retries
// 429 and 5xx). A caller interrupted by a signal while it waits gets EINTR.
func TestServiceErrorsAsErrnos(t *testing.T) {
	e := newEnv(t, envOptions{Client: api.Options{MaxAttempts: 1}})
	folder := e.mkdir(0, e.root(0), "held")
	if _, err := os.ReadDir(e.Path("shared")); err != nil { // listed: a mkdir sends its own request only
		t.Fatal(err)
	}
	for _, c := range []struct {
		code int
		want syscall.Errno
	}{
		{api.CodeNotFound, syscall.ENOENT},
		{api.CodeDownloadTargetNotFound, syscall.ENOENT},
		{api.CodeForbidden, syscall.EACCES},
		{api.CodePermissionRequired, syscall.EACCES},
		{api.CodeStorageFull, syscall.ENOSPC},
		{api.CodeFileExists, syscall.EEXIST},
		{api.CodeTooManyRequests, syscall.EAGAIN},
		{api.CodeBadRequest, syscall.EINVAL},
		{api.CodeDirectoryEmpty, syscall.EINVAL}, // any other 4xxx
		{500, syscall.EIO},
		{503, syscall.EIO},
	} {
		name := fmt.Sprintf("refused %d", c.code)
		e.Emu.InjectError("POST /files", c.code, 1)
		err := os.Mkdir(e.Path("shared", name), 0o755)
		if !errors.Is(err, c.want) {
			t.Errorf("mkdir answered %d by the service: %v, want %v", c.code, err, c.want)
		}
		if _, ok := e.serviceFile(name); ok {
			t.Errorf("the folder refused with %d is on the service", c.code)
		}
	}
	if n := e.Emu.Stats().Injected; n != 11 {
		t.Errorf("%d answers injected, want 11 (one per mkdir)", n)
	}

	// A lookup waiting for a listing, interrupted by a signal (SIGURG: the
	// Go runtime takes it and goes on), answers EINTR; the listing goes on.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.setHook(func(r *http.Request, answered bool) {
		if !answered && isListing(r, folder) {
			once.Do(func() { close(held) })
			<-release
		}
	})
	t.Cleanup(func() { closeOnce(release) })
	// Signaled once the daemon has the lookup: the thread waits in the
	// kernel for its answer.
	done := testkit.SignalDuring(t, held, "the lookup sent no listing", func() error {
		var st unix.Stat_t
		return unix.Stat(e.Path("shared", "held", "x"), &st)
	})
	if err := testkit.ResultWithin(t, done, 10*time.Second, "stat interrupted by a signal did not return"); !errors.Is(err, syscall.EINTR) {
		t.Errorf("stat interrupted by a signal: %v, want EINTR", err)
	}
	closeOnce(release)
	if _, err := os.Stat(e.Path("shared", "held", "x")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("stat once the listing came: %v, want ENOENT", err)
	}
}

// closeOnce closes c unless it is closed.
func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// In a black hole, each change that waits on the service gives up with EIO
// within the I/O timeout: mkdir, unlink and rmdir (their requests), create
// in a folder whose listing is not cached (the lookup's listing), and the
// whole-file copies of a file on the service (rename, truncate to a size
// other than 0, the first write through an open without O_TRUNC), whose
// content does not come; before the outage, such a copy on a slow link
// outlasts the I/O timeout, as content comes. What needs nothing from the
// service answers at once: a create in a listed folder, a truncate to 0, the
// open itself, the rename of a pending file. Each that gave up logs one
// warning naming what it waited for; after the outage the service holds
// what it held, but for a change whose request it took (which may have
// acted).
func TestBlackHoleBoundsEveryChange(t *testing.T) {
	const ioTimeout = time.Second
	const bound = 2*ioTimeout + time.Second // slack for a loaded machine
	logger, hook := logtest.NewNullLogger()
	e := newEnv(t, envOptions{Log: logger, IOTimeout: ioTimeout, Client: api.Options{IOTimeout: ioTimeout}})
	root := e.root(0)
	for _, name := range []string{"unlinked.txt", "renamed.txt", "truncated.txt", "edited.txt"} {
		e.put(0, root, name, testkit.RandBytes(64<<10, int64(len(name))))
	}
	slow := testkit.RandBytes(1<<20, 9)
	e.put(0, root, "slow.bin", slow)
	e.mkdir(0, root, "empty")
	cold := e.mkdir(0, root, "cold")
	e.put(0, cold, "inside.txt", []byte("listed only after the outage\n"))
	if _, err := os.ReadDir(e.Path("shared")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path("shared", "pending.txt"), []byte("staged here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if err := os.WriteFile(e.Path("shared", "pending2.txt"), []byte("staged here, not sent\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// On a slow link, a whole-file copy that outlasts the I/O timeout goes
	// on while content comes, as a read does.
	rate, unlimited := int64(384<<10), int64(0)
	e.Emu.ChangePlay(emulator.PlayChange{StreamRate: &rate})
	start := time.Now()
	if err := os.Truncate(e.Path("shared", "slow.bin"), 1000); err != nil {
		t.Fatalf("truncate on a slow link: %v after %v", err, time.Since(start))
	}
	if took := time.Since(start); took < ioTimeout {
		t.Fatalf("the copy on a slow link took %v: not slow enough to outlast --io-timeout", took)
	} else {
		t.Logf("truncate of a file on the service on a slow link: %v", took.Round(time.Millisecond))
	}
	e.Emu.ChangePlay(emulator.PlayChange{StreamRate: &unlimited})

	e.Emu.SetOutage(emulator.OutageBlackHole)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	edited, err := os.OpenFile(e.Path("shared", "edited.txt"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open for writing in the black hole: %v", err)
	}
	defer edited.Close()
	for _, c := range []struct {
		name string
		op   func() error
		fail bool // wants EIO or ETIMEDOUT after the I/O timeout; else success at once
	}{
		{"mkdir", func() error { return os.Mkdir(e.Path("shared", "made"), 0o755) }, true},
		{"unlink", func() error { return os.Remove(e.Path("shared", "unlinked.txt")) }, true},
		{"rmdir", func() error { return syscall.Rmdir(e.Path("shared", "empty")) }, true},
		{"create in a folder not listed", func() error {
			return os.WriteFile(e.Path("shared", "cold", "new.txt"), []byte("x"), 0o644)
		}, true},
		{"rename of a file on the service", func() error {
			return os.Rename(e.Path("shared", "renamed.txt"), e.Path("shared", "renamed2.txt"))
		}, true},
		{"truncate of a file on the service", func() error { return os.Truncate(e.Path("shared", "truncated.txt"), 5) }, true},
		{"first write after an open without O_TRUNC", func() error { _, err := edited.WriteAt([]byte("x"), 3); return err }, true},
		{"create in a listed folder", func() error {
			return os.WriteFile(e.Path("shared", "created.txt"), []byte("made in the outage\n"), 0o644)
		}, false},
		{"truncate to 0", func() error { return os.Truncate(e.Path("shared", "truncated.txt"), 0) }, false},
		{"rename of a pending file", func() error {
			return os.Rename(e.Path("shared", "pending2.txt"), e.Path("shared", "pending3.txt"))
		}, false},
	} {
		hook.Reset()
		start := time.Now()
		err := c.op()
		took := time.Since(start)
		t.Logf("%s: %v after %v", c.name, err, took.Round(time.Millisecond))
		timedOut := errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ETIMEDOUT)
		switch {
		case c.fail && !timedOut:
			t.Errorf("%s in the black hole: %v, want EIO or ETIMEDOUT", c.name, err)
		case c.fail && took > bound:
			t.Errorf("%s in the black hole took %v, want at most %v (--io-timeout %v)", c.name, took, bound, ioTimeout)
		case !c.fail && err != nil:
			t.Errorf("%s in the black hole: %v, want success", c.name, err)
		case !c.fail && took > ioTimeout/2:
			t.Errorf("%s in the black hole took %v, want at once", c.name, took)
		}
		var warnings []string
		for _, en := range hook.AllEntries() {
			if en.Level <= logrus.WarnLevel && strings.Contains(en.Message, "io-timeout") {
				warnings = append(warnings, fmt.Sprintf("%s %v", en.Message, en.Data))
			}
		}
		if want := map[bool]int{true: 1, false: 0}[c.fail]; len(warnings) != want || want == 1 && !strings.Contains(warnings[0], "waited_for") {
			t.Errorf("%s: timeout warnings %q, want %d naming what it waited for", c.name, warnings, want)
		}
	}

	e.Emu.SetOutage(emulator.OutageNone)
	edited.Close()
	e.settle()
	for _, name := range []string{"unlinked.txt", "renamed.txt", "edited.txt", "empty", "cold/inside.txt", "pending.txt"} {
		if _, ok := e.serviceFile(name); !ok {
			t.Errorf("shared/%s is gone from the service after a change of it gave up", name)
		}
	}
	for _, name := range []string{"renamed2.txt", "cold/new.txt"} {
		if _, ok := e.serviceFile(name); ok {
			t.Errorf("shared/%s is on the service: the change gave up", name)
		}
	}
	// A request the service took before the outage may have acted anyway
	// (the emulator makes a folder whose request it held, once the outage
	// ends): the mount shows what the service holds once it lists again.
	_, made := e.serviceFile("made")
	t.Logf("the mkdir that gave up made the folder on the service after the outage: %v", made)
	e.Store.Dirs.DropAll()
	time.Sleep(1100 * time.Millisecond) // past the kernel's entry time
	if _, err := os.Stat(e.Path("shared", "made")); (err == nil) != made {
		t.Errorf("after a refresh, stat of the folder whose mkdir gave up: %v; on the service: %v", err, made)
	}
	if got := string(e.serviceBytes("created.txt")); got != "made in the outage\n" {
		t.Errorf("the file created in the outage is %q on the service", got)
	}
	if got := e.serviceBytes("slow.bin"); !bytes.Equal(got, slow[:1000]) {
		t.Errorf("the file truncated on a slow link has %d bytes on the service, want its first 1000", len(got))
	}
	if got := e.serviceBytes("truncated.txt"); len(got) != 0 {
		t.Errorf("the file truncated to 0 in the outage has %d bytes on the service", len(got))
	}
	if got := string(e.serviceBytes("pending3.txt")); got != "staged here, not sent\n" {
		t.Errorf("the pending file renamed in the outage is %q on the service", got)
	}
}

// rangeOf parses a request's Range header "bytes=a-b" into [a, b+1).
func rangeOf(r *http.Request) (start, end int64, ok bool) {
	v, found := strings.CutPrefix(r.Header.Get("Range"), "bytes=")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(v, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return start, last + 1, true
}

// A sequential read fetches ahead in requests of 8 MiB (after a first one
// of the 1 MiB block read), never more than --read-ahead past what the
// program reads (and the kernel's own 1 MiB), and every byte once.
func TestSequentialReadAheadSizes(t *testing.T) {
	const readAhead, chunk, size = 16 << 20, 8 << 20, 40 << 20
	e := newEnv(t, envOptions{ReadAhead: readAhead})
	data := testkit.RandBytes(size, 3)
	e.put(0, e.root(0), "seq.bin", data)
	var mu sync.Mutex
	var ranges [][2]int64
	var reading int64 // guarded by mu: where the read in progress ends
	var past int64    // guarded by mu: the farthest a request went past it
	e.setHook(func(r *http.Request, answered bool) {
		if answered || r.Method != http.MethodGet {
			return
		}
		if start, end, ok := rangeOf(r); ok {
			mu.Lock()
			ranges = append(ranges, [2]int64{start, end})
			past = max(past, end-reading)
			mu.Unlock()
		}
	})
	before := e.Emu.Stats().Objects
	f, err := os.Open(e.Path("shared", "seq.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var got []byte
	for off := int64(0); off < size; off += int64(len(buf)) {
		mu.Lock()
		reading = off + int64(len(buf))
		mu.Unlock()
		n, err := f.ReadAt(buf, off)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the sequential read differs from the content")
	}
	after := e.Emu.Stats().Objects
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	t.Logf("range requests %v; farthest past the read: %d MiB", ranges, past>>20)
	if sent := after.BytesOut - before.BytesOut; sent != size {
		t.Errorf("the object store sent %d bytes for a %d-byte file read once", sent, size)
	}
	for i, r := range ranges {
		n := r[1] - r[0]
		if n > chunk || i > 0 && r[1] < size && n != chunk || i > 0 && r[0] != ranges[i-1][1] {
			t.Errorf("range request %d is [%d, %d): %d bytes, want %d (the first may be smaller, the last ends the file)", i, r[0], r[1], n, chunk)
		}
	}
	if past > readAhead+1<<20 { // the kernel reads up to 1 MiB ahead of the program
		t.Errorf("a request went %d bytes past the read in progress, want at most --read-ahead %d and the kernel's 1 MiB", past, readAhead)
	}
}

// An open for writing without O_TRUNC of a file on the service fetches
// nothing; its first write fetches the whole content (the write waits for
// it), once, into the staging copy; a file whose content is in the cache is
// copied from there, with no request. An open closed without a write stages
// and sends nothing.
func TestOpenForWritingFetchesAtTheFirstWrite(t *testing.T) {
	const size = 6 << 20
	e := newEnv(t, envOptions{})
	data := testkit.RandBytes(size, 4)
	e.put(0, e.root(0), "cold.bin", data)
	e.put(0, e.root(0), "warm.bin", data)
	untouched := e.put(0, e.root(0), "untouched.bin", data)
	if b, err := os.ReadFile(e.Path("shared", "warm.bin")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("reading warm.bin: %v", err)
	}
	sent := func() int64 { return e.Emu.Stats().Objects.BytesOut }
	urls := func() int64 { return e.Requests("POST /files/download") }

	before, beforeURLs := sent(), urls()
	f, err := os.OpenFile(e.Path("shared", "cold.bin"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, u := sent()-before, urls()-beforeURLs; n != 0 || u != 0 {
		t.Errorf("the open for writing fetched %d bytes (%d URL requests), want none", n, u)
	}
	if _, err := f.WriteAt([]byte("EDIT"), 100); err != nil {
		t.Fatal(err)
	}
	if n := sent() - before; n != size {
		t.Errorf("the first write fetched %d bytes, want the whole file's %d", n, size)
	}
	if _, err := f.WriteAt([]byte("MORE"), 5<<20); err != nil {
		t.Fatal(err)
	}
	if n := sent() - before; n != size {
		t.Errorf("after a second write %d bytes fetched, want %d: the content once", n, size)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	before, beforeURLs = sent(), urls()
	g, err := os.OpenFile(e.Path("shared", "warm.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.WriteAt([]byte("EDIT"), 100); err != nil {
		t.Fatal(err)
	}
	if n, u := sent()-before, urls()-beforeURLs; n != 0 || u != 0 {
		t.Errorf("the first write to a file whose content is cached fetched %d bytes (%d URL requests), want none", n, u)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	// Opened and closed without a write: nothing staged, nothing sent.
	before = sent()
	h, err := os.OpenFile(e.Path("shared", "untouched.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if n := sent() - before; n != 0 {
		t.Errorf("an open for writing closed without a write fetched %d bytes", n)
	}
	if names := e.stagedNames(); slices.Contains(names, "untouched.bin") {
		t.Errorf("staged %q: the file opened for writing and closed without a write among them", names)
	}
	e.settle()
	if f, ok := e.serviceFile("untouched.bin"); !ok || f.ID != untouched {
		t.Errorf("the file opened for writing and closed without a write was uploaded again (%+v)", f)
	}
	want := slices.Clone(data)
	copy(want[100:], "EDIT")
	if got := e.serviceBytes("warm.bin"); !bytes.Equal(got, want) {
		t.Error("warm.bin on the service is not the content with the edit")
	}
	copy(want[5<<20:], "MORE")
	if got := e.serviceBytes("cold.bin"); !bytes.Equal(got, want) {
		t.Error("cold.bin on the service is not the content with the edits")
	}
}

// A descriptor opened for reading before the file changed. Changed here
// (the same inode, as on a disk): it reads what every descriptor reads, the
// change being written, then the version uploaded, also where the kernel no
// longer holds the pages, and a new open reads the same (before, the old
// descriptor filled the kernel's pages with the version it opened, and new
// opens read those); renamed here, it reads on. Changed elsewhere (another
// inode): it reads the version it opened while the cache holds it, also once
// the mount listed the new version, which new opens read.
func TestReaderOpenedBeforeAChange(t *testing.T) {
	e := newEnv(t, envOptions{})
	v1 := testkit.RandBytes(3<<20, 5)
	v2 := "the second version, written here\n"
	for _, name := range []string{"rewritten.bin", "edited.bin", "renamed.bin", "replaced.bin"} {
		e.put(0, e.root(0), name, v1)
	}
	open := func(name string) *os.File {
		t.Helper()
		f, err := os.Open(e.Path("shared", name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.ReadAt(make([]byte, 4096), 0); err != nil {
			t.Fatal(err)
		}
		return f
	}
	// readAll reads f through the kernel's pages, then again with them dropped.
	readAll := func(f *os.File, name string, want []byte) {
		t.Helper()
		for _, drop := range []bool{false, true} {
			if drop {
				if err := fadviseDontNeed(f); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, len(v1)+1)
			n, err := f.ReadAt(got, 0)
			if err != nil && err != io.EOF || !bytes.Equal(got[:n], want) {
				t.Errorf("%s, pages dropped %v: the descriptor opened before reads %d bytes (%v), want %d (first %q, want %q)",
					name, drop, n, err, len(want), got[:min(n, 12)], want[:min(len(want), 12)])
			}
		}
	}

	// Rewritten here (O_TRUNC), uploaded.
	f := open("rewritten.bin")
	writeSync(t, e.Path("shared", "rewritten.bin"), os.O_WRONLY|os.O_TRUNC, v2)
	e.settle()
	readAll(f, "rewritten.bin", []byte(v2))
	if got := readFile(t, e.Path("shared", "rewritten.bin")); got != v2 {
		t.Errorf("a new open of the file rewritten here reads %q, want %q", got[:min(len(got), 12)], v2)
	}

	// Edited here, the writer still open: its bytes show, pending.
	f = open("edited.bin")
	w, err := os.OpenFile(e.Path("shared", "edited.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteAt([]byte("EDIT"), 2<<20); err != nil {
		t.Fatal(err)
	}
	edited := slices.Clone(v1)
	copy(edited[2<<20:], "EDIT")
	readAll(f, "edited.bin", edited)
	w.Close()

	// Renamed here: it reads on.
	f = open("renamed.bin")
	if err := os.Rename(e.Path("shared", "renamed.bin"), e.Path("shared", "moved.bin")); err != nil {
		t.Fatal(err)
	}
	readAll(f, "moved.bin", v1)
	e.settle()
	readAll(f, "moved.bin", v1)

	// Replaced elsewhere and listed here since: another inode.
	f = open("replaced.bin")
	e.apiReplace("replaced.bin", v2)
	e.Store.Dirs.DropAll()
	time.Sleep(1100 * time.Millisecond) // past the kernel's entry time
	if got := readFile(t, e.Path("shared", "replaced.bin")); got != v2 {
		t.Errorf("a new open of the file replaced elsewhere reads %q, want %q", got[:min(len(got), 12)], v2)
	}
	readAll(f, "replaced.bin", v1)
}

// rmdir checks a fresh listing of the folder, then deletes it on the
// service, which deletes folders whole: a file another client adds between
// that listing and the delete goes with the folder. The file is put at the
// emulator while the listing's answer is held.
func TestRmdirDeletesAFileAddedAfterItsListing(t *testing.T) {
	e := newEnv(t, envOptions{})
	folder := e.mkdir(0, e.root(0), "emptied")
	if _, err := os.ReadDir(e.Path("shared", "emptied")); err != nil { // listed (empty) before
		t.Fatal(err)
	}
	var once sync.Once
	type result struct {
		id  int64
		err error
	}
	added := make(chan result, 1)
	e.setHook(func(r *http.Request, answered bool) {
		if answered && isListing(r, folder) {
			once.Do(func() {
				id, err := e.Emu.CreateFile(e.Org, 0, folder, "added meanwhile.txt", strings.NewReader("another client's file\n"))
				added <- result{id, err}
			})
		}
	})
	if err := syscall.Rmdir(e.Path("shared", "emptied")); err != nil {
		t.Fatalf("rmdir: %v", err)
	}
	e.setHook(nil)
	var file int64
	select {
	case r := <-added:
		if r.err != nil {
			t.Fatalf("adding a file to the folder: %v", r.err)
		}
		file = r.id
	default:
		t.Fatal("rmdir did not list the folder afresh")
	}
	if _, ok := e.serviceFile("emptied"); ok {
		t.Error("the folder is still on the service")
	}
	if _, err := e.Client.FileURL(t.Context(), file); !api.IsNotFound(err) {
		t.Errorf("the file added between the listing and the delete: %v, want not found (deleted with the folder)", err)
	}
}

// statfs of an area with entries whose quota the service does not tell (the
// listing that carries it fails) shows a large, free disk (4 TiB), and the
// quota once the service tells it.
func TestStatfsWithAnUnknownQuotaIsALargeFreeDisk(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "entry.txt", []byte("an area with an entry\n"))
	if _, err := os.ReadDir(e.Path("shared")); err != nil {
		t.Fatal(err)
	}
	statfs := func() (size, free int64) {
		t.Helper()
		var st syscall.Statfs_t
		if err := syscall.Statfs(e.Path("shared"), &st); err != nil {
			t.Fatal(err)
		}
		return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize
	}
	// The root's own record, which carries the quota, is listed by the
	// root's id: that listing is refused.
	e.Emu.InjectError("GET /files", api.CodeForbidden, 1)
	if size, free := statfs(); size != 4<<40 || free != 4<<40 {
		t.Errorf("statfs with the quota unknown: size %d, free %d; want a free 4 TiB disk", size, free)
	}
	if n := e.Emu.Stats().Injected; n != 1 {
		t.Fatalf("%d refusals answered, want the one listing of the root's record", n)
	}
	quota := int64(1 << 30)
	if err := e.Emu.SetStorageQuota(e.Org, 0, quota); err != nil {
		t.Fatal(err)
	}
	if size, _ := statfs(); size != quota {
		t.Errorf("statfs once the service tells the quota: size %d, want %d", size, quota)
	}
}

// GLib takes x-gvfs-notrash from the mount's entry in utab, where mount(8)
// writes the x- options of a mount it makes: gio trash then refuses before
// it looks for .Trash-UID ("Trashing on system internal mounts is not
// supported"), and nothing changes. From an fstab line alone (the mount
// made otherwise) GLib 2.74 takes nothing (it reads fstab's options only
// for a mount entry without any), and the mount's own refusal answers
// (.Trash-UID a file: can-trash FALSE, trash not possible). The
// utab and fstab are the test's, given to GLib through libmount's
// LIBMOUNT_UTAB and LIBMOUNT_FSTAB.
func TestTrashWithANotrashOptionInUtab(t *testing.T) {
	gio, err := exec.LookPath("gio")
	if err != nil {
		t.Fatal("gio is needed (apt-get install libglib2.0-bin)")
	}
	e := newEnv(t, envOptions{})
	data := []byte("kept where it is\n")
	e.put(0, e.root(0), "report.txt", data)
	utab := filepath.Join(t.TempDir(), "utab")
	if err := os.WriteFile(utab, []byte("SRC=orgfs TARGET="+e.Dir+" ROOT=/ OPTS=x-gvfs-notrash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fstab := filepath.Join(t.TempDir(), "fstab")
	if err := os.WriteFile(fstab, []byte("orgfs "+e.Dir+" fuse.orgfs x-gvfs-notrash 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ env, want string }{
		{"LIBMOUNT_UTAB=" + utab, "Trashing on system internal mounts is not supported"},
		{"LIBMOUNT_FSTAB=" + fstab, fmt.Sprintf("Unable to find or create trash directory %s", e.Path(fmt.Sprintf(".Trash-%d", os.Geteuid())))},
	} {
		before := e.changingRequests()
		cmd := exec.Command(gio, "trash", e.Path("shared", "report.txt"))
		cmd.Env = append(os.Environ(), c.env)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("gio trash with %s: %v %s; want %q", c.env, err, out, c.want)
		}
		if after := e.changingRequests(); !sameCounts(before, after) {
			t.Errorf("gio trash with %s sent requests: %v, then %v", c.env, before, after)
		}
		cmd = exec.Command(gio, "info", "-a", "access::can-trash", e.Path("shared", "report.txt"))
		cmd.Env = append(os.Environ(), c.env)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "access::can-trash: FALSE") {
			t.Errorf("gio info -a access::can-trash with %s: %v %s; want FALSE", c.env, err, out)
		}
	}
	if b, err := os.ReadFile(e.Path("shared", "report.txt")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("after gio trash the file reads %q, %v", b, err)
	}
	if !bytes.Equal(e.serviceBytes("report.txt"), data) {
		t.Error("after gio trash the service holds other content")
	}
}
