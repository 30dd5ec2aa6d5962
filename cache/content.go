package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/internal/logging"
)

// Locks: Content.mu, then entry.mu (the last two of the package's lock order,
// docs/ARCHITECTURE.md). Both are held for small local disk operations (opening,
// truncating or unlinking an entry's files, writing its record), never across
// a request; block data is read and written with neither held.

// DefaultBlockSize is the unit in which content is fetched and accounted.
const DefaultBlockSize = 1 << 20

// ErrNotCached is the error of storing content the cache cannot hold: an
// entry's file could not be created or written (the disk is full, over
// quota, read-only, failing). Reads of such a file go past the cache
// (Reader.ReadDirect).
var ErrNotCached = errors.New("cache: the content cache cannot hold the file")

// ContentOptions configures a Content cache. Zero values take the defaults.
type ContentOptions struct {
	Dir       string // where the sparse files and their records live; created 0700
	MaxSize   int64  // byte budget over the blocks present; 0 = unlimited
	BlockSize int64  // default DefaultBlockSize
	Log       logrus.FieldLogger
}

func (o ContentOptions) withDefaults() ContentOptions {
	setDefault(&o.BlockSize, DefaultBlockSize)
	o.Log = logging.OrDiscard(o.Log)
	return o
}

// privateDir creates dir (and its parents) if need be, and makes it 0700.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// setDefault sets the option *v to d when it is not positive: how every
// options struct of the package fills in its defaults (withDefaults).
func setDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Meta identifies one version of a service file. A cached entry is reused only
// while all three fields are unchanged.
type Meta struct {
	ID      int64     `json:"id"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// Same reports whether m and o are the same version (times compared as
// instants, whatever their zone).
func (m Meta) Same(o Meta) bool {
	return m.ID == o.ID && m.Size == o.Size && m.ModTime.Equal(o.ModTime)
}

// ContentStats are the cache's counters.
type ContentStats struct {
	Entries    int   // files with an entry
	Used       int64 // bytes present
	MaxSize    int64
	Evictions  int64 // entries evicted for the budget
	Invalidate int64 // entries dropped because the file changed
}

// Content is the on-disk content cache: one sparse file per service file,
// filled block by block, with a byte budget enforced over whole entries by an
// LRU. An entry in use (acquired and not yet released) is never evicted, so
// the cache may exceed its budget while more open files than fit are read.
type Content struct {
	// constants
	dir       string
	maxSize   int64
	blockSize int64
	log       logrus.FieldLogger
	keep      atomic.Pointer[func(id int64) bool] // never evicted (SetKeep); nil: none

	mu         sync.Mutex
	lru        *simplelru.LRU[int64, *entry] // guarded by mu; oldest first
	used       int64                         // guarded by mu; bytes present in all entries
	evictions  int64                         // guarded by mu
	invalidate int64                         // guarded by mu
	closed     bool                          // guarded by mu
	saveFailed bool                          // guarded by mu; the last record saved at a release failed (logged once)
}

// entry is one cached file.
type entry struct {
	id   int64
	refs int  // guarded by Content.mu
	gone bool // guarded by Content.mu: removed from the cache (files unlinked)

	mu          sync.Mutex
	meta        Meta     // guarded by mu
	f           *os.File // guarded by mu; open while refs > 0
	present     []uint64 // guarded by mu; bitmap of blocks present
	nPresent    int64    // guarded by mu; blocks present
	bytes       int64    // guarded by mu; bytes present (the last block may be short)
	dirty       bool     // guarded by mu; bitmap changed since it was saved
	lastUsed    time.Time
	savedUsed   time.Time // guarded by mu; lastUsed as last saved
	provisional bool      // guarded by mu; the mount's own upload, its time not the service's yet (adopt.go)
	ownTime     time.Time // guarded by mu; the mount's own time of its upload, once the service's replaced it (adopt.go)
}

// lruSaveEvery is how stale the use time in an entry's record may get (the
// eviction order after a restart needs no finer grain; saving the record at
// every close cost a copy of a folder of small files half of its time).
const lruSaveEvery = time.Minute

// entryRecord is an entry's bitmap and validity as saved beside its data,
// <id>.json beside <id>.data.
type entryRecord struct {
	Meta        Meta      `json:"meta"`
	BlockSize   int64     `json:"block_size"`
	Present     []uint64  `json:"present"`
	LastUsed    time.Time `json:"last_used"`
	Provisional bool      `json:"provisional,omitempty"` // the mount's own upload (adopt.go)
	OwnTime     time.Time `json:"own_time,omitzero"`     // the mount's own time of its upload, once the service's is known (adopt.go)
}

// OpenContent opens (or creates) the cache in opts.Dir and loads the entries a
// previous run left, oldest use first. Entries whose record is unreadable or
// whose data file is missing are dropped.
func OpenContent(opts ContentOptions) (*Content, error) {
	if opts.Dir == "" {
		return nil, errors.New("cache: no directory")
	}
	opts = opts.withDefaults()
	if err := privateDir(opts.Dir); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Content{dir: opts.Dir, maxSize: opts.MaxSize, blockSize: opts.BlockSize, log: opts.Log}
	lru, err := simplelru.NewLRU[int64, *entry](math.MaxInt32, nil)
	if err != nil {
		return nil, err
	}
	c.lru = lru
	if err := c.load(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

func (c *Content) dataPath(id int64) string {
	return filepath.Join(c.dir, strconv.FormatInt(id, 10)+".data")
}

func (c *Content) recordPath(id int64) string {
	return filepath.Join(c.dir, strconv.FormatInt(id, 10)+".json")
}

// sessionFile marks a cache in use, with the boot it is used in. Records are
// saved without fsync: a daemon that dies leaves them good (the kernel still
// has the data), but a machine that went down while the cache was in use may
// have lost data that records claim, so such a cache starts empty.
const sessionFile = ".session"

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// load reads the records of a previous run.
func (c *Content) load() error {
	session := filepath.Join(c.dir, sessionFile)
	boot := bootID()
	if prev, err := os.ReadFile(session); err == nil && boot != "" && strings.TrimSpace(string(prev)) != boot {
		c.log.Warn("cache: the machine went down while the cache was in use; starting it empty")
		if err := c.clear(); err != nil {
			return err
		}
	}
	if err := os.WriteFile(session, []byte(boot+"\n"), 0o600); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	names, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	type loaded struct {
		e   *entry
		use time.Time
	}
	var all []loaded
	for _, d := range names {
		name := d.Name()
		if strings.HasSuffix(name, ".tmp") {
			os.Remove(filepath.Join(c.dir, name)) // a record being written when a run ended
			continue
		}
		idText, ok := strings.CutSuffix(name, ".json")
		if !ok {
			if strings.HasSuffix(name, ".data") {
				id, err := strconv.ParseInt(strings.TrimSuffix(name, ".data"), 10, 64)
				if err == nil {
					if _, err := os.Stat(c.recordPath(id)); errors.Is(err, os.ErrNotExist) {
						os.Remove(filepath.Join(c.dir, name)) // data without a record: unknown content
					}
				}
			}
			continue
		}
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			continue
		}
		e, err := c.loadEntry(id)
		if err != nil {
			c.log.WithError(err).WithField("file_id", id).Debug("cache: dropping an unusable entry")
			c.removeFiles(id)
			continue
		}
		all = append(all, loaded{e, e.lastUsed})
	}
	// Oldest first, so the least recently used is evicted first.
	sort.Slice(all, func(i, j int) bool { return all[i].use.Before(all[j].use) })
	for _, l := range all {
		c.lru.Add(l.e.id, l.e)
		c.used += l.e.bytes
	}
	return nil
}

// clear removes every entry's files.
func (c *Content) clear() error {
	names, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	for _, d := range names {
		if n := d.Name(); strings.HasSuffix(n, ".data") || strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".tmp") {
			os.Remove(filepath.Join(c.dir, n))
		}
	}
	return nil
}

func (c *Content) loadEntry(id int64) (*entry, error) {
	b, err := os.ReadFile(c.recordPath(id))
	if err != nil {
		return nil, err
	}
	var r entryRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.BlockSize != c.blockSize || r.Meta.ID != id {
		return nil, errors.New("block size or id differs")
	}
	st, err := os.Stat(c.dataPath(id))
	if err != nil {
		return nil, err
	}
	if st.Size() != r.Meta.Size {
		return nil, errors.New("data file has the wrong size")
	}
	n := c.blocks(r.Meta.Size)
	if int64(len(r.Present)) != (n+63)/64 {
		return nil, errors.New("bitmap has the wrong length")
	}
	e := &entry{id: id, meta: r.Meta, present: r.Present, lastUsed: r.LastUsed, savedUsed: r.LastUsed, provisional: r.Provisional, ownTime: r.OwnTime}
	for i := int64(0); i < n; i++ {
		if e.has(i) {
			e.nPresent++
			e.bytes += c.blockLen(r.Meta.Size, i)
		}
	}
	return e, nil
}

// blocks is the number of blocks of a file of the given size.
func (c *Content) blocks(size int64) int64 {
	return (size + c.blockSize - 1) / c.blockSize
}

// blockLen is the length of block i of a file of the given size.
func (c *Content) blockLen(size, i int64) int64 {
	return max(0, min(c.blockSize, size-i*c.blockSize))
}

// BlockSize is the cache's block size.
func (c *Content) BlockSize() int64 { return c.blockSize }

// Acquire returns the entry for m, creating it, or resetting it when the file
// changed (another size or modification time). The entry is not evicted until
// the handle is released.
func (c *Content) Acquire(m Meta) (*Handle, error) {
	if m.Size < 0 {
		return nil, fmt.Errorf("cache: negative size %d", m.Size)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("cache: closed")
	}
	e, ok := c.lru.Get(m.ID)
	if ok {
		if !e.same(m) {
			c.invalidate++
			c.removeLocked(e)
			ok = false
		}
	}
	if !ok {
		e = &entry{id: m.ID, meta: m, present: make([]uint64, (c.blocks(m.Size)+63)/64), dirty: true}
		c.lru.Add(m.ID, e)
	}
	e.mu.Lock()
	if e.f == nil {
		f, err := c.openData(e)
		if err != nil {
			e.mu.Unlock()
			c.removeLocked(e)
			return nil, fmt.Errorf("%w: %w", ErrNotCached, err)
		}
		e.f = f
	}
	e.refs++
	e.lastUsed = time.Now()
	if e.lastUsed.Sub(e.savedUsed) >= lruSaveEvery {
		e.dirty = true // the use is saved, so the LRU order survives a restart
	}
	e.mu.Unlock()
	return &Handle{c: c, e: e}, nil
}

// detached is a handle on no entry of the cache, for a file the cache cannot
// hold at all (Acquire failed with ErrNotCached): nothing is present and
// nothing can be stored; Release forgets it.
func (c *Content) detached(m Meta) *Handle {
	e := &entry{id: m.ID, meta: m, present: make([]uint64, (c.blocks(m.Size)+63)/64), refs: 1, gone: true}
	return &Handle{c: c, e: e}
}

// makeRoom evicts entries not in use, least recently used first, until their
// blocks add up to need bytes: the disk could not hold a block, whatever the
// budget says.
func (c *Content) makeRoom(need int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	freed := int64(0)
	for _, id := range c.lru.Keys() {
		if freed >= need {
			return
		}
		e, _ := c.lru.Peek(id)
		if e.refs > 0 || c.kept(id) {
			continue
		}
		e.mu.Lock()
		freed += e.bytes
		e.mu.Unlock()
		c.evictions++
		c.log.WithField("file_id", id).Debug("cache: evicting to make room on the disk")
		c.removeLocked(e)
	}
}

// openData opens an entry's data file. When the entry claims blocks but its
// file has gone (removed by hand or by a cache cleaner), the claims are
// dropped: zeros are never served as content. Called with c.mu and e.mu held.
func (c *Content) openData(e *entry) (*os.File, error) {
	if e.nPresent > 0 {
		f, err := os.OpenFile(c.dataPath(e.id), os.O_RDWR, 0o600)
		if err == nil {
			if st, serr := f.Stat(); serr == nil && st.Size() == e.meta.Size {
				return f, nil
			}
			f.Close()
		}
		c.used -= e.bytes
		e.nPresent, e.bytes = 0, 0
		clear(e.present)
		os.Remove(c.dataPath(e.id))
	}
	f, err := os.OpenFile(c.dataPath(e.id), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(e.meta.Size); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// SetKeep sets what is never evicted (a pin covers it: cache/pins.go).
func (c *Content) SetKeep(keep func(id int64) bool) { c.keep.Store(&keep) }

// kept reports whether id is never evicted.
func (c *Content) kept(id int64) bool {
	keep := c.keep.Load()
	return keep != nil && (*keep)(id)
}

// Complete reports whether the cache holds the whole content of version m,
// without taking the entry into use.
func (c *Content) Complete(m Meta) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Peek(m.ID)
	if !ok {
		return false
	}
	same := e.same(m)
	e.mu.Lock()
	defer e.mu.Unlock()
	return same && e.nPresent == c.blocks(m.Size)
}

// Invalidate drops the entry of a file id (the file changed or was deleted).
// Handles still held keep reading what they had, but add nothing.
func (c *Content) Invalidate(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.lru.Peek(id); ok {
		c.invalidate++
		c.removeLocked(e)
	}
}

// removeLocked takes e out of the index and accounting; its files go now, or
// at its last release when in use.
func (c *Content) removeLocked(e *entry) {
	c.lru.Remove(e.id)
	e.mu.Lock()
	c.used -= e.bytes
	e.nPresent, e.bytes = 0, 0
	clear(e.present)
	e.dirty = false
	e.mu.Unlock()
	// Unlinked now even when in use: the holders keep reading their open file,
	// and a new entry for the same id gets fresh files.
	e.gone = true
	c.removeFiles(e.id)
}

func (c *Content) removeFiles(id int64) {
	os.Remove(c.dataPath(id))
	os.Remove(c.recordPath(id))
}

// evictLocked removes least recently used entries not in use until the cache
// is within its budget.
func (c *Content) evictLocked() {
	if c.maxSize <= 0 || c.used <= c.maxSize {
		return
	}
	for _, id := range c.lru.Keys() {
		if c.used <= c.maxSize {
			return
		}
		e, _ := c.lru.Peek(id)
		if e.refs > 0 || c.kept(id) {
			continue
		}
		c.evictions++
		c.log.WithField("file_id", id).Debug("cache: evicting")
		c.removeLocked(e)
	}
}

// Stats returns the counters.
func (c *Content) Stats() ContentStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ContentStats{Entries: c.lru.Len(), Used: c.used, MaxSize: c.maxSize, Evictions: c.evictions, Invalidate: c.invalidate}
}

// Close saves every entry's record and marks the cache closed cleanly.
// Handles still held keep working on their open files but are no longer saved.
func (c *Content) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	defer os.Remove(filepath.Join(c.dir, sessionFile))
	var first error
	for _, id := range c.lru.Keys() {
		e, _ := c.lru.Peek(id)
		e.mu.Lock()
		if err := c.saveLocked(e); err != nil && first == nil {
			first = err
		}
		e.mu.Unlock()
	}
	return first
}

// saveLocked writes e's record when it changed. Called with e.mu held.
func (c *Content) saveLocked(e *entry) error {
	if !e.dirty {
		return nil
	}
	b, err := json.Marshal(entryRecord{Meta: e.meta, BlockSize: c.blockSize, Present: e.present, LastUsed: e.lastUsed, Provisional: e.provisional, OwnTime: e.ownTime})
	if err != nil {
		return err
	}
	tmp := c.recordPath(e.id) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(tmp, c.recordPath(e.id)); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	e.dirty = false
	e.savedUsed = e.lastUsed
	return nil
}

func (e *entry) has(i int64) bool { return e.present[i/64]&(1<<(i%64)) != 0 }

// Handle is a use of one cache entry. Its methods are safe for concurrent use.
type Handle struct {
	c    *Content
	e    *entry
	once sync.Once
}

// Meta is the file version the entry holds.
func (h *Handle) Meta() Meta {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return h.e.meta
}

// Missing lists the blocks overlapping [off, off+n) that are not present.
func (h *Handle) Missing(off, n int64) []int64 {
	first, last, ok := h.span(off, n)
	if !ok {
		return nil
	}
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	var out []int64
	for i := first; i <= last; i++ {
		if !h.e.has(i) {
			out = append(out, i)
		}
	}
	return out
}

// Has reports whether block i is present.
func (h *Handle) Has(i int64) bool {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return i >= 0 && i < h.c.blocks(h.e.meta.Size) && h.e.has(i)
}

// Complete reports whether every block is present.
func (h *Handle) Complete() bool {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return h.e.nPresent == h.c.blocks(h.e.meta.Size)
}

// span is the range of block indices overlapping [off, off+n), clipped to the file.
func (h *Handle) span(off, n int64) (first, last int64, ok bool) {
	size := h.Meta().Size
	if off < 0 || n <= 0 || off >= size {
		return 0, 0, false
	}
	end := min(off+n, size)
	return off / h.c.blockSize, (end - 1) / h.c.blockSize, true
}

// BlockRange is the byte range [off, off+n) of block i.
func (h *Handle) BlockRange(i int64) (off, n int64) {
	size := h.Meta().Size
	off = i * h.c.blockSize
	return off, max(0, min(h.c.blockSize, size-off))
}

// File is the entry's sparse data file, open while the handle is held.
func (h *Handle) File() *os.File {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return h.e.f
}

// ReadAt reads cached bytes. The caller checks with Missing that the blocks
// are present; bytes of absent blocks read as zeros.
func (h *Handle) ReadAt(p []byte, off int64) (int, error) {
	h.e.mu.Lock()
	f := h.e.f
	h.e.mu.Unlock()
	return f.ReadAt(p, off)
}

// WriteBlock stores block i, which must be the block's whole content, and
// marks it present.
func (h *Handle) WriteBlock(i int64, data []byte) error {
	off, n := h.BlockRange(i)
	if int64(len(data)) != n || n == 0 {
		return fmt.Errorf("cache: block %d of file %d is %d bytes, got %d", i, h.e.id, n, len(data))
	}
	h.e.mu.Lock()
	f := h.e.f
	h.e.mu.Unlock()
	if _, err := f.WriteAt(data, off); err != nil {
		return fmt.Errorf("%w: block %d of file %d: %w", ErrNotCached, i, h.e.id, err)
	}
	h.markPresent(i, i)
	return nil
}

// WriteAll stores the whole content of the file from r (a bundle's ZIP entry)
// and marks every block present. It fails, storing nothing as present, when r
// holds another number of bytes than the file's size.
func (h *Handle) WriteAll(r io.Reader) error {
	size := h.Meta().Size
	h.e.mu.Lock()
	f := h.e.f
	h.e.mu.Unlock()
	n, err := io.Copy(io.NewOffsetWriter(f, 0), io.LimitReader(r, size+1))
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if n != size {
		return fmt.Errorf("cache: file %d is %d bytes, got %d", h.e.id, size, n)
	}
	if size > 0 {
		h.markPresent(0, h.c.blocks(size)-1)
	}
	return nil
}

func (h *Handle) markPresent(first, last int64) {
	c, e := h.c, h.e
	c.mu.Lock()
	defer c.mu.Unlock()
	e.mu.Lock()
	added := int64(0)
	if !e.gone {
		for i := first; i <= last; i++ {
			if !e.has(i) {
				e.present[i/64] |= 1 << (i % 64)
				e.nPresent++
				added += c.blockLen(e.meta.Size, i)
			}
		}
		if added > 0 {
			e.bytes += added
			e.dirty = true
		}
	}
	e.mu.Unlock()
	c.used += added
	c.evictLocked()
}

// Release ends this use of the entry, saving its record. It is safe to call
// more than once.
func (h *Handle) Release() {
	h.once.Do(func() {
		c, e := h.c, h.e
		c.mu.Lock()
		defer c.mu.Unlock()
		e.refs--
		if e.refs > 0 {
			return
		}
		e.mu.Lock()
		if e.f != nil {
			e.f.Close()
			e.f = nil
		}
		if !e.gone {
			err := c.saveLocked(e)
			if err != nil && !c.saveFailed {
				c.log.WithError(err).Warn("cache: could not save an entry's record (said once until one is saved again)")
			} else if err != nil {
				c.log.WithError(err).Debug("cache: could not save an entry's record")
			}
			c.saveFailed = err != nil
		}
		e.mu.Unlock()
		c.evictLocked()
	})
}
