package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// The model test: a seeded sequence of file operations applied to the mount
// and to a local directory, the two compared after every round. Between
// rounds the daemon may be remounted or SIGKILLed and restarted on the same
// cache. Now and then a round runs offline (the service refusing
// connections): the workers go on, and the daemon may be SIGKILLed inside
// the outage (once the mount says offline) and started again offline, from
// what it kept; at the return, orgfs sync answers once what was changed
// offline is on the service. At the end a new mount with an empty cache
// reads everything back from the service. A failure prints the seed and the operations up to the
// first difference, the shortest prefix that fails.
//
// Beside the workers, other writers change a folder of their own through a
// second mount and the API (model_writers_test.go).
//
// ORGFS_MODEL_SEED, ORGFS_MODEL_ROUNDS, ORGFS_MODEL_WORKERS and
// ORGFS_MODEL_FAULTS (a fault rate) tune it; make soak runs it long.

type modelConfig struct {
	seed      int64
	rounds    int
	perRound  int // operations per worker per round
	workers   int
	faultRate float64
}

func modelConfigFromEnv(t *testing.T) modelConfig {
	c := modelConfig{seed: time.Now().UnixNano() % 1e9, rounds: 12, perRound: 12, workers: 2}
	envInt := func(name string, p *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				t.Fatalf("%s=%q: want a positive number", name, v)
			}
			*p = n
		}
	}
	if v := os.Getenv("ORGFS_MODEL_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("ORGFS_MODEL_SEED=%q: %v", v, err)
		}
		c.seed = n
	}
	envInt("ORGFS_MODEL_ROUNDS", &c.rounds)
	envInt("ORGFS_MODEL_OPS", &c.perRound)
	envInt("ORGFS_MODEL_WORKERS", &c.workers)
	if v := os.Getenv("ORGFS_MODEL_FAULTS"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f >= 1 {
			t.Fatalf("ORGFS_MODEL_FAULTS=%q: want a fraction below 1", v)
		}
		c.faultRate = f
	}
	return c
}

// modelWorker applies its own operations to its own folder of the mount and
// of the reference.
type modelWorker struct {
	id       int
	rng      *rand.Rand
	mnt, ref string // the worker's folder in the mount and in the reference
	log      []string
}

var (
	modelFiles = []string{"f0", "f1", "f2.txt", "f3 space", "f4"}
	modelDirs  = []string{"", "d0", "d1", "d0/e"}
)

func (w *modelWorker) file() string {
	return filepath.Join(modelDirs[w.rng.Intn(len(modelDirs))], modelFiles[w.rng.Intn(len(modelFiles))])
}

func (w *modelWorker) dir() string { return modelDirs[1+w.rng.Intn(len(modelDirs)-1)] }

// data is a whole file's content: mostly small, now and then a few MiB.
func (w *modelWorker) data() []byte {
	if w.rng.Intn(10) == 0 {
		return w.bytes(3 << 20)
	}
	return w.bytes(64 << 10)
}

// bytes is up to max random bytes.
func (w *modelWorker) bytes(max int) []byte {
	b := make([]byte, w.rng.Intn(max))
	w.rng.Read(b)
	return b
}

