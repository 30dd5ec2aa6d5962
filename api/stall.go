package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// An I/O timeout for every request: a transfer that goes the timeout without
// a byte moving (no answer to a request, a body stalled mid-stream, a
// request body the server stopped reading) is cut with a *StallError, which
// is temporary: retried and resumed like a dropped connection, within the
// retry policy. Only time spent waiting on the network counts: a caller
// that pauses between reads of a body is not a stall.

// StallError is a transfer cut because no byte moved for Timeout.
type StallError struct {
	After time.Duration // the I/O timeout
}

func (e *StallError) Error() string {
	return fmt.Sprintf("no data from the service for %v (I/O timeout)", e.After)
}

// Timeout and Temporary make a stall a temporary network error.
func (e *StallError) Timeout() bool   { return true }
func (e *StallError) Temporary() bool { return true }

var _ interface{ Timeout() bool } = (*StallError)(nil)

// IsStall reports whether err is or wraps a *StallError.
func IsStall(err error) bool {
	var s *StallError
	return errors.As(err, &s)
}

// stallGuard is a RoundTripper that cuts stalled transfers.
type stallGuard struct {
	base    http.RoundTripper
	timeout time.Duration
}

var _ http.RoundTripper = (*stallGuard)(nil)

func (g *stallGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if g.timeout <= 0 {
		return g.base.RoundTrip(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watchdog{timeout: g.timeout}
	w.timer = time.AfterFunc(g.timeout, func() { cancel(&StallError{After: g.timeout}) })
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &sendBody{ReadCloser: req.Body, w: w}
	}
	resp, err := g.base.RoundTrip(req)
	w.stop()
	if err != nil {
		cause := context.Cause(ctx)
		cancel(nil)
		if IsStall(cause) {
			return nil, cause
		}
		return nil, err
	}
	resp.Body = &guardedBody{body: resp.Body, w: w, ctx: ctx, cancel: cancel}
	return resp, nil
}

// watchdog is the timer of one exchange: armed while it waits on the
// network, stopped while the caller holds the data.
type watchdog struct {
	timeout time.Duration
	mu      sync.Mutex
	timer   *time.Timer // guarded by mu
}

func (w *watchdog) arm() {
	w.mu.Lock()
	w.timer.Reset(w.timeout)
	w.mu.Unlock()
}

func (w *watchdog) stop() {
	w.mu.Lock()
	w.timer.Stop()
	w.mu.Unlock()
}

// sendBody is a request body: each chunk the transport takes re-arms the
// timer (the request is moving).
type sendBody struct {
	io.ReadCloser
	w *watchdog
}

func (b *sendBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.arm()
	}
	return n, err
}

// guardedBody is an answer's body: the timer runs during each Read.
type guardedBody struct {
	body   io.ReadCloser
	w      *watchdog
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (b *guardedBody) Read(p []byte) (int, error) {
	b.w.arm()
	n, err := b.body.Read(p)
	b.w.stop()
	if err != nil && err != io.EOF {
		if cause := context.Cause(b.ctx); IsStall(cause) {
			return n, cause
		}
	}
	return n, err
}

func (b *guardedBody) Close() error {
	b.w.stop()
	err := b.body.Close()
	b.cancel(nil)
	return err
}
