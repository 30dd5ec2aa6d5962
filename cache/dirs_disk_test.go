package cache

import (
	"context"
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

// The listings kept on disk are read back by the same account only: each
// answers at once, stale, while the folder is listed again behind it (the
// listing fetched replaces it); another account's are set aside. Files
// hidden now stay out of them.
func TestDirsListingsKeptOnDisk(t *testing.T) {
	fake := fakeclient.New(t)
	area := place.Area{Kind: place.Shared}
	root := place.DirKey{Area: area}
	a := fake.Put(area, 0, "a.txt", []byte("a"))
	hidden := fake.Put(area, 0, "renamed-away.txt", []byte("h"))
	path := filepath.Join(t.TempDir(), ListingsFile)

	d1 := NewDirs(fake, time.Hour, nil)
	if _, err := d1.List(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if n, err := d1.SaveListings(path, "account-a"); err != nil || n != 1 {
		t.Fatalf("SaveListings: %d, %v", n, err)
	}

	other := NewDirs(fake, time.Hour, nil)
	if n, err := other.LoadListings(path, "account-b"); err == nil || n != 0 {
		t.Fatalf("another account's listings read: %d, %v", n, err)
	}
	if _, err := os.Stat(path + ".bad"); err != nil {
		t.Fatalf("another account's listings not set aside: %v", err)
	}
	os.Rename(path+".bad", path)

	fake.Put(area, 0, "b.txt", []byte("b")) // on the service since
	d2 := NewDirs(fake, time.Hour, nil)
	d2.HideIDs([]int64{hidden.ID})
	if n, err := d2.LoadListings(path, "account-a"); err != nil || n != 1 {
		t.Fatalf("LoadListings: %d, %v", n, err)
	}
	release := fake.Hold("SharedFiles")
	calls := fake.Count("SharedFiles")
	l, err := d2.List(context.Background(), root) // at once, though the service does not answer
	if err != nil || len(l.Files) != 1 || l.Files[0].ID != a.ID {
		t.Fatalf("the kept listing: %+v, %v; want a.txt alone (renamed-away.txt hidden)", l, err)
	}
	if _, fresh := d2.Fresh(root); fresh {
		t.Error("a listing kept on disk counts as fresh")
	}
	testkit.WaitFor(t, 5*time.Second, "the folder listed again behind it", func() bool { return fake.Count("SharedFiles") > calls })
	release()
	testkit.WaitFor(t, 5*time.Second, "the listing fetched replacing the kept one", func() bool {
		l, fresh := d2.Fresh(root)
		return fresh && slices.ContainsFunc(l.Files, func(f api.File) bool { return f.Name == "b.txt" })
	})
}
