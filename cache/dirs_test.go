package cache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// These tests run the listing cache against the in-memory fake client.

func TestDirsPutAndRemoveEditTheCachedListing(t *testing.T) {
	d := NewDirs(nil, time.Hour, nil)
	key := place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 5}
	d.dirs[key] = &Listing{Files: []api.File{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}, Fetched: time.Now()}
	before := d.dirs[key]
	d.Put(key, api.File{ID: 3, Name: "b"}) // replaces by name
	d.Put(key, api.File{ID: 4, Name: "c"})
	d.Remove(key, 1)
	got := d.dirs[key].Files
	if len(got) != 2 || got[0].ID != 3 || got[1].ID != 4 {
		t.Fatalf("listing after edits: %+v", got)
	}
	if len(before.Files) != 2 || before.Files[0].ID != 1 {
		t.Fatal("an edit changed a listing a reader holds")
	}
	d.Put(place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 99}, api.File{ID: 5})
	if _, ok := d.dirs[place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 99}]; ok {
		t.Fatal("Put cached a folder that was not listed")
	}
}

// A Put of a new name appends to the cached listing's array in place where
// it has room (a folder of 100,000 entries copied 10 MB per upload): a
// reader's listing keeps its length and entries, a hidden file is not
// appended, and a Put of a name already listed still makes a copy.
func TestDirsPutOfANewNameAppendsInPlace(t *testing.T) {
	d := NewDirs(nil, time.Hour, nil)
	key := place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 5}
	files := make([]api.File, 2, 8)
	files[0], files[1] = api.File{ID: 1, Name: "a"}, api.File{ID: 2, Name: "b"}
	d.dirs[key] = &Listing{Files: files, Fetched: time.Now()}
	held := d.dirs[key]
	d.Put(key, api.File{ID: 3, Name: "c"})
	d.Put(key, api.File{ID: 4, Name: "d"})
	got := d.dirs[key].Files
	if len(got) != 4 || got[2].Name != "c" || got[3].Name != "d" || &got[0] != &files[0] {
		t.Fatalf("after two new names: %+v (same array: %v)", got, &got[0] == &files[0])
	}
	if len(held.Files) != 2 || held.Files[1].Name != "b" {
		t.Fatalf("a reader's listing changed: %+v", held.Files)
	}
	d.Hide(place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 6}, 5) // renamed away from another folder
	d.Put(key, api.File{ID: 5, Name: "e"})
	if got := d.dirs[key].Files; len(got) != 4 {
		t.Fatalf("a hidden file was appended: %+v", got)
	}
	d.Put(key, api.File{ID: 6, Name: "f"})
	if got := d.dirs[key].Files; len(got) != 5 || got[4].Name != "f" || &got[0] != &files[0] {
		t.Fatalf("a new name beside hidden ones: %+v", got)
	}
	before := d.dirs[key]
	d.Put(key, api.File{ID: 7, Name: "a"}) // a name listed: replaced, in a copy
	if got := d.dirs[key].Files; len(got) != 5 || &got[0] == &files[0] || got[4].ID != 7 {
		t.Fatalf("a name listed: %+v", got)
	}
	if before.Files[0].ID != 1 || len(before.Files) != 5 {
		t.Fatalf("the listing before the replacement changed: %+v", before.Files)
	}
}

