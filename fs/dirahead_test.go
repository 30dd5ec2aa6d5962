package fs

// Tests of the listing read-ahead (cache/dirahead.go) through a real mount:
// a folder read lists its subfolders ahead, two levels down; a reader of a
// folder being listed ahead waits for that request; 0 turns it off; an
// outage stops it.

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// listings counts the listing requests the mount's client sends, by folder
// id (each attempt, retries included).
type listings struct {
	mu sync.Mutex
	n  map[int64]int
}

func watchListings(e *testEnv) *listings {
	l := &listings{n: map[int64]int{}}
	e.setHook(func(r *http.Request, answered bool) {
		if answered || r.Method != http.MethodGet || !isFilesList(r) {
			return
		}
		id, _ := strconv.ParseInt(r.URL.Query().Get("parent_id"), 10, 64)
		l.mu.Lock()
		l.n[id]++
		l.mu.Unlock()
	})
	return l
}

func isFilesList(r *http.Request) bool { return filepath.Base(r.URL.Path) == "files" }

func (l *listings) of(ids ...int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, id := range ids {
		n += l.n[id]
	}
	return n
}

// walkTree is shared/walk: three folders, each with two subfolders, each of
// those with a file and a folder deep/ holding one more.
type walkTree struct {
	walk          int64
	level1        []int64 // walk/fI
	level2, deep  []int64 // walk/fI/gJ, walk/fI/gJ/deep
	files, folder int     // files and folders under walk
}

func makeWalkTree(e *testEnv) walkTree {
	var w walkTree
	w.walk = e.mkdir(0, e.root(0), "walk")
	for i := range 3 {
		f := e.mkdir(0, w.walk, fmt.Sprintf("f%d", i))
		w.level1 = append(w.level1, f)
		for j := range 2 {
			g := e.mkdir(0, f, fmt.Sprintf("g%d", j))
			e.put(0, g, "file.txt", []byte(fmt.Sprintf("%d.%d\n", i, j)))
			deep := e.mkdir(0, g, "deep")
			e.put(0, deep, "x.txt", []byte("x\n"))
			w.level2, w.deep = append(w.level2, g), append(w.deep, deep)
		}
	}
	w.files, w.folder = 2*len(w.level2), len(w.level1)+len(w.level2)+len(w.deep)
	return w
}

// walkFiles walks dir as find does and counts its files and folders.
func walkFiles(t *testing.T, dir string) (files, folders int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == dir:
		case d.IsDir():
			folders++
		default:
			files++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, folders
}

// A folder read (readdir) lists its subfolders and theirs ahead, each once,
// and no deeper; a walk of the tree then makes no listing request of its
// own: each folder's listing is in the cache or on its way when the walk
// gets there (the deepest ones are listed ahead as the walk reads their
// parents).
func TestDirReadAheadListsAWalksFoldersAhead(t *testing.T) {
	e := newEnv(t, envOptions{DirAhead: 64})
	w := makeWalkTree(e)
	seen := watchListings(e)
	if _, err := os.ReadDir(e.Path("shared", "walk")); err != nil {
		t.Fatal(err)
	}
	ahead := len(w.level1) + len(w.level2)
	testkit.WaitFor(t, 10*time.Second, "the subfolders listed ahead", func() bool {
		return e.Store.Dirs.Stats().Ahead >= int64(ahead)
	})
	st := e.Store.Dirs.Stats()
	if st.Ahead != int64(ahead) {
		t.Fatalf("%d listings ahead after walk/ was read, want %d (its subfolders and theirs)", st.Ahead, ahead)
	}
	for _, id := range append(slices.Clone(w.level1), w.level2...) {
		if n := seen.of(id); n != 1 {
			t.Errorf("folder %d listed %d times ahead, want once", id, n)
		}
	}
	if n := seen.of(w.deep...); n != 0 {
		t.Errorf("the folders 3 levels down were listed %d times before the walk got to their parents, want 0", n)
	}

	files, folders := walkFiles(t, e.Path("shared", "walk"))
	if files != w.files || folders != w.folder {
		t.Fatalf("the walk saw %d files and %d folders, want %d and %d", files, folders, w.files, w.folder)
	}
	after := e.Store.Dirs.Stats()
	if own := (after.Listings - st.Listings) - (after.Ahead - st.Ahead); own != 0 {
		t.Errorf("the walk fetched %d listings itself, want 0 (all listed ahead)", own)
	}
	if n := after.Ahead - st.Ahead; n != int64(len(w.deep)) {
		t.Errorf("%d listings ahead during the walk, want %d (the deepest folders)", n, len(w.deep))
	}
	for _, id := range append(append(slices.Clone(w.level1), w.level2...), w.deep...) {
		if n := seen.of(id); n != 1 {
			t.Errorf("folder %d listed %d times, want once", id, n)
		}
	}
	if after.AheadRead != after.Ahead {
		t.Errorf("%d listings ahead, %d of them read by the walk; want all", after.Ahead, after.AheadRead)
	}
}

