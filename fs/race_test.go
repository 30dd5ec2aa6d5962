package fs

// Tests of changes racing the end of an upload: the upload's request to
// complete is held, and released while the mount is between two steps of an
// operation (a listing read and a staging lookup), so that the upload ends
// in between, every time.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// uploadRace holds the completion of uploads until release, and releases
// it when a given function of the mount reads a folder's listing from the
// service (once the service answered, its answer fixed), waiting there until
// the upload ended: the operation reading the listing gets one from before
// the upload, and finds the staging after it. (The function is found on the
// stack of the goroutine that started the listing request: cache.Dirs runs a
// listing, which its callers share, on a goroutine of its own.)
type uploadRace struct {
	e       *testEnv
	held    chan struct{} // closed when an upload's completion is held
	release chan struct{} // closed to let it go
	once    sync.Once

	mu          sync.Mutex
	parent      int64  // the folder whose listing releases the upload; -1: none
	in          string // by the function of this name
	completes   int    // completions the service answered
	interleaved int    // listings by in answered while a completion was held, which the upload's end followed before they went on
}

func newUploadRace(e *testEnv) *uploadRace {
	u := &uploadRace{e: e, held: make(chan struct{}), release: make(chan struct{}), parent: -1}
	// The listing awaited must be the operation's own: the mount's refetch
	// of a dropped listing (fs/kernel.go) would list the folder first.
	e.Store.Dirs.Watch(nil)
	var heldOnce sync.Once
	e.setHook(func(r *http.Request, answered bool) {
		switch {
		case isComplete(r) && !answered:
			heldOnce.Do(func() { close(u.held) })
			<-u.release
		case isComplete(r):
			u.mu.Lock()
			u.completes++
			u.mu.Unlock()
		case answered && r.Method == http.MethodGet:
			u.mu.Lock()
			listing := u.parent >= 0 && isListing(r, u.parent)
			match := listing && startedIn(u.in)
			if match {
				u.parent = -1
			}
			u.mu.Unlock()
			switch {
			case match:
				u.releaseAndCount()
			case listing:
				// Read by another operation (the kernel's lookups of a
				// rename's target): not kept, as after a refresh (DropAll,
				// with no watcher to tell the kernel), so that the one
				// awaited reads it again.
				e.Store.Dirs.DropAll()
			}
		}
	})
	e.T.Cleanup(u.releaseOnly)
	return u
}

// startedIn reports whether function fn is on the stack of this goroutine or
// of the goroutine that started it (a listing cache.Dirs runs for its
// callers), as runtime.Stack gives them.
func startedIn(fn string) bool {
	buf := make([]byte, 64<<10)
	own := buf[:runtime.Stack(buf, false)]
	if bytes.Contains(own, []byte(fn)) {
		return true
	}
	_, creator, ok := bytes.Cut(own, []byte("\ncreated by "))
	if !ok {
		return false
	}
	_, id, ok := bytes.Cut(creator, []byte(" in goroutine "))
	if !ok {
		return false
	}
	id, _, _ = bytes.Cut(id, []byte("\n"))
	all := make([]byte, 8<<20)
	all = all[:runtime.Stack(all, true)]
	for _, g := range bytes.Split(all, []byte("\n\n")) {
		if bytes.HasPrefix(g, []byte("goroutine "+string(id)+" [")) {
			return bytes.Contains(g, []byte(fn))
		}
	}
	return false
}

func (u *uploadRace) releaseOnly() { u.once.Do(func() { close(u.release) }) }

// releaseAndWait lets the held upload complete and waits until it ended
// (the Store's hook ran, and the staged copy is retired unless still used).
func (u *uploadRace) releaseAndWait() {
	u.releaseOnly()
	deadline := time.Now().Add(10 * time.Second)
	for u.e.Store.Staging.Stats().Uploading > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// releaseAndCount is releaseAndWait for the awaited listing, its answer
// in: it counts the interleaving when a completion was held until then and
// answered after, and no upload is left under way.
func (u *uploadRace) releaseAndCount() {
	u.mu.Lock()
	before := u.completes
	u.mu.Unlock()
	held := false
	select {
	case <-u.held:
		held = true
	default:
	}
	u.releaseAndWait()
	u.mu.Lock()
	if held && u.completes > before && u.e.Store.Staging.Stats().Uploading == 0 {
		u.interleaved++
	}
	u.mu.Unlock()
}

// checkInterleaved fails the test unless the interleaving it is named for
// happened once: the awaited listing was answered while the upload's
// completion was held, and the upload ended before the listing went on.
// Without it a race test is a plain test that passes as well.
func (u *uploadRace) checkInterleaved() {
	u.e.T.Helper()
	u.mu.Lock()
	n, in := u.interleaved, u.in
	u.mu.Unlock()
	if n != 1 {
		u.e.T.Errorf("the upload ended inside the listing read by %s %d times, want 1: the race did not happen", in, n)
	}
}

// waitHeld waits until an upload's completion is held.
func (u *uploadRace) waitHeld() {
	select {
	case <-u.held:
	case <-time.After(20 * time.Second):
		u.e.T.Fatal("no upload reached its completion")
	}
}

// releaseAtListing arms the release at the listing of folder parent read by
// function in (e.g. "fs.(*dirNode).Rename("), the folder dropped from the
// cache so that it is read from the service.
func (u *uploadRace) releaseAtListing(parent int64, in string) {
	u.e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}, ID: parent})
	u.mu.Lock()
	u.parent, u.in = parent, in
	u.mu.Unlock()
}

