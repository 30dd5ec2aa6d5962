package cache

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// The listing read-ahead: when a reader lists a folder (readdir: find, du,
// ls -R, rsync, a file manager), the listings of its subfolders are fetched
// in the background, AheadParallel at a time, so that a walk finds them
// cached instead of paying a request per folder when it gets there. A
// listing fetched ahead lists its own subfolders ahead in turn, down to
// AheadDepth levels below the folder read.
//
// Bounds:
//   - at most DirAheadOptions.Folders folders ahead of the reader: listings
//     in flight plus listings fetched ahead that no reader asked for yet (one
//     not asked for within the listing cache's time to live stops counting);
//     and at most AheadEntries entries in those listings;
//   - the folders a reader gets to first are listed first: the subfolders
//     of the folder read last come before those queued earlier, and among
//     them the order is a walk's, depth first in the listings' order;
//   - the reader first: a read-ahead starts only while the listings in
//     flight, the reader's included, are fewer than AheadParallel, and a
//     reader asking for a folder being listed ahead waits for that request
//     (the fetch is shared, as any listing is) rather than making another;
//   - outages: a read-ahead waits for its listing --io-timeout at most, as
//     a caller does (Store.Bound). When that passes, or a listing fails for
//     any reason but an answer of the service about that folder (a 404, a
//     403), the read-ahead stops: its queue is dropped and its listings in
//     flight that no reader waits for are cancelled (a fetch only the
//     read-ahead waited for, as fileFetch.leave cancels a read's). It starts
//     again when a listing succeeds. So the service down costs at most the
//     AheadParallel requests in flight when it went down, not a storm.
//
// Locks: the read-ahead's state is guarded by Dirs.mu (a leaf); no lock is
// held across a request or a wait.

// AheadParallel is how many listings the read-ahead has in flight at most
// (fewer while the reader's own are).
const AheadParallel = 16

// AheadDepth is how many levels below a folder read its subfolders are
// listed ahead: 2 lists the grandchildren too, so that a walk that moves on
// to the next subfolder finds its subfolders already on their way.
const AheadDepth = 2

// AheadEntries bounds the entries of the listings fetched ahead and not read
// yet (some 25 MiB of memory): folders of many entries ahead stop the
// read-ahead until the reader gets to them.
const AheadEntries = 50_000

// aheadQueueMax bounds the folders waiting to be listed ahead; past it, the
// half the reader would get to last is dropped.
const aheadQueueMax = 4096

// DirAheadOptions configure the listing read-ahead (Dirs.EnableAhead).
type DirAheadOptions struct {
	// Folders is the most folders listed ahead of the reader: in flight, or
	// fetched and not read yet. 0: no read-ahead.
	Folders int
	// IOTimeout is how long the read-ahead waits for a listing before it
	// stops (the service is silent); 0: for the client's retries.
	IOTimeout time.Duration
}

// errAheadLeft ends a listing the read-ahead alone waited for and gave up
// on (an outage). A reader that joined it as it was cancelled lists anew.
var errAheadLeft = errors.New("cache: listing read-ahead stopped")

// dirAhead is the read-ahead's state, guarded by Dirs.mu.
type dirAhead struct {
	// constants
	opts   DirAheadOptions
	ctx    context.Context // the read-ahead's fetches run under it; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the read-ahead's goroutines

	queue   aheadQueue                    // guarded by mu; the folders to list, the reader's next first
	reads   uint64                        // guarded by mu; folders read by a reader (Ahead calls), for the queue's order
	flight  map[place.DirKey]*aheadFetch  // guarded by mu; the read-ahead's listings in flight
	unread  map[place.DirKey]aheadListing // guarded by mu; listed ahead, not asked for by a reader yet
	entries int                           // guarded by mu; the entries of the unread listings
	reader  int                           // guarded by mu; the readers' listing fetches in flight
	stopped bool                          // guarded by mu; an outage: nothing starts until a listing succeeds
}

