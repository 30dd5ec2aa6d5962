package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/orgfs/orgfs/api"
)

// Reads past the cache. When the content cache cannot hold a file (its disk
// is full: Ready fails with ErrNotCached), its reads still succeed, as with
// rclone and gcsfuse: ReadDirect serves the blocks the cache has from it and
// the others from ranged GETs straight into the caller's buffer, never
// buffering more than the read. Sequential reads share one stream (a ranged
// GET as long as the read-ahead window), as rclone's read handle does: a read
// that starts where the stream is waits for it, and one a little further on
// waits a moment for the reads before it (the kernel sends a file's reads a
// few at a time, not always in order) before it skips ahead or opens its own.
//
// Locks: Reader.mu guards the stream's slot (directReads); it is never held
// across a request, a body read or a wait.

const (
	// directSkip is how far past a stream's position a read may start and
	// still use it: the bytes between are read and dropped.
	directSkip = 1 << 20
	// directWait is how long a read waits for the reads before it (it waits
	// again each time one of them ends), before it reads on its own.
	directWait = 20 * time.Millisecond
)

// directStream is an open ranged GET of a file: the next byte it gives is at
// pos, its range ends at end.
type directStream struct {
	body     io.ReadCloser
	cancel   context.CancelFunc
	url      string
	pos, end int64
	dead     bool // its context was cancelled: not to be read again
}

func (s *directStream) close() {
	s.cancel()
	s.body.Close()
}

// directReads is a reader's stream slot: the stream, parked between reads or
// taken by one read at a time. Guarded by Reader.mu.
type directReads struct {
	s       *directStream // parked, or nil
	busy    bool          // a read has the slot (its stream, or one it opens)
	busyEnd int64         // where that read ends
	changed chan struct{} // closed (and replaced) when the slot is taken or given back
}

// wake tells the reads waiting on the slot that it changed.
func (d *directReads) wake() {
	if d.changed != nil {
		close(d.changed)
	}
	d.changed = make(chan struct{})
}

// closeLocked wakes every waiting read (the reader is closing) and returns
// the parked stream, for the caller to close.
func (d *directReads) closeLocked() *directStream {
	s := d.s
	d.s = nil
	d.wake()
	return s
}

// ReadDirect reads len(p) bytes at off (fewer at the end of the file, io.EOF
// at or past it) without storing them in the cache: the blocks the cache has
// come from it, the others straight from the object store. It is the read of
// bytes Ready reported ErrNotCached for.
func (r *Reader) ReadDirect(ctx context.Context, p []byte, off int64) (int, error) {
	ff := r.ff
	size := ff.meta.Size
	if off >= size || len(p) == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), size-off)]
	end := off + int64(len(p))
	bs := ff.f.content.BlockSize()
	for pos := off; pos < end; {
		// A run of blocks the cache has, or of blocks it lacks.
		cached := ff.h.Has(pos / bs)
		next := (pos/bs + 1) * bs
		for next < end && ff.h.Has(next/bs) == cached {
			next += bs
		}
		next = min(next, end)
		var err error
		if cached {
			_, err = ff.h.ReadAt(p[pos-off:next-off], pos)
		} else {
			err = r.stream(ctx, p[pos-off:next-off], pos)
		}
		if err != nil {
			return int(pos - off), err
		}
		pos = next
	}
	return len(p), nil
}

// stream reads p at pos from the object store: on the reader's stream when
// the read goes on from it, else on a new ranged GET. A stream that was
// parked and fails is replaced once (the object store may have dropped it,
// or its URL expired).
func (r *Reader) stream(ctx context.Context, p []byte, pos int64) error {
	ff := r.ff
	s, claimed, err := r.takeStream(ctx, pos, int64(len(p)))
	if err != nil {
		return err
	}
	if err := ff.f.sem.Acquire(ctx, 1); err != nil {
		r.putStream(s, claimed)
		return err
	}
	defer ff.f.sem.Release(1)
	stale := ""
	for attempt := 0; ; attempt++ {
		fresh := s == nil
		if fresh {
			if s, err = r.openStream(ctx, pos, int64(len(p)), claimed, stale); err != nil {
				break
			}
		}
		if err = s.read(ctx, p, pos); err == nil {
			break
		}
		s.close()
		if api.IsURLExpired(err) {
			stale = s.url
		}
		s = nil
		if fresh || attempt > 0 || ctx.Err() != nil {
			break
		}
	}
	r.putStream(s, claimed)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// The object ended before the size its listing gives.
			return fmt.Errorf("cache: file %d: %w (%v)", ff.meta.ID, ErrChanged, err)
		}
		return err
	}
	ff.f.stats.direct.Add(int64(len(p)))
	return nil
}

// takeStream chooses how a read of n bytes at pos is served: the reader's
// parked stream (claimed), a stream it is to open and then park (nil,
// claimed: the slot is free), or a stream of its own, closed after (nil, not
// claimed: another read has the slot).
func (r *Reader) takeStream(ctx context.Context, pos, n int64) (*directStream, bool, error) {
	near := func(at int64) bool { return at <= pos && pos-at <= directSkip }
	gaveUp := false
	for {
		r.mu.Lock()
		d := &r.direct
		if r.closed {
			r.mu.Unlock()
			return nil, false, errors.New("cache: reader closed")
		}
		wait, timed := false, true
		switch {
		case d.busy && d.busyEnd == pos:
			wait, timed = true, false // the read just before this one
		case d.busy:
			wait = near(d.busyEnd) && !gaveUp
			if !wait {
				r.mu.Unlock()
				return nil, false, nil
			}
		case d.s != nil && near(d.s.pos) && pos+n <= d.s.end && (d.s.pos == pos || gaveUp):
			s := d.s
			d.s, d.busy, d.busyEnd = nil, true, pos+n
			d.wake()
			r.mu.Unlock()
			return s, true, nil
		case d.s != nil && near(d.s.pos) && pos+n <= d.s.end:
			wait = true // the reads before this one may come
		default:
			old := d.s
			d.s, d.busy, d.busyEnd = nil, true, pos+n
			d.wake()
			r.mu.Unlock()
			if old != nil {
				old.close()
			}
			return nil, true, nil
		}
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		changed := d.changed
		r.mu.Unlock()
		if gaveUp = !awaitChange(ctx, changed, timed); ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
	}
}

