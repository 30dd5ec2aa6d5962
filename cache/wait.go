package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/writeback"
)

// The waits of callers (the mount's syscalls) on the service, and the I/O
// timeout that ends them, so that no syscall hangs through an outage:
//
//   - a wait for an answer (a listing, a URL, a change made on the service)
//     ends --io-timeout after it began, under a context from Store.Bound;
//   - a wait for content (Reader.Ready) ends once no byte of content came
//     for --io-timeout since it began: a read on a slow link goes on while
//     bytes come, one in an outage gives up after the I/O timeout.
//
// Either ends with a *TimeoutError. What the caller waited for goes on by
// its own rules: a listing, a URL or a read-ahead other callers share runs
// on no caller's context; a fetch only the caller waited for is cancelled
// (fileFetch.leave); uploads retry in the background.
//
// Locks: none; the time of the last byte is atomic.

// TimeoutError ends a caller's wait on the service that the I/O timeout cut:
// no answer, or no byte of content, came in time.
type TimeoutError struct {
	After time.Duration // the I/O timeout
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("no answer from the service within %v (--io-timeout)", e.After)
}

// Timeout makes it a timeout, as net.Error has it.
func (e *TimeoutError) Timeout() bool { return true }

// Bound returns ctx bounded by the I/O timeout: a caller's waits on the
// service under it end with the deadline, whose cause is a *TimeoutError.
// Without an I/O timeout it only adds a cancel.
func (s *Store) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.ioTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, s.ioTimeout, &TimeoutError{After: s.ioTimeout})
}

// CallerGaveUp is logged (debug) when the caller of a change gives up (a
// signal) while its request is on its way: the change goes on.
const CallerGaveUp = "cache: the caller gave up while a change was on its way to the service; it goes on to its end"

// settled runs do, a request that changes the service (a folder made, a
// file deleted), under ctx's deadline but not its cancellation. The kernel
// cancels a syscall's ctx when a signal interrupts it (a Go program's
// runtime sends its threads SIGURG at any time); a request canceled once the
// service had acted answered EINTR, the program (Go's os package) made the
// syscall again and met its own change (mkdir EEXIST, unlink ENOENT), and
// the cache was left showing the state before it. A syscall whose request
// the daemon holds cannot end before the daemon answers anyway (the kernel
// then waits even for a killed program), so this waits no longer than the
// caller's I/O timeout allowed. A deadline that passes gives a
// *TimeoutError (EIO), also when a signal canceled ctx before: EINTR would
// have the program make the change again.
func (s *Store) settled(ctx context.Context, do func(ctx context.Context) error) error {
	sctx := context.WithoutCancel(ctx)
	var running atomic.Bool // do is running: the change may be on its way
	running.Store(true)
	stop := context.AfterFunc(ctx, func() {
		if running.Load() && errors.Is(ctx.Err(), context.Canceled) {
			s.log.Debug(CallerGaveUp)
		}
	})
	defer stop()
	defer running.Store(false)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(sctx, dl)
		defer cancel()
	}
	err := do(sctx)
	if err != nil && sctx.Err() != nil {
		return fmt.Errorf("%w: %w", &TimeoutError{After: s.ioTimeout}, err)
	}
	return err
}

// Flush is Staging.Flush for a caller (fsync): it gives up with a
// *TimeoutError once no upload of the mount sent a byte for the I/O timeout
// since it began (an outage); the upload goes on and retries by itself. A
// slow link, where bytes go on leaving, is waited for. Offline (the service
// cannot be reached, or the file's folder was made offline and waits for
// it), the staging copy is made durable on this desk instead, and the
// answer is nil: an editor saving offline saves; the file goes up at the
// return, and orgfs sync is how to wait for the service.
func (s *Store) Flush(ctx context.Context, st *writeback.Staged) error {
	err := s.flush(ctx, st)
	if err != nil && writeback.WaitsForService(err) && ctx.Err() == nil {
		return s.Staging.SyncStaged(st)
	}
	return err
}

func (s *Store) flush(ctx context.Context, st *writeback.Staged) error {
	if s.ioTimeout <= 0 {
		return s.Staging.Flush(ctx, st)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The rule of a wait for content, on the bytes uploads send.
	w := &contentWait{timeout: s.ioTimeout, start: time.Now(), last: s.Staging.LastSent}
	go func() {
		defer w.stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.fired():
				if w.expired() {
					cancel(&TimeoutError{After: s.ioTimeout})
					return
				}
			}
		}
	}()
	err := s.Staging.Flush(ctx, st)
	var te *TimeoutError
	if err != nil && errors.As(context.Cause(ctx), &te) {
		return te
	}
	return err
}

