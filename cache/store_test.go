package cache

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
	"github.com/orgfs/orgfs/writeback"
)

func openTestStore(t *testing.T, fake *fakeclient.Client) *Store {
	t.Helper()
	s, err := OpenStore(StoreOptions{Dir: t.TempDir(), Client: fake, DirCacheTime: time.Hour,
		WriteBack: 10 * time.Millisecond, Log: testkit.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Each change made through the Store reaches the service and leaves the
// caches as a fresh listing would show them, with no listing request.
func TestStoreKeepsTheCachesInStep(t *testing.T) {
	fake := fakeclient.New(t)
	shared := place.Area{Kind: place.Shared}
	root := place.DirKey{Area: shared}
	old := fake.Put(shared, 0, "old.txt", []byte("old content"))
	s := openTestStore(t, fake)
	ctx := context.Background()
	if _, err := s.Dirs.List(ctx, root); err != nil {
		t.Fatal(err)
	}
	lists := fake.Count("SharedFiles")

	d, err := s.Mkdir(ctx, root, "new", "shared/new", Attr{})
	if err != nil || !d.IsDir() {
		t.Fatalf("Mkdir: %+v %v", d, err)
	}
	if l, ok := s.Dirs.Cached(place.DirKey{Area: shared, ID: d.ID}); !ok || len(l.Files) != 0 {
		t.Fatal("the new folder is not known to be empty")
	}

	// A copy of old.txt staged as new/copy.txt, superseding it: old.txt
	// leaves the listing at once and the service after the upload.
	to := place.Target{Area: shared, ParentID: d.ID, Name: "copy.txt"}
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Attrs.SetFile(old, TimeAttr(when))
	st, err := s.StageCopy(ctx, to, old, 0, old)
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(when) {
		t.Fatalf("the copy shows %v, want the time set on the original %v", st.ModTime(), when)
	}
	s.Attrs.SetPending(to, TimeAttr(when))
	s.Supersede(root, old, st)
	st.CloseWriter()
	if err := s.Staging.Flush(ctx, st); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the old file's deletion", func() bool { return fake.Count("DeleteFile") == 1 })
	rootNames := func() []string {
		l, _ := s.Dirs.Cached(root)
		var out []string
		for _, f := range l.Files {
			out = append(out, f.Name)
		}
		return out
	}
	if got := rootNames(); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("root listing %v, want [new]", got)
	}
	l, _ := s.Dirs.Cached(place.DirKey{Area: shared, ID: d.ID})
	if len(l.Files) != 1 || l.Files[0].Name != "copy.txt" || l.Files[0].Size != int64(len("old content")) {
		t.Fatalf("after the upload the folder lists %+v", l.Files)
	}
	if got := s.Attrs.Shown(l.Files[0]).ModTime(l.Files[0].LastModified); !got.Equal(when) {
		t.Fatalf("the uploaded copy shows %v, want %v", got, when)
	}

	// Delete a file and a folder: gone from the listing and the content cache.
	if err := s.Delete(ctx, place.DirKey{Area: shared, ID: d.ID}, l.Files[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, root, d); err != nil {
		t.Fatal(err)
	}
	if got := rootNames(); len(got) != 0 {
		t.Fatalf("root listing after the deletes %v", got)
	}
	if _, ok := s.Dirs.Cached(place.DirKey{Area: shared, ID: d.ID}); ok {
		t.Fatal("a deleted folder's listing is still cached")
	}
	if err := s.Delete(ctx, root, old); err != nil { // already gone: deleted
		t.Fatalf("deleting a file the service no longer has: %v", err)
	}
	if n := fake.Count("SharedFiles"); n != lists {
		t.Fatalf("%d listing requests after the changes, want none", n-lists)
	}
	if n := fake.HeldBytes(); n != 0 {
		t.Fatalf("the service still holds %d bytes", n)
	}
}

// A read-only store has no staging; a store needs a client.
func TestOpenStoreOptions(t *testing.T) {
	s, err := OpenStore(StoreOptions{Dir: t.TempDir(), Client: fakeclient.New(t), ReadOnly: true})
	if err != nil || s.Staging != nil {
		t.Fatalf("read-only: %v, staging %v", err, s.Staging)
	}
	s.Close()
	if _, err := OpenStore(StoreOptions{Dir: filepath.Join(t.TempDir(), "x")}); err == nil {
		t.Fatal("a store without a client opened")
	}
}

// A big file goes up in as many parts at once as --transfers, and all the
// uploads together keep at most 4x as many parts in flight.
func TestStoreUploadsInTransfersParts(t *testing.T) {
	fake := fakeclient.New(t)
	s, err := OpenStore(StoreOptions{Dir: t.TempDir(), Client: fake, WriteBack: time.Millisecond, Transfers: 6, Log: testkit.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st, err := s.Staging.Create(place.Target{Area: place.Area{Kind: place.Shared}, Name: "big.bin"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.File().WriteAt([]byte("content"), 0); err != nil {
		t.Fatal(err)
	}
	st.Touch()
	st.CloseWriter()
	testkit.WaitFor(t, 10*time.Second, "the upload", func() bool { return s.Staging.Stats().Uploaded == 1 })
	reqs := fake.Uploads()
	if len(reqs) != 1 || reqs[0].Parallel != 6 || reqs[0].Slots == nil {
		t.Fatalf("upload requests %+v, want one with Parallel 6 and shared slots", reqs)
	}
	if !reqs[0].Slots.TryAcquire(24) || reqs[0].Slots.TryAcquire(1) {
		t.Error("the shared slots are not 24 (4 x 6)")
	}
}

// A file renamed away stays away after a restart (a crash, or an unmount
// with its successor not yet uploaded): its old version is listed on the
// service until the new name is up, and the mount showed it back at its old
// name until then (the model test met it after a SIGKILL: a name renamed
// away was "in the mount only").
func TestStoreRenamedAwayStaysAwayAfterARestart(t *testing.T) {
	fake := fakeclient.New(t)
	shared := place.Area{Kind: place.Shared}
	root := place.DirKey{Area: shared}
	old := fake.Put(shared, 0, "f1", []byte("v1"))
	dir := t.TempDir()
	open := func() *Store {
		s, err := OpenStore(StoreOptions{Dir: dir, Client: fake, DirCacheTime: time.Hour, WriteBack: time.Hour, Log: testkit.Log(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	if got := names(t, s.Dirs, root); !slices.Equal(got, []string{"f1"}) {
		t.Fatalf("listed %v", got)
	}
	renameAway(t, s, old, "g")
	s.Close()

	release := fake.Hold("Upload") // the restart resumes g's upload at once: held
	s = open()
	t.Cleanup(func() { release(); s.Close() })
	if s.Staging.Lookup(place.Target{Area: shared, Name: "g"}) == nil {
		t.Fatal("g is not staged after the restart")
	}
	if got := names(t, s.Dirs, root); len(got) != 0 {
		t.Fatalf("listed %v after the restart: the name renamed away is back", got)
	}
}

// renameAway renames service file old, the only file of the shared root,
// to name as the mount does (mv f1 g: a staged copy that deletes it once
// up), and checks that the root lists nothing on the service then.
func renameAway(t *testing.T, s *Store, old api.File, name string) *writeback.Staged {
	t.Helper()
	root := place.DirKey{Area: place.Area{Kind: place.Shared}}
	st, err := s.StageCopy(context.Background(), place.Target{Area: root.Area, Name: name}, old, 0, old)
	if err != nil {
		t.Fatal(err)
	}
	s.Supersede(root, old, st)
	st.CloseWriter()
	if got := names(t, s.Dirs, root); len(got) != 0 {
		t.Fatalf("listed %v after the rename, want nothing on the service but the staged %s", got, name)
	}
	return st
}

// A file unlinked just as its upload ends (after the mount was told of the
// upload, before the staging settled it) is deleted from the service and
// shows in no listing: the unlink looked at the folder before the upload's
// version was put in it, and the listing kept that version once the
// staging deleted it (readdir listed it and its open answered ENOENT: the
// model test met it under load).
func TestStoreFileUnlinkedAsItsUploadEndsLeavesTheListing(t *testing.T) {
	fake := fakeclient.New(t)
	shared := place.Area{Kind: place.Shared}
	root := place.DirKey{Area: shared}
	s := openTestStore(t, fake)
	ctx := context.Background()
	if _, err := s.Dirs.List(ctx, root); err != nil {
		t.Fatal(err)
	}
	tg := place.Target{Area: shared, Name: "f"}
	st, err := s.Staging.Create(tg, 0)
	if err != nil {
		t.Fatal(err)
	}
	uploaded := make(chan api.File, 1)
	s.afterUploaded = func(f api.File) {
		s.Staging.Remove(st) // the unlink lands now
		uploaded <- f
	}
	if _, err := st.File().WriteAt([]byte("gone"), 0); err != nil {
		t.Fatal(err)
	}
	st.Touch()
	st.CloseWriter()
	s.Staging.Flush(ctx, st) // removed meanwhile: its error is no matter
	var up api.File
	select {
	case up = <-uploaded:
	case <-time.After(10 * time.Second):
		t.Fatal("no upload")
	}
	testkit.WaitFor(t, 5*time.Second, "the upload's deletion", func() bool {
		return !fake.Has(up.ID)
	})
	l, err := s.Dirs.List(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range l.Files {
		t.Errorf("the listing shows %s (%d), deleted from the service", f.Name, f.ID)
	}
}

// heldReads is a read-only store whose range requests the fake service holds
// (none is ever answered): a test counts the fetches its reads start.
type heldReads struct {
	t       *testing.T
	fake    *fakeclient.Client
	s       *Store
	ctx     context.Context
	reads   sync.WaitGroup
	readers []*Reader
}

func newHeldReads(t *testing.T, transfers int) *heldReads {
	h := &heldReads{t: t, fake: fakeclient.New(t)}
	s, err := OpenStore(StoreOptions{Dir: t.TempDir(), Client: h.fake, Transfers: transfers, ReadOnly: true, Log: testkit.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	release := h.fake.Hold("ReadRange")
	ctx, cancel := context.WithCancel(context.Background())
	h.ctx = ctx
	t.Cleanup(func() {
		cancel()
		h.reads.Wait()
		for _, r := range h.readers {
			r.Close()
		}
		release()
		s.Close()
	})
	return h
}

// open puts a file of size bytes on the service and opens it.
func (h *heldReads) open(name string, size int) *Reader {
	f := h.fake.Put(place.Area{Kind: place.Shared}, 0, name, make([]byte, size)) // never read: every request is held
	r, err := h.s.Fetcher.Open(Meta{ID: f.ID, Size: f.Size, ModTime: f.LastModified})
	if err != nil {
		h.t.Fatal(err)
	}
	h.readers = append(h.readers, r)
	return r
}

const mib = 1 << 20

// read asks for r's MiB at off, in the background (it waits for ever).
func (h *heldReads) read(r *Reader, off int64) {
	h.reads.Add(1)
	go func() { defer h.reads.Done(); r.Ready(h.ctx, off, mib) }()
}

// inSequence reads r's first n MiB the kernel's way: each read is asked
// before the one before it is answered, once that one is planned. Each opens
// the window further.
func (h *heldReads) inSequence(r *Reader, n int64) {
	for i := range n {
		h.read(r, i*mib)
		testkit.WaitFor(h.t, 10*time.Second, "the read to be planned", func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.next == (i+1)*mib // where the next read in sequence goes
		})
	}
}

// fetchesInFlight is how many fetches r's file has started and not ended:
// every fetch of a read starts as it is planned.
func fetchesInFlight(r *Reader) int {
	r.ff.mu.Lock()
	defer r.ff.mu.Unlock()
	return r.ff.ops
}

// With the default read-ahead, a file read in sequence keeps as many range
// requests in flight as a file may have (2 x --transfers, of 8 MiB each): a
// window narrower than those requests leaves streams idle, which is what
// held a cold read on a fast link below a 16-stream script (128 MiB, 16
// requests, whatever --transfers).
func TestStoreReadAheadFillsAFilesRequests(t *testing.T) {
	h := newHeldReads(t, 12)
	r := h.open("big.bin", 256<<20)
	h.inSequence(r, 6)
	const want = 24 // 2 x 12
	if n := fetchesInFlight(r); n != want {
		t.Fatalf("%d range requests in flight for one file read in sequence, want %d (2 x --transfers)", n, want)
	}
	testkit.WaitFor(t, 10*time.Second, "the requests to reach the service", func() bool { return h.fake.Count("ReadRange") == want })
}

// While other files are read, a file's read-ahead keeps to its share of the
// transfers: past it, its requests would queue before the other files' reads
// (the transfers go first come, first served), and of 16 files read at once
// some would starve (bench-read's figure 8).
func TestReadAheadKeepsToItsShareWhileOthersRead(t *testing.T) {
	h := newHeldReads(t, 4) // 16 transfers, 8 requests per file at most
	// Three files read at one place each (no read-ahead): a request each.
	for i := range 3 {
		h.read(h.open(fmt.Sprint("other", i), 96<<20), 5*mib)
	}
	testkit.WaitFor(t, 10*time.Second, "the other files' reads", func() bool { return h.fake.Count("ReadRange") == 3 })
	// A fourth read in sequence: its share of 16 transfers among 4 files is
	// 4 requests, where alone it would have 8.
	r := h.open("big.bin", 96<<20)
	h.inSequence(r, 6)
	if n := fetchesInFlight(r); n != 4 {
		t.Fatalf("the file read in sequence has %d range requests in flight beside 3 other files' reads, want 4 (16 transfers / 4 files)", n)
	}
	testkit.WaitFor(t, 10*time.Second, "the requests to reach the service", func() bool { return h.fake.Count("ReadRange") == 3+4 })
}

// A file renamed away whose new name's upload fails for good and is
// discarded (.ctl/uploads discard) shows again at its old name: it is still
// on the service, and the rename that hid it never happened there. So does
// one whose deletion fails once the new name is up, or once it was renamed
// away and then removed: before, they stayed hidden until a restart.
func TestStoreKeptOriginalsShowAgain(t *testing.T) {
	shared := place.Area{Kind: place.Shared}
	root := place.DirKey{Area: shared}
	for _, c := range []struct {
		name string
		fail func(fake *fakeclient.Client)
		undo func(t *testing.T, s *Store, st *writeback.Staged)
	}{
		{"discarded upload", func(fake *fakeclient.Client) {
			fake.FailNext("Upload", &api.Error{Op: "POST /files", HTTPStatus: 400, Code: api.CodeBadRequest, Message: "no"})
		}, func(t *testing.T, s *Store, st *writeback.Staged) {
			testkit.WaitFor(t, 5*time.Second, "the upload's failure", func() bool { return s.Staging.Stats().Failed == 1 })
			if _, err := s.Staging.Discard(st.Target().String()); err != nil {
				t.Fatal(err)
			}
		}},
		{"failed deletion after the upload", func(fake *fakeclient.Client) {
			fake.FailNext("DeleteFile", &api.Error{Op: "DELETE /files", HTTPStatus: 403, Code: api.CodePermissionRequired, Message: "no"})
		}, func(t *testing.T, s *Store, st *writeback.Staged) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.Staging.Flush(ctx, st); err != nil { // g goes up; f1's deletion fails
				t.Fatal(err)
			}
		}},
		{"failed deletion", func(fake *fakeclient.Client) {
			fake.FailNext("DeleteFile", &api.Error{Op: "DELETE /files", HTTPStatus: 403, Code: api.CodePermissionRequired, Message: "no"})
		}, func(t *testing.T, s *Store, st *writeback.Staged) {
			if err := s.Staging.Remove(st); err != nil { // rm g
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := fakeclient.New(t)
			old := fake.Put(shared, 0, "f1", []byte("v1"))
			s := openTestStore(t, fake)
			if got := names(t, s.Dirs, root); !slices.Equal(got, []string{"f1"}) {
				t.Fatalf("listed %v", got)
			}
			c.fail(fake)
			st := renameAway(t, s, old, "g")
			c.undo(t, s, st)
			testkit.WaitFor(t, 5*time.Second, "f1 listed again", func() bool {
				return slices.Contains(names(t, s.Dirs, root), "f1")
			})
			if n := fake.Count("Upload"); n > 1 {
				t.Fatalf("%d uploads", n)
			}
		})
	}
}