// step picks one operation, applies it to both trees and compares what they
// answered. It returns a description of a difference, or "".
func (w *modelWorker) step() string {
	var desc string
	var op func(root string) (string, error)
	switch k := w.rng.Intn(11); k {
	case 0, 1:
		p, b := w.file(), w.data()
		desc = fmt.Sprintf("write %s (%d bytes)", p, len(b))
		op = func(root string) (string, error) { return "", os.WriteFile(filepath.Join(root, p), b, 0o644) }
	case 2:
		p, off, b := w.file(), int64(w.rng.Intn(256<<10)), w.bytes(8<<10)
		desc = fmt.Sprintf("pwrite %s at %d (%d bytes)", p, off, len(b))
		op = func(root string) (string, error) { return "", pwrite(filepath.Join(root, p), off, b, false) }
	case 3:
		p, n := w.file(), int64(w.rng.Intn(128<<10))
		desc = fmt.Sprintf("truncate %s to %d", p, n)
		op = func(root string) (string, error) { return "", os.Truncate(filepath.Join(root, p), n) }
	case 4:
		p, b := w.file(), w.bytes(4<<10)
		desc = fmt.Sprintf("append %s (%d bytes)", p, len(b))
		op = func(root string) (string, error) { return "", appendTo(filepath.Join(root, p), b) }
	case 5:
		a, b := w.file(), w.file()
		desc = fmt.Sprintf("rename %s %s", a, b)
		op = func(root string) (string, error) {
			return "", os.Rename(filepath.Join(root, a), filepath.Join(root, b))
		}
	case 6:
		p := w.file()
		desc = "unlink " + p
		op = func(root string) (string, error) { return "", os.Remove(filepath.Join(root, p)) }
	case 7:
		d := w.dir()
		desc = "mkdir " + d
		op = func(root string) (string, error) { return "", os.Mkdir(filepath.Join(root, d), 0o755) }
	case 8:
		d := w.dir()
		desc = "rmdir " + d
		op = func(root string) (string, error) {
			// As os.Remove and Python's os.rmdir do: the mount answers EINTR
			// when the caller's thread is interrupted by a signal (Go's
			// preemption sends this process many) while the folder is
			// listed, before anything changed.
			for {
				err := syscall.Rmdir(filepath.Join(root, d))
				if err != syscall.EINTR {
					return "", err
				}
			}
		}
	case 9:
		p := w.file()
		desc = "read " + p
		op = func(root string) (string, error) {
			b, err := os.ReadFile(filepath.Join(root, p))
			return string(b), err
		}
	default:
		p, off, b := w.file(), int64(w.rng.Intn(64<<10)), w.bytes(8<<10)
		desc = fmt.Sprintf("pwrite+fsync %s at %d (%d bytes), reopen and read", p, off, len(b))
		op = func(root string) (string, error) {
			if err := pwrite(filepath.Join(root, p), off, b, true); err != nil {
				return "", err
			}
			got, err := os.ReadFile(filepath.Join(root, p))
			return string(got), err
		}
	}
	w.log = append(w.log, desc)
	gotM, errM := op(w.mnt)
	gotR, errR := op(w.ref)
	if errno(errM) != errno(errR) {
		return fmt.Sprintf("%s: the mount answered %v, a local disk %v", desc, errM, errR)
	}
	if gotM != gotR {
		return fmt.Sprintf("%s: the mount read %d bytes, a local disk %d (different content)", desc, len(gotM), len(gotR))
	}
	return ""
}