type aheadItem struct {
	key   place.DirKey
	depth int // 1: a subfolder of a folder a reader read
	// The order: the subfolders of the folder a reader read last first,
	// and among those of one read, the order a walk visits them in (depth
	// first, in the listings' order): read is the Ahead call's number, path
	// the folder's place under the folder read.
	read  uint64
	path  []int32
	index int // in the heap
}

// aheadFetch is one listing of the read-ahead in flight.
type aheadFetch struct {
	cancel  context.CancelFunc
	joined  bool // a reader waits for it too: it is not cancelled
	fetched bool // its own request made the listing (not one it joined)
}

type aheadListing struct {
	fetched time.Time
	entries int
}

// EnableAhead turns the listing read-ahead on (see dirAhead). Call it before
// the first listing; o.Folders 0, or a listing cache that keeps nothing,
// leaves it off.
func (d *Dirs) EnableAhead(o DirAheadOptions) {
	if o.Folders <= 0 || d.ttl <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.ahead = &dirAhead{opts: o, ctx: ctx, cancel: cancel, queue: newAheadQueue(),
		flight: map[place.DirKey]*aheadFetch{}, unread: map[place.DirKey]aheadListing{}}
}

// Close stops the read-ahead and waits for its goroutines.
func (d *Dirs) Close() {
	a := d.ahead
	if a == nil {
		return
	}
	a.cancel()
	d.mu.Lock()
	a.queue = newAheadQueue()
	d.mu.Unlock()
	a.wg.Wait()
}

// Ahead tells the read-ahead that a reader read key's listing l: its
// subfolders are listed ahead, before the folders queued earlier.
func (d *Dirs) Ahead(key place.DirKey, l *Listing) {
	if d.ahead == nil || l.Folders == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ahead.reads++
	d.pushLocked(key.Area, l, aheadItem{read: d.ahead.reads})
	d.pumpLocked()
}

// pushLocked queues the subfolders of a listing of area, below parent (the
// folder read, depth 0, or a folder listed ahead). A folder queued already
// moves up when this place comes first; those cached or being listed are
// left out.
func (d *Dirs) pushLocked(area place.Area, l *Listing, parent aheadItem) {
	a := d.ahead
	if a.stopped {
		return
	}
	i := int32(0)
	for _, f := range l.Files {
		if !f.IsDir() || f.ID < 0 {
			continue // a folder made offline is listed from memory (dirs_made.go)
		}
		key := place.DirKey{Area: area, ID: f.ID}
		i++
		if c, ok := d.dirs[key]; ok && d.freshListing(c) || a.flight[key] != nil {
			continue
		}
		path := append(slices.Clip(parent.path), i)
		a.queue.push(&aheadItem{key: key, depth: parent.depth + 1, read: parent.read, path: path})
	}
}

// pumpLocked starts listings from the head of the queue while the bounds
// allow.
func (d *Dirs) pumpLocked() {
	a := d.ahead
	if a.ctx.Err() != nil {
		return // closed
	}
	for !a.stopped && a.queue.Len() > 0 && len(a.flight)+a.reader < AheadParallel && d.roomLocked() {
		it := a.queue.pop()
		if l, ok := d.dirs[it.key]; ok && d.freshListing(l) {
			continue
		}
		ctx, cancel := context.WithCancel(a.ctx)
		f := &aheadFetch{cancel: cancel}
		a.flight[it.key] = f
		// Started here, under the lock: a reader asking for the folder from
		// now on joins this fetch.
		ch := d.group.DoChan(d.listKeyLocked(it.key), d.aheadFetchFunc(ctx, it.key, f, d.gen))
		a.wg.Add(1)
		go d.waitAhead(it, f, ch)
	}
}

