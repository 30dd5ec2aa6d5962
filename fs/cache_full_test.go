package fs

// A full cache disk (issue 9, item 8): reads go on, streamed from the object
// store without the cache; writers get ENOSPC.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/orgfs/orgfs/internal/testkit"
)

func TestReadsWithAFullCacheDisk(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.unmount()
	testkit.SmallDisk(t, e.CacheDir, 8<<20)
	e.Mount()

	root := e.root(0)
	files := map[string][]byte{
		"big.bin":   testkit.RandBytes(20<<20+4321, 1), // larger than the whole disk
		"mid.bin":   testkit.RandBytes(3<<20+7, 2),
		"small.txt": testkit.RandBytes(1000, 3),
		"empty":     {},
	}
	for name, data := range files {
		e.put(0, root, name, data)
	}
	folder := e.smallFolder("notes", 12) // enough small files for a bundle
	check := func(round string) {
		t.Helper()
		before := e.Store.Fetcher.Stats()
		for name, want := range files {
			p := e.Path("shared", name)
			dropKernelCache(t, p)
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: reading %s: %d bytes, want %d (%v)", round, name, len(got), len(want), err)
			}
		}
		checkCopy(t, e.Path("shared", "notes"), folder)
		st := e.Store.Fetcher.Stats()
		t.Logf("%s: %d range requests, %d bytes into the cache, %d past it; %d files not cached",
			round, st.RangeRequests-before.RangeRequests, st.BytesFetched-before.BytesFetched,
			st.BytesDirect-before.BytesDirect, st.Uncached-before.Uncached)
	}
	// The big file fills the disk part way through.
	check("filling the cache disk")
	// What is cached is still served; the rest streams.
	check("with the cache disk full")

	// The disk full of something else: nothing the cache could evict.
	e.unmount()
	entries, err := filepath.Glob(filepath.Join(e.CacheDir, "content", "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range entries {
		os.Remove(p)
	}
	e.Mount()
	testkit.FillDisk(t, e.CacheDir)
	before := e.Store.Fetcher.Stats()
	check("with the disk full of another file")
	st := e.Store.Fetcher.Stats()
	if direct := st.BytesDirect - before.BytesDirect; direct < int64(len(files["big.bin"])) {
		t.Errorf("%d bytes were read past the cache, want all of them: %+v", direct, st)
	}
	// Sequential reads share a stream: a few requests for the big file, not
	// one per read (the first, into the cache, find the disk full).
	dropKernelCache(t, e.Path("shared", "big.bin"))
	before = e.Store.Fetcher.Stats()
	if got, err := os.ReadFile(e.Path("shared", "big.bin")); err != nil || !bytes.Equal(got, files["big.bin"]) {
		t.Fatalf("reading big.bin again: %v", err)
	}
	n := e.Store.Fetcher.Stats().RangeRequests - before.RangeRequests
	t.Logf("reading big.bin alone: %d range requests", n)
	if n > 8 {
		t.Errorf("%d range requests to stream a 20 MiB file", n)
	}

	// Writers still get ENOSPC.
	err = os.WriteFile(e.Path("shared", "new.bin"), testkit.RandBytes(1<<20, 4), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing with the cache disk full: %v, want ENOSPC", err)
	}
}