// holdOpen writes into one of the worker's files (created when missing; in
// the worker's folder when the one drawn is missing) through a descriptor it
// leaves open, on the mount and on the reference (the reference's is closed
// at once), and returns the mount's descriptor; nil when both refused the
// same way, a difference otherwise.
func (w *modelWorker) holdOpen() (*os.File, string) {
	p, off, b := w.file(), int64(w.rng.Intn(64<<10)), w.bytes(8<<10)
	if _, err := os.Stat(filepath.Join(w.ref, filepath.Dir(p))); err != nil {
		p = filepath.Base(p) // its folder is gone: one in the worker's own, so that a file is held
	}
	desc := fmt.Sprintf("open %s, pwrite at %d (%d bytes), left open across the crash", p, off, len(b))
	w.log = append(w.log, desc)
	write := func(root string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(root, p), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if _, err := f.WriteAt(b, off); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	fm, errM := write(w.mnt)
	fr, errR := write(w.ref)
	if fr != nil {
		fr.Close()
	}
	if errno(errM) != errno(errR) {
		if fm != nil {
			fm.Close()
		}
		return nil, fmt.Sprintf("%s: the mount answered %v, a local disk %v", desc, errM, errR)
	}
	return fm, ""
}

// errno reduces an error to what a program sees of it: its errno, or
// "none".
func errno(err error) string {
	if err == nil {
		return "none"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e.Error()
	}
	return err.Error()
}

func pwrite(path string, off int64, b []byte, sync bool) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, off); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func appendTo(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// treeDiff compares two trees: names, kinds, sizes and contents. It returns
// the first difference, or "", and the bytes compared.
func treeDiff(mnt, ref string) (string, int64) {
	a, err := snapshot(mnt)
	if err != nil {
		return "reading the mount: " + err.Error(), 0
	}
	b, err := snapshot(ref)
	if err != nil {
		return "reading the reference: " + err.Error(), 0
	}
	var names []string
	for n := range b {
		names = append(names, n)
	}
	for n := range a {
		if _, ok := b[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var verified int64
	for _, n := range names {
		x, inMount := a[n]
		y, inRef := b[n]
		switch {
		case !inMount:
			return fmt.Sprintf("%s is missing from the mount", n), verified
		case !inRef:
			return fmt.Sprintf("%s is in the mount only", n), verified
		case x.dir != y.dir:
			return fmt.Sprintf("%s is a folder on one side only", n), verified
		case !bytes.Equal(x.data, y.data):
			return fmt.Sprintf("%s differs: %d bytes in the mount, %d on a local disk", n, len(x.data), len(y.data)), verified
		}
		verified += int64(len(x.data))
	}
	return "", verified
}

type entry struct {
	dir  bool
	data []byte
}

func snapshot(root string) (map[string]entry, error) {
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if rel == contendedDir {
			return filepath.SkipDir // the other writers' (model_writers_test.go)
		}
		if d.IsDir() {
			out[rel] = entry{dir: true}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Size() != int64(len(b)) {
			return fmt.Errorf("%s: stat says %d bytes, reading gives %d", rel, fi.Size(), len(b))
		}
		out[rel] = entry{data: b}
		return nil
	})
	return out, err
}

// TestModel runs the model under the default dialect as configured, and
// under the dialect other (dialect_test.go) with half the rounds (two at
// least).
func TestModel(t *testing.T) {
	cfg := modelConfigFromEnv(t)
	inDialects(t, func(t *testing.T, d emulator.Dialect) {
		c := cfg
		if d != (emulator.Dialect{}) {
			c.rounds = max(2, cfg.rounds/2)
		}
		runModel(t, c, d)
	})
}

func runModel(t *testing.T, cfg modelConfig, dialect emulator.Dialect) {
	t.Logf("seed %d: %d rounds of %d operations by %d workers, fault rate %v, dialect %s (ORGFS_MODEL_SEED=%d reproduces it)",
		cfg.seed, cfg.rounds, cfg.perRound, cfg.workers, cfg.faultRate, dialect, cfg.seed)
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, FaultSeed: cfg.seed, Dialect: dialect})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir, cacheDir, refRoot := t.TempDir(), t.TempDir(), t.TempDir()
	mountArgs := []string{"--credentials", creds, "--cache-dir", cacheDir, "--write-back", "20ms", "--dir-cache-time", "1h"}
	d := startDaemon(t, dir, mountArgs...)
	rng := rand.New(rand.NewSource(cfg.seed))
	workers := make([]*modelWorker, cfg.workers)
	for i := range workers {
		w := &modelWorker{id: i, rng: rand.New(rand.NewSource(cfg.seed + int64(i) + 1)),
			mnt: filepath.Join(dir, "shared", fmt.Sprintf("model-%d", i)), ref: filepath.Join(refRoot, fmt.Sprintf("model-%d", i))}
		for _, p := range []string{w.mnt, w.ref} {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		workers[i] = w
	}
	// The other writers: a second mount, and a script through the API.
	dirB := t.TempDir()
	startDaemon(t, dirB, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "20ms", "--dir-cache-time", "300ms")
	others := newContention(t, cfg.seed, dir, dirB, testkit.Client(t, srv, emulator.OrgA, api.Options{}))
	srv.Emulator.SetFaultRate(cfg.faultRate)
	fail := func(round int, what string) {
		t.Helper()
		var b strings.Builder
		for _, w := range workers {
			fmt.Fprintf(&b, "worker %d:\n", w.id)
			for i, op := range w.log {
				fmt.Fprintf(&b, "  %3d %s\n", i+1, op)
			}
		}
		fmt.Fprintf(&b, "other writers (shared/%s):\n", contendedDir)
		for i, op := range others.log {
			fmt.Fprintf(&b, "  %3d %s\n", i+1, op)
		}
		t.Fatalf("seed %d, round %d: %s\noperations up to the first difference:\n%s\ndaemon log:\n%s", cfg.seed, round, what, b.String(), tail(d.out.String(), 40))
	}
	var ops, restarts, kills, forced, heldAcross, outages, offlineKills int
	// kill SIGKILLs the daemon while each worker holds a file open, written
	// and not closed (what write(2) took must be uploaded by the next
	// daemon), and starts a new one on the same cache.
	kill := func(round int) {
		var held []*os.File
		for _, w := range workers {
			if f, diff := w.holdOpen(); diff != "" {
				fail(round, diff)
			} else if f != nil {
				held = append(held, f)
			}
		}
		if len(held) != len(workers) {
			fail(round, fmt.Sprintf("%d of %d workers hold a file open across the SIGKILL", len(held), len(workers)))
		}
		heldAcross += len(held)
		d.cmd.Process.Kill()
		d.wait()
		if ws, ok := d.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			fail(round, fmt.Sprintf("the daemon did not die of the SIGKILL: %v", d.cmd.ProcessState))
		}
		for _, f := range held {
			f.Close() // its daemon is gone: the error is expected
		}
		d = startDaemon(t, dir, mountArgs...)
		kills++
	}
	for round := 1; round <= cfg.rounds; round++ {
		// Now and then a round offline: the service refuses connections,
		// the workers go on (fsync included), and half the time the daemon is
		// killed inside the outage and starts again offline. A run of 4
		// rounds or more has one in its third round when none came.
		offline := rng.Intn(5) == 0 || outages == 0 && round == 3 && cfg.rounds >= 4
		outage := time.Now()
		if offline {
			srv.Emulator.SetOutage(emulator.OutageRefuse)
			mark(workers, "-- the service refuses connections")
		}
		diffs := make([]string, len(workers))
		var wg sync.WaitGroup
		var othersDiff string
		if !offline {
			runConcurrently(&wg, func() {
				others.found(t.Context())
				othersDiff = others.round(t.Context(), cfg.perRound)
			})
		}
		for i, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range cfg.perRound {
					if diff := w.step(); diff != "" {
						diffs[i] = diff
						return
					}
				}
			}()
		}
		wg.Wait()
		ops += cfg.perRound * len(workers)
		if othersDiff != "" {
			fail(round, "other writers: "+othersDiff)
		}
		for _, diff := range diffs {
			if diff != "" {
				fail(round, diff)
			}
		}
		if diff, _ := treeDiff(filepath.Join(dir, "shared"), refRoot); diff != "" {
			fail(round, diff)
		}
		if offline {
			if rng.Intn(2) == 0 || offlineKills == 0 {
				if err := os.WriteFile(filepath.Join(dir, ".ctl", "sync"), []byte("\n"), 0); err == nil {
					fail(round, "orgfs sync succeeded while the service refuses connections")
				}
				testkit.WaitFor(t, 10*time.Second, "the mount offline, its listings kept", func() bool {
					kept, _ := filepath.Glob(filepath.Join(cacheDir, "*", cache.ListingsFile))
					if mountOnline(dir) || len(kept) != 1 {
						return false
					}
					fi, err := os.Stat(kept[0])
					return err == nil && fi.ModTime().After(outage)
				})
				kill(round)
				offlineKills++
				mark(workers, "-- SIGKILL and a start offline")
				if diff, _ := treeDiff(filepath.Join(dir, "shared"), refRoot); diff != "" {
					fail(round, "after a start offline: "+diff)
				}
			}
			srv.Emulator.SetOutage(emulator.OutageNone)
			testkit.WaitFor(t, 30*time.Second, "what was changed offline on the service", func() bool {
				return os.WriteFile(filepath.Join(dir, ".ctl", "sync"), []byte("\n"), 0) == nil && mountOnline(dir)
			})
			outages++
			mark(workers, "-- the service answers again")
		}
		ev, force := modelEvent(rng.Intn(6), cfg.rounds-round+1, kills, restarts)
		if force {
			forced++
			mark(workers, "-- (forced: none came by chance)")
		}
		switch ev {
		case 0: // remount on the same cache
			d.cmd.Process.Signal(os.Interrupt)
			if code := d.wait(); code != 0 {
				fail(round, fmt.Sprintf("unmount: exit status %d", code))
			}
			d = startDaemon(t, dir, mountArgs...)
			restarts++
			mark(workers, "-- remount")
		case 1: // SIGKILL, then a new daemon on the same cache
			kill(round)
			mark(workers, "-- SIGKILL and restart")
		}
		if diff, _ := treeDiff(filepath.Join(dir, "shared"), refRoot); diff != "" {
			fail(round, "after the restart: "+diff)
		}
	}
	srv.Emulator.SetFaultRate(0)
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		fail(cfg.rounds, fmt.Sprintf("final unmount: exit status %d", code))
	}
	if diff := others.check(t.Context()); diff != "" {
		fail(cfg.rounds, "other writers: "+diff)
	}
	// What the service holds, through a new mount with an empty cache.
	d = startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--read-only")
	diff, verified := treeDiff(filepath.Join(dir, "shared"), refRoot)
	if diff != "" {
		fail(cfg.rounds, "read back from the service: "+diff)
	}
	d.cmd.Process.Signal(os.Interrupt)
	d.wait()
	st := srv.Emulator.Stats()
	var faults int64
	for _, n := range st.Faults {
		faults += n
	}
	t.Logf("seed %d: %d operations, %d remounts, %d SIGKILL restarts (%d forced in the last rounds), %d files held open across them, %d rounds offline (%d SIGKILLs inside them, started again offline), faults injected %v, %d bytes verified from the service, 0 files lost; other writers: %d writes, %d reads by the second mount, no mix, %d conflict copies, no acknowledged write lost",
		cfg.seed, ops, restarts, kills, forced, heldAcross, outages, offlineKills, st.Faults, verified, others.seq, others.reads, others.copies)
	// What the test claims to cover, it covered.
	if kills == 0 || heldAcross == 0 {
		t.Errorf("seed %d: %d SIGKILL restarts, %d files held open across them: want at least one of each", cfg.seed, kills, heldAcross)
	}
	if cfg.rounds >= 4 && offlineKills == 0 {
		t.Errorf("seed %d: no round offline with a SIGKILL in %d rounds", cfg.seed, cfg.rounds)
	}
	if cfg.rounds >= 2 && restarts == 0 {
		t.Errorf("seed %d: no remount in %d rounds", cfg.seed, cfg.rounds)
	}
	if cfg.faultRate > 0 && faults == 0 {
		t.Errorf("seed %d: fault rate %v, and no fault was injected", cfg.seed, cfg.faultRate)
	}
}

// modelEvent is what happens after a round, from ev (a draw of 0 to 5: 0 a
// remount, 1 a SIGKILL and restart, others nothing) and the rounds left,
// this one included: a run with no SIGKILL yet gets one in its last round,
// and one with no remount either gets one in the round before (a single
// round gets only the SIGKILL). force reports a change to the draw.
func modelEvent(ev, left, kills, remounts int) (event int, force bool) {
	switch {
	case kills == 0 && remounts == 0 && left == 2 && ev != 0 && ev != 1:
		return 0, true
	case kills == 0 && left == 1:
		return 1, ev != 1
	case remounts == 0 && left == 1:
		return 0, ev != 0
	}
	return ev, false
}

func mark(workers []*modelWorker, what string) {
	for _, w := range workers {
		w.log = append(w.log, what)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// mountOnline reports whether the mount at dir says the service can be
// reached (.ctl/stats).
func mountOnline(dir string) bool {
	var st struct {
		Service struct{ Online bool } `json:"service"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ".ctl", "stats"))
	return err == nil && json.Unmarshal(b, &st) == nil && st.Service.Online
}