// roomLocked reports whether the read-ahead may have one more folder ahead
// of the reader. Listings not read within the time to live stop counting.
func (d *Dirs) roomLocked() bool {
	a := d.ahead
	full := func() bool {
		return len(a.flight)+len(a.unread) >= a.opts.Folders || a.entries >= AheadEntries
	}
	if !full() {
		return true
	}
	for key, u := range a.unread {
		if l, ok := d.dirs[key]; !ok || !d.fresh(u.fetched) || l.Fetched != u.fetched {
			d.forgetUnreadLocked(key)
		}
	}
	return !full()
}

func (d *Dirs) forgetUnreadLocked(key place.DirKey) {
	a := d.ahead
	if u, ok := a.unread[key]; ok {
		a.entries -= u.entries
		delete(a.unread, key)
	}
}

// aheadFetchFunc is the shared fetch of a listing ahead.
func (d *Dirs) aheadFetchFunc(ctx context.Context, key place.DirKey, f *aheadFetch, gen uint64) func() (any, error) {
	return func() (any, error) {
		defer f.cancel()
		l, fetched, err := d.fetchListing(ctx, key, gen)
		if err != nil && ctx.Err() != nil {
			return nil, errAheadLeft
		}
		if fetched {
			d.stats.ahead.Add(1)
			d.mu.Lock()
			f.fetched = true
			d.mu.Unlock()
		}
		if err == nil {
			d.setSilent(false)
		}
		return l, err
	}
}

// waitAhead waits for a listing ahead, --io-timeout at most.
func (d *Dirs) waitAhead(it *aheadItem, f *aheadFetch, ch <-chan singleflight.Result) {
	a := d.ahead
	defer a.wg.Done()
	var timeout <-chan time.Time
	if a.opts.IOTimeout > 0 {
		t := time.NewTimer(a.opts.IOTimeout)
		defer t.Stop()
		timeout = t.C
	}
	var res singleflight.Result
	select {
	case res = <-ch:
		f.cancel() // ended (or it was another's fetch, joined)
	case <-timeout:
		res.Err = &TimeoutError{After: a.opts.IOTimeout}
	case <-a.ctx.Done():
		return
	}
	d.aheadDone(it, f, res)
}

// aheadDone records how a listing ahead ended: a listing is kept as unread
// and lists its subfolders ahead in turn; an outage stops the read-ahead.
func (d *Dirs) aheadDone(it *aheadItem, f *aheadFetch, res singleflight.Result) {
	a := d.ahead
	d.mu.Lock()
	if a.flight[it.key] == f {
		delete(a.flight, it.key)
	}
	var te *TimeoutError
	if errors.As(res.Err, &te) && !f.joined {
		f.cancel() // the read-ahead alone waited for it
	}
	stopped := false
	switch {
	case errors.Is(res.Err, errAheadLeft):
	case res.Err != nil && outage(res.Err):
		stopped = d.stopAheadLocked()
	case res.Err != nil: // the service's answer about this folder
	default:
		l := res.Val.(*Listing)
		if f.fetched && !f.joined {
			if c, ok := d.dirs[it.key]; ok && c == l {
				a.unread[it.key] = aheadListing{fetched: l.Fetched, entries: len(l.Files)}
				a.entries += len(l.Files)
			}
		}
		if it.depth < AheadDepth {
			d.pushLocked(it.key.Area, l, *it)
		}
	}
	d.pumpLocked()
	d.mu.Unlock()
	if stopped {
		d.log.WithError(res.Err).Info("cache: listing read-ahead stopped; it starts again when a listing succeeds")
	}
}

// outage reports whether a listing's failure stops the read-ahead: anything
// but an answer of the service about the folder (not found, forbidden).
func outage(err error) bool {
	var e *api.Error
	return !errors.As(err, &e) || e.Temporary()
}

