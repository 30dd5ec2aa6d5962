package emulator

import (
	"fmt"
	"sort"
)

// SeedBench is the empty seed plus, in org-a's shared storage, the data of the
// read and write benchmarks: bench/big.bin (Options.BenchFileSize bytes,
// default 1 GiB), bench/small/ (1,000 files of 8 KiB), bench/wide/ (10,000
// files of 100 bytes) and bench/par/ (r00.bin to r15.bin, a quarter of
// BenchFileSize each: 16 files for 16 readers at once, 4 GiB in all by
// default). The contents are written server-side, fast.
const SeedBench = "bench"

// BenchParFiles is how many files bench/par holds in the bench seed.
const BenchParFiles = 16

// seedBench adds the benchmark tree to org-a.
func (e *Emulator) seedBench() error {
	e.mu.Lock()
	var a *org
	for _, o := range e.orgs {
		if o.name == OrgA {
			a = o
		}
	}
	e.mu.Unlock()
	if a == nil {
		return fmt.Errorf("emulator: no %s to seed", OrgA)
	}
	size := e.opts.BenchFileSize
	if size <= 0 {
		size = 1 << 30
	}
	sd := newSeeder(e, e.now(), 7)
	sh := a.shared
	bench, err := sd.dir(sh, sh.root.id, "bench")
	if err != nil {
		return err
	}
	if _, err := sd.file(sh, bench, "big.bin", size, a.admin); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		n    int
		size int64
	}{{"small", 1000, 8 * kib}, {"wide", 10000, 100}} {
		id, err := sd.dir(sh, bench, d.name)
		if err != nil {
			return err
		}
		for i := 0; i < d.n; i++ {
			if _, err := sd.file(sh, id, fmt.Sprintf("file-%05d.dat", i), d.size, a.admin); err != nil {
				return err
			}
		}
	}
	// Made last, so the ids of the folders above stay what they were.
	par, err := sd.dir(sh, bench, "par")
	if err != nil {
		return err
	}
	for i := 0; i < BenchParFiles; i++ {
		if _, err := sd.file(sh, par, fmt.Sprintf("r%02d.bin", i), size/4, a.admin); err != nil {
			return err
		}
	}
	if err := sd.flush(); err != nil {
		return err
	}
	e.mu.Lock()
	sort.SliceStable(e.logs, func(i, j int) bool { return e.logs[i].created.Before(e.logs[j].created) })
	e.mu.Unlock()
	return nil
}
