package fs

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
)

// testEnv is an emulator with a mount of one of its organizations.
type testEnv struct {
	t        *testing.T
	srv      *emulator.Server
	emu      *emulator.Emulator
	org      string
	client   *api.Client
	dir      string // the mount point
	cacheDir string
	opts     envOptions

	server  *fuse.Server
	content *cache.Content
	fetcher *cache.Fetcher
	bundler *cache.Bundler
	staging *cache.Staging
	dirs    *cache.Dirs
}

type envOptions struct {
	org        string        // default org-a
	seed       string        // default empty
	dirTTL     time.Duration // default 1 minute
	cacheMax   int64
	perPage    int // listing page size; default 1000
	emu        emulator.Options
	bundle     cache.BundleOptions // tuning of the bundler (client, content and dir are filled in)
	readOnly   bool
	writeBack  time.Duration // default 50ms
	stagingDir string        // default CACHE/staging
}

func testLogger(t testing.TB) logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if testing.Verbose() {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

// newEnv starts an emulator and mounts it. Everything is undone at the end
// of the test, whatever happens.
func newEnv(t *testing.T, o envOptions) *testEnv {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("FUSE is not available (%v): the mount tests need /dev/fuse", err)
	}
	if o.org == "" {
		o.org = emulator.OrgA
	}
	if o.seed == "" {
		o.seed = emulator.SeedEmpty
	}
	if o.dirTTL == 0 {
		o.dirTTL = time.Minute
	}
	if o.perPage == 0 {
		o.perPage = 1000
	}
	o.emu.Seed = o.seed
	srv := emutest.Start(t, o.emu)
	var creds api.Credentials
	for _, c := range srv.Credentials() {
		if c.Name == o.org {
			creds = api.Credentials{Endpoint: c.Endpoint, Key: c.Key, Secret: c.Secret}
		}
	}
	// The client signs with the service's clock, so a test may move it.
	client, err := api.New(creds, api.Options{Logger: testLogger(t), PerPage: o.perPage, Clock: o.emu.Now})
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, srv: srv, emu: srv.Emulator, org: o.org, client: client, cacheDir: t.TempDir(), opts: o}
	e.mount()
	return e
}

