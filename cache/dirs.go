package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/logging"
	"github.com/orgfs/orgfs/place"
)

// Locks: Dirs.mu (a leaf, docs/ARCHITECTURE.md), held over the maps only: never across
// a listing request or disk I/O.

// Listing is one folder's entries as the service listed them.
type Listing struct {
	// Files are the entries' records without what no reader of a listing
	// reads: their Details are nil (listed).
	Files []api.File
	// Current is the folder's own record, as the listing's first page gave
	// it (nil at an area's root, listed by id 0, and for a folder the mount
	// seeded): an area's root, listed by its id, carries the storage's quota
	// and use.
	Current *api.File
	Fetched time.Time
	Folders int // how many of Files are folders (a folder's link count is 2 more)
	// Seq is the number of the cache's last edit when the listing was made
	// (Dirs.Seq): every edit of its folder numbered up to Seq shows in it.
	// What the mount keeps of a file takes no record older than the edit
	// that gave it the one it holds (fs/kernel.go).
	Seq uint64
	// edit is what made the listing from the folder's one before, when
	// one edit of the cache did (Edited).
	edit *listingEdit
	// kept: read from the listings kept on disk (dirs_disk.go), not listed
	// since the start: never fresh, the answer only while the service
	// cannot be reached.
	kept bool
	// behind: kept, and written at a clean unmount with every change the
	// mount made: online too, the answer at once while the folder is
	// listed again behind (a restart answers a folder listed before
	// without waiting for the service), until a change of the mount's own
	// drops it (Drop).
	behind bool
}

// listingEdit is one edit of a folder's listing (Dirs.Put, Remove): the
// listing it was made from (weak: a chain of listings of a folder must not
// keep each other), the entries it took out, those it put at the end.
type listingEdit struct {
	from           weak.Pointer[Listing]
	removed, added []api.File
}

// Edited returns what l changed of prev when l is prev edited once by the
// mount (Dirs.Put, Remove): the entries taken out, and those put at the end
// (appended in place, or after the rest in a copy); not ok otherwise (a
// listing fetched, or two edits apart). The mount's view of a folder follows
// such a change without being made anew (fs/dirview.go): in a folder of
// 100,000 entries each made anew took 12 ms of CPU, once per file removed
// or replaced.
func (l *Listing) Edited(prev *Listing) (removed, added []api.File, ok bool) {
	if added, ok := appended(l.Files, prev.Files); ok {
		return nil, added, true
	}
	if l.edit == nil || l.edit.from != weak.Make(prev) {
		return nil, nil, false
	}
	return l.edit.removed, l.edit.added, true
}

// appended is b's entries past a's, when b is a with entries appended in
// place.
func appended(b, a []api.File) ([]api.File, bool) {
	if len(a) == 0 || len(b) < len(a) || &a[0] != &b[0] {
		return nil, false
	}
	return b[len(a):], true
}

// newListing makes a listing, its folders counted once (a folder's getattr
// reads the count).
func newListing(files []api.File, current *api.File, fetched time.Time, seq uint64) *Listing {
	l := &Listing{Files: files, Current: current, Fetched: fetched, Seq: seq}
	for _, f := range files {
		if f.IsDir() {
			l.Folders++
		}
	}
	return l
}

// DirStats are the listing cache's counters.
type DirStats struct {
	Listings, SeatLists int64 // fetched from the service
	Hits                int64 // answered from the cache
	Stale               int64 // expired, answered while the service gave none
	Ahead               int64 // of Listings, fetched by the read-ahead
	AheadRead           int64 // listings of the read-ahead a reader then asked for
}

