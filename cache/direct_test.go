package cache

// Reads past a cache that cannot hold the file (direct.go): the cache dir
// on a small tmpfs, filled to the brim. These tests mount, so they run as root.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// smallDisk mounts a tmpfs of size bytes on a new directory and returns it.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	testkit.SmallDisk(t, dir, size)
	return dir
}

// rangeClient is the fake client recording the ranged GETs asked of it.
type rangeClient struct {
	*fakeclient.Client
	mu     sync.Mutex
	ranges [][2]int64 // guarded by mu; offset and length of each
}

func (c *rangeClient) ReadRange(ctx context.Context, url string, off, n int64) (io.ReadCloser, error) {
	c.mu.Lock()
	c.ranges = append(c.ranges, [2]int64{off, n})
	c.mu.Unlock()
	return c.Client.ReadRange(ctx, url, off, n)
}

func (c *rangeClient) reset() [][2]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.ranges
	c.ranges = nil
	return r
}

// directEnv is a fetcher over a content cache in dir, with a fake service.
type directEnv struct {
	client  *rangeClient
	content *Content
	fetcher *Fetcher
	logs    *logtest.Hook
}

func newDirectEnv(t *testing.T, dir string) *directEnv {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	content, err := OpenContent(ContentOptions{Dir: dir, BlockSize: testBlock, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { content.Close() })
	client := &rangeClient{Client: fakeclient.New(t)}
	f, err := NewFetcher(FetcherOptions{Client: client, Content: content, ChunkSize: 64 * testBlock, ReadAhead: 256 * testBlock, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return &directEnv{client: client, content: content, fetcher: f, logs: hook}
}

func (e *directEnv) put(t *testing.T, data []byte) Meta {
	t.Helper()
	f := e.client.Put(place.Area{Kind: place.Shared}, 1, fmt.Sprintf("f%d", len(data)), data)
	return MetaOf(f)
}

// warnings are the messages of the warnings logged about files the cache
// could not hold.
func (e *directEnv) warnings() []string {
	var out []string
	for _, l := range e.logs.AllEntries() {
		if l.Level == logrus.WarnLevel && strings.Contains(l.Message, "cannot hold") {
			out = append(out, fmt.Sprint(l.Data["file_id"], ": ", l.Message))
		}
	}
	return out
}

// readAll reads the file through r in reads of size bytes, as the kernel
// does: Ready, then ReadDirect when the cache cannot hold the bytes.
func readAll(t *testing.T, r *Reader, size int64, piece int) []byte {
	t.Helper()
	ctx := t.Context()
	var out []byte
	buf := make([]byte, piece)
	for off := int64(0); off < size; {
		n, err := r.ReadAt(ctx, buf, off)
		if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
			t.Fatalf("read at %d: %v", off, err)
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
	return out
}

func TestReaderReadsPastAFullDisk(t *testing.T) {
	dir := smallDisk(t, 1<<20)
	e := newDirectEnv(t, filepath.Join(dir, "content"))
	testkit.FillDisk(t, dir)
	data := testkit.RandBytes(3<<20+123, 1) // three times the disk
	m := e.put(t, data)

	r, err := e.fetcher.Open(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ready(t.Context(), 0, 1<<16); !errors.Is(err, ErrNotCached) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Ready with the disk full: %v, want ErrNotCached wrapping ENOSPC", err)
	}
	r.ff.wg.Wait() // the fetches into the cache it started, which fail
	e.client.reset()
	if got := readAll(t, r, m.Size, 128<<10); !bytes.Equal(got, data) {
		t.Fatal("content read past the cache differs")
	}
	// One stream for the sequential reads: a GET per read-ahead window (1
	// MiB here), not one per read.
	if rs := e.client.reset(); len(rs) > 6 {
		t.Errorf("%d ranged GETs for %d sequential reads: %v", len(rs), m.Size/(128<<10)+1, rs)
	}
	// Reads at random, and the end of the file.
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 50; i++ {
		off := rng.Int63n(m.Size)
		buf := make([]byte, rng.Intn(200000)+1)
		n, err := r.ReadAt(t.Context(), buf, off)
		want := data[off:min(off+int64(len(buf)), m.Size)]
		if (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], want) {
			t.Fatalf("pread(%d, %d): %d bytes, %v", off, len(buf), n, err)
		}
	}
	if _, err := r.ReadDirect(t.Context(), make([]byte, 10), m.Size); err != io.EOF {
		t.Errorf("ReadDirect at the end: %v, want io.EOF", err)
	}
	r.Close()
	// A second open of the file warns no more.
	r2, err := e.fetcher.Open(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r2, m.Size, 1<<20); !bytes.Equal(got, data) {
		t.Fatal("second read differs")
	}
	r2.Close()
	if w := e.warnings(); len(w) != 1 {
		t.Errorf("warnings %q, want one for the file", w)
	}
	if st := e.fetcher.Stats(); st.BytesDirect < 2*m.Size || st.Uncached != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestCachedBlocksAreServedWhenTheRestCannotBe(t *testing.T) {
	dir := smallDisk(t, 1<<20)
	e := newDirectEnv(t, filepath.Join(dir, "content"))
	data := testkit.RandBytes(2<<20, 3)
	m := e.put(t, data)
	r, err := e.fetcher.Open(m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The first 64 KiB go into the cache while there is room.
	if _, err := r.Ready(t.Context(), 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	r.ff.wg.Wait() // the read-ahead too
	testkit.FillDisk(t, dir)
	cached := int64(0)
	for r.Handle().Has(cached / testBlock) {
		cached += testBlock
	}
	if cached < 64<<10 {
		t.Fatalf("only %d bytes cached", cached)
	}
	e.client.reset()
	// A read from the start: the cached part from the cache, the rest from
	// the service.
	if got := readAll(t, r, m.Size, 256<<10); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
	for _, rg := range e.client.reset() {
		if rg[0] < cached {
			t.Errorf("GET of [%d, +%d) though the first %d bytes are cached", rg[0], rg[1], cached)
		}
	}
}

func TestAnEntryTheCacheCannotCreate(t *testing.T) {
	dir := smallDisk(t, 1<<20)
	e := newDirectEnv(t, filepath.Join(dir, "content"))
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v: %s", err, out)
	}
	data := testkit.RandBytes(300<<10, 4)
	m := e.put(t, data)
	r, err := e.fetcher.Open(m)
	if err != nil {
		t.Fatalf("open with a read-only cache: %v", err)
	}
	defer r.Close()
	if _, err := r.Ready(t.Context(), 0, 10); !errors.Is(err, ErrNotCached) {
		t.Fatalf("Ready: %v, want ErrNotCached", err)
	}
	if got := readAll(t, r, m.Size, 128<<10); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
}

// A disk full of the cache's own entries: the ones not in use are evicted to
// make room, whatever the budget, and the file is cached.
func TestAFullDiskEvictsEntriesNotInUse(t *testing.T) {
	dir := smallDisk(t, 1<<20)
	e := newDirectEnv(t, filepath.Join(dir, "content"))
	a, b := testkit.RandBytes(700<<10, 5), testkit.RandBytes(700<<10, 6)
	ma, mb := e.put(t, a), e.put(t, b)
	for _, x := range []struct {
		m    Meta
		data []byte
	}{{ma, a}, {mb, b}} {
		r, err := e.fetcher.Open(x.m)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, r, x.m.Size, 128<<10); !bytes.Equal(got, x.data) {
			t.Fatal("content differs")
		}
		r.Close()
	}
	if !e.content.Complete(mb) || e.content.Complete(ma) {
		t.Errorf("the second file is not cached in place of the first: %+v", e.content.Stats())
	}
	if st := e.fetcher.Stats(); st.Uncached != 0 || st.BytesDirect != 0 {
		t.Errorf("a file was read past the cache: %+v", st)
	}
}

// Concurrent readers of one file, reading out of order, some giving up.
func TestConcurrentReadsPastTheCache(t *testing.T) {
	dir := smallDisk(t, 1<<20)
	e := newDirectEnv(t, filepath.Join(dir, "content"))
	testkit.FillDisk(t, dir)
	data := testkit.RandBytes(4<<20, 7)
	m := e.put(t, data)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		r, err := e.fetcher.Open(m)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for w := 0; w < 4; w++ { // the kernel's reads of one handle, a few at a time
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 128<<10)
				for off := int64(w) * int64(len(buf)); off < m.Size; off += 4 * int64(len(buf)) {
					ctx, cancel := context.WithCancel(context.Background())
					if (off/int64(len(buf)))%7 == int64(g) {
						time.AfterFunc(time.Millisecond, cancel) // a read given up
					}
					n, err := r.ReadAt(ctx, buf, off)
					cancel()
					if ctx.Err() != nil {
						continue
					}
					if err != nil || !bytes.Equal(buf[:n], data[off:off+int64(n)]) || n != len(buf) {
						t.Errorf("reader %d: read at %d: %d bytes, %v", g, off, n, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
}

// TestRandomReadsFetchOnlyTheirBytes: a read at random of blocks not cached
// is one ranged GET of its own bytes, not stored; a block read at random
// randomPromote times is fetched whole; a read repeated at the same offset
// starts no read-ahead.
func TestRandomReadsFetchOnlyTheirBytes(t *testing.T) {
	e := newDirectEnv(t, t.TempDir())
	data := testkit.RandBytes(200*testBlock, 9)
	m := e.put(t, data)
	r, err := e.fetcher.Open(m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := t.Context()
	buf := make([]byte, 512)
	read := func(off int64) {
		t.Helper()
		n, err := r.ReadAt(ctx, buf, off)
		if err != nil || !bytes.Equal(buf[:n], data[off:off+512]) {
			t.Fatalf("read at %d: %d bytes, %v", off, n, err)
		}
	}
	e.client.reset()
	for _, off := range []int64{150*testBlock + 100, 20 * testBlock, 90*testBlock + 7, 90*testBlock + 7} {
		read(off)
	}
	got := e.client.reset()
	want := [][2]int64{{150*testBlock + 100, 512}, {20 * testBlock, 512}, {90*testBlock + 7, 512}, {90*testBlock + 7, 512}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ranged GETs %v, want %v (each read's own bytes)", got, want)
	}
	if st := e.fetcher.Stats(); st.BytesFetched != 0 || st.AheadFetches != 0 {
		t.Fatalf("random reads stored blocks: %+v", st)
	}
	// A random read that lands just after the last one starts no read-ahead;
	// a second one in sequence does.
	read(90*testBlock + 7 + 512 + 100)
	if st := e.fetcher.Stats(); st.AheadFetches != 0 {
		t.Fatalf("one read near the last random one started read-ahead: %+v", st)
	}
	read(90*testBlock + 7 + 512 + 100 + 512)
	if st := e.fetcher.Stats(); st.AheadFetches == 0 {
		t.Fatalf("two reads in sequence started no read-ahead: %+v", st)
	}
	// Locality: the same block read at random again and again is fetched.
	for i := range randomPromote {
		read(60*testBlock + int64(i)*400)
		read(int64(i) * 5 * testBlock) // in between, elsewhere
	}
	if !r.Handle().Has(60) {
		t.Fatalf("a block read at random %d times is not cached; GETs %v", randomPromote, e.client.reset())
	}
}