// names lists a folder through d and returns its entries' names.
func names(t *testing.T, d *Dirs, key place.DirKey) []string {
	t.Helper()
	l, err := d.List(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range l.Files {
		out = append(out, f.Name)
	}
	return out
}

func TestDirsListEachAreaAndCacheForTheTTL(t *testing.T) {
	fake := fakeclient.New(t)
	shared, machine, recs := place.Area{Kind: place.Shared}, place.Area{Kind: place.Machine, MachineID: 7}, place.Area{Kind: place.Recordings}
	sub := fake.Mkdir(shared, 0, "sub")
	fake.Put(shared, 0, "a", []byte("a"))
	fake.Put(shared, sub.ID, "in-sub", nil)
	fake.Put(machine, 0, "m", nil)
	fake.Put(recs, 0, "r.mp4", nil)
	clock := emutest.NewClock(time.Unix(1700000000, 0))
	d := NewDirs(fake, time.Minute, clock.Now)

	for _, tc := range []struct {
		key    place.DirKey
		method string
		want   []string
	}{
		{place.DirKey{Area: shared}, "SharedFiles", []string{"sub", "a"}},
		{place.DirKey{Area: shared, ID: sub.ID}, "SharedFiles", []string{"in-sub"}},
		{place.DirKey{Area: machine}, "MachineFiles", []string{"m"}},
		{place.DirKey{Area: recs}, "Recordings", []string{"r.mp4"}},
	} {
		before := fake.Count(tc.method)
		for range 2 {
			if got := names(t, d, tc.key); !slices.Equal(got, tc.want) {
				t.Fatalf("%v: %v, want %v", tc.key, got, tc.want)
			}
		}
		if n := fake.Count(tc.method) - before; n != 1 {
			t.Fatalf("%v: %d requests for two lists within the TTL, want 1", tc.key, n)
		}
	}
	if st := d.Stats(); st.Listings != 4 || st.Hits != 4 {
		t.Fatalf("stats %+v", st)
	}

	clock.Advance(time.Minute)
	fake.Put(shared, 0, "b", nil)
	if got := names(t, d, place.DirKey{Area: shared}); !slices.Equal(got, []string{"sub", "a", "b"}) {
		t.Fatalf("after the TTL: %v", got)
	}
}

func TestDirsConcurrentListsShareOneFetch(t *testing.T) {
	fake := fakeclient.New(t)
	fake.Put(place.Area{Kind: place.Shared}, 0, "a", nil)
	d := NewDirs(fake, time.Minute, nil)
	release := fake.Hold("SharedFiles")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := names(t, d, place.DirKey{Area: place.Area{Kind: place.Shared}}); len(got) != 1 {
				t.Errorf("listing %v", got)
			}
		}()
	}
	testkit.WaitFor(t, 5*time.Second, "the first fetch", func() bool { return fake.Count("SharedFiles") == 1 })
	release()
	wg.Wait()
	if n := fake.Count("SharedFiles"); n != 1 {
		t.Fatalf("%d fetches for 8 concurrent lists, want 1", n)
	}
}

// dropDuringFetch drops a folder's listing (drop) while its fetch is on its
// way: the listing is its callers' answer but is not stored, and the next
// read lists again.
func dropDuringFetch(t *testing.T, what string, drop func(d *Dirs, key place.DirKey)) {
	t.Helper()
	fake := fakeclient.New(t)
	fake.Put(place.Area{Kind: place.Shared}, 0, "old", nil)
	d := NewDirs(fake, time.Minute, nil)
	key := place.DirKey{Area: place.Area{Kind: place.Shared}}
	release := fake.Hold("SharedFiles")
	done := make(chan struct{})
	go func() {
		defer close(done)
		names(t, d, key)
	}()
	testkit.WaitFor(t, 5*time.Second, "the fetch to start", func() bool { return fake.Count("SharedFiles") == 1 })
	drop(d, key)
	release()
	<-done
	if _, ok := d.Cached(key); ok {
		t.Fatalf("a listing fetched before %s was stored after it", what)
	}
	names(t, d, key)
	if n := fake.Count("SharedFiles"); n != 2 {
		t.Fatalf("%s: %d fetches, want 2", what, n)
	}
}

func TestDirsDropAllIsNotUndoneByAFetchInFlight(t *testing.T) {
	dropDuringFetch(t, "DropAll", func(d *Dirs, _ place.DirKey) { d.DropAll() })
}

// Neither is a Drop (a read found a file changed, a conflict) nor a Forget
// (the folder deleted here).
func TestDirsDropIsNotUndoneByAFetchInFlight(t *testing.T) {
	dropDuringFetch(t, "Drop", (*Dirs).Drop)
	dropDuringFetch(t, "Forget", (*Dirs).Forget)
}

