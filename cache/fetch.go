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
	"github.com/orgfs/orgfs/internal/logging"
)

// Locks: Fetcher.mu, Reader.mu and fileFetch.mu, the first three of the
// package's lock order (docs/ARCHITECTURE.md): Fetcher.mu is held while Open acquires a
// cache entry (Content.mu, entry.mu: the entry's files may be opened and
// truncated then); Reader.mu and fileFetch.mu while a read is planned (entry.mu
// within, for the bitmap). None is held across a request, a block's write or
// the wait for a bundle.

// FetcherOptions configures a Fetcher. Zero values take the defaults.
type FetcherOptions struct {
	Client    Client
	Content   *Content
	Transfers int           // range requests in flight at once, all files together; default 32
	PerFile   int           // range requests in flight for one file; default 16
	ReadAhead int64         // how far sequential reading fetches ahead, at most; default PerFile requests of ChunkSize
	ChunkSize int64         // bytes of one range request, at most; default 8 MiB (and at most half the read-ahead)
	Bundler   *Bundler      // optional: reads of files a bundle brings wait for it
	IOTimeout time.Duration // a read gives up once no content came for this long (wait.go); 0: never
	Now       func() time.Time
	Log       logrus.FieldLogger
}

// maxDefaultReadAhead bounds the default read-ahead window (a large
// --transfers would make it gigabytes).
const maxDefaultReadAhead = 512 << 20

// withDefaults fills in the zero fields; the chunk size is then made whole
// blocks of opts.Content, which must be set.
func (o FetcherOptions) withDefaults() FetcherOptions {
	setDefault(&o.Transfers, 32)
	setDefault(&o.PerFile, 16)
	setDefault(&o.ChunkSize, 8<<20)
	// By default the window holds as many requests as a file may have in
	// flight: a narrower one leaves streams idle (a file read on a fast link
	// goes as fast as its requests at once). Up to 512 MiB: what a reader's
	// window fetched stays in the cache while the file is open.
	setDefault(&o.ReadAhead, min(int64(o.PerFile)*o.ChunkSize, maxDefaultReadAhead))
	bs := o.Content.BlockSize()
	// A chunk is whole blocks, and at most half the window, so a small
	// --read-ahead still reads ahead.
	o.ChunkSize = min(o.ChunkSize, o.ReadAhead/2)
	o.ChunkSize = max(bs, o.ChunkSize/bs*bs)
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Log = logging.OrDiscard(o.Log)
	return o
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
	BytesDirect   int64 // bytes read past a cache that could not hold them (ReadDirect)
	Uncached      int64 // open file versions whose reads went past the cache (it could not hold them)
}

// ErrChanged is the error of a read whose file no longer matches its listing
// on the service (the object is shorter than the listed size).
var ErrChanged = errors.New("the file changed on the service")

// Fetcher fetches file content into the content cache with ranged GETs of
// presigned URLs, for every open file of the mount. Readers of the same file
// version share its fetches.
type Fetcher struct {
	// dependencies
	client  Client
	content *Content
	bundler *Bundler
	log     logrus.FieldLogger
	now     func() time.Time
	// constants
	perFile   int
	transfers int // range requests in flight at once, all files together (sem's size)
	readAhead int64
	chunk     int64
	ioTimeout time.Duration

	sem   *semaphore.Weighted
	urls  *lru.Cache[int64, urlEntry] // safe for concurrent use
	group singleflight.Group          // one URL request per file at a time
	bufs  sync.Pool                   // block buffers
	// warned is when the cache's failing to hold a file was last logged (as a
	// warning), by file id; safe for concurrent use.
	warned *lru.Cache[int64, time.Time]

	lastByte stamp // when content last came (wait.go)
	// reading counts the files with fetches in flight: their read-ahead
	// shares the transfers (aheadLimit).
	reading atomic.Int64

	mu    sync.Mutex
	files map[int64]*fileFetch // guarded by mu; the latest version of each open file

	stats struct{ urls, ranges, bytes, renewals, errors, random, ahead, direct, uncached atomic.Int64 }
}

