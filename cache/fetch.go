package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sirupsen/logrus"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/orgfs/orgfs/api"
)

// Lock order: Reader.mu, then Content.mu, then entry.mu. No lock is held
// across a request.

// FetcherOptions configures a Fetcher. Zero values take the defaults.
type FetcherOptions struct {
	Client    *api.Client
	Content   *Content
	Transfers int      // range requests in flight at once, all files together; default 32
	PerFile   int      // range requests in flight for one open file; default 16
	ReadAhead int64    // how far sequential reading fetches ahead, at most; default 128 MiB
	ChunkSize int64    // bytes of one range request, at most; default 8 MiB
	Bundler   *Bundler // optional: reads of files a bundle brings wait for it
	Now       func() time.Time
	Log       logrus.FieldLogger
}

// FetchStats are the fetcher's counters.
type FetchStats struct {
	URLRequests   int64 // presigned URLs asked for
	RangeRequests int64 // ranged GETs started
	BytesFetched  int64
	URLRenewals   int64 // URLs renewed after the object store refused them
	Errors        int64 // range fetches that failed for good
	Random        int64 // reads that were not sequential (no read-ahead)
	AheadFetches  int64 // range requests started by read-ahead
}

// Fetcher fetches file content into the content cache with ranged GETs of
// presigned URLs, for every open file of the mount.
type Fetcher struct {
	// dependencies
	client  *api.Client
	content *Content
	bundler *Bundler
	log     logrus.FieldLogger
	now     func() time.Time
	// constants
	perFile   int
	readAhead int64
	chunk     int64

	sem   *semaphore.Weighted
	urls  *lru.Cache[int64, urlEntry] // safe for concurrent use
	group singleflight.Group          // one URL request per file at a time
	bufs  sync.Pool                   // block buffers

	stats struct{ urls, ranges, bytes, renewals, errors, random, ahead atomic.Int64 }
}

type urlEntry struct {
	url     string
	expires time.Time
}

// urlMargin is how long before its expiry a cached URL stops being used, and
// urlDefaultLife the life assumed when the service does not tell it.
const (
	urlMargin      = 2 * time.Minute
	urlDefaultLife = 30 * time.Minute
)

// NewFetcher makes a fetcher.
func NewFetcher(opts FetcherOptions) (*Fetcher, error) {
	if opts.Client == nil || opts.Content == nil {
		return nil, errors.New("cache: a fetcher needs a client and a content cache")
	}
	if opts.Transfers <= 0 {
		opts.Transfers = 32
	}
	if opts.PerFile <= 0 {
		opts.PerFile = 16
	}
	if opts.ReadAhead <= 0 {
		opts.ReadAhead = 128 << 20
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 8 << 20
	}
	bs := opts.Content.BlockSize()
	opts.ChunkSize = max(bs, opts.ChunkSize/bs*bs)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		opts.Log = l
	}
	urls, err := lru.New[int64, urlEntry](8192)
	if err != nil {
		return nil, err
	}
	f := &Fetcher{
		client: opts.Client, content: opts.Content, bundler: opts.Bundler, log: opts.Log, now: opts.Now,
		perFile: opts.PerFile, readAhead: opts.ReadAhead, chunk: opts.ChunkSize,
		sem: semaphore.NewWeighted(int64(opts.Transfers)), urls: urls,
	}
	f.bufs.New = func() any { b := make([]byte, bs); return &b }
	return f, nil
}

// Stats returns the counters.
func (f *Fetcher) Stats() FetchStats {
	return FetchStats{
		URLRequests: f.stats.urls.Load(), RangeRequests: f.stats.ranges.Load(), BytesFetched: f.stats.bytes.Load(),
		URLRenewals: f.stats.renewals.Load(), Errors: f.stats.errors.Load(),
		Random: f.stats.random.Load(), AheadFetches: f.stats.ahead.Load(),
	}
}

