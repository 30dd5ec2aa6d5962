package fs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orgfs/orgfs/place"
)

// statSize stats p: its size, or -1 when it is not there.
func statSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if os.IsNotExist(err) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// The kernel keeps a file's entry and attributes while the listing they
// came from is fresh: stats past Options.AttrTimeout (1 s) reach the daemon no
// more, for a file listed and for one made here, before and after its upload.
func TestKernelKeepsEntriesWhileTheListingIsFresh(t *testing.T) {
	e := newEnv(t, envOptions{}) // a listing is fresh for a minute
	e.put(0, e.root(0), "listed.txt", []byte("listed"))
	listed, made := e.Path("shared", "listed.txt"), e.Path("shared", "made.txt")
	if statSize(t, listed) != 6 {
		t.Fatal("the listed file is not shown")
	}
	writeSync(t, made, os.O_CREATE|os.O_WRONLY, "made here") // uploaded at the fsync
	if statSize(t, made) != 9 {                              // attributes asked again after the write
		t.Fatal("the file made here is not shown")
	}
	time.Sleep(1200 * time.Millisecond) // past Options.AttrTimeout (1 s)
	before := e.fsys.KernelRequests()
	for range 3 {
		if statSize(t, listed) != 6 || statSize(t, made) != 9 {
			t.Fatal("sizes changed")
		}
	}
	if after := e.fsys.KernelRequests(); after.Lookups != before.Lookups || after.Getattrs != before.Getattrs {
		t.Errorf("stats of kept entries asked the daemon: %+v, then %+v", before, after)
	}
}

// What the kernel keeps never hides a change the daemon learns: a listing
// dropped (a read found the file changed, a conflict), every listing
// dropped (SIGHUP, .ctl/refresh), and a listing fetched anew that shows a file made here replaced
// by another writer, each show at once, not when the kept entry would run
// out.
func TestKernelForgetsWhatAListingChanged(t *testing.T) {
	e := newEnv(t, envOptions{DirTTL: 4 * time.Second})
	shared := place.DirKey{Area: place.Area{Kind: place.Shared}}
	e.put(0, e.root(0), "a.txt", []byte("a1"))
	a := e.Path("shared", "a.txt")
	if statSize(t, a) != 2 {
		t.Fatal("a.txt not shown")
	}
	// Dropped: the next stat looks the name up in a new listing.
	e.apiReplace("a.txt", "a-second")
	e.Store.Dirs.Drop(shared)
	waitSize(t, a, 8, "after the listing was dropped")

	// Every listing dropped (SIGHUP, .ctl/refresh): every file entry kept
	// is forgotten.
	e.apiReplace("a.txt", "a-the-third")
	e.Store.Dirs.DropAll()
	waitSize(t, a, 11, "after every listing was dropped")

	// Fetched anew: b.txt, made here, is kept by the kernel for 4 s from
	// its create; the folder's listing, fetched before it, runs out first.
	os.ReadDir(e.Path("shared"))
	fetched := time.Now()
	time.Sleep(1500 * time.Millisecond)
	b := e.Path("shared", "b.txt")
	writeSync(t, b, os.O_CREATE|os.O_WRONLY, "b1")
	if statSize(t, b) != 2 { // uploaded: the kernel keeps this
		t.Fatal("b.txt not shown")
	}
	e.apiReplace("b.txt", "b-from-another-writer")
	time.Sleep(time.Until(fetched.Add(4300 * time.Millisecond)))
	// The listing is fetched anew by the lookup of another name (a listing
	// of the folder, readdirplus, would bring the kernel the entries
	// itself).
	if statSize(t, e.Path("shared", "not-there")) != -1 {
		t.Fatal("not-there is there")
	}
	waitSize(t, b, 21, "after a new listing showed another writer's version")
	if time.Since(fetched) > 5*time.Second {
		t.Fatalf("seen %v after the listing: as late as the kept entry's end", time.Since(fetched))
	}
}

// waitSize waits up to 500 ms (the kernel is told in the background) for p
// to show size n.
func waitSize(t *testing.T, p string, n int64, when string) {
	t.Helper()
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		got := statSize(t, p)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s shows size %d, want %d", when, filepath.Base(p), got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