// NewFetcher makes a fetcher.
func NewFetcher(opts FetcherOptions) (*Fetcher, error) {
	if missing(opts.Client) || opts.Content == nil {
		return nil, errors.New("cache: a fetcher needs a client and a content cache")
	}
	opts = opts.withDefaults()
	bs := opts.Content.BlockSize()
	urls, err := lru.New[int64, urlEntry](8192)
	if err != nil {
		return nil, err
	}
	warned, err := lru.New[int64, time.Time](1024)
	if err != nil {
		return nil, err
	}
	f := &Fetcher{
		client: opts.Client, content: opts.Content, bundler: opts.Bundler, log: opts.Log, now: opts.Now,
		perFile: opts.PerFile, transfers: opts.Transfers, readAhead: opts.ReadAhead, chunk: opts.ChunkSize, ioTimeout: max(opts.IOTimeout, 0),
		sem: semaphore.NewWeighted(int64(opts.Transfers)), urls: urls, warned: warned, files: map[int64]*fileFetch{},
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
		BytesDirect: f.stats.direct.Load(), Uncached: f.stats.uncached.Load(),
	}
}

// Forget drops what the fetcher holds of a file id: its cached URL, its
// cache entry (the file changed or was deleted), and its fetching state: the
// readers open keep theirs, and the next open starts anew, so no fetch of
// the id writes into the file the entry had (which may be a staging copy
// now: Store.StageCopy).
func (f *Fetcher) Forget(id int64) {
	f.mu.Lock()
	delete(f.files, id)
	f.mu.Unlock()
	f.urls.Remove(id)
	f.content.Invalidate(id)
}

// Open starts reading one version of a file. The file's cache entry is held
// (not evicted) until every reader of it is closed.
func (f *Fetcher) Open(m Meta) (*Reader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ff := f.files[m.ID]
	if ff == nil || !ff.meta.Same(m) {
		h, err := f.content.Acquire(m)
		var uncached error
		if errors.Is(err, ErrNotCached) {
			// Not even an entry: the file is read past the cache.
			h, uncached = f.content.detached(m), err
		} else if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		ff = &fileFetch{f: f, h: h, meta: m, ctx: ctx, cancel: cancel, pending: map[int64]*pendingBlock{}}
		f.files[m.ID] = ff
		if uncached != nil {
			ff.uncache(uncached)
		}
	}
	ff.readers++
	return &Reader{ff: ff}, nil
}

// fileFetch is the fetching state of one open file version, shared by its readers.
type fileFetch struct {
	// dependencies
	f      *Fetcher
	h      *Handle
	meta   Meta
	ctx    context.Context // fetches run on it; cancelled when the last reader closes
	cancel context.CancelFunc

	readers int // guarded by Fetcher.mu

	mu      sync.Mutex
	pending map[int64]*pendingBlock // guarded by mu; blocks being fetched
	ops     int                     // guarded by mu; fetches in flight
	// uncached, once set, is why the cache cannot hold the file: reads of
	// blocks it lacks fail with it at once (Ready), and go past the cache
	// (ReadDirect), until the file's last reader closes. Guarded by mu.
	uncached error
	// randomHits counts the random reads of each block not cached (small
	// reads, see ErrReadDirect); guarded by mu.
	randomHits map[int64]int
	wg         sync.WaitGroup // fetches running
}

// uncacheWarnEvery is how often the cache's failing to hold one file is
// logged as a warning, at most.
const uncacheWarnEvery = time.Hour

// uncache makes the file's reads go past the cache from now on: err is why
// the cache cannot hold it. Logged as a warning once per file (an hour).
func (ff *fileFetch) uncache(err error) {
	ff.mu.Lock()
	first := ff.uncached == nil
	if first {
		ff.uncached = err
	}
	ff.mu.Unlock()
	if !first {
		return
	}
	f := ff.f
	f.stats.uncached.Add(1)
	log := f.log.WithError(err).WithField("file_id", ff.meta.ID)
	now := f.now()
	if last, ok := f.warned.Get(ff.meta.ID); ok && now.Sub(last) < uncacheWarnEvery {
		log.Debug("cache: cannot hold the file; reading it straight from the service")
		return
	}
	f.warned.Add(ff.meta.ID, now)
	log.Warn("cache: cannot hold the file; reading it straight from the service")
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
	ahead       bool               // read-ahead: runs until the file's last reader closes
	cancel      context.CancelFunc // demand fetches: cancelled when every waiter left
	waiters     int                // guarded by fileFetch.mu
}

// errOpCancelled ends the waits of a fetch every waiter of which gave up; a
// read that joined it just then plans again.
var errOpCancelled = errors.New("cache: fetch cancelled")