// A listing the service made before the mount's own change, arriving after
// it, shows the change: the edit is made on it again, and what the mount
// shows never goes back to before its own change (a file whose upload just
// ended, listed at its old size), with no second listing.
func TestDirsListingOlderThanAnEditShowsTheEdit(t *testing.T) {
	fake := fakeclient.New(t)
	area := place.Area{Kind: place.Shared}
	old := fake.Put(area, 0, "f", []byte("old"))
	d := NewDirs(fake, time.Minute, nil)
	key := place.DirKey{Area: area}
	release := fake.HoldAnswer("SharedFiles")
	got := make(chan *Listing, 1)
	go func() {
		l, err := d.List(context.Background(), key)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	testkit.WaitFor(t, 5*time.Second, "the listing to be made", func() bool {
		return fake.HeldAnswers() == 1
	})
	// The mount's upload of a new version ends: on the service, then in
	// the cache.
	newer := fake.Put(area, 0, "f", []byte("newer"))
	fake.Remove(old.ID)
	d.Put(key, newer)
	release()
	l := <-got
	if len(l.Files) != 1 || l.Files[0].ID != newer.ID || l.Files[0].Size != 5 {
		t.Errorf("the listing after the upload shows %+v, want only the new version %d (5 bytes; the old was %d)", l.Files, newer.ID, old.ID)
	}
	if n := fake.Count("SharedFiles"); n != 1 {
		t.Errorf("%d listings, want 1", n)
	}
	if c, ok := d.Cached(key); !ok || len(c.Files) != 1 || c.Files[0].ID != newer.ID {
		t.Errorf("the cache holds %+v, want the listing with the edit", c)
	}
}

// The mount's edits that land while a listing is on its way (deletes and
// uploads by two workers in one folder) are made on its answer, also when
// the folder had no listing cached to edit: the answer never shows a file
// the mount deleted (readdir would list it and its open answer ENOENT: the
// model test met it under load) nor misses one it uploaded. Each listing
// gets the edits that landed during it, however many.
func TestDirsListingEditedAcrossKeepsTheEdits(t *testing.T) {
	fake := fakeclient.New(t)
	area := place.Area{Kind: place.Shared}
	var files []api.File
	for i := range 4 {
		files = append(files, fake.Put(area, 0, fmt.Sprint("f", i), []byte("x")))
	}
	var later atomic.Int64 // how far the clock moved
	start := time.Now()
	d := NewDirs(fake, time.Minute, func() time.Time { return start.Add(time.Duration(later.Load())) })
	key := place.DirKey{Area: area}
	var uploaded []api.File
	fake.BeforeAnswer(func(string) {
		// The mount's delete of the next file lands, and an upload of its
		// own: on the service, then in the cache.
		f := files[len(uploaded)]
		up := fake.Replace(f.ID, area, 0, fmt.Sprint("new", len(uploaded)), []byte("y"))
		uploaded = append(uploaded, up)
		d.Remove(key, f.ID)
		d.Put(key, up)
	})
	want := func(what string, names ...string) {
		t.Helper()
		l, err := d.List(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range l.Files {
			got = append(got, f.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, names) {
			t.Fatalf("%s lists %v, want %v", what, got, names)
		}
	}
	want("the first listing (none cached)", "f1", "f2", "f3", "new0")
	later.Store(int64(2 * time.Minute)) // expired: listed again
	want("the second listing (one cached)", "f2", "f3", "new0", "new1")
	fake.BeforeAnswer(nil)
	want("the cached listing", "f2", "f3", "new0", "new1")
	if n := fake.Count("SharedFiles"); n != 2 {
		t.Errorf("%d listings, want 2 (one each time, the cache after)", n)
	}
	d.mu.Lock()
	logged, fetching := len(d.editLog), len(d.fetching)
	d.mu.Unlock()
	if logged != 0 || fetching != 0 {
		t.Errorf("with no listing on its way, %d folders' edits logged and %d fetches counted", logged, fetching)
	}
}

func TestDirsErrorsAreNotCachedAndHiddenFilesStayHidden(t *testing.T) {
	fake := fakeclient.New(t)
	shared := place.Area{Kind: place.Shared}
	fake.Put(shared, 0, "keep", nil)
	gone := fake.Put(shared, 0, "gone", nil)
	d := NewDirs(fake, time.Minute, nil)
	key := place.DirKey{Area: shared}

	fake.FailNext("SharedFiles", &api.Error{HTTPStatus: 500, Code: 500, Message: "down"})
	if _, err := d.List(context.Background(), key); !api.Temporary(err) {
		t.Fatalf("List: %v, want the service's 500", err)
	}
	if got := names(t, d, key); !slices.Equal(got, []string{"keep", "gone"}) {
		t.Fatalf("after an error: %v", got)
	}

	// Renamed away by the mount; the service deletes it later.
	d.Hide(key, gone.ID)
	if got := names(t, d, key); !slices.Equal(got, []string{"keep"}) {
		t.Fatalf("cached listing after Hide: %v", got)
	}
	d.DropAll()
	if got := names(t, d, key); !slices.Equal(got, []string{"keep"}) {
		t.Fatalf("fetched listing after Hide: %v", got)
	}
	// Nor does the mount's own record of it bring it back (an upload ending
	// as the file was renamed away puts it after the Hide).
	d.Put(key, gone)
	if got := names(t, d, key); !slices.Equal(got, []string{"keep"}) {
		t.Fatalf("cached listing after a Put of a hidden file: %v", got)
	}

	fake.SetSeats(api.Seat{ID: 1, Name: "pc"})
	for range 2 {
		if seats, err := d.Seats(context.Background()); err != nil || len(seats) != 1 || seats[0].Name != "pc" {
			t.Fatalf("Seats: %v %v", seats, err)
		}
	}
	if n := fake.Count("Seats"); n != 1 {
		t.Fatalf("%d computer lists within the TTL, want 1", n)
	}
}

// A cached listing keeps of each record what its readers read: the
// record's Details (content type, path, user, computer...) are dropped (a
// listing of 100,000 files would keep them for nothing), while the API
// client's records still carry them; a record the mount puts in a listing
// is kept the same way.
func TestDirsListingsDropWhatNoReaderReads(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	m := srv.Emulator.Fixtures(emulator.OrgA).StoppedMachine
	root, err := srv.Emulator.RootID(emulator.OrgA, m)
	if err != nil || m == 0 {
		t.Fatalf("computer %d: %v", m, err)
	}
	if _, err := srv.Emulator.CreateFile(emulator.OrgA, m, root, "f.txt", strings.NewReader("data")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	all, err := client.MachineFiles(ctx, m, api.ListFilesRequest{}).Collect()
	if err != nil || len(all) != 1 {
		t.Fatalf("%v %v", all, err)
	}
	full := all[0]
	if d := full.Details; d == nil || d.Path == nil || d.User == nil || d.MachineID == nil || *d.MachineID != m || d.ContentType == "" {
		t.Fatalf("the API client's record lacks its details: %+v %+v", full, d)
	}
	key := place.DirKey{Area: place.Area{Kind: place.Machine, MachineID: m}}
	d := NewDirs(client, time.Hour, nil)
	l, err := d.List(ctx, key)
	if err != nil || len(l.Files) != 1 {
		t.Fatalf("%v %v", l, err)
	}
	want := full
	want.Details = nil
	if got := l.Files[0]; got != want {
		t.Errorf("listed %+v, want %+v", got, want)
	}
	put := full
	put.ID, put.Name = full.ID+1, "g.txt"
	d.Put(key, put)
	l, _ = d.Cached(key)
	if got := l.Files[len(l.Files)-1]; got.Name != "g.txt" || got.Details != nil {
		t.Errorf("put %+v", got)
	}
}
