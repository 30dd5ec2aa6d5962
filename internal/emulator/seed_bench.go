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
// default). The contents are written server-side, fast. For the scale
// benchmarks, bench/huge/ holds Options.BenchHugeFiles files of 10 bytes,
// and bench/tree/ Options.BenchTreeFiles files of 10 bytes,
// BenchTreePerFolder a folder, in folders of 50 folders (g000/d0000/...).
const SeedBench = "bench"

// BenchTreePerFolder is how many files each folder of bench/tree holds
// (Options.BenchTreeFiles).
const BenchTreePerFolder = 100

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
	if err := e.seedBenchReadWrite(sd, a, bench, size); err != nil {
		return err
	}
	// The scale rows' folders, when asked for: one folder of many entries,
	// and a tree of many folders.
	if n := e.opts.BenchHugeFiles; n > 0 {
		if err := e.seedBenchHuge(sd, a, bench, n); err != nil {
			return err
		}
	}
	if n := e.opts.BenchTreeFiles; n > 0 {
		if err := e.seedBenchTree(sd, a, bench, n); err != nil {
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

// seedBenchReadWrite creates in the folder bench of a's shared storage the
// data of the read and write benchmarks: big.bin of size bytes, small/,
// wide/ and par/ (files of a quarter of size).
func (e *Emulator) seedBenchReadWrite(sd *seeder, a *org, bench, size int64) error {
	sh := a.shared
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
	return nil
}

// seedBenchHuge creates the folder bench/huge of a's shared storage with n
// files of 10 bytes.
func (e *Emulator) seedBenchHuge(sd *seeder, a *org, bench int64, n int) error {
	sh := a.shared
	id, err := sd.dir(sh, bench, "huge")
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if _, err := sd.file(sh, id, fmt.Sprintf("file-%06d.dat", i), 10, a.admin); err != nil {
			return err
		}
	}
	return nil
}

// seedBenchTree creates the folder bench/tree of a's shared storage with n
// files of 10 bytes, BenchTreePerFolder a folder, in folders of 50 folders
// (g000/d0000/...).
func (e *Emulator) seedBenchTree(sd *seeder, a *org, bench int64, n int) error {
	sh := a.shared
	top, err := sd.dir(sh, bench, "tree")
	if err != nil {
		return err
	}
	folders := max(1, n/BenchTreePerFolder)
	var group int64
	for d := 0; d < folders; d++ {
		if d%50 == 0 { // a folder of folders per 50 folders
			if group, err = sd.dir(sh, top, fmt.Sprintf("g%03d", d/50)); err != nil {
				return err
			}
		}
		id, err := sd.dir(sh, group, fmt.Sprintf("d%04d", d))
		if err != nil {
			return err
		}
		for i := 0; i < n/folders; i++ {
			if _, err := sd.file(sh, id, fmt.Sprintf("f%03d.dat", i), 10, a.admin); err != nil {
				return err
			}
		}
	}
	return nil
}