// Reader reads one open file through the cache: cached blocks from disk,
// missing ones fetched, and, while its reading is sequential, blocks ahead of
// it fetched in parallel before they are asked for.
type Reader struct {
	ff *fileFetch

	mu     sync.Mutex
	next   int64 // guarded by mu; where a sequential read would go on
	last   int64 // guarded by mu; where the last read started
	window int64 // guarded by mu; read-ahead window, 0 while reading at random
	ahead  int64 // guarded by mu; read-ahead is started up to this offset
	closed bool  // guarded by mu

	bundleAsked atomic.Bool // the bundler was asked about this file once
	gaveUp      stamp       // when a wait of this reader last timed out (wait.go)

	direct directReads // guarded by mu; the stream of reads past the cache
}

// Handle is the cache entry the reader holds.
func (r *Reader) Handle() *Handle { return r.ff.h }

// File is the cache file holding the content: bytes that Ready reported are
// in it at their offsets, so a caller may read (or splice) them itself.
func (r *Reader) File() *os.File { return r.ff.h.File() }

// Ready makes bytes [off, off+want) present in the cache file, fetching what
// is missing (and reading ahead), and returns how many of them the file has:
// fewer at its end, and io.EOF only at or past it (a failed fetch is never an
// io.EOF). ctx is the reader's request: when it is cancelled Ready returns and
// the fetches only it waited for are cancelled; so they are when no content
// came for the I/O timeout (a *TimeoutError, wait.go). When the cache cannot
// hold the bytes (its disk is full), the error is ErrNotCached: ReadDirect
// reads them.
func (r *Reader) Ready(ctx context.Context, off, want int64) (int64, error) {
	ff := r.ff
	size := ff.meta.Size
	if off >= size || want <= 0 {
		return 0, io.EOF
	}
	n := min(want, size-off)
	if b := ff.f.bundler; b != nil && !r.bundleAsked.Swap(true) && b.Covers(ff.meta.ID) && !ff.h.Complete() {
		// A bundle brings this file: wait for it rather than fetch the file
		// alone (unless it fails or is slow: up to the I/O timeout).
		bctx, cancel := ff.f.contentWait().bound(ctx)
		b.Wait(bctx, ff.meta.ID)
		cancel()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	cw := ff.f.contentWait()
	defer cw.stop()
	for attempt := 0; ; attempt++ {
		err := r.wait(ctx, cw, off, n, attempt == 0)
		if err == nil {
			return n, nil
		}
		// A fetch this read joined was cancelled by others giving up, or a
		// read-ahead failed: plan again (a fetch of our own then runs).
		var retry bool
		if errors.Is(err, errOpCancelled) || errors.Is(err, context.Canceled) {
			retry = ctx.Err() == nil
		}
		if !retry || attempt >= 3 {
			return 0, err
		}
	}
}

// moveLocked moves the reader's window for a new read at [off, off+n) and
// reports whether the read is at random. Called with r.mu held.
func (r *Reader) moveLocked(off, n int64) bool {
	ff := r.ff
	bs := ff.f.content.BlockSize()
	if r.next > 0 && off == r.last {
		// The same read again (a reader retrying, the kernel asking twice):
		// as the last one was, without moving the window.
		return r.window == 0
	}
	r.last = off
	random := false
	// Sequential when it starts within a block of where the last ended (the
	// kernel reorders reads a little); after random reads, one such read opens
	// one block (it may be chance), a second the full read-ahead window.
	switch {
	case r.next == 0 && off == 0:
		r.window = min(2*ff.f.chunk, ff.f.readAhead)
	case r.next > 0 && off >= r.next-bs && off <= r.next+bs:
		if r.window == 0 {
			r.window = bs
		} else {
			r.window = min(max(2*r.window, 2*ff.f.chunk), ff.f.readAhead)
		}
	default:
		ff.f.stats.random.Add(1)
		r.window = 0
		r.ahead = 0
		random = true
	}
	r.next = max(r.next, off+n)
	if r.window == 0 {
		r.next = off + n
	}
	return random
}

// plan starts the fetches a read at [off, off+n) needs, and the read-ahead
// after it, and returns the blocks to wait for; the read is counted once as a
// waiter of each fetch it waits on. first is false when the same read plans
// again (it then does not move the read-ahead window).
func (r *Reader) plan(off, n int64, first bool) ([]*pendingBlock, error) {
	ff := r.ff
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("cache: reader closed")
	}
	random := first && r.moveLocked(off, n)
	ff.mu.Lock()
	defer ff.mu.Unlock()
	missing := ff.h.Missing(off, n)
	if ff.uncached != nil {
		// Nothing more is fetched into the cache (nor read ahead).
		if len(missing) > 0 {
			return nil, ff.uncached
		}
		return nil, nil
	}
	if random && n <= smallRead && len(missing) > 0 && ff.smallReadLocked(missing) {
		return nil, ErrReadDirect
	}
	ff.startRunsLocked(missing, false, -1)
	var waits []*pendingBlock
	for _, b := range missing {
		pb, ok := ff.pending[b]
		if !ok {
			continue // fetched meanwhile
		}
		// A read spans a few fetches at most: count it once on each.
		if len(waits) == 0 || waits[len(waits)-1].op != pb.op {
			pb.op.waiters++
		}
		waits = append(waits, pb)
	}
	if r.window > 0 {
		// Read ahead in whole chunks: as the window slides a read at a time,
		// waiting for a chunk's worth keeps every request large.
		start := max(off+n, r.ahead)
		end := min(off+n+r.window, ff.meta.Size)
		if end < ff.meta.Size {
			end = start + (end-start)/ff.f.chunk*ff.f.chunk
		}
		if start < end {
			r.ahead = ff.startRunsLocked(ff.h.Missing(start, end-start), true, ff.aheadLimitLocked())
			if r.ahead < 0 {
				r.ahead = end
			}
		}
	}
	return waits, nil
}