// mount mounts the tree on a new mount point, with the env's cache dir.
func (e *testEnv) mount() {
	t := e.t
	t.Helper()
	var err error
	e.content, err = cache.OpenContent(cache.ContentOptions{Dir: e.cacheDir, MaxSize: e.opts.cacheMax, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	bo := e.opts.bundle
	bo.Client, bo.Content, bo.TempDir, bo.Log = e.client, e.content, filepath.Join(e.cacheDir, "bundles"), testLogger(t)
	if bo.PollInterval == 0 {
		bo.PollInterval = 20 * time.Millisecond
	}
	e.bundler, err = cache.NewBundler(bo)
	if err != nil {
		t.Fatal(err)
	}
	e.fetcher, err = cache.NewFetcher(cache.FetcherOptions{Client: e.client, Content: e.content, Bundler: e.bundler, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	e.dirs = cache.NewDirs(e.client, e.opts.dirTTL, nil)
	wb := e.opts.writeBack
	if wb == 0 {
		wb = 50 * time.Millisecond
	}
	var tree atomic.Pointer[FS] // resumed uploads may end before the tree exists
	e.staging, err = cache.OpenStaging(cache.StagingOptions{
		Dir: cmp.Or(e.opts.stagingDir, filepath.Join(e.cacheDir, "staging")), Client: e.client, WriteBack: wb, Log: testLogger(t),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		OnUploaded: func(tg cache.Target, f api.File) {
			if t := tree.Load(); t != nil {
				t.Uploaded(tg, f)
			} else {
				e.dirs.Put(cache.DirKey{Area: tg.Area, ID: tg.ParentID}, f)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fsys := New(Deps{Client: e.client, Dirs: e.dirs, Fetcher: e.fetcher, Bundler: e.bundler, Staging: e.staging, Log: testLogger(t)},
		Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Umask: 0o022, ReadOnly: e.opts.readOnly})
	tree.Store(fsys)
	e.dir = t.TempDir()
	e.server, err = Mount(e.dir, fsys, MountOptions{})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	server, dir, content, bundler, staging := e.server, e.dir, e.content, e.bundler, e.staging
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			exec.Command("fusermount3", "-u", "-z", dir).Run()
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		staging.Close()
		bundler.Close()
		content.Close()
	})
}

// unmount ends the current mount (a later mount() makes a new one).
func (e *testEnv) unmount() {
	e.t.Helper()
	if err := e.server.Unmount(); err != nil {
		e.t.Fatalf("unmount: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.staging.Drain(ctx); err != nil {
		e.t.Fatalf("drain: %v", err)
	}
	e.staging.Close()
	e.bundler.Close()
	e.content.Close()
}

func (e *testEnv) path(parts ...string) string {
	return filepath.Join(append([]string{e.dir}, parts...)...)
}

func (e *testEnv) root(machineID int64) int64 {
	id, err := e.emu.RootID(e.org, machineID)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// put creates (or replaces) a file on the service, server-side.
func (e *testEnv) put(machineID, parent int64, name string, data []byte) int64 {
	e.t.Helper()
	id, err := e.emu.CreateFile(e.org, machineID, parent, name, bytes.NewReader(data))
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *testEnv) mkdir(machineID, parent int64, name string) int64 {
	e.t.Helper()
	id, err := e.emu.CreateDir(e.org, machineID, parent, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// requests is how many API requests of a route the emulator answered.
func (e *testEnv) requests(route string) int64 { return e.emu.Stats().Requests[route] }

// apiRequests is the total of API requests answered.
func (e *testEnv) apiRequests() int64 {
	var n int64
	for _, v := range e.emu.Stats().Requests {
		n += v
	}
	return n
}

func (e *testEnv) objectGets() int64 { return e.emu.Stats().Objects.Gets }

func randomData(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func sum(b []byte) string { h := sha256.Sum256(b); return fmt.Sprintf("%x", h) }

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func listNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestTreeMatchesListings(t *testing.T) {
	e := newEnv(t, envOptions{seed: emulator.SeedDemo, perPage: 7})
	// shared/: every page of the root listing, with sizes and times.
	want, err := e.client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= 7 {
		t.Fatalf("the demo root has %d entries; the test needs more than a page", len(want))
	}
	ents, err := os.ReadDir(e.path("shared"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Fatalf("shared/ has %d entries, the service %d", len(ents), len(want))
	}
	for i, f := range want {
		st, err := os.Stat(e.path("shared", f.Name))
		if err != nil {
			t.Fatalf("entry %d %q: %v", i, f.Name, err)
		}
		if st.IsDir() != f.IsDir() || (!f.IsDir() && st.Size() != f.Size) || !st.ModTime().Equal(f.LastModified) {
			t.Errorf("%q: dir %v size %d mtime %v; service: dir %v size %d mtime %v", f.Name, st.IsDir(), st.Size(), st.ModTime(), f.IsDir(), f.Size, f.LastModified)
		}
		if f.IsDir() && st.Mode().Perm() != 0o755 || !f.IsDir() && st.Mode().Perm() != 0o644 {
			t.Errorf("%q: mode %v", f.Name, st.Mode())
		}
	}
	// small-files/ has 300 entries: many pages of 7.
	sf := listNames(t, e.path("shared", "small-files"))
	if len(sf) != 300 {
		t.Fatalf("small-files/ lists %d entries, want 300", len(sf))
	}
	// computers/: clashing names get their id; unicode and '#' stay.
	seats, err := api.Collect(e.client.Seats(t.Context(), ""))
	if err != nil {
		t.Fatal(err)
	}
	names := listNames(t, e.path("computers"))
	if len(names) != len(seats) {
		t.Fatalf("computers/ has %q, the service %d computers", names, len(seats))
	}
	joined := strings.Join(names, "|")
	for _, s := range seats {
		if !strings.Contains(joined, s.Name) {
			t.Errorf("computer %q missing from %q", s.Name, names)
		}
	}
	if !strings.Contains(joined, "Build Box (") || !strings.Contains(joined, "Café Render") || !strings.Contains(joined, "Design Studio #1") {
		t.Errorf("computer names %q lack the clash suffix, unicode or '#'", names)
	}
	// A computer's storage and recordings list what the service has.
	for _, s := range seats {
		files, err := e.client.MachineFiles(t.Context(), s.ID, api.ListFilesRequest{}).Collect()
		if err != nil {
			t.Fatal(err)
		}
		var dirName string
		for _, n := range names {
			if n == s.Name || n == fmt.Sprintf("%s (%d)", s.Name, s.ID) {
				dirName = n
			}
		}
		if got := listNames(t, e.path("computers", dirName)); len(got) != len(files) {
			t.Errorf("computers/%s has %d entries, the service %d", dirName, len(got), len(files))
		}
	}
	recs, err := e.client.Recordings(t.Context(), api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if got := listNames(t, e.path("recordings")); len(got) != len(recs) || len(recs) == 0 {
		t.Errorf("recordings/ has %d entries, the service %d", len(got), len(recs))
	}
}

func TestNamesWithSpacesUnicodeAndHash(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	names := []string{"with space.txt", "ünïcødé ✓.txt", "#hash #1.md", "50% off?.txt", "quote's \"q\".txt"}
	for i, n := range names {
		e.put(0, root, n, []byte(n+fmt.Sprint(i)))
	}
	for i, n := range names {
		local := safeName(n)
		b, err := os.ReadFile(e.path("shared", local))
		if err != nil || string(b) != n+fmt.Sprint(i) {
			t.Errorf("%q read as %q (%v)", local, b, err)
		}
	}
}

func TestContentSizes(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	bs := int(cache.DefaultBlockSize)
	sizes := []int{0, 1, bs - 1, bs, bs + 1, 3*bs + 17, 100<<20 + 12345}
	sums := map[string]string{}
	for i, n := range sizes {
		data := randomData(n, int64(i))
		name := fmt.Sprintf("f%d.bin", n)
		e.put(0, root, name, data)
		sums[name] = sum(data)
	}
	for name, want := range sums {
		if got := fileSum(t, e.path("shared", name)); got != want {
			t.Errorf("%s: sha256 %s, want %s", name, got, want)
		}
	}
}

func TestRandomPreads(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := randomData(20<<20+333, 7)
	e.put(0, e.root(0), "r.bin", data)
	f, err := os.Open(e.path("shared", "r.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewSource(1))
	before := e.emu.Stats().Objects.BytesOut
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
	if out := e.emu.Stats().Objects.BytesOut - before; out > int64(len(data)) {
		t.Errorf("200 random reads fetched %d bytes of a %d-byte file", out, len(data))
	}
}

func TestConcurrentReaders(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	var datas [][]byte
	for i := 0; i < 8; i++ {
		d := randomData(6<<20+i*1000, int64(100+i))
		datas = append(datas, d)
		e.put(0, root, fmt.Sprintf("c%d.bin", i), d)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func() { // 8 readers of one file
			defer wg.Done()
			b, err := os.ReadFile(e.path("shared", "c0.bin"))
			if err != nil || !bytes.Equal(b, datas[0]) {
				errs <- fmt.Errorf("reader %d of c0.bin: %v", i, err)
			}
		}()
		go func() { // 8 readers of different files
			defer wg.Done()
			b, err := os.ReadFile(e.path("shared", fmt.Sprintf("c%d.bin", i)))
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
	e := newEnv(t, envOptions{emu: emulator.Options{Now: clock.Now}})
	data := randomData(40<<20, 9)
	e.put(0, e.root(0), "long.bin", data)
	f, err := os.Open(e.path("shared", "long.bin"))
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
	if e.fetcher.Stats().URLRenewals == 0 {
		t.Error("no URL was renewed")
	}
}

func TestReadsUnderObjectFaults(t *testing.T) {
	e := newEnv(t, envOptions{emu: emulator.Options{FaultSeed: 3}})
	root := e.root(0)
	var datas [][]byte
	for i := 0; i < 4; i++ {
		d := randomData(9<<20+i, int64(i+50))
		datas = append(datas, d)
		e.put(0, root, fmt.Sprintf("x%d.bin", i), d)
	}
	os.ReadDir(e.path("shared")) // list before the faults: listings are not under test here
	e.emu.SetFaultRate(0.2)
	defer e.emu.SetFaultRate(0)
	for i, d := range datas {
		b, err := os.ReadFile(e.path("shared", fmt.Sprintf("x%d.bin", i)))
		if err != nil || !bytes.Equal(b, d) {
			t.Fatalf("x%d.bin under faults: equal %v, %v", i, bytes.Equal(b, d), err)
		}
	}
	if e.emu.Stats().Objects.Faults == 0 {
		t.Fatal("no fault was injected")
	}
}

func TestSecondReadMakesNoObjectRequest(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := randomData(5<<20, 11)
	e.put(0, e.root(0), "twice.bin", data)
	p := e.path("shared", "twice.bin")
	if fileSum(t, p) != sum(data) {
		t.Fatal("first read differs")
	}
	gets, urls := e.objectGets(), e.requests("POST /files/download")
	// Drop the kernel's pages so the read reaches the daemon.
	dropKernelCache(t, p)
	if fileSum(t, p) != sum(data) {
		t.Fatal("second read differs")
	}
	if g, u := e.objectGets()-gets, e.requests("POST /files/download")-urls; g != 0 || u != 0 {
		t.Errorf("second read made %d object requests and %d URL requests", g, u)
	}
}

// dropKernelCache asks the kernel to forget a file's cached pages.
func dropKernelCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fadviseDontNeed(f); err != nil {
		t.Fatal(err)
	}
}

func TestSmallCacheEvictsWithinBudget(t *testing.T) {
	const budget = 8 << 20
	e := newEnv(t, envOptions{cacheMax: budget})
	root := e.root(0)
	var datas [][]byte
	for i := 0; i < 6; i++ {
		datas = append(datas, randomData(3<<20, int64(i)))
		e.put(0, root, fmt.Sprintf("e%d.bin", i), datas[i])
	}
	for i, d := range datas {
		if fileSum(t, e.path("shared", fmt.Sprintf("e%d.bin", i))) != sum(d) {
			t.Fatalf("e%d.bin differs", i)
		}
		if used := e.content.Stats().Used; used > budget {
			t.Fatalf("after file %d the cache holds %d bytes, budget %d", i, used, budget)
		}
	}
	if st := e.content.Stats(); st.Evictions == 0 {
		t.Fatalf("no eviction: %+v", st)
	}
	var onDisk int64
	filepath.Walk(e.cacheDir, func(p string, info os.FileInfo, err error) error {
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
	same, changed := randomData(3<<20, 1), randomData(3<<20, 2)
	e.put(0, root, "same.bin", same)
	e.put(0, root, "changed.bin", changed)
	fileSum(t, e.path("shared", "same.bin"))
	fileSum(t, e.path("shared", "changed.bin"))
	e.unmount()

	newer := randomData(3<<20, 3)
	e.put(0, root, "changed.bin", newer)
	e.mount()
	gets := e.objectGets()
	if fileSum(t, e.path("shared", "same.bin")) != sum(same) {
		t.Fatal("same.bin differs after remount")
	}
	if g := e.objectGets() - gets; g != 0 {
		t.Errorf("an unchanged file made %d object requests after remount", g)
	}
	if fileSum(t, e.path("shared", "changed.bin")) != sum(newer) {
		t.Fatal("changed.bin shows old content after remount")
	}
	if e.objectGets() == gets {
		t.Error("a changed file was served from the old cache entry")
	}
}

func TestListingUsesOnlyListRequests(t *testing.T) {
	e := newEnv(t, envOptions{perPage: 1000})
	root := e.root(0)
	big := e.mkdir(0, root, "big")
	for i := 0; i < 2500; i++ {
		e.put(0, big, fmt.Sprintf("file-%04d.txt", i), []byte(fmt.Sprint(i)))
	}
	before := e.emu.Stats().Requests
	out, err := exec.Command("ls", "-l", e.path("shared", "big")).CombinedOutput()
	if err != nil {
		t.Fatalf("ls -l: %v: %s", err, out)
	}
	if lines := strings.Count(string(out), "\n"); lines != 2501 { // "total" and 2500 entries
		t.Fatalf("ls -l printed %d lines", lines)
	}
	after := e.emu.Stats().Requests
	for route, n := range after {
		d := n - before[route]
		if d == 0 {
			continue
		}
		if route != "GET /files" {
			t.Errorf("ls -l made %d requests of %s", d, route)
		}
	}
	// 2 listings: shared/ (to find big) and big/ in 3 pages of 1000.
	if d := after["GET /files"] - before["GET /files"]; d > 4 {
		t.Errorf("ls -l made %d list requests", d)
	}
	total := e.apiRequests()
	if _, err := exec.Command("ls", "-l", e.path("shared", "big")).CombinedOutput(); err != nil {
		t.Fatal(err)
	}
	for _, probe := range []string{".DS_Store", "._big", "desktop.ini", "Thumbs.db", ".Trash-0", ".hidden", "autorun.inf", ".xdg-volume-info"} {
		if _, err := os.Stat(e.path("shared", "big", probe)); !os.IsNotExist(err) {
			t.Errorf("probe %s: %v", probe, err)
		}
	}
	if d := e.apiRequests() - total; d != 0 {
		t.Errorf("a second ls and probe names made %d requests within the TTL", d)
	}
}

func TestServiceChangesAppearAfterTTLOrRefresh(t *testing.T) {
	e := newEnv(t, envOptions{dirTTL: 500 * time.Millisecond})
	root := e.root(0)
	e.put(0, root, "a.txt", []byte("one"))
	if b, _ := os.ReadFile(e.path("shared", "a.txt")); string(b) != "one" {
		t.Fatalf("a.txt = %q", b)
	}
	e.put(0, root, "a.txt", []byte("two, longer"))
	e.put(0, root, "b.txt", []byte("new"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(e.path("shared", "a.txt"))
		_, errB := os.Stat(e.path("shared", "b.txt"))
		if string(b) == "two, longer" && errB == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the TTL a.txt = %q, b.txt: %v", b, errB)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A deletion shows at once after a refresh (what SIGHUP and .ctl/refresh do).
	ids, _ := e.client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	for _, f := range ids {
		if f.Name == "b.txt" {
			if err := e.emu.DeleteFile(e.org, f.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.dirs.DropAll()
	time.Sleep(1100 * time.Millisecond) // the kernel's own entry cache (1s)
	if _, err := os.Stat(e.path("shared", "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt after refresh: %v", err)
	}
}

func TestChangesRefusedReadOnly(t *testing.T) {
	e := newEnv(t, envOptions{readOnly: true})
	e.put(0, e.root(0), "ro.txt", []byte("x"))
	for what, err := range map[string]error{
		"create": os.WriteFile(e.path("shared", "new.txt"), []byte("x"), 0o644),
		"mkdir":  os.Mkdir(e.path("shared", "d"), 0o755),
		"remove": os.Remove(e.path("shared", "ro.txt")),
		"write":  os.WriteFile(e.path("shared", "ro.txt"), []byte("y"), 0o644),
	} {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", what, err)
		}
	}
}

// smallFolder creates a folder of n small files and returns their contents by name.
func (e *testEnv) smallFolder(name string, n int) map[string][]byte {
	dir := e.mkdir(0, e.root(0), name)
	files := map[string][]byte{}
	for i := 0; i < n; i++ {
		fn := fmt.Sprintf("note %03d #%d.txt", i, i%7)
		files[fn] = randomData(1000+i*37, int64(i))
		e.put(0, dir, fn, files[fn])
	}
	return files
}

// checkCopy compares a copied folder with the expected contents.
func checkCopy(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	names := listNames(t, dir)
	if len(names) != len(want) {
		t.Fatalf("the copy has %d files, want %d", len(names), len(want))
	}
	for name, data := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("copy of %q differs (%v)", name, err)
		}
	}
}

func (e *testEnv) allRequests() int64 {
	st := e.emu.Stats()
	var n int64
	for _, v := range st.Requests {
		n += v
	}
	return n + st.Objects.Gets + st.Objects.Denied
}

func TestBundleCopiesSmallFolderInAFewRequests(t *testing.T) {
	e := newEnv(t, envOptions{emu: emulator.Options{StepDelay: 30 * time.Millisecond}})
	want := e.smallFolder("many", 300)
	os.ReadDir(e.path("shared")) // the parent listing is not what is measured
	before := e.allRequests()
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-r", e.path("shared", "many"), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r: %v: %s", err, out)
	}
	used := e.allRequests() - before
	checkCopy(t, dst, want)
	st := e.bundler.Stats()
	if st.Completed != 1 || st.Files < 290 {
		t.Fatalf("bundler: %+v", st)
	}
	// A listing, the first files alone (URL + GET each), the job, its polls
	// and its ZIP: a handful, against 600 for file after file.
	if used > 25 {
		t.Errorf("cp -r of 300 files made %d requests: %v", used, e.emu.Stats().Requests)
	}
	t.Logf("cp -r of 300 files: %d requests", used)
}

func TestBundleFallsBackWithoutFeature(t *testing.T) {
	e := newEnv(t, envOptions{org: emulator.OrgB, emu: emulator.Options{StepDelay: 30 * time.Millisecond}})
	want := e.smallFolder("many", 60)
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-r", e.path("shared", "many"), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r: %v: %s", err, out)
	}
	checkCopy(t, dst, want)
	st := e.bundler.Stats()
	if !st.Disabled || st.Completed != 0 {
		t.Fatalf("bundler after 4710: %+v", st)
	}
	// The mount stops asking after the first 4710.
	asked := e.requests("POST /files/download")
	want2 := e.smallFolder("more", 20)
	e.dirs.DropAll() // as SIGHUP does: the new folder shows at once
	dst2 := filepath.Join(t.TempDir(), "copy2")
	if out, err := exec.Command("cp", "-r", e.path("shared", "more"), dst2).CombinedOutput(); err != nil {
		t.Fatalf("cp -r: %v: %s", err, out)
	}
	checkCopy(t, dst2, want2)
	if d := e.requests("POST /files/download") - asked; d != 20 {
		t.Errorf("after a 4710, 20 files made %d download requests, want one URL each", d)
	}
	if e.emu.Stats().Codes[4710] != 1 {
		t.Errorf("4710 answered %d times, want once", e.emu.Stats().Codes[4710])
	}
}

func TestBundleNobodyWaitsForIsAborted(t *testing.T) {
	e := newEnv(t, envOptions{
		emu:    emulator.Options{StepDelay: time.Hour}, // the job never finishes by itself
		bundle: cache.BundleOptions{Idle: 300 * time.Millisecond, WaitLimit: 100 * time.Millisecond},
	})
	want := e.smallFolder("slow", 20)
	for _, name := range []string{"note 000 #0.txt", "note 001 #1.txt", "note 002 #2.txt"} {
		b, err := os.ReadFile(e.path("shared", "slow", name))
		if err != nil || !bytes.Equal(b, want[name]) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if e.bundler.Stats().Jobs != 1 {
		t.Fatalf("no bundle started: %+v", e.bundler.Stats())
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.requests("DELETE /files/downloads/{id}") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the idle bundle was not aborted: %+v, %v", e.bundler.Stats(), e.emu.Stats().Requests)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := e.bundler.Stats(); st.Aborted != 1 {
		t.Errorf("bundler: %+v", st)
	}
}

func TestInterruptedReadCancelsRequests(t *testing.T) {
	e := newEnv(t, envOptions{emu: emulator.Options{StreamRate: 2 << 20}}) // 2 MiB/s per connection
	e.put(0, e.root(0), "slow.bin", randomData(64<<20, 5))
	cat := exec.Command("cat", e.path("shared", "slow.bin"))
	cat.Stdout = io.Discard
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cat.Process.Signal(os.Interrupt)
	cat.Wait()
	// Requests cut now; what was on the wire drains within moments.
	time.Sleep(500 * time.Millisecond)
	sent := e.emu.Stats().Objects.BytesOut
	time.Sleep(time.Second)
	if more := e.emu.Stats().Objects.BytesOut - sent; more > 256<<10 {
		t.Errorf("the object store sent %d more bytes after the reader was interrupted", more)
	}
	if sent >= 64<<20 {
		t.Errorf("the whole file (%d bytes) was fetched for an interrupted reader", sent)
	}
}

func TestKnownInodeFollowsListingAndShortObjectIsAnError(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	data := randomData(3000, 1)
	e.put(0, root, "grow.bin", data)
	f, err := os.Open(e.path("shared", "grow.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, _ := e.client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	rec := files[0]
	// The service lists the same file (same id) with another size and time.
	rec.Size, rec.LastModified = 9000, rec.LastModified.Add(time.Minute)
	e.dirs.Put(cache.DirKey{Area: cache.Area{Kind: cache.Shared}}, rec)
	time.Sleep(1100 * time.Millisecond) // the kernel's attribute cache
	st, err := os.Stat(e.path("shared", "grow.bin"))
	if err != nil || st.Size() != 9000 {
		t.Fatalf("stat after the listing changed: %v, %v", st, err)
	}
	fst, err := f.Stat()
	if err != nil || fst.Size() != 9000 || !fst.ModTime().Equal(rec.LastModified) {
		t.Fatalf("fstat of the open file: size %d mtime %v (%v); the known inode was not updated", fst.Size(), fst.ModTime(), err)
	}
	// The object holds 3000 bytes, the listing says 9000: reading past the
	// object's end is an error, never a silent short file.
	g, err := os.Open(e.path("shared", "grow.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, err = io.ReadAll(g)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading a file shorter than listed: %v, want EIO", err)
	}
}

func TestDefaultPermissionsWithAllowOther(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "secret.txt", []byte("only root"))
	// A second mount of the same service with --allow-other and umask 077.
	tree := New(Deps{Client: e.client, Dirs: cache.NewDirs(e.client, time.Minute, nil), Fetcher: e.fetcher, Log: testLogger(t)},
		Options{UID: 0, GID: 0, Umask: 0o077})
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	server, err := Mount(dir, tree, MountOptions{AllowOther: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Unmount() })
	cat := exec.Command("cat", filepath.Join(dir, "shared", "secret.txt"))
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cat.CombinedOutput()
	if err == nil || strings.Contains(string(out), "only root") {
		t.Fatalf("user nobody read a 0600 file of root: %q", out)
	}
	if !strings.Contains(string(out), "Permission denied") {
		t.Fatalf("cat as nobody: %q", out)
	}
}

func TestProbeNameTheServiceHoldsIsServed(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "desktop.ini", []byte("[.ShellClassInfo]"))
	os.ReadDir(e.path("shared"))
	b, err := os.ReadFile(e.path("shared", "desktop.ini"))
	if err != nil || string(b) != "[.ShellClassInfo]" {
		t.Fatalf("desktop.ini that the service holds: %q, %v", b, err)
	}
}

func TestStatfsOfEveryFolder(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, p := range []string{e.dir, e.path("shared"), e.path("computers"), e.path("recordings")} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(p, &st); err != nil || st.Bavail == 0 {
			t.Errorf("statfs %s: %d blocks free (%v)", p, st.Bavail, err)
		}
	}
}

func TestReadersOfOneFileShareFetches(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := randomData(32<<20, 4)
	e.put(0, e.root(0), "shared.bin", data)
	before := e.emu.Stats().Objects.BytesOut
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := os.ReadFile(e.path("shared", "shared.bin"))
			if err != nil || !bytes.Equal(b, data) {
				t.Errorf("reader %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if out := e.emu.Stats().Objects.BytesOut - before; out > int64(len(data))*5/4 {
		t.Errorf("8 readers of a %d-byte file pulled %d bytes", len(data), out)
	}
}