// stopAheadLocked stops the read-ahead until a listing succeeds: the queue
// is dropped and its listings that no reader waits for are cancelled. It
// reports whether it was running.
func (d *Dirs) stopAheadLocked() bool {
	a := d.ahead
	if a == nil {
		return false
	}
	was := !a.stopped
	a.stopped = true
	a.queue = newAheadQueue()
	for key, f := range a.flight {
		if !f.joined {
			f.cancel()
			delete(a.flight, key)
		}
	}
	return was
}

// readLocked is a reader asking for key: a listing fetched ahead is read
// (it stops counting against the bound: the next one may start), one in
// flight is joined (it is not cancelled).
func (d *Dirs) readLocked(key place.DirKey) {
	a := d.ahead
	if a == nil {
		return
	}
	if _, ok := a.unread[key]; ok {
		d.forgetUnreadLocked(key)
		d.stats.aheadRead.Add(1)
		d.pumpLocked() // room for one more
	}
	if f := a.flight[key]; f != nil && !f.joined {
		f.joined = true
		d.stats.aheadRead.Add(1)
	}
}

// readerFetch counts a reader's listing fetch in flight (+1 as it starts,
// -1 as it ends): the read-ahead yields to it.
func (d *Dirs) readerFetch(n int) {
	if d.ahead == nil {
		return
	}
	d.mu.Lock()
	d.ahead.reader += n
	if n < 0 {
		d.pumpLocked()
	}
	d.mu.Unlock()
}

// resumeAheadLocked starts the read-ahead again after an outage. It reports
// whether it was stopped.
func (d *Dirs) resumeAheadLocked() bool {
	a := d.ahead
	if a == nil || !a.stopped {
		return false
	}
	a.stopped = false
	return true
}

// aheadQueue is the folders waiting to be listed ahead, a heap by aheadItem's
// order, at most aheadQueueMax.
type aheadQueue struct {
	items []*aheadItem
	byKey map[place.DirKey]*aheadItem
}

func newAheadQueue() aheadQueue { return aheadQueue{byKey: map[place.DirKey]*aheadItem{}} }

// before reports whether it comes before o.
func (it *aheadItem) before(o *aheadItem) bool {
	if it.read != o.read {
		return it.read > o.read
	}
	return slices.Compare(it.path, o.path) < 0
}

// push queues it; a folder queued already takes its place when it comes
// first.
func (q *aheadQueue) push(it *aheadItem) {
	if old := q.byKey[it.key]; old != nil {
		if it.before(old) {
			old.depth, old.read, old.path = it.depth, it.read, it.path
			heap.Fix((*aheadHeap)(q), old.index)
		}
		return
	}
	q.byKey[it.key] = it
	heap.Push((*aheadHeap)(q), it)
	if len(q.items) > aheadQueueMax {
		// The half the reader would get to last goes, at once (a folder of
		// many subfolders does not pay a pass over the queue for each).
		slices.SortFunc(q.items, func(a, b *aheadItem) int {
			if a.before(b) {
				return -1
			}
			return 1
		})
		for _, it := range q.items[aheadQueueMax/2:] {
			delete(q.byKey, it.key)
		}
		clear(q.items[aheadQueueMax/2:])
		q.items = q.items[:aheadQueueMax/2]
		for i, it := range q.items {
			it.index = i
		}
	}
}

func (q *aheadQueue) pop() *aheadItem {
	it := heap.Pop((*aheadHeap)(q)).(*aheadItem)
	delete(q.byKey, it.key)
	return it
}

func (q *aheadQueue) Len() int { return len(q.items) }

// aheadHeap is the queue as container/heap sees it.
type aheadHeap aheadQueue

func (h *aheadHeap) Len() int           { return len(h.items) }
func (h *aheadHeap) Less(i, j int) bool { return h.items[i].before(h.items[j]) }
func (h *aheadHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}
func (h *aheadHeap) Push(x any) {
	it := x.(*aheadItem)
	it.index = len(h.items)
	h.items = append(h.items, it)
}
func (h *aheadHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}