// Dirs caches folder listings and the computer list for a time to live.
// Concurrent requests for the same folder share one fetch.
//
// Outages: when a fetch finds the service offline (api.IsOffline: it
// cannot be reached, or was found silent), or a caller's I/O timeout
// (Store.Bound) cuts its wait for a listing, the service counts as silent
// until a fetch succeeds again.
// Meanwhile a listing the cache still holds after its time to live is the
// answer, at once (its fetch runs on, and refreshes it when the service
// answers), so that folders listed before an outage stay browsable and
// their cached files readable; one never listed fails at the I/O timeout.
type Dirs struct {
	// dependencies
	client Client
	now    func() time.Time
	log    logrus.FieldLogger
	// constants
	ttl time.Duration

	mu      sync.Mutex
	dirs    map[place.DirKey]*Listing // guarded by mu
	seats   *seatList                 // guarded by mu
	gen     uint64                    // guarded by mu; bumped by DropAll, so a listing fetch begun before is not stored
	editSeq uint64                    // guarded by mu; the mount's edits of listings so far (edit)
	// editLog holds the edits made while listing fetches were on their way,
	// by folder, to be made again on those fetches' answers; fetching counts
	// the fetches on their way by the editSeq at their start. Guarded by mu.
	editLog  map[place.DirKey][]loggedEdit
	fetching map[uint64]int
	seatGen  uint64 // guarded by mu; the same for the computer list (DropAll, DropSeats)
	adds     int    // guarded by mu; listings stored since the last pruning
	// hide: files the mount removed that the service may still list, with
	// their folders (nil: not known, hidden at the start). Guarded by mu.
	hide   map[int64]*place.DirKey
	silent bool   // guarded by mu; a caller's I/O timeout cut its wait, and no fetch succeeded since
	drops  uint64 // guarded by mu; Drop and Forget count (listKeyLocked)
	// Folders made offline (dirs_made.go): by folder, those shown in it
	// until the service has them; and those it has now, provisional id →
	// the service's. Guarded by mu.
	made   map[place.DirKey][]api.File
	madeAs map[int64]int64

	ahead *dirAhead // nil: no read-ahead; its state is guarded by mu (dirahead.go)

	watch atomic.Pointer[DirsWatcher]             // told of drops and puts (Watch)
	keep  atomic.Pointer[func(place.DirKey) bool] // listings never pruned (a pin covers them: pins.go)

	group singleflight.Group
	stats struct{ listings, seatLists, hits, stale, ahead, aheadRead atomic.Int64 }

	// loading is closed once the listings kept on disk are read
	// (LoadListings); nil when none are being read. A folder not cached
	// waits for them before it is listed.
	loading atomic.Pointer[chan struct{}]
	// behind bounds the folders listed again behind at once (a find over
	// a tree read back would list every folder at once): one more is
	// answered from its copy and listed again at its next use.
	behind *semaphore.Weighted
}

// behindMax is how many folders are listed again behind at once.
const behindMax = 4

type seatList struct {
	seats   []api.Seat
	fetched time.Time
}

// dirsOptions are NewDirs's arguments.
type dirsOptions struct {
	client Client
	ttl    time.Duration    // 0 caches nothing
	now    func() time.Time // default time.Now
}

