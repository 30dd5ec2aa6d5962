package emulator_test

import (
	"fmt"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
)

// The bench seed's bench/par holds the 16 files of the parallel-read
// benchmark, a quarter of BenchFileSize each, beside big.bin, small and wide.
func TestBenchSeedParFiles(t *testing.T) {
	const size = 64 << 10
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedBench, BenchFileSize: size, Now: emutest.NewClock(t0).Now, StepDelay: step})
	v := &env{t: t, srv: srv, e: srv.Emulator, a: emutest.NewClient(t, srv, emulator.OrgA)}
	// child finds an entry of a folder (0: the root) by name.
	child := func(parent int64, name string) map[string]any {
		t.Helper()
		for _, it := range list(v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d&per_page=1000", parent), nil), "files") {
			if attrs(it)["name"] == name {
				return it.(map[string]any)
			}
		}
		t.Fatalf("no %q in folder %d", name, parent)
		return nil
	}
	bench := idOf(t, child(0, "bench"))
	if got := num(t, attrs(child(bench, "big.bin")), "size"); got != size {
		t.Fatalf("big.bin: %d bytes, want %d", got, size)
	}
	par := idOf(t, child(bench, "par"))
	r := v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d&per_page=1000", par), nil)
	if n := num(t, r, "count"); n != emulator.BenchParFiles {
		t.Fatalf("bench/par: %d files, want %d", n, emulator.BenchParFiles)
	}
	for i, it := range list(r, "files") {
		a := attrs(it)
		if want := fmt.Sprintf("r%02d.bin", i); a["name"] != want || num(t, a, "size") != size/4 {
			t.Fatalf("bench/par entry %d: %v (%v bytes), want %s of %d bytes", i, a["name"], a["size"], want, size/4)
		}
	}
}

// idOf reads a listed entry's id (a string in the answer).
func idOf(t *testing.T, a map[string]any) int64 {
	t.Helper()
	switch id := a["id"].(type) {
	case float64:
		return int64(id)
	case string:
		var n int64
		if _, err := fmt.Sscan(id, &n); err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		return n
	}
	t.Fatalf("entry without id: %v", a)
	return 0
}