// Issue item 5: mv of a file whose new version's upload ends while the
// rename reads the listing. The listing read is from before the upload, the
// staging lookup after it: the rename copied the previous version (from the
// content cache) to the new name, left the latest under the old one, and
// its deletion of the old id answered 404.
func TestRenameAsTheUploadEnds(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.mkdir(0, e.root(0), "d")
	v1, v2 := testkit.RandBytes(30000, 1), testkit.RandBytes(20000, 2)
	e.put(0, d, "a.txt", v1)
	if b, err := os.ReadFile(e.Path("shared", "d", "a.txt")); err != nil || !bytes.Equal(b, v1) {
		t.Fatalf("reading v1: %v", err) // and v1 is in the content cache
	}
	u := newUploadRace(e)
	if err := os.WriteFile(e.Path("shared", "d", "a.txt"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	u.waitHeld()
	u.releaseAtListing(d, "fs.(*dirNode).Rename(")
	if err := os.Rename(e.Path("shared", "d", "a.txt"), e.Path("shared", "d", "b.txt")); err != nil {
		t.Fatalf("rename: %v", err)
	}
	u.checkInterleaved()
	e.settle()
	if b, err := os.ReadFile(e.Path("shared", "d", "b.txt")); err != nil || !bytes.Equal(b, v2) {
		t.Errorf("b.txt in the mount: %d bytes (v1 %v), %v; want v2", len(b), bytes.Equal(b, v1), err)
	}
	if got := e.serviceBytes("d/b.txt"); !bytes.Equal(got, v2) {
		t.Errorf("b.txt on the service: %d bytes (v1 %v), want v2", len(got), bytes.Equal(got, v1))
	}
	if _, ok := e.serviceFile("d/a.txt"); ok {
		t.Errorf("a.txt is still on the service")
	}
	if names := fstest.ListNames(t, e.Path("shared", "d")); !slices.Equal(names, []string{"b.txt"}) {
		t.Errorf("the mount lists %v, want [b.txt]", names)
	}
}

// mv of a new file while its first upload ends: in neither the listing read
// before the upload nor the staging after it, the rename answered ENOENT
// (the model test's "rename ... ENOENT"). When the rename found it staged,
// it could still be retired before the move, with the same answer.
func TestRenameNewFileAsItsUploadEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   string // the folder whose listing the upload ends in
	}{
		{"listing of the source", "d1"},
		{"listing of the target, after the staging lookup", "d2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			ids := map[string]int64{"d1": e.mkdir(0, e.root(0), "d1"), "d2": e.mkdir(0, e.root(0), "d2")}
			data := testkit.RandBytes(20000, 3)
			os.ReadDir(e.Path("shared", "d1"))
			os.ReadDir(e.Path("shared", "d2"))
			u := newUploadRace(e)
			if err := os.WriteFile(e.Path("shared", "d1", "a.txt"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			u.waitHeld()
			u.releaseAtListing(ids[tc.at], "fs.(*dirNode).Rename(")
			if err := os.Rename(e.Path("shared", "d1", "a.txt"), e.Path("shared", "d2", "b.txt")); err != nil {
				t.Fatalf("rename: %v", err)
			}
			u.checkInterleaved()
			e.settle()
			if got := e.serviceBytes("d2/b.txt"); !bytes.Equal(got, data) {
				t.Errorf("d2/b.txt on the service: %d bytes, want %d", len(got), len(data))
			}
			if _, ok := e.serviceFile("d1/a.txt"); ok {
				t.Errorf("d1/a.txt is still on the service")
			}
		})
	}
}

// A new file whose upload ends while its folder is listed: the listing read
// is from before the upload, the pending files after it, and the file was
// in neither (missing from readdir, ENOENT on lookup).
func TestNewFileListedAsItsUploadEnds(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.mkdir(0, e.root(0), "d")
	data := testkit.RandBytes(20000, 4)
	os.ReadDir(e.Path("shared", "d"))
	u := newUploadRace(e)
	if err := os.WriteFile(e.Path("shared", "d", "n.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	u.waitHeld()
	u.releaseAtListing(d, "fs.(*dirNode).Readdir(")
	if names := fstest.ListNames(t, e.Path("shared", "d")); !slices.Contains(names, "n.txt") {
		t.Errorf("d/ lists %q, without n.txt", names)
	}
	u.checkInterleaved()
	if b, err := os.ReadFile(e.Path("shared", "d", "n.txt")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("n.txt: %d bytes, %v", len(b), err)
	}
}

// A file truncated, then uploaded while its folder's listing is not cached:
// the node dropped its staged copy for a placeholder record (size 0), which
// the kernel then took for the file's size. Reads gave nothing and an
// O_APPEND write went to offset 0 (the model test's seeds 2 and 12).
const oPath = 0o10000000 // O_PATH (Linux), which package syscall does not name

func TestUploadedFileKeepsItsSizeWithoutListing(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: time.Hour})
	d := e.mkdir(0, e.root(0), "d")
	v1 := testkit.RandBytes(10000, 5)
	e.put(0, d, "f", v1)
	p := e.Path("shared", "d", "f")
	// An O_PATH descriptor keeps the inode: the later stat and opens go to
	// the same node, without a lookup.
	fd, err := syscall.Open(p, oPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	same := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := os.Truncate(p, 5000); err != nil {
		t.Fatal(err)
	}
	e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}, ID: d})
	drain := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Store.Staging.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	drain()
	time.Sleep(1100 * time.Millisecond) // the attributes the truncation gave expire
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Size != 5000 {
		t.Errorf("stat after the upload: size %d (%v), want 5000", st.Size, err)
	}
	if b, err := os.ReadFile(same); err != nil || !bytes.Equal(b, v1[:5000]) {
		t.Errorf("read after the upload: %d bytes, %v; want 5000", len(b), err)
	}
	f, err := os.OpenFile(same, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("tail")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	drain()
	want := append(slices.Clone(v1[:5000]), "tail"...)
	if got := e.serviceBytes("d/f"); !bytes.Equal(got, want) {
		t.Errorf("after the append, the service has %d bytes (starts with the tail: %v), want %d", len(got), bytes.HasPrefix(got, []byte("tail")), len(want))
	}
}

