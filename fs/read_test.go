package fs

// Tests of reading (handle.go's readHandle): content through the fetcher,
// the content cache and bundles.

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

func TestContentSizes(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	bs := int(cache.DefaultBlockSize)
	sizes := []int{0, 1, bs - 1, bs, bs + 1, 3*bs + 17, 100<<20 + 12345}
	sums := map[string]string{}
	for i, n := range sizes {
		data := testkit.RandBytes(n, int64(i))
		name := fmt.Sprintf("f%d.bin", n)
		e.put(0, root, name, data)
		sums[name] = sum(data)
	}
	for name, want := range sums {
		if got := fileSum(t, e.Path("shared", name)); got != want {
			t.Errorf("%s: sha256 %s, want %s", name, got, want)
		}
	}
}

func TestRandomPreads(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := testkit.RandBytes(20<<20+333, 7)
	e.put(0, e.root(0), "r.bin", data)
	f, err := os.Open(e.Path("shared", "r.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewSource(1))
	before := e.Emu.Stats().Objects.BytesOut
	for i := 0; i < 200; i++ {
		off := rng.Int63n(int64(len(data)))
		n := rng.Intn(300000) + 1
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			t.Fatalf("pread(%d, %d): %v", off, n, err)
		}
		if !bytes.Equal(buf[:got], data[off:min(int(off)+n, len(data))]) {
			t.Fatalf("pread(%d, %d) differs", off, n)
		}
	}
	// Random reads fetch only blocks they touch, not the whole file ahead.
	if out := e.Emu.Stats().Objects.BytesOut - before; out > int64(len(data)) {
		t.Errorf("200 random reads fetched %d bytes of a %d-byte file", out, len(data))
	}
}

func TestConcurrentReaders(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	var datas [][]byte
	for i := 0; i < 8; i++ {
		d := testkit.RandBytes(6<<20+i*1000, int64(100+i))
		datas = append(datas, d)
		e.put(0, root, fmt.Sprintf("c%d.bin", i), d)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func() { // 8 readers of one file
			defer wg.Done()
			b, err := os.ReadFile(e.Path("shared", "c0.bin"))
			if err != nil || !bytes.Equal(b, datas[0]) {
				errs <- fmt.Errorf("reader %d of c0.bin: %v", i, err)
			}
		}()
		go func() { // 8 readers of different files
			defer wg.Done()
			b, err := os.ReadFile(e.Path("shared", fmt.Sprintf("c%d.bin", i)))
			if err != nil || !bytes.Equal(b, datas[i]) {
				errs <- fmt.Errorf("reader of c%d.bin: %v", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestURLExpiryDuringRead(t *testing.T) {
	clock := emutest.NewClock(time.Now())
	e := newEnv(t, envOptions{Emu: emulator.Options{Now: clock.Now}})
	data := testkit.RandBytes(40<<20, 9)
	e.put(0, e.root(0), "long.bin", data)
	f, err := os.Open(e.Path("shared", "long.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A read in the middle (random: it starts no read-ahead) gets the URL.
	buf := make([]byte, 4096)
	if _, err := f.ReadAt(buf, 20<<20); err != nil || !bytes.Equal(buf, data[20<<20:20<<20+4096]) {
		t.Fatalf("first read: %v", err)
	}
	// Two hours pass on the service: the URL the mount holds has expired.
	clock.Advance(2 * time.Hour)
	all, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading after the URL expired: %v", err)
	}
	if !bytes.Equal(all, data) {
		t.Fatal("content differs after the URL was renewed")
	}
	if e.Store.Fetcher.Stats().URLRenewals == 0 {
		t.Error("no URL was renewed")
	}
}

func TestReadsUnderObjectFaults(t *testing.T) {
	e := newEnv(t, envOptions{Emu: emulator.Options{FaultSeed: 3}})
	root := e.root(0)
	var datas [][]byte
	for i := 0; i < 4; i++ {
		d := testkit.RandBytes(9<<20+i, int64(i+50))
		datas = append(datas, d)
		e.put(0, root, fmt.Sprintf("x%d.bin", i), d)
	}
	os.ReadDir(e.Path("shared")) // list before the faults: listings are not under test here
	e.Emu.SetFaultRate(0.2)
	defer e.Emu.SetFaultRate(0)
	for i, d := range datas {
		b, err := os.ReadFile(e.Path("shared", fmt.Sprintf("x%d.bin", i)))
		if err != nil || !bytes.Equal(b, d) {
			t.Fatalf("x%d.bin under faults: equal %v, %v", i, bytes.Equal(b, d), err)
		}
	}
	if e.Emu.Stats().Objects.Faults == 0 {
		t.Fatal("no fault was injected")
	}
}

func TestSecondReadMakesNoObjectRequest(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := testkit.RandBytes(5<<20, 11)
	e.put(0, e.root(0), "twice.bin", data)
	p := e.Path("shared", "twice.bin")
	if fileSum(t, p) != sum(data) {
		t.Fatal("first read differs")
	}
	gets, urls := e.objectGets(), e.Requests("POST /files/download")
	// Drop the kernel's pages so the read reaches the daemon.
	dropKernelCache(t, p)
	if fileSum(t, p) != sum(data) {
		t.Fatal("second read differs")
	}
	if g, u := e.objectGets()-gets, e.Requests("POST /files/download")-urls; g != 0 || u != 0 {
		t.Errorf("second read made %d object requests and %d URL requests", g, u)
	}
}

func TestSmallCacheEvictsWithinBudget(t *testing.T) {
	const budget = 8 << 20
	e := newEnv(t, envOptions{CacheMax: budget})
	root := e.root(0)
	var datas [][]byte
	for i := 0; i < 6; i++ {
		datas = append(datas, testkit.RandBytes(3<<20, int64(i)))
		e.put(0, root, fmt.Sprintf("e%d.bin", i), datas[i])
	}
	for i, d := range datas {
		if fileSum(t, e.Path("shared", fmt.Sprintf("e%d.bin", i))) != sum(d) {
			t.Fatalf("e%d.bin differs", i)
		}
		if used := e.Store.Content.Stats().Used; used > budget {
			t.Fatalf("after file %d the cache holds %d bytes, budget %d", i, used, budget)
		}
	}
	if st := e.Store.Content.Stats(); st.Evictions == 0 {
		t.Fatalf("no eviction: %+v", st)
	}
	var onDisk int64
	filepath.Walk(e.CacheDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".data") {
			st := info.Sys().(*syscall.Stat_t)
			onDisk += st.Blocks * 512
		}
		return nil
	})
	if onDisk > budget+1<<20 {
		t.Errorf("cache files take %d bytes on disk, budget %d", onDisk, budget)
	}
}

func TestRemountReusesValidEntriesDropsChanged(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	same, changed := testkit.RandBytes(3<<20, 1), testkit.RandBytes(3<<20, 2)
	e.put(0, root, "same.bin", same)
	e.put(0, root, "changed.bin", changed)
	fileSum(t, e.Path("shared", "same.bin"))
	fileSum(t, e.Path("shared", "changed.bin"))
	e.unmount()

	newer := testkit.RandBytes(3<<20, 3)
	e.put(0, root, "changed.bin", newer)
	e.Mount()
	gets := e.objectGets()
	if fileSum(t, e.Path("shared", "same.bin")) != sum(same) {
		t.Fatal("same.bin differs after remount")
	}
	if g := e.objectGets() - gets; g != 0 {
		t.Errorf("an unchanged file made %d object requests after remount", g)
	}
	if fileSum(t, e.Path("shared", "changed.bin")) != sum(newer) {
		t.Fatal("changed.bin shows old content after remount")
	}
	if e.objectGets() == gets {
		t.Error("a changed file was served from the old cache entry")
	}
}

func TestBundleCopiesSmallFolderInAFewRequests(t *testing.T) {
	e := newEnv(t, envOptions{Emu: emulator.Options{StepDelay: 30 * time.Millisecond}})
	want := e.smallFolder("many", 300)
	os.ReadDir(e.Path("shared")) // the parent listing is not what is measured
	before := e.allRequests()
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-r", e.Path("shared", "many"), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r: %v: %s", err, out)
	}
	used := e.allRequests() - before
	checkCopy(t, dst, want)
	st := e.Store.Bundler.Stats()
	if st.Completed != 1 || st.Files < 290 {
		t.Fatalf("bundler: %+v", st)
	}
	// Where its time went: the job is ready two steps after it was asked
	// for, and the ZIP holds at least the bytes of the files it brought
	// (no fewer than the smallest st.Files of the folder's).
	var sizes []int
	for _, b := range want {
		sizes = append(sizes, len(b))
	}
	slices.Sort(sizes)
	var least int64
	for _, n := range sizes[:min(int(st.Files), len(sizes))] {
		least += int64(n)
	}
	if st.Job < 60*time.Millisecond || st.Bytes < least || st.Transfer <= 0 || st.Unpack <= 0 {
		t.Errorf("bundler's times and bytes: %+v, want a job of at least 60ms and a ZIP of at least %d bytes", st, least)
	}
	// A listing, the first files alone (URL + GET each), the job, its polls
	// and its ZIP: a handful, against 600 for file after file.
	if used > 25 {
		t.Errorf("cp -r of 300 files made %d requests: %v", used, e.Emu.Stats().Requests)
	}
	t.Logf("cp -r of 300 files: %d requests", used)
}

func TestBundleFallsBackWithoutFeature(t *testing.T) {
	e := newEnv(t, envOptions{Org: emulator.OrgB, Emu: emulator.Options{StepDelay: 30 * time.Millisecond}})
	want := e.smallFolder("many", 60)
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-r", e.Path("shared", "many"), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r: %v: %s", err, out)
	}
	checkCopy(t, dst, want)
	st := e.Store.Bundler.Stats()
	if !st.Disabled || st.Completed != 0 {
		t.Fatalf("bundler after 4710: %+v", st)
	}
	// The mount stops asking after the first 4710.
	asked := e.Requests("POST /files/download")
	want2 := e.smallFolder("more", 20)
	e.Store.Dirs.DropAll() // as SIGHUP does: the new folder shows at once
	dst2 := filepath.Join(t.TempDir(), "copy2")
	if out, err := exec.Command("cp", "-r", e.Path("shared", "more"), dst2).CombinedOutput(); err != nil {
		t.Fatalf("cp -r: %v: %s", err, out)
	}
	checkCopy(t, dst2, want2)
	if d := e.Requests("POST /files/download") - asked; d != 20 {
		t.Errorf("after a 4710, 20 files made %d download requests, want one URL each", d)
	}
	if e.Emu.Stats().Codes[4710] != 1 {
		t.Errorf("4710 answered %d times, want once", e.Emu.Stats().Codes[4710])
	}
}

func TestBundleNobodyWaitsForIsAborted(t *testing.T) {
	e := newEnv(t, envOptions{
		Emu:    emulator.Options{StepDelay: time.Hour}, // the job never finishes by itself
		Bundle: cache.BundleOptions{Idle: 300 * time.Millisecond, WaitLimit: 100 * time.Millisecond},
	})
	want := e.smallFolder("slow", 20)
	for _, name := range []string{"note 000 #0.txt", "note 001 #1.txt", "note 002 #2.txt"} {
		b, err := os.ReadFile(e.Path("shared", "slow", name))
		if err != nil || !bytes.Equal(b, want[name]) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if e.Store.Bundler.Stats().Jobs != 1 {
		t.Fatalf("no bundle started: %+v", e.Store.Bundler.Stats())
	}
	testkit.WaitFor(t, 5*time.Second, "the idle bundle to be aborted", func() bool {
		return e.Requests("DELETE /files/downloads/{id}") > 0
	})
	if st := e.Store.Bundler.Stats(); st.Aborted != 1 {
		t.Errorf("bundler: %+v", st)
	}
}

func TestInterruptedReadCancelsRequests(t *testing.T) {
	e := newEnv(t, envOptions{Emu: emulator.Options{StreamRate: 2 << 20}}) // 2 MiB/s per connection
	e.put(0, e.root(0), "slow.bin", testkit.RandBytes(64<<20, 5))
	cat := exec.Command("cat", e.Path("shared", "slow.bin"))
	cat.Stdout = io.Discard
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cat.Process.Signal(os.Interrupt)
	cat.Wait()
	// Requests cut now; what was on the wire drains within moments.
	time.Sleep(500 * time.Millisecond)
	sent := e.Emu.Stats().Objects.BytesOut
	time.Sleep(time.Second)
	if more := e.Emu.Stats().Objects.BytesOut - sent; more > 256<<10 {
		t.Errorf("the object store sent %d more bytes after the reader was interrupted", more)
	}
	if sent >= 64<<20 {
		t.Errorf("the whole file (%d bytes) was fetched for an interrupted reader", sent)
	}
}

func TestReadersOfOneFileShareFetches(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := testkit.RandBytes(32<<20, 4)
	e.put(0, e.root(0), "shared.bin", data)
	before := e.Emu.Stats().Objects.BytesOut
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := os.ReadFile(e.Path("shared", "shared.bin"))
			if err != nil || !bytes.Equal(b, data) {
				t.Errorf("reader %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if out := e.Emu.Stats().Objects.BytesOut - before; out > int64(len(data))*5/4 {
		t.Errorf("8 readers of a %d-byte file pulled %d bytes", len(data), out)
	}
}

// rangeOf parses a request's Range header "bytes=a-b" into [a, b+1).
func rangeOf(r *http.Request) (start, end int64, ok bool) {
	v, found := strings.CutPrefix(r.Header.Get("Range"), "bytes=")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(v, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return start, last + 1, true
}

// A sequential read fetches ahead in requests of 8 MiB (after a first one
// of the 1 MiB block read), never more than --read-ahead past what the
// program reads (and the kernel's own 1 MiB), and every byte once.
func TestSequentialReadAheadSizes(t *testing.T) {
	const readAhead, chunk, size = 16 << 20, 8 << 20, 40 << 20
	e := newEnv(t, envOptions{ReadAhead: readAhead})
	data := testkit.RandBytes(size, 3)
	e.put(0, e.root(0), "seq.bin", data)
	var mu sync.Mutex
	var ranges [][2]int64
	var reading int64 // guarded by mu: where the read in progress ends
	var past int64    // guarded by mu: the farthest a request went past it
	e.setHook(func(r *http.Request, answered bool) {
		if answered || r.Method != http.MethodGet {
			return
		}
		if start, end, ok := rangeOf(r); ok {
			mu.Lock()
			ranges = append(ranges, [2]int64{start, end})
			past = max(past, end-reading)
			mu.Unlock()
		}
	})
	before := e.Emu.Stats().Objects
	f, err := os.Open(e.Path("shared", "seq.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var got []byte
	for off := int64(0); off < size; off += int64(len(buf)) {
		mu.Lock()
		reading = off + int64(len(buf))
		mu.Unlock()
		n, err := f.ReadAt(buf, off)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the sequential read differs from the content")
	}
	after := e.Emu.Stats().Objects
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	t.Logf("range requests %v; farthest past the read: %d MiB", ranges, past>>20)
	if sent := after.BytesOut - before.BytesOut; sent != size {
		t.Errorf("the object store sent %d bytes for a %d-byte file read once", sent, size)
	}
	for i, r := range ranges {
		n := r[1] - r[0]
		if n > chunk || i > 0 && r[1] < size && n != chunk || i > 0 && r[0] != ranges[i-1][1] {
			t.Errorf("range request %d is [%d, %d): %d bytes, want %d (the first may be smaller, the last ends the file)", i, r[0], r[1], n, chunk)
		}
	}
	if past > readAhead+1<<20 { // the kernel reads up to 1 MiB ahead of the program
		t.Errorf("a request went %d bytes past the read in progress, want at most --read-ahead %d and the kernel's 1 MiB", past, readAhead)
	}
}

// A descriptor opened for reading before the file changed. Changed here
// (the same inode, as on a disk): it reads what every descriptor reads, the
// change being written, then the version uploaded, also where the kernel no
// longer holds the pages, and a new open reads the same (before, the old
// descriptor filled the kernel's pages with the version it opened, and new
// opens read those); renamed here, it reads on. Changed elsewhere (another
// inode): it reads the version it opened while the cache holds it, also once
// the mount listed the new version, which new opens read.
func TestReaderOpenedBeforeAChange(t *testing.T) {
	e := newEnv(t, envOptions{})
	v1 := testkit.RandBytes(3<<20, 5)
	v2 := "the second version, written here\n"
	for _, name := range []string{"rewritten.bin", "edited.bin", "renamed.bin", "replaced.bin"} {
		e.put(0, e.root(0), name, v1)
	}
	open := func(name string) *os.File {
		t.Helper()
		f, err := os.Open(e.Path("shared", name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.ReadAt(make([]byte, 4096), 0); err != nil {
			t.Fatal(err)
		}
		return f
	}
	// readAll reads f through the kernel's pages, then again with them dropped.
	readAll := func(f *os.File, name string, want []byte) {
		t.Helper()
		for _, drop := range []bool{false, true} {
			if drop {
				if err := fadviseDontNeed(f); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, len(v1)+1)
			n, err := f.ReadAt(got, 0)
			if err != nil && err != io.EOF || !bytes.Equal(got[:n], want) {
				t.Errorf("%s, pages dropped %v: the descriptor opened before reads %d bytes (%v), want %d (first %q, want %q)",
					name, drop, n, err, len(want), got[:min(n, 12)], want[:min(len(want), 12)])
			}
		}
	}

	// Rewritten here (O_TRUNC), uploaded.
	f := open("rewritten.bin")
	writeSync(t, e.Path("shared", "rewritten.bin"), os.O_WRONLY|os.O_TRUNC, v2)
	e.settle()
	readAll(f, "rewritten.bin", []byte(v2))
	if got := readFile(t, e.Path("shared", "rewritten.bin")); got != v2 {
		t.Errorf("a new open of the file rewritten here reads %q, want %q", got[:min(len(got), 12)], v2)
	}

	// Edited here, the writer still open: its bytes show, pending.
	f = open("edited.bin")
	w, err := os.OpenFile(e.Path("shared", "edited.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteAt([]byte("EDIT"), 2<<20); err != nil {
		t.Fatal(err)
	}
	edited := slices.Clone(v1)
	copy(edited[2<<20:], "EDIT")
	readAll(f, "edited.bin", edited)
	w.Close()

	// Renamed here: it reads on.
	f = open("renamed.bin")
	if err := os.Rename(e.Path("shared", "renamed.bin"), e.Path("shared", "moved.bin")); err != nil {
		t.Fatal(err)
	}
	readAll(f, "moved.bin", v1)
	e.settle()
	readAll(f, "moved.bin", v1)

	// Replaced elsewhere and listed here since: another inode.
	f = open("replaced.bin")
	e.apiReplace("replaced.bin", v2)
	e.Store.Dirs.DropAll()
	time.Sleep(1100 * time.Millisecond) // past the kernel's entry time
	if got := readFile(t, e.Path("shared", "replaced.bin")); got != v2 {
		t.Errorf("a new open of the file replaced elsewhere reads %q, want %q", got[:min(len(got), 12)], v2)
	}
	readAll(f, "replaced.bin", v1)
}