// A reader of a folder whose listing the read-ahead is fetching waits for
// that request: one listing request, held at the service until the reader
// waits for it too, answers both.
func TestDirReadAheadReaderJoinsTheListingInFlight(t *testing.T) {
	e := newEnv(t, envOptions{DirAhead: 64})
	top := e.mkdir(0, e.root(0), "top")
	sub := e.mkdir(0, top, "sub")
	for i := range 5 {
		e.put(0, sub, fmt.Sprintf("f%d.txt", i), []byte("x"))
	}
	var mu sync.Mutex
	sent := 0
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	e.setHook(func(r *http.Request, answered bool) {
		if answered || !isListing(r, sub) {
			return
		}
		mu.Lock()
		sent++
		first := sent == 1
		mu.Unlock()
		if first {
			close(held)
			<-release
		}
	})
	if _, err := os.ReadDir(e.Path("shared", "top")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("top/sub was not listed ahead after top/ was read")
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		ents, err := os.ReadDir(e.Path("shared", "top", "sub"))
		done <- result{len(ents), err}
	}()
	testkit.WaitFor(t, 10*time.Second, "the reader to wait for the listing ahead", func() bool {
		return e.Store.Dirs.Stats().AheadRead == 1
	})
	once.Do(func() { close(release) })
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ls of top/sub did not return after the listing ahead was let go")
	}
	if r.err != nil || r.n != 5 {
		t.Fatalf("ls of top/sub: %d entries, %v; want 5", r.n, r.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent != 1 {
		t.Errorf("top/sub was listed %d times, want once (the reader waits for the listing ahead)", sent)
	}
	if st := e.Store.Dirs.Stats(); st.Ahead != 1 {
		t.Errorf("%d listings ahead, want 1", st.Ahead)
	}
}

// With --dir-read-ahead 0, a folder read lists nothing else: each folder is
// listed when a walk gets there, by the walk.
func TestDirReadAheadOff(t *testing.T) {
	e := newEnv(t, envOptions{DirAhead: 0})
	w := makeWalkTree(e)
	seen := watchListings(e)
	if _, err := os.ReadDir(e.Path("shared", "walk")); err != nil {
		t.Fatal(err)
	}
	// Nothing to wait for: give a read-ahead, were there one, the time to
	// list (a local emulator answers in a few milliseconds).
	time.Sleep(500 * time.Millisecond)
	if n := seen.of(w.level1...) + seen.of(w.level2...); n != 0 {
		t.Errorf("%d listings of walk/'s subfolders before the walk got there, want 0", n)
	}
	files, folders := walkFiles(t, e.Path("shared", "walk"))
	if files != w.files || folders != w.folder {
		t.Fatalf("the walk saw %d files and %d folders, want %d and %d", files, folders, w.files, w.folder)
	}
	if st := e.Store.Dirs.Stats(); st.Ahead != 0 || st.AheadRead != 0 {
		t.Errorf("listings ahead %d, read %d; want none", st.Ahead, st.AheadRead)
	}
	for _, id := range append(append(slices.Clone(w.level1), w.level2...), w.deep...) {
		if n := seen.of(id); n != 1 {
			t.Errorf("folder %d listed %d times, want once", id, n)
		}
	}
}

// In a black hole the read-ahead gives up after --io-timeout, as a caller
// would, cancels what it alone waited for and starts nothing more, however
// often folders are read: its requests are at most the ones in flight when
// the service went silent (and a retry each, should the client's cut of a
// stalled attempt come first). A listing that succeeds starts it again.
func TestDirReadAheadStopsInAnOutage(t *testing.T) {
	const ioTimeout = time.Second
	e := newEnv(t, envOptions{DirAhead: 64, IOTimeout: ioTimeout, Client: api.Options{IOTimeout: ioTimeout}})
	top := e.mkdir(0, e.root(0), "top")
	mid := e.mkdir(0, top, "mid")
	var leaves []int64
	for i := range 40 {
		leaf := e.mkdir(0, mid, fmt.Sprintf("leaf%02d", i))
		e.put(0, leaf, "x.txt", []byte("x"))
		leaves = append(leaves, leaf)
	}
	seen := watchListings(e)
	// shared/ read: top/ and top/mid/ are listed ahead, the leaves (3
	// levels down) are not.
	if _, err := os.ReadDir(e.Path("shared")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "top/ and top/mid/ listed ahead", func() bool { return e.Store.Dirs.Stats().Ahead == 2 })
	if n := seen.of(leaves...); n != 0 {
		t.Fatalf("%d listings of the leaves before the outage, want 0", n)
	}

	e.Emu.SetOutage(emulator.OutageBlackHole)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	// top/mid/ is cached: reading it answers at once, and asks the read-ahead
	// for its 40 subfolders, again and again.
	readMid := func() {
		t.Helper()
		ents, err := os.ReadDir(e.Path("shared", "top", "mid"))
		if err != nil || len(ents) != len(leaves) {
			t.Fatalf("ls of top/mid/ (cached) in the outage: %d entries, %v", len(ents), err)
		}
	}
	var atStop int
	for i := 0; i < 25; i++ { // 5 s: 5 times the I/O timeout
		readMid()
		time.Sleep(200 * time.Millisecond)
		if i == 14 { // 3 s in: the read-ahead gave up
			atStop = seen.of(leaves...)
		}
	}
	total := seen.of(leaves...)
	t.Logf("leaf listing attempts in the outage: %d after 3 s, %d after 5 s", atStop, total)
	if total == 0 {
		t.Fatal("no listing ahead was tried in the outage: the test shows nothing")
	}
	if total > 2*cache.AheadParallel {
		t.Errorf("%d listing attempts ahead in the outage, want at most %d (those in flight as it began, and a retry each)", total, 2*cache.AheadParallel)
	}
	if total != atStop {
		t.Errorf("the read-ahead went on after giving up: %d attempts after 3 s, %d after 5 s", atStop, total)
	}

	// The service answers again; a listing that succeeds (a leaf, read)
	// starts the read-ahead again: the next read of top/mid/ lists the
	// other leaves ahead.
	e.Emu.SetOutage(emulator.OutageNone)
	// The mount went offline in the silence (api/reach.go); its probe finds
	// the service back.
	testkit.WaitFor(t, 10*time.Second, "the mount online again", func() bool { return e.Client.Reachability().Online })
	if _, err := os.ReadDir(e.Path("shared", "top", "mid", "leaf00")); err != nil {
		t.Fatal(err)
	}
	readMid()
	testkit.WaitFor(t, 20*time.Second, "the leaves listed ahead after the outage", func() bool {
		_, ok := e.Store.Dirs.Cached(place.DirKey{Area: place.Area{Kind: place.Shared}, ID: leaves[len(leaves)-1]})
		return ok
	})
}

// The read-ahead keeps to N folders ahead of the reader, the ones a walk
// gets to first: a folder of 20 subfolders read with N = 4 has its first 4
// listed ahead, in the listing's order, and no more until the reader reads
// one of them; then the fifth.
func TestDirReadAheadStaysNFoldersAhead(t *testing.T) {
	const n = 4
	e := newEnv(t, envOptions{DirAhead: n})
	wide := e.mkdir(0, e.root(0), "wide")
	for i := range 20 {
		e.mkdir(0, wide, fmt.Sprintf("sub%02d", i))
	}
	listed, err := e.Client.SharedFiles(t.Context(), api.ListFilesRequest{ParentID: wide}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	var subs []int64 // in the listing's order, as readdir gives them
	for _, f := range listed {
		subs = append(subs, f.ID)
	}
	seen := watchListings(e)
	if _, err := os.ReadDir(e.Path("shared", "wide")); err != nil {
		t.Fatal(err)
	}
	aheadIs := func(want int64) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("%d folders listed ahead", want), func() bool {
			return e.Store.Dirs.Stats().Ahead >= want
		})
		time.Sleep(300 * time.Millisecond) // room for one too many, were there one
		if got := e.Store.Dirs.Stats().Ahead; got != want {
			t.Fatalf("%d folders listed ahead, want %d", got, want)
		}
	}
	aheadIs(n)
	for i, id := range subs {
		if want := min(1, max(0, n-i)); seen.of(id) != want {
			t.Errorf("%s listed %d times ahead, want %d (the first %d are listed, in order)", listed[i].Name, seen.of(id), want, n)
		}
	}
	if _, err := os.ReadDir(e.Path("shared", "wide", listed[0].Name)); err != nil {
		t.Fatal(err)
	}
	aheadIs(n + 1)
	if seen.of(subs[n]) != 1 {
		t.Errorf("after %s was read, %s was not the folder listed ahead", listed[0].Name, listed[n].Name)
	}
}