// url returns a presigned URL of file id, from the cache while it is good.
// stale, when not empty, is a URL the object store refused: it is dropped and
// a new one asked for.
func (f *Fetcher) url(ctx context.Context, id int64, stale string) (string, error) {
	if e, ok := f.urls.Get(id); ok {
		if e.url == stale {
			f.urls.Remove(id)
		} else if f.now().Add(urlMargin).Before(e.expires) {
			return e.url, nil
		}
	}
	v, err, _ := f.group.Do(fmt.Sprint(id), func() (any, error) {
		if e, ok := f.urls.Get(id); ok && e.url != stale && f.now().Add(urlMargin).Before(e.expires) {
			return e.url, nil
		}
		f.stats.urls.Add(1)
		link, err := f.client.FileURL(ctx, id)
		if err != nil {
			return "", err
		}
		if link.URL == "" {
			return "", fmt.Errorf("cache: the service gave no URL for file %d", id)
		}
		exp := link.ExpiresAt
		if exp.IsZero() {
			exp = f.now().Add(urlDefaultLife)
		}
		f.urls.Add(id, urlEntry{link.URL, exp})
		return link.URL, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// ForgetURL drops the cached URL of a file (it changed or was deleted).
func (f *Fetcher) ForgetURL(id int64) { f.urls.Remove(id) }

// Open starts reading one version of a file. The reader holds the file's cache
// entry (so it is not evicted) until Close.
func (f *Fetcher) Open(m Meta) (*Reader, error) {
	h, err := f.content.Acquire(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Reader{f: f, h: h, meta: m, ctx: ctx, cancel: cancel, pending: map[int64]*pendingBlock{}}, nil
}

// Reader reads one open file through the cache: cached blocks from disk,
// missing ones fetched, and, while the reading is sequential, blocks ahead of
// it fetched in parallel before they are asked for.
type Reader struct {
	// dependencies
	f      *Fetcher
	h      *Handle
	meta   Meta
	ctx    context.Context // read-ahead fetches run on it; Close cancels it
	cancel context.CancelFunc

	mu      sync.Mutex
	pending map[int64]*pendingBlock // guarded by mu; blocks being fetched
	ops     int                     // guarded by mu; fetches in flight
	next    int64                   // guarded by mu; where a sequential read would go on
	window  int64                   // guarded by mu; read-ahead window, 0 while reading at random
	ahead   int64                   // guarded by mu; read-ahead is started up to this offset
	closed  bool                    // guarded by mu
	wg      sync.WaitGroup          // fetches running

	bundleAsked atomic.Bool // the bundler was asked about this file once
}

// pendingBlock is a block some fetch will fill; done closes when it is
// present or the fetch failed (err then says why).
type pendingBlock struct {
	done chan struct{}
	op   *fetchOp
	err  error // set before done closes
}

// fetchOp is one ranged GET of blocks first..last.
type fetchOp struct {
	first, last int64
	ahead       bool               // read-ahead: runs until the reader closes
	cancel      context.CancelFunc // demand fetches: cancelled when every waiter left
	waiters     int                // guarded by Reader.mu
}

// Handle is the cache entry the reader holds.
func (r *Reader) Handle() *Handle { return r.h }

// ReadAt reads len(p) bytes at off (fewer at the end of the file). ctx is the
// reader's request: when it is cancelled the read returns and the fetches only
// it waited for are cancelled.
func (r *Reader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := r.Ready(ctx, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	got, err := r.h.ReadAt(p[:n], off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
		return got, err
	}
	return got, nil
}

// File is the cache file holding the content: bytes that Ready reported are
// in it at their offsets, so a caller may read (or splice) them itself.
func (r *Reader) File() *os.File { return r.h.File() }

// Ready makes bytes [off, off+n) present in the cache file, fetching what is
// missing (and reading ahead), and returns how many of them the file has
// (fewer at its end; io.EOF at or past it). ctx is the reader's request: when
// it is cancelled Ready returns and the fetches only it waited for are
// cancelled.
func (r *Reader) Ready(ctx context.Context, off, want int64) (int64, error) {
	size := r.meta.Size
	if off >= size || want <= 0 {
		return 0, io.EOF
	}
	n := min(want, size-off)
	if r.f.bundler != nil && !r.bundleAsked.Swap(true) && r.f.bundler.Covers(r.meta.ID) && !r.h.Complete() {
		// A bundle brings this file: wait for it rather than fetch the file
		// alone (unless it fails or is slow).
		r.f.bundler.Wait(ctx, r.meta.ID)
	}
	waits, err := r.plan(off, n)
	if err != nil {
		return 0, err
	}
	for _, w := range waits {
		select {
		case <-w.done:
			if w.err != nil {
				r.leave(waits)
				return 0, w.err
			}
		case <-ctx.Done():
			r.leave(waits)
			return 0, ctx.Err()
		}
	}
	r.leave(waits)
	return n, nil
}

// plan starts the fetches a read at [off, off+n) needs, and the read-ahead
// after it, and returns the blocks to wait for; the read is counted once as a
// waiter of each fetch it waits on.
func (r *Reader) plan(off, n int64) ([]*pendingBlock, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("cache: reader closed")
	}
	// Sequential when the read starts where the last ended, or within a block
	// of it (the kernel may reorder its reads a little).
	bs := r.f.content.BlockSize()
	if (r.next == 0 && off == 0) || (r.next > 0 && off >= r.next-bs && off <= r.next+bs) {
		r.window = min(max(2*r.window, 2*r.f.chunk), r.f.readAhead)
	} else {
		r.f.stats.random.Add(1)
		r.window = 0
		r.ahead = 0
	}
	r.next = off + n

	missing := r.h.Missing(off, n)
	r.startRunsLocked(missing, false, -1)
	var waits []*pendingBlock
	ops := map[*fetchOp]bool{}
	for _, b := range missing {
		pb, ok := r.pending[b]
		if !ok {
			continue // fetched meanwhile
		}
		waits = append(waits, pb)
		if !ops[pb.op] {
			ops[pb.op] = true
			pb.op.waiters++
		}
	}
	if r.window > 0 {
		// Read ahead in whole chunks: as the window slides a read at a time,
		// waiting for a chunk's worth keeps every request large.
		start := max(off+n, r.ahead)
		end := min(off+n+r.window, r.meta.Size)
		if end < r.meta.Size {
			end = start + (end-start)/r.f.chunk*r.f.chunk
		}
		if start < end {
			r.ahead = r.startRunsLocked(r.h.Missing(start, end-start), true, r.f.perFile)
			if r.ahead < 0 {
				r.ahead = end
			}
		}
	}
	return waits, nil
}

// startRunsLocked fetches the given missing blocks that are not pending yet,
// grouped into runs of contiguous blocks of at most a chunk. With limit >= 0
// it stops when the reader has that many fetches in flight and returns the
// offset of the first block it left; otherwise it returns -1.
func (r *Reader) startRunsLocked(blocks []int64, ahead bool, limit int) int64 {
	bs := r.f.content.BlockSize()
	var run []int64
	for i, b := range blocks {
		if _, ok := r.pending[b]; ok {
			continue
		}
		if len(run) > 0 && (run[len(run)-1] != b-1 || int64(len(run))*bs >= r.f.chunk) {
			r.startLocked(run[0], run[len(run)-1], ahead)
			run = run[:0]
		}
		if limit >= 0 && r.ops >= limit {
			return blocks[i] * bs
		}
		run = append(run, b)
	}
	if len(run) > 0 {
		r.startLocked(run[0], run[len(run)-1], ahead)
	}
	return -1
}

// startLocked registers blocks first..last as pending and fetches them.
func (r *Reader) startLocked(first, last int64, ahead bool) {
	op := &fetchOp{first: first, last: last, ahead: ahead}
	ctx := r.ctx
	if !ahead {
		ctx, op.cancel = context.WithCancel(r.ctx)
	}
	for b := first; b <= last; b++ {
		r.pending[b] = &pendingBlock{done: make(chan struct{}), op: op}
	}
	r.ops++
	if ahead {
		r.f.stats.ahead.Add(1)
	}
	r.wg.Add(1)
	go r.run(ctx, op)
}

// leave ends a read's wait on blocks; a demand fetch nobody waits for any
// more is cancelled.
func (r *Reader) leave(waits []*pendingBlock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[*fetchOp]bool{}
	for _, w := range waits {
		if seen[w.op] {
			continue
		}
		seen[w.op] = true
		w.op.waiters--
		if w.op.waiters == 0 && w.op.cancel != nil {
			// Done, or every reader waiting for it gave up (Ctrl-C): its
			// unfetched blocks go back to missing.
			w.op.cancel()
		}
	}
}

// run fetches one op's blocks, writing each to the cache as it arrives, and
// resolves their waiters. A URL the object store refuses is renewed once.
func (r *Reader) run(ctx context.Context, op *fetchOp) {
	defer r.wg.Done()
	err := r.fetch(ctx, op)
	if err != nil && ctx.Err() == nil {
		r.f.stats.errors.Add(1)
		r.f.log.WithError(err).WithField("file_id", r.meta.ID).Warn("cache: fetching file content failed")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops--
	for b := op.first; b <= op.last; b++ {
		pb, ok := r.pending[b]
		if !ok || pb.op != op {
			continue
		}
		delete(r.pending, b)
		pb.err = err
		if pb.err == nil {
			pb.err = fmt.Errorf("cache: block %d of file %d was not fetched", b, r.meta.ID)
		}
		close(pb.done)
	}
	if op.cancel != nil {
		op.cancel()
	}
}

func (r *Reader) fetch(ctx context.Context, op *fetchOp) error {
	if err := r.f.sem.Acquire(ctx, 1); err != nil {
		return err
	}
	defer r.f.sem.Release(1)
	stale := ""
	for attempt := 0; ; attempt++ {
		url, err := r.f.url(ctx, r.meta.ID, stale)
		if err != nil {
			return err
		}
		err = r.fetchRange(ctx, op, url)
		if err == nil {
			return nil
		}
		if api.IsURLExpired(err) && attempt == 0 {
			r.f.stats.renewals.Add(1)
			stale = url
			continue
		}
		return err
	}
}

// fetchRange streams the op's missing blocks from url into the cache.
func (r *Reader) fetchRange(ctx context.Context, op *fetchOp, url string) error {
	first := op.first
	for first <= op.last && r.h.Has(first) {
		r.resolve(first, op)
		first++
	}
	if first > op.last {
		return nil
	}
	off, _ := r.h.BlockRange(first)
	lastOff, lastN := r.h.BlockRange(op.last)
	r.f.stats.ranges.Add(1)
	body, err := r.f.client.ReadRange(ctx, url, off, lastOff+lastN-off)
	if err != nil {
		return err
	}
	defer body.Close()
	bp := r.f.bufs.Get().(*[]byte)
	defer r.f.bufs.Put(bp)
	for b := first; b <= op.last; b++ {
		_, n := r.h.BlockRange(b)
		buf := (*bp)[:n]
		if _, err := io.ReadFull(body, buf); err != nil {
			return fmt.Errorf("cache: reading block %d of file %d: %w", b, r.meta.ID, err)
		}
		if err := r.h.WriteBlock(b, buf); err != nil {
			return err
		}
		r.f.stats.bytes.Add(n)
		r.resolve(b, op)
	}
	return nil
}

// resolve wakes the waiters of block b, now present.
func (r *Reader) resolve(b int64, op *fetchOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pb, ok := r.pending[b]; ok && pb.op == op {
		delete(r.pending, b)
		close(pb.done)
	}
}

// Close cancels the reader's fetches and releases its cache entry.
func (r *Reader) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	r.h.Release()
}