// rm of a file whose upload is completing: the removal cancels the upload,
// but the service has completed it already and the client sees only the
// cancellation. The new version stayed on the service (and came back at the
// next mount): the removal deleted the old one only, and the staging
// nothing, the upload having failed.
func TestUnlinkAsTheUploadCompletes(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.mkdir(0, e.root(0), "d")
	e.put(0, d, "a.txt", testkit.RandBytes(30000, 6))
	p := e.Path("shared", "d", "a.txt")
	os.ReadDir(e.Path("shared", "d"))
	unlinked := make(chan struct{})
	var once sync.Once
	e.setHook(func(r *http.Request, answered bool) {
		if !isComplete(r) || answered {
			return
		}
		once.Do(func() {
			// The service completes the upload (the request sent on the
			// side)...
			body, err := r.GetBody()
			if err != nil {
				t.Errorf("the completion's body: %v", err)
				return
			}
			side := r.Clone(context.Background())
			side.Body = body
			resp, err := e.hooks.base.RoundTrip(side)
			if err != nil {
				t.Errorf("completing on the side: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// ... then rm cancels the upload, whose own request then fails
			// with the cancellation, unsent.
			errc := make(chan error, 1)
			go func() { errc <- os.Remove(p) }()
			if err := <-errc; err != nil {
				t.Errorf("rm: %v", err)
			}
			close(unlinked)
		})
	})
	if err := os.WriteFile(p, testkit.RandBytes(20000, 7), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-unlinked:
	case <-time.After(20 * time.Second):
		t.Fatal("the upload did not complete")
	}
	// The upload's attempt ends after the rm (no longer counted as staged):
	// wait for the service, a while.
	testkit.WaitFor(t, 5*time.Second, "a.txt to leave the service after rm", func() bool {
		_, ok := e.serviceFile("d/a.txt")
		return !ok
	})
}