// awaitChange waits until changed is closed (true), directWait passes when
// timed (false), or ctx ends.
func awaitChange(ctx context.Context, changed chan struct{}, timed bool) bool {
	var timeout <-chan time.Time
	if timed {
		t := time.NewTimer(directWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-changed:
		return true
	case <-timeout:
		return false
	case <-ctx.Done():
		return false
	}
}

// putStream ends a read's use of s (nil when it failed): a read that claimed
// the slot parks its stream there while it has bytes left; other streams are
// closed.
func (r *Reader) putStream(s *directStream, claimed bool) {
	if s != nil && (!claimed || s.dead || s.pos >= s.end) {
		s.close()
		s = nil
	}
	if !claimed {
		return
	}
	r.mu.Lock()
	d := &r.direct
	d.busy = false
	if r.closed {
		d.s = nil
	} else {
		d.s, s = s, nil
	}
	d.wake()
	r.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// openStream opens a ranged GET at pos for a read of n bytes: the reader's
// stream (claimed) goes on as far as the read-ahead window while reading is
// sequential. It runs on the file's context, and stops early when ctx ends.
// stale, when not empty, is a URL the object store refused.
func (r *Reader) openStream(ctx context.Context, pos, n int64, claimed bool, stale string) (*directStream, error) {
	ff := r.ff
	if claimed {
		r.mu.Lock()
		n = max(n, r.window) // 0 while reading at random
		r.mu.Unlock()
	}
	end := min(ff.meta.Size, pos+n)
	for attempt := 0; ; attempt++ {
		url, err := ff.f.url(ctx, ff.meta.ID, stale)
		if err != nil {
			return nil, err
		}
		sctx, cancel := context.WithCancel(ff.ctx)
		stop := context.AfterFunc(ctx, cancel)
		ff.f.stats.ranges.Add(1)
		body, err := ff.f.client.ReadRange(sctx, url, pos, end-pos)
		if !stop() && err == nil {
			body.Close()
			err = ctx.Err()
		}
		if err == nil {
			body = &progressBody{ReadCloser: body, last: &ff.f.lastByte}
			return &directStream{body: body, cancel: cancel, url: url, pos: pos, end: end}, nil
		}
		cancel()
		if api.IsURLExpired(err) && attempt == 0 && ctx.Err() == nil {
			ff.f.stats.renewals.Add(1)
			stale = url
			continue
		}
		return nil, err
	}
}

// read reads p at pos, which is at most directSkip past the stream's
// position (the bytes between are dropped). When ctx ends, the stream is
// cancelled.
func (s *directStream) read(ctx context.Context, p []byte, pos int64) error {
	stop := context.AfterFunc(ctx, s.cancel)
	var err error
	if skip := pos - s.pos; skip > 0 {
		var k int64
		k, err = io.CopyN(io.Discard, s.body, skip)
		s.pos += k
	}
	if err == nil {
		var k int
		k, err = io.ReadFull(s.body, p)
		s.pos += int64(k)
	}
	if !stop() {
		s.dead = true
		if err != nil {
			err = ctx.Err()
		}
	}
	return err
}

// ErrReadDirect is Ready's answer to a small read (smallRead bytes at most)
// at random in blocks the cache lacks and nobody fetches: the read is served
// past the cache, by one ranged GET of its own bytes (Reader.ReadDirect),
// rather than by fetching whole blocks of which it wants a few KiB. A block
// read at random randomPromote times is fetched whole: the reads have
// locality after all. Larger random reads fetch their blocks.
var ErrReadDirect = errors.New("cache: a read at random, served past the cache")

// randomPromote is how many random reads of a block make it fetched whole;
// randomHitsMax bounds the blocks counted per file (the count starts over).
const (
	smallRead     = 64 << 10
	randomPromote = 8
	randomHitsMax = 1 << 16
)

// smallReadLocked reports whether a random read of the missing blocks goes
// past the cache (ErrReadDirect), and counts it. Called with mu held.
func (ff *fileFetch) smallReadLocked(missing []int64) bool {
	direct := true
	for _, b := range missing {
		if _, ok := ff.pending[b]; ok {
			return false // being fetched: join it
		}
	}
	if ff.randomHits == nil || len(ff.randomHits) > randomHitsMax {
		ff.randomHits = map[int64]int{}
	}
	for _, b := range missing {
		if ff.randomHits[b]++; ff.randomHits[b] >= randomPromote {
			direct = false
		}
	}
	return direct
}

// ReadAt reads len(p) bytes at off (fewer at the end of the file), past the
// cache when it cannot hold them or when the read is at random.
func (r *Reader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := r.Ready(ctx, off, int64(len(p)))
	if errors.Is(err, ErrNotCached) || errors.Is(err, ErrReadDirect) {
		return r.ReadDirect(ctx, p, off)
	}
	if err != nil {
		return 0, err
	}
	got, err := r.ff.h.ReadAt(p[:n], off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
		return got, err
	}
	return got, nil
}
