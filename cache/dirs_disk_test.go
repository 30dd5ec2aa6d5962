package cache

import (
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// The listings kept on disk are read back by the same account only
// (another's are set aside): each answers while the service cannot be
// reached, as last seen; online the folder is listed anew. Those kept
// before a crash are read for a start offline only. Files hidden now stay
// out of them.
func TestDirsListingsKeptOnDisk(t *testing.T) {
	fake := fakeclient.New(t)
	area := place.Area{Kind: place.Shared}
	root := place.DirKey{Area: area}
	fake.Put(area, 0, "a.txt", []byte("a"))
	hidden := fake.Put(area, 0, "renamed-away.txt", []byte("h"))
	path := filepath.Join(t.TempDir(), ListingsFile)

	d1 := NewDirs(fake, time.Hour, nil)
	if _, err := d1.List(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if n, err := d1.SaveListings(path, "account-a", true); err != nil || n != 1 {
		t.Fatalf("SaveListings: %d, %v", n, err)
	}

	other := NewDirs(fake, time.Hour, nil)
	if n, err := other.LoadListings(path, "account-b", false); err == nil || n != 0 {
		t.Fatalf("another account's listings read: %d, %v", n, err)
	}
	if _, err := os.Stat(path + ".bad"); err != nil {
		t.Fatalf("another account's listings not set aside: %v", err)
	}
	os.Rename(path+".bad", path)
	clean := func() { // an unmount of d1
		t.Helper()
		if _, err := d1.SaveListings(path, "account-a", true); err != nil {
			t.Fatal(err)
		}
	}
	clean()

	fake.Put(area, 0, "b.txt", []byte("b")) // on the service since
	d2 := NewDirs(fake, time.Hour, nil)
	d2.HideIDs([]int64{hidden.ID})
	if n, err := d2.LoadListings(path, "account-a", false); err != nil || n != 1 {
		t.Fatalf("LoadListings: %d, %v", n, err)
	}
	// The start that read the clean copy takes its mark: a crash of that
	// run leaves a copy without its changes, not read by a start online.
	if n, _ := NewDirs(fake, time.Hour, nil).LoadListings(path, "account-a", false); n != 0 {
		t.Errorf("a clean copy read by a second start online (the first one's changes missing): %d folders", n)
	}
	if l, ok := d2.Cached(root); !ok || slices.ContainsFunc(l.Files, func(f api.File) bool { return f.ID == hidden.ID }) {
		t.Fatalf("the kept listing: %+v, %v; want it, without renamed-away.txt (hidden)", l, ok)
	}
	// Online, kept at a clean unmount: the copy at once (the service held
	// back), listed again behind; the next List has the service's.
	release := fake.Hold("SharedFiles")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	l, err := d2.List(ctx, root)
	cancel()
	release()
	if err != nil || len(l.Files) != 1 || l.Files[0].Name != "a.txt" {
		t.Fatalf("online, at the first use: %+v, %v; want the kept copy (a.txt) at once", l, err)
	}
	testkit.WaitFor(t, 5*time.Second, "the folder listed again behind", func() bool {
		l, ok := d2.Fresh(root)
		return ok && slices.ContainsFunc(l.Files, func(f api.File) bool { return f.Name == "b.txt" })
	})
	// Dropped by a change of the mount's own: the copy answers no more.
	clean()
	d4 := NewDirs(fake, time.Hour, nil)
	if _, err := d4.LoadListings(path, "account-a", false); err != nil {
		t.Fatal(err)
	}
	d4.Drop(root)
	before := fake.Count("SharedFiles")
	if l, err := d4.List(context.Background(), root); err != nil || !slices.ContainsFunc(l.Files, func(f api.File) bool { return f.Name == "b.txt" }) || fake.Count("SharedFiles") != before+1 {
		t.Fatalf("dropped, then listed: %+v, %v; want the service's listing, waited for", l, err)
	}
	// In an outage: the kept copy, as last seen.
	d3 := NewDirs(fake, time.Hour, nil)
	if _, err := d3.LoadListings(path, "account-a", true); err != nil {
		t.Fatal(err)
	}
	off := &api.OfflineError{Since: time.Now(), Reason: "connection refused"}
	fake.FailNext("SharedFiles", off)
	l, err = d3.List(context.Background(), root)
	if err != nil || len(l.Files) != 2 || slices.ContainsFunc(l.Files, func(f api.File) bool { return f.Name == "b.txt" }) {
		t.Fatalf("offline, the kept listing: %+v, %v; want a.txt and renamed-away.txt as last seen", l, err)
	}

	// Kept before a crash: read for a start offline only.
	if _, err := d1.SaveListings(path, "account-a", false); err != nil {
		t.Fatal(err)
	}
	if n, _ := NewDirs(fake, time.Hour, nil).LoadListings(path, "account-a", false); n != 0 {
		t.Errorf("listings kept before a crash read for a start online: %d", n)
	}
	if n, _ := NewDirs(fake, time.Hour, nil).LoadListings(path, "account-a", true); n != 1 {
		t.Errorf("listings kept before a crash not read for a start offline: %d", n)
	}
}

// The listings of a tree of 200,000 files (2,000 folders of 100) written at
// an unmount and read back at the next start: the start waits for the read.
func BenchmarkListingsKeptOnDisk(b *testing.B) {
	fake := fakeclient.New(b)
	area := place.Area{Kind: place.Shared}
	d := NewDirs(fake, time.Hour, nil)
	at := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	for dir := range 2000 {
		files := make([]api.File, 100)
		for i := range files {
			files[i] = api.File{ID: int64(dir*100 + i + 10_000), Name: fmt.Sprintf("f%03d.dat", i), Size: 10, ObjectType: api.ObjectFile,
				ParentID: int64(dir + 1), LastModified: at, Written: api.WrittenOf("application/octet-stream; x-orgfs-mtime=1732849445.5")}
		}
		d.Seed(place.DirKey{Area: area, ID: int64(dir + 1)}, files)
	}
	path := filepath.Join(b.TempDir(), ListingsFile)
	b.Run("save", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.SaveListings(path, "a", true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if _, err := d.SaveListings(path, "a", true); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if n, err := NewDirs(fake, time.Hour, nil).LoadListings(path, "a", false); err != nil || n != 2000 {
				b.Fatalf("%d, %v", n, err)
			}
		}
	})
}

// Listings kept in format 1 (inside the header) are still read.
func TestDirsListingsKeptInFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), ListingsFile)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := gzip.NewWriter(f)
	z.Write([]byte(`{"format":1,"account":"a","saved":"2026-11-29T10:00:00Z","listings":[{"key":{"Area":{"Kind":0,"MachineID":0},"ID":0},"fetched":"2026-11-29T10:00:00Z","files":[{"id":7,"name":"a.txt","size":1,"object_type":"file","parent_id":1,"last_modified_date":"2026-11-29T09:00:00Z","type":"","content_type":""}]}]}`))
	z.Close()
	f.Close()
	if !HasListings(path, "a") {
		t.Fatal("HasListings of a format 1 file: false")
	}
	d := NewDirs(fakeclient.New(t), time.Hour, nil)
	if n, err := d.LoadListings(path, "a", true); err != nil || n != 1 {
		t.Fatalf("LoadListings of a format 1 file: %d, %v", n, err)
	}
	if l, ok := d.Cached(place.DirKey{Area: place.Area{Kind: place.Shared}}); !ok || len(l.Files) != 1 || l.Files[0].Name != "a.txt" || !l.Files[0].LastModified.Equal(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("the listing read: %+v, %v", l, ok)
	}
}