// AsTimeout returns the *TimeoutError that err is, or that ended a wait
// under ctx (from Bound) which failed with err (a deadline, a stall); nil
// when neither holds. An answer of the service is not a timeout, even when
// it came as the time ran out: it says more than a timeout does.
func AsTimeout(ctx context.Context, err error) *TimeoutError {
	var te *TimeoutError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return te
	case !errors.As(context.Cause(ctx), &te):
		return nil
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), api.IsStall(err):
		return te
	}
	return nil
}

// stamp is a time kept atomically: Fetcher.lastByte, when the fetcher last
// received content from any file (a wait for content ends once none came for
// the I/O timeout: the whole mount's, not one file's, since a file's fetch
// queued behind others' on a slow link is not an outage); Reader.gaveUp,
// when a wait of the reader last timed out.
type stamp struct{ at atomic.Int64 }

func (s *stamp) mark() { s.at.Store(time.Now().UnixNano()) }

// time is the time marked; the zero Unix time when none was.
func (s *stamp) time() time.Time { return time.Unix(0, s.at.Load()) }

// progressBody is an object body whose reads mark the time of the last byte.
type progressBody struct {
	io.ReadCloser
	last *stamp
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.last.mark()
	}
	return n, err
}

// contentWait is the I/O timeout of one wait for content: its channel fires
// when no byte came for the timeout since the wait began (expired then
// says so, or sets it again for later).
type contentWait struct {
	timeout time.Duration // 0: no timeout
	start   time.Time
	last    func() time.Time // when the last byte came (of content, or of an upload for a flush)
	timer   *time.Timer      // made at the first block waited for (a read of cached bytes waits for none)
}

func (f *Fetcher) contentWait() *contentWait {
	return &contentWait{timeout: f.ioTimeout, start: time.Now(), last: f.lastByte.time}
}

// fired is the channel of the timer; nil (never ready) without a timeout.
func (w *contentWait) fired() <-chan time.Time {
	if w.timeout <= 0 {
		return nil
	}
	if w.timer == nil {
		w.timer = time.NewTimer(w.timeout - time.Since(w.start))
	}
	return w.timer.C
}

// expired reports whether no byte came for the timeout since the wait
// began; if some did, the timer is set for the timeout after the last.
func (w *contentWait) expired() bool {
	since := w.start
	if l := w.last(); l.After(since) {
		since = l
	}
	left := w.timeout - time.Since(since)
	if left <= 0 {
		return true
	}
	w.timer.Reset(left)
	return false
}

func (w *contentWait) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// bound is ctx bounded by the timeout, for a wait that brings no content
// of its own (a bundle's); without a timeout, ctx.
func (w *contentWait) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if w.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, w.timeout)
}

// wait plans the read and waits for its blocks: until they are present, ctx
// ends, or no content came for the I/O timeout (a *TimeoutError). A read
// that lacks blocks fails at once when a wait of this reader timed out less
// than the I/O timeout ago and no content came since: the kernel reads a
// page again after its read-ahead of it failed, and that read would wait the
// whole timeout once more.
func (r *Reader) wait(ctx context.Context, cw *contentWait, off, n int64, first bool) error {
	waits, err := r.plan(off, n, first)
	if err != nil {
		return err
	}
	defer r.ff.leave(waits)
	if len(waits) > 0 && cw.stillDown(r.gaveUp.time()) {
		return &TimeoutError{After: cw.timeout}
	}
	for _, w := range waits {
		err := cw.block(ctx, w)
		var te *TimeoutError
		if errors.As(err, &te) {
			r.gaveUp.mark()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stillDown reports whether a wait that timed out at gaveUp (zero: none)
// did so less than the timeout ago, and no content came since.
func (cw *contentWait) stillDown(gaveUp time.Time) bool {
	return cw.timeout > 0 && gaveUp.UnixNano() > 0 && time.Since(gaveUp) < cw.timeout && !cw.last().After(gaveUp)
}

// block waits for one block of a read.
func (cw *contentWait) block(ctx context.Context, w *pendingBlock) error {
	for {
		select {
		case <-w.done:
			return w.err
		case <-ctx.Done():
			return ctx.Err()
		case <-cw.fired():
			if cw.expired() {
				return &TimeoutError{After: cw.timeout}
			}
		}
	}
}