// aheadLimitLocked is how many fetches ff's read-ahead may have in flight:
// its share of the transfers among the files being fetched (ff among them),
// 2 at least and perFile at most. Past its share, a file's read-ahead would
// queue before other files' reads for the transfers (first come, first
// served), and of 16 files read at once some would starve; a file read alone
// keeps its perFile. Called with ff.mu held.
func (ff *fileFetch) aheadLimitLocked() int {
	f := ff.f
	n := f.reading.Load()
	if ff.ops == 0 {
		n++ // not counted while it has no fetch in flight
	}
	share := int64(f.transfers) / n
	return int(min(int64(f.perFile), max(2, share)))
}

// startRunsLocked fetches the given missing blocks that are not pending yet,
// grouped into runs of contiguous blocks of at most a chunk. With limit >= 0
// it stops when the file has that many fetches in flight and returns the
// offset of the first block it left; otherwise it returns -1.
func (ff *fileFetch) startRunsLocked(blocks []int64, ahead bool, limit int) int64 {
	bs := ff.f.content.BlockSize()
	var run []int64
	for i, b := range blocks {
		if _, ok := ff.pending[b]; ok {
			continue
		}
		if len(run) > 0 && (run[len(run)-1] != b-1 || int64(len(run))*bs >= ff.f.chunk) {
			ff.startLocked(run[0], run[len(run)-1], ahead)
			run = run[:0]
		}
		if limit >= 0 && ff.ops >= limit {
			return blocks[i] * bs
		}
		run = append(run, b)
	}
	if len(run) > 0 {
		ff.startLocked(run[0], run[len(run)-1], ahead)
	}
	return -1
}

// startLocked registers blocks first..last as pending and fetches them.
func (ff *fileFetch) startLocked(first, last int64, ahead bool) {
	op := &fetchOp{first: first, last: last, ahead: ahead}
	ctx := ff.ctx
	if !ahead {
		ctx, op.cancel = context.WithCancel(ff.ctx)
	}
	for b := first; b <= last; b++ {
		ff.pending[b] = &pendingBlock{done: make(chan struct{}), op: op}
	}
	if ff.ops == 0 {
		ff.f.reading.Add(1)
	}
	ff.ops++
	if ahead {
		ff.f.stats.ahead.Add(1)
	}
	ff.wg.Add(1)
	go ff.run(ctx, op)
}

// leave ends a read's wait on blocks. A demand fetch nobody waits for any more
// is cancelled, and its blocks stop being pending at once, so a read arriving
// now starts a fetch of its own instead of joining the cancelled one.
func (ff *fileFetch) leave(waits []*pendingBlock) {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	for i, w := range waits {
		op := w.op
		if i > 0 && waits[i-1].op == op {
			continue // counted once per run of blocks of one fetch
		}
		op.waiters--
		if op.waiters > 0 || op.cancel == nil {
			continue
		}
		op.cancel()
		for b := op.first; b <= op.last; b++ {
			if pb, ok := ff.pending[b]; ok && pb.op == op {
				delete(ff.pending, b)
				pb.err = errOpCancelled
				close(pb.done)
			}
		}
	}
}