// The listings kept leave out the folders made offline (the journal shows
// them again at the start), entry by entry as each listing is written.
func TestDirsListingsKeptLeaveOutFoldersMadeOffline(t *testing.T) {
	fake := fakeclient.New(t)
	area := place.Area{Kind: place.Shared}
	root := place.DirKey{Area: area}
	a := fake.Put(area, 0, "a.txt", []byte("a"))
	b := fake.Put(area, 0, "b.txt", []byte("b"))
	path := filepath.Join(t.TempDir(), ListingsFile)
	d1 := NewDirs(fake, time.Hour, nil)
	if _, err := d1.List(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	d1.Made(root, api.File{ID: -5, Name: "made offline", ObjectType: api.ObjectDirectory, ParentID: 0})
	if l, ok := d1.Cached(root); !ok || !slices.ContainsFunc(l.Files, func(f api.File) bool { return f.ID == -5 }) {
		t.Fatalf("the folder made offline is not in the listing held: %+v", l)
	}
	if _, err := d1.SaveListings(path, "account-a", true); err != nil {
		t.Fatal(err)
	}
	d2 := NewDirs(fake, time.Hour, nil)
	if n, err := d2.LoadListings(path, "account-a", false); err != nil || n != 1 {
		t.Fatalf("LoadListings: %d, %v", n, err)
	}
	l, ok := d2.Cached(root)
	var ids []int64
	for _, f := range l.Files {
		ids = append(ids, f.ID)
	}
	slices.Sort(ids)
	if want := []int64{a.ID, b.ID}; !ok || !slices.Equal(ids, want) {
		t.Fatalf("the kept listing holds %v, want %v (the folder made offline left out)", ids, want)
	}
}