func (o dirsOptions) withDefaults() dirsOptions {
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// NewDirs makes a listing cache. ttl 0 caches nothing; now nil is time.Now.
func NewDirs(client Client, ttl time.Duration, now func() time.Time) *Dirs {
	o := dirsOptions{client: client, ttl: ttl, now: now}.withDefaults()
	return &Dirs{client: o.client, ttl: o.ttl, now: o.now, log: logging.OrDiscard(nil), dirs: map[place.DirKey]*Listing{}, hide: map[int64]*place.DirKey{},
		made: map[place.DirKey][]api.File{}, madeAs: map[int64]int64{}, behind: semaphore.NewWeighted(behindMax)}
}

// Stats returns the counters.
func (d *Dirs) Stats() DirStats {
	return DirStats{Listings: d.stats.listings.Load(), SeatLists: d.stats.seatLists.Load(), Hits: d.stats.hits.Load(),
		Stale: d.stats.stale.Load(), Ahead: d.stats.ahead.Load(), AheadRead: d.stats.aheadRead.Load()}
}

func (d *Dirs) fresh(t time.Time) bool { return d.now().Sub(t) < d.ttl }

// freshListing reports whether l is fresh: listed within the time to live
// in this run (one kept on disk is not, until listed again).
func (d *Dirs) freshListing(l *Listing) bool { return !l.kept && d.fresh(l.Fetched) }

// FreshFor is how much longer a listing fetched at t stays fresh: 0 once it
// is not (and always without a listing cache).
func (d *Dirs) FreshFor(t time.Time) time.Duration {
	return max(0, d.ttl-d.now().Sub(t))
}

// List returns a folder's entries, from the cache while they are fresh. A
// fetch is shared by every caller of the folder and runs on no caller's
// context: a caller whose ctx ends stops waiting (with ctx's error), and the
// fetch goes on, within the client's retries, for the others and the cache.
// In an outage, an expired listing may be the answer (see Dirs). A listing
// the read-ahead is fetching is waited for (dirahead.go).
func (d *Dirs) List(ctx context.Context, key place.DirKey) (*Listing, error) {
	for {
		l, err := d.list(ctx, key)
		if errors.Is(err, errAheadLeft) && ctx.Err() == nil {
			continue // joined as the read-ahead gave it up: list anew
		}
		return l, err
	}
}

// Fresh returns a folder's listing when the cache holds it fresh, as List
// would, without waiting for anything (and without the cost of a context
// bounded for a wait).
func (d *Dirs) Fresh(key place.DirKey) (*Listing, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if key = d.realLocked(key); key.ID < 0 {
		return d.provisionalLocked(key), true
	}
	l, _, fresh := d.cachedLocked(key)
	return l, fresh
}

// cachedLocked is a folder's cached listing, if there is one (ok), and
// whether it is fresh (a hit, counted). Asking for it marks a listing the
// read-ahead fetched as read.
func (d *Dirs) cachedLocked(key place.DirKey) (l *Listing, ok, fresh bool) {
	d.readLocked(key)
	l, ok = d.dirs[key]
	fresh = ok && d.freshListing(l)
	if fresh {
		d.stats.hits.Add(1)
	}
	return l, ok, fresh
}

func (d *Dirs) list(ctx context.Context, key place.DirKey) (*Listing, error) {
	if ch := d.loading.Load(); ch != nil {
		select { // what was kept answers, the start's first ls among them
		case <-*ch:
		case <-ctx.Done():
		}
	}
	d.mu.Lock()
	if key = d.realLocked(key); key.ID < 0 {
		defer d.mu.Unlock()
		return d.provisionalLocked(key), nil // never on the service: never fetched
	}
	l, ok, fresh := d.cachedLocked(key)
	if fresh {
		d.mu.Unlock()
		return l, nil
	}
	var stale any // untyped nil when none
	if ok {
		stale = l
	}
	gen, fkey := d.gen, d.listKeyLocked(key)
	d.mu.Unlock()
	// The generation is part of the key: a listing asked for after DropAll
	// never joins a fetch begun before it.
	fetch := func() (any, error) {
		d.readerFetch(1)
		defer d.readerFetch(-1)
		l, _, err := d.fetchListing(context.WithoutCancel(ctx), key, gen)
		return l, err
	}
	if ok && l.behind {
		// Kept at a clean unmount: the answer now, listed again behind.
		// An answer that is no listing (the folder is gone) is for the
		// next caller to meet: the copy is answered no more.
		d.stats.stale.Add(1)
		if !d.behind.TryAcquire(1) {
			return l, nil // enough on their way: listed again at its next use
		}
		var ran atomic.Bool
		done := d.begin(fkey, func() (any, error) {
			ran.Store(true)
			defer d.behind.Release(1)
			v, err := fetch()
			if err != nil && !api.IsOffline(err) {
				d.mu.Lock()
				if cur := d.dirs[key]; cur == l {
					stale := newListing(l.Files, l.Current, l.Fetched, l.Seq)
					stale.kept = true
					d.dirs[key] = stale
				}
				d.mu.Unlock()
			}
			return v, err
		})
		go func() { // joined a fetch on its way: the place is free at its end
			if <-done; !ran.Load() {
				d.behind.Release(1)
			}
		}()
		return l, nil
	}
	v, err := d.shared(ctx, fkey, fetch, stale)
	if err != nil {
		return nil, err
	}
	return v.(*Listing), nil
}

// listKeyLocked is the key of a listing's shared fetch: with the
// generation (a listing asked for after DropAll never joins a fetch begun
// before it) and the count of drops (nor one asked for after a Drop or
// Forget: that fetch may answer what the mount just changed, as it was).
func (d *Dirs) listKeyLocked(key place.DirKey) string {
	return fmt.Sprintf("%d/%d/%d/%d/%d", d.gen, d.drops, key.Area.Kind, key.Area.MachineID, key.ID)
}

// fetchListing lists a folder and caches its listing, unless the cache was
// dropped since gen (DropAll). A fetch that ended between the caller's look
// at the cache and this one stored its listing: that one is the answer, and
// fetched is false.
//
// The mount's own changes of the folder that end while the service's answer
// is on its way (an upload, a delete, a rename: each edits the cache once
// the service has it) may or may not show in that answer: they are made on
// it again (the edit log), so that what the mount shows never goes back to
// before its own change, whether the folder's listing was cached or not (a
// file just deleted: readdir would list it and its open answer ENOENT).
func (d *Dirs) fetchListing(ctx context.Context, key place.DirKey, gen uint64) (_ *Listing, fetched bool, _ error) {
	d.mu.Lock()
	if l, ok := d.dirs[key]; ok && d.freshListing(l) && d.gen == gen {
		d.mu.Unlock()
		return l, false, nil
	}
	since := d.beginFetchLocked()
	d.mu.Unlock()
	at := d.now()
	files, current, err := d.fetch(ctx, key)
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endFetchLocked(since)
	if err != nil {
		return nil, false, err
	}
	d.stats.listings.Add(1)
	store := d.gen == gen
	for _, e := range d.editLog[key] {
		switch {
		case e.seq <= since:
		case e.f == nil:
			store = false // dropped meanwhile (Drop, Forget): listed anew at the next read
		default:
			files = e.f(files)
		}
	}
	l := newListing(d.withMadeLocked(key, d.visibleLocked(files)), current, at, d.editSeq)
	if store {
		d.dirs[key] = l
		d.pruneLocked()
	}
	return l, true, nil
}

// shared runs fetch once for every caller of key at a time, and waits for
// it until ctx ends (the fetch goes on). stale, when not nil, is the
// expired value the cache holds: the answer at once while the service is
// silent, when the fetch finds it offline (api.IsOffline), or when the
// caller's I/O timeout ends its wait (see Dirs).
func (d *Dirs) shared(ctx context.Context, key string, fetch func() (any, error), stale any) (any, error) {
	ch := d.begin(key, fetch)
	d.mu.Lock()
	silent := d.silent
	d.mu.Unlock()
	if stale != nil && silent {
		d.stats.stale.Add(1)
		return stale, nil
	}
	select {
	case res := <-ch:
		if res.Err != nil && api.IsOffline(res.Err) {
			// Offline: the folder as last listed, at once.
			if stale != nil {
				d.stats.stale.Add(1)
				return stale, nil
			}
		}
		return res.Val, res.Err
	case <-ctx.Done():
	}
	if AsTimeout(ctx, ctx.Err()) == nil {
		return nil, ctx.Err()
	}
	d.setSilent(true)
	if stale == nil {
		return nil, ctx.Err()
	}
	d.stats.stale.Add(1)
	return stale, nil
}

// begin runs fetch for key, or joins the one running: its answer tells
// whether the service is silent.
func (d *Dirs) begin(key string, fetch func() (any, error)) <-chan singleflight.Result {
	return d.group.DoChan(key, func() (any, error) {
		v, err := fetch()
		switch {
		case err == nil:
			d.setSilent(false)
		case api.IsOffline(err):
			d.setSilent(true) // the read-ahead stops
		}
		return v, err
	})
}

// setSilent records whether the service is silent; a change is logged. The
// listing read-ahead stops while it is, and starts again when a listing
// succeeds.
func (d *Dirs) setSilent(silent bool) {
	d.mu.Lock()
	changed := d.silent != silent
	d.silent = silent
	var ahead bool // the read-ahead stopped or resumed
	if silent {
		ahead = d.stopAheadLocked()
	} else {
		ahead = d.resumeAheadLocked()
	}
	d.mu.Unlock()
	switch {
	case changed && silent:
		d.log.Warn("cache: the service gives no answer (--io-timeout); folders listed before show as last listed until it answers")
	case changed:
		d.log.Info("cache: the service answers again; folders are listed anew")
	}
	switch {
	case ahead && silent:
		d.log.Info("cache: listing read-ahead stopped; it starts again when a listing succeeds")
	case ahead:
		d.log.Info("cache: listing read-ahead resumed")
	}
}

// fetch lists a folder: its entries and its own record.
func (d *Dirs) fetch(ctx context.Context, key place.DirKey) ([]api.File, *api.File, error) {
	req := api.ListFilesRequest{ParentID: key.ID}
	var list *api.FileList
	switch key.Area.Kind {
	case place.Shared:
		list = d.client.SharedFiles(ctx, req)
	case place.Machine:
		list = d.client.MachineFiles(ctx, key.Area.MachineID, req)
	default:
		list = d.client.Recordings(ctx, req)
	}
	files, err := list.Collect()
	for i := range files {
		files[i] = listed(files[i])
	}
	return files, list.Current(), err
}

// listed is f as a listing keeps it: without its Details (its content
// type, path, user, computer...), which no reader of a listing reads and
// which would cost a listing of 100,000 files some 15 MB more for as long
// as it is cached (the file nodes made from it keep its records too). The
// records the API client returns keep them.
func listed(f api.File) api.File {
	f.Details = nil
	return f
}

// Seats returns the organization's computers, from the cache while fresh.
func (d *Dirs) Seats(ctx context.Context) ([]api.Seat, error) { return d.SeatsWithin(ctx, d.ttl) }

// SeatsWithin is Seats, taken from the cache only when it is younger than
// maxAge (as well as fresh): a computer changing state is watched closer. The
// fetch is shared and outlives a caller's ctx, as List's.
func (d *Dirs) SeatsWithin(ctx context.Context, maxAge time.Duration) ([]api.Seat, error) {
	d.mu.Lock()
	s := d.seats
	if s != nil && d.fresh(s.fetched) && d.now().Sub(s.fetched) < maxAge {
		d.mu.Unlock()
		d.stats.hits.Add(1)
		return s.seats, nil
	}
	var stale any // untyped nil when none
	if s != nil {
		stale = s.seats
	}
	gen := d.seatGen
	d.mu.Unlock()
	v, err := d.shared(ctx, fmt.Sprintf("seats/%d", gen), func() (any, error) {
		fetched := d.now()
		seats, err := api.Collect(d.client.Seats(context.WithoutCancel(ctx), ""))
		if err != nil {
			return nil, err
		}
		d.stats.seatLists.Add(1)
		d.mu.Lock()
		if d.seatGen == gen {
			d.seats = &seatList{seats, fetched}
		}
		d.mu.Unlock()
		return seats, nil
	}, stale)
	if err != nil {
		return nil, err
	}
	return v.([]api.Seat), nil
}

// pruneLocked forgets expired listings now and then, so a walk over a large
// tree does not keep every folder in memory for the life of the mount.
func (d *Dirs) pruneLocked() {
	d.adds++
	if d.adds < 1024 {
		return
	}
	d.adds = 0
	keep := d.keep.Load()
	for k, l := range d.dirs {
		if !d.fresh(l.Fetched) && k.ID > 0 && (keep == nil || !(*keep)(k)) { // an area's root stays, as do folders made offline
			delete(d.dirs, k)
		}
	}
}

// ListAnew lists folder key anew, whatever the cache holds (a check that
// must see the service's state: rmdir's emptiness); offline
// (api.IsOffline), the folder as last listed, when the cache held it.
func (d *Dirs) ListAnew(ctx context.Context, key place.DirKey) (*Listing, error) {
	stale, _ := d.Cached(key)
	d.Drop(key)
	l, err := d.List(ctx, key)
	if err != nil && api.IsOffline(err) && stale != nil {
		d.mu.Lock()
		if _, ok := d.dirs[key]; !ok {
			d.dirs[key] = stale // still the folder as last seen, for what comes next offline
		}
		d.mu.Unlock()
		return stale, nil
	}
	return l, err
}

// Drop has one folder listed anew at its next read (one listing on its way
// is not stored either); the listing it had stays, never fresh, as the
// answer while the service cannot be reached.
func (d *Dirs) Drop(key place.DirKey) {
	d.mu.Lock()
	key = d.realLocked(key)
	if l, ok := d.dirs[key]; ok && key.ID >= 0 && (!l.kept || l.behind) {
		// Kept as last seen, never fresh: listed anew at the next read,
		// and the answer while the service cannot be reached (and in the
		// listings kept on disk for a start offline).
		stale := newListing(l.Files, l.Current, l.Fetched, d.editSeq)
		stale.kept = true
		d.dirs[key] = stale
	} else if !ok || key.ID < 0 {
		delete(d.dirs, key)
	}
	d.logLocked(key, nil)
	d.drops++
	d.mu.Unlock()
	if w := d.watch.Load(); w != nil && w.Dropped != nil {
		w.Dropped(key)
	}
}

// Forget forgets the listing of a folder that is gone (deleted by this
// mount): unlike Drop, nobody is told, since there is nothing to list anew.
func (d *Dirs) Forget(key place.DirKey) {
	d.mu.Lock()
	key = d.realLocked(key)
	delete(d.dirs, key)
	d.logLocked(key, nil)
	d.drops++
	d.mu.Unlock()
}

// DirsWatcher is told, after the fact and outside the cache's lock, what
// the cache forgot or was told without a fetch: the mount tells the kernel,
// which keeps entries as long as their listing is fresh (fs/kernel.go).
type DirsWatcher struct {
	Dropped    func(key place.DirKey)                         // a folder's listing (Drop)
	DroppedAll func()                                         // every listing (DropAll)
	Put        func(key place.DirKey, f api.File, seq uint64) // a file put in a folder's cached listing by edit seq (Put)
	Shown      func(ids []int64)                              // files hidden shown again, before their folders are listed anew (Show)
}

// Watch sets the watcher (nil: none).
func (d *Dirs) Watch(w *DirsWatcher) { d.watch.Store(w) }

// DropAll forgets every listing and the computer list (SIGHUP, .ctl/refresh).
func (d *Dirs) DropAll() {
	d.mu.Lock()
	d.dirs = map[place.DirKey]*Listing{}
	d.seats = nil
	d.gen++
	d.seatGen++
	if a := d.ahead; a != nil {
		a.queue, a.unread, a.entries = newAheadQueue(), map[place.DirKey]aheadListing{}, 0
	}
	d.mu.Unlock()
	if w := d.watch.Load(); w != nil && w.DroppedAll != nil {
		w.DroppedAll()
	}
}

// DropSeats forgets the computer list (a change made through .ctl); the
// folder listings stay.
func (d *Dirs) DropSeats() {
	d.mu.Lock()
	d.seats = nil
	d.seatGen++
	d.mu.Unlock()
}

// Seq is the number of the last edit of a listing (Listing.Seq).
func (d *Dirs) Seq() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.editSeq
}

// Cached returns a folder's cached listing, fresh or not, without a request.
func (d *Dirs) Cached(key place.DirKey) (*Listing, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if key = d.realLocked(key); key.ID < 0 {
		return d.provisionalLocked(key), true
	}
	l, ok := d.dirs[key]
	return l, ok
}

// Seed caches a listing the mount knows without asking (a folder it just
// created is empty).
func (d *Dirs) Seed(key place.DirKey, files []api.File) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key = d.realLocked(key)
	d.dirs[key] = newListing(files, nil, d.now(), d.editSeq)
}
