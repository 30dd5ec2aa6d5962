package cache

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// memFiles is the size of the folder BenchmarkListingMemory lists: the
// scale benchmark's bench/huge (scripts/bench-read, row 9).
const memFiles = 100000

// BenchmarkListingMemory lists a folder of memFiles files from the
// emulator into a listing cache, as a mount lists bench/huge (in pages of
// 1,000, the emulator's most, where a mount asks 100: the same records in
// a tenth of the requests), and reports the heap the cached listing keeps per file once collected
// (kept-B/file: what a mount holds per listed file until the listing
// expires). The emulator runs in the same process: B/op counts its
// allocations too.
//
//	go test -run '^$' -bench BenchmarkListingMemory -benchtime 2x ./cache/
func BenchmarkListingMemory(b *testing.B) {
	srv := emutest.Start(b, emulator.Options{Seed: emulator.SeedBench, BenchFileSize: 1 << 10, BenchHugeFiles: memFiles})
	client := testkit.Client(b, srv, emulator.OrgA, api.Options{PerPage: 1000})
	key := benchFolder(b, client, "bench", "huge")
	var kept float64
	b.ResetTimer()
	for range b.N {
		d := NewDirs(client, time.Hour, nil)
		before := heapNow()
		l, err := d.List(context.Background(), key)
		if err != nil {
			b.Fatal(err)
		}
		after := heapNow()
		if len(l.Files) != memFiles {
			b.Fatalf("listed %d files, want %d", len(l.Files), memFiles)
		}
		kept += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(d)
	}
	b.ReportMetric(kept/float64(b.N)/memFiles, "kept-B/file")
}

// heapNow collects garbage and reads the heap's figures.
func heapNow() runtime.MemStats {
	runtime.GC()
	runtime.GC() // the second frees what the first's finalizers let go
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// benchFolder is the key of the shared folder at path (names from the
// root), listed through a cache of its own.
func benchFolder(tb testing.TB, client Client, path ...string) place.DirKey {
	tb.Helper()
	d := NewDirs(client, time.Hour, nil)
	key := place.DirKey{Area: place.Area{Kind: place.Shared}}
	for _, name := range path {
		l, err := d.List(context.Background(), key)
		if err != nil {
			tb.Fatal(err)
		}
		found := false
		for _, f := range l.Files {
			if f.Name == name && f.IsDir() {
				key.ID, found = f.ID, true
			}
		}
		if !found {
			tb.Fatalf("no folder %s in %v", name, path)
		}
	}
	return key
}