// run fetches one op's blocks, writing each to the cache as it arrives, and
// resolves their waiters.
func (ff *fileFetch) run(ctx context.Context, op *fetchOp) {
	defer ff.wg.Done()
	err := ff.fetch(ctx, op)
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotCached) { // that one is logged once (uncache)
		ff.f.stats.errors.Add(1)
		l := ff.f.log.WithError(err).WithField("file_id", ff.meta.ID)
		if api.IsOffline(err) {
			l.Debug("cache: fetching file content failed: offline") // the mount's errno says it, once per path
		} else {
			l.Warn("cache: fetching file content failed")
		}
	}
	ff.mu.Lock()
	defer ff.mu.Unlock()
	ff.ops--
	if ff.ops == 0 {
		ff.f.reading.Add(-1)
	}
	for b := op.first; b <= op.last; b++ {
		pb, ok := ff.pending[b]
		if !ok || pb.op != op {
			continue
		}
		delete(ff.pending, b)
		pb.err = err
		if pb.err == nil {
			pb.err = fmt.Errorf("cache: block %d of file %d was not fetched", b, ff.meta.ID)
		}
		close(pb.done)
	}
	if op.cancel != nil {
		op.cancel()
	}
}

// fetch runs one op: the URL first (no transfer slot is held while asking
// for it), then the range; a URL the object store refuses is renewed once.
func (ff *fileFetch) fetch(ctx context.Context, op *fetchOp) error {
	stale := ""
	for attempt := 0; ; attempt++ {
		url, err := ff.f.url(ctx, ff.meta.ID, stale)
		if err != nil {
			return err
		}
		if err := ff.f.sem.Acquire(ctx, 1); err != nil {
			return err
		}
		err = ff.fetchRange(ctx, op, url)
		ff.f.sem.Release(1)
		if err == nil {
			return nil
		}
		if api.IsURLExpired(err) && attempt == 0 {
			ff.f.stats.renewals.Add(1)
			stale = url
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// The object ended before the size its listing gives: never
			// pass that off as the end of the file.
			return fmt.Errorf("cache: file %d: %w (%v)", ff.meta.ID, ErrChanged, err)
		}
		return err
	}
}

// fetchRange streams the op's missing blocks from url into the cache.
func (ff *fileFetch) fetchRange(ctx context.Context, op *fetchOp, url string) error {
	h := ff.h
	first := op.first
	for first <= op.last && h.Has(first) {
		ff.resolve(first, op)
		first++
	}
	if first > op.last {
		return nil
	}
	off, _ := h.BlockRange(first)
	lastOff, lastN := h.BlockRange(op.last)
	ff.f.stats.ranges.Add(1)
	rc, err := ff.f.client.ReadRange(ctx, url, off, lastOff+lastN-off)
	if err != nil {
		return err
	}
	body := &progressBody{ReadCloser: rc, last: &ff.f.lastByte}
	defer body.Close()
	bp := ff.f.bufs.Get().(*[]byte)
	defer ff.f.bufs.Put(bp)
	for b := first; b <= op.last; b++ {
		off, n := h.BlockRange(b)
		buf := (*bp)[:n]
		if _, err := io.ReadFull(body, buf); err != nil {
			return fmt.Errorf("reading block %d: %w", b, err)
		}
		if err := ff.store(b, buf, lastOff+lastN-off); err != nil {
			return err
		}
		ff.f.stats.bytes.Add(n)
		ff.resolve(b, op)
	}
	return nil
}

// store writes block b into the cache. When the cache cannot hold it (its
// disk is full), entries nobody uses are evicted to make room for rest bytes
// and the write is tried again, once (also when another fetch evicted them
// just before); if that fails too, the file's reads go past the cache from
// now on.
func (ff *fileFetch) store(b int64, buf []byte, rest int64) error {
	err := ff.h.WriteBlock(b, buf)
	if errors.Is(err, ErrNotCached) {
		ff.f.content.makeRoom(rest)
		err = ff.h.WriteBlock(b, buf)
	}
	if errors.Is(err, ErrNotCached) {
		ff.uncache(err)
	}
	return err
}

// resolve wakes the waiters of block b, now present.
func (ff *fileFetch) resolve(b int64, op *fetchOp) {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	if pb, ok := ff.pending[b]; ok && pb.op == op {
		delete(ff.pending, b)
		close(pb.done)
	}
}

// Close ends this reader. The last reader of a file version cancels its
// fetches and releases its cache entry.
func (r *Reader) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	s := r.direct.closeLocked()
	r.mu.Unlock()
	if s != nil {
		s.close()
	}
	ff, f := r.ff, r.ff.f
	f.mu.Lock()
	ff.readers--
	last := ff.readers == 0
	if last && f.files[ff.meta.ID] == ff {
		delete(f.files, ff.meta.ID)
	}
	f.mu.Unlock()
	if last {
		ff.cancel()
		ff.wg.Wait()
		ff.h.Release()
	}
}
