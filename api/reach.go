package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// Whether the service can be reached: the one place that decides it. Any
// answer at all (an error status included) says it can. A failure that is
// no answer (a refused connection, a reset before any answer, a name that
// does not resolve, no route, a failed TLS handshake, a request waiting
// reachProbeAfter with no answer) has a probe ask the service once, with a
// short deadline: when the probe cannot connect, or gets no answer within
// that deadline, the client is offline. A lone reset or a lost answer, while
// the probe gets through, changes nothing (the retries handle it).
//
// Offline, nothing waits on the network: a request makes one attempt and no
// retries (the network refuses at once; an answer ends the offline state at
// once), or none at all when the service was found silent (an attempt
// would wait for --io-timeout); it fails with an *OfflineError. A
// background probe, backing off from reachProbeMin to reachProbeMax, finds
// the service's return.
//
// Locks: reach.mu guards the state, for memory only; never held across a
// request or a watcher's call.

// Reachability is what the client knows of the service's reach.
type Reachability struct {
	Online bool      // the last word: an answer, or no probe failed since
	Since  time.Time // when the state began (offline: the first failure; zero while never offline)
	Reason string    // offline: why ("connection refused", "no answer within 5s")
	Silent bool      // offline because the service gave no answer: requests are not sent
}

// OfflineError is a request that failed, or was not sent, while the service
// cannot be reached.
type OfflineError struct {
	Since  time.Time
	Reason string
	Err    error // the attempt's own error; nil when none was sent
}

func (e *OfflineError) Error() string {
	s := fmt.Sprintf("the service cannot be reached (offline since %s: %s)", e.Since.Format("15:04:05"), e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *OfflineError) Unwrap() error { return e.Err }

// Temporary: the service may come back.
func (e *OfflineError) Temporary() bool { return true }

// IsOffline reports whether err is or wraps an *OfflineError.
func IsOffline(err error) bool {
	var oe *OfflineError
	return errors.As(err, &oe)
}

// The probe's timing.
const (
	reachProbeMin     = time.Second      // first wait offline before a probe
	reachProbeMax     = 30 * time.Second // longest wait between probes
	reachProbeTimeout = 5 * time.Second  // a probe's deadline (at most --io-timeout)
	reachProbeAfter   = 5 * time.Second  // a request waiting this long without an answer has the service probed (at most half --io-timeout)
)

// reach holds the state, and runs the probes.
type reach struct {
	probe   func(ctx context.Context) error // one signed request, one attempt
	log     logrus.FieldLogger
	timeout time.Duration // a probe's deadline
	after   time.Duration // a request's wait before a probe

	mu        sync.Mutex
	state     Reachability           // guarded by mu
	checking  chan struct{}          // guarded by mu; closed when the probe in flight ends
	started   time.Time              // guarded by mu; when the probe in flight (or the last) began
	lastOK    bool                   // guarded by mu; the last probe's word
	lastProbe time.Time              // guarded by mu; when the last probe ended
	looping   bool                   // guarded by mu; the probe loop runs (offline)
	watchers  []func(r Reachability) // guarded by mu
}

func newReach(probe func(ctx context.Context) error, log logrus.FieldLogger, ioTimeout time.Duration) *reach {
	r := &reach{probe: probe, log: log, timeout: reachProbeTimeout, after: reachProbeAfter,
		state: Reachability{Online: true}}
	if ioTimeout > 0 {
		r.timeout = min(r.timeout, ioTimeout)
		r.after = min(r.after, max(ioTimeout/2, time.Millisecond))
	}
	return r
}

// now is the state.
func (r *reach) now() Reachability {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// watch has w called at every change of the state, from its own goroutine,
// with no lock held.
func (r *reach) watch(w func(Reachability)) {
	r.mu.Lock()
	r.watchers = append(r.watchers, w)
	r.mu.Unlock()
}

// answered records an answer: online from now.
func (r *reach) answered() {
	r.mu.Lock()
	if r.state.Online {
		r.mu.Unlock()
		return
	}
	was := r.state
	r.state = Reachability{Online: true, Since: time.Now()}
	r.notifyLocked(r.state)
	r.mu.Unlock()
	r.log.WithFields(logrus.Fields{"offline_since": was.Since.Format(time.RFC3339), "offline_for": time.Since(was.Since).Round(time.Second).String()}).
		Warn("api: the service answers again: online")
}

// offline records that the service cannot be reached, for reason; silent:
// it gave no answer.
func (r *reach) offline(reason string, silent bool) {
	r.mu.Lock()
	if !r.state.Online {
		if silent && !r.state.Silent {
			// Refused first, silent now (the network drops what it
			// refused): from now on nothing is sent to wait for.
			r.state.Reason, r.state.Silent = reason, true
			r.notifyLocked(r.state)
		}
		r.mu.Unlock()
		return
	}
	r.state = Reachability{Since: time.Now(), Reason: reason, Silent: silent}
	r.notifyLocked(r.state)
	if !r.looping {
		r.looping = true
		go r.loop()
	}
	r.mu.Unlock()
	r.log.WithField("reason", reason).Warn("api: the service cannot be reached: offline (what is cached answers; changes wait)")
}

func (r *reach) notifyLocked(s Reachability) {
	for _, w := range r.watchers {
		go w(s)
	}
}

// check has the service probed, or joins the probe in flight, and waits for
// its word (or ctx's end: then the last word): whether it can be reached.
// A probe that cannot connect, or gets no answer in time, sets offline.
// Only a probe begun at or after since speaks for a failure at since: one
// in flight from before (it may have been answered just before the
// network went) is waited for, then another is begun.
func (r *reach) check(ctx context.Context, since time.Time) bool {
	for {
		r.mu.Lock()
		ch := r.checking
		if ch == nil {
			ch = make(chan struct{})
			r.checking, r.started = ch, time.Now()
			go r.run(ch)
		}
		fresh := !r.started.Before(since)
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		r.mu.Lock()
		ok := r.lastOK
		r.mu.Unlock()
		if fresh || !ok || ctx.Err() != nil {
			return ok
		}
	}
}

// kick starts a probe when none ran for reachProbeMin: a request refused
// while silent asks whether the service is back, sooner than the loop's
// backoff would (the request itself fails at once).
func (r *reach) kick() {
	r.mu.Lock()
	due := r.checking == nil && time.Since(r.lastProbe) >= reachProbeMin
	r.mu.Unlock()
	if due {
		go r.check(context.Background(), time.Time{})
	}
}

// run is one probe: up to probeTries attempts, probeSpacing apart, while
// each fails to connect or is cut before an answer (a service restarting,
// a lone reset, is no outage); one when no answer came in time.
func (r *reach) run(done chan struct{}) {
	var reason string
	var silent bool
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(withProbe(context.Background()), r.timeout)
		err := r.probe(ctx)
		cancel()
		if reason, silent, _ = unreachable(err); reason == "" && err != nil && errors.Is(err, context.DeadlineExceeded) {
			reason, silent = fmt.Sprintf("no answer within %v", r.timeout), true
		}
		if reason == "" || silent || try == probeTries {
			break
		}
		time.Sleep(probeSpacing)
	}
	if reason == "" {
		r.answered() // an answer of any kind
	} else {
		r.offline(reason, silent)
	}
	r.mu.Lock()
	r.lastOK = reason == ""
	r.lastProbe = time.Now()
	r.checking = nil
	r.mu.Unlock()
	close(done)
}

// probeTries is how many attempts a probe makes while each fails with no
// answer, probeSpacing apart.
const (
	probeTries   = 3
	probeSpacing = 100 * time.Millisecond
)

// loop probes while offline, backing off, until the service answers.
func (r *reach) loop() {
	wait := reachProbeMin
	for {
		time.Sleep(wait)
		if r.now().Online || r.check(context.Background(), time.Time{}) {
			r.mu.Lock()
			if r.state.Online {
				r.looping = false
				r.mu.Unlock()
				return
			}
			r.mu.Unlock()
		}
		wait = min(2*wait, reachProbeMax)
	}
}

// unreachable says why err, the failure of an attempt, shows the service
// cannot be reached ("" when it does not: an answer, or no failure): the
// connection could not be made (refused, no route, a name that does not
// resolve), its TLS handshake failed, it was cut before any answer (cut), or
// no answer came in time (silent).
func unreachable(err error) (reason string, silent, cut bool) {
	if err == nil || answer(err) || errors.Is(err, context.Canceled) {
		return "", false, false
	}
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var rh tls.RecordHeaderError
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", false, false
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to the service", false, false
	case errors.As(err, &dns):
		return "the service's name does not resolve (" + dns.Name + ")", false, false
	case errors.As(err, &cert), errors.As(err, &unknownAuth), errors.As(err, &hostname), errors.As(err, &rh):
		return "the TLS handshake failed", false, false
	case IsStall(err):
		return "no answer (I/O timeout)", true, false
	case errors.As(err, &op) && op.Op == "dial":
		if op.Timeout() {
			return "no answer to the connection", true, false
		}
		return "the connection could not be made", false, false
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		strings.Contains(err.Error(), "connection reset"), strings.Contains(err.Error(), "server closed"):
		return "the connection was cut before an answer", false, true
	}
	return "", false, false
}

// answer reports whether err is an answer of the service or its object
// store (an error status): it was reached.
func answer(err error) bool {
	var e *Error
	if errors.As(err, &e) && (e.HTTPStatus != 0 || e.Code != 0) {
		return true
	}
	var oe *ObjectError
	return errors.As(err, &oe) && oe.HTTPStatus != 0
}

// Reachability is whether the service can be reached, as the client's
// requests and probes found it.
func (c *Client) Reachability() Reachability { return c.reach.now() }

// Unreachable records err, an *OfflineError another client met (the start's
// probe), as this client's own finding: it is offline from now on, and its
// probe looks for the service's return. Any other error is ignored.
func (c *Client) Unreachable(err error) {
	var oe *OfflineError
	if errors.As(err, &oe) {
		c.reach.offline(oe.Reason, false)
	}
}

// WatchReach has w called at every change of Reachability, from a
// goroutine of its own, with no lock held.
func (c *Client) WatchReach(w func(Reachability)) { c.reach.watch(w) }

// probe asks the service once for the smallest answer it gives: one entry
// of the shared storage's root. Any answer, an error status included, says
// it can be reached.
func (c *Client) probe(ctx context.Context) error {
	cl := call{op: opProbe, method: "GET", path: "/files", query: url.Values{"parent_id": {"0"}, "per_page": {"1"}}}
	c.stats.op(opProbe).requests.Add(1)
	return c.attempt(ctx, cl, "GET /files", c.base.String()+"/files?"+cl.query.Encode(), nil, 1)
}

// offlineAfter is the *OfflineError of an attempt that failed with err
// with no answer, when the service cannot be reached: offline already (no
// retry), or found so by a probe now (a lone reset or lost answer, which
// the probe gets past, is retried as before); nil otherwise.
func (c *Client) offlineAfter(ctx context.Context, err error) *OfflineError {
	failed := time.Now()
	var oe *OfflineError
	if errors.As(err, &oe) {
		return oe // not sent: silent
	}
	if reason, _, _ := unreachable(err); reason == "" || c.opts.NoReach {
		return nil
	}
	if s := c.reach.now(); s.Online && c.reach.check(ctx, failed) {
		return nil
	}
	s := c.reach.now()
	if s.Online {
		return nil
	}
	return &OfflineError{Since: s.Since, Reason: s.Reason, Err: err}
}

// probeKey marks the context of a probe: sent even when the service was
// found silent.
type probeKey struct{}

func withProbe(ctx context.Context) context.Context { return context.WithValue(ctx, probeKey{}, true) }

func isProbe(ctx context.Context) bool { return ctx.Value(probeKey{}) != nil }

// reachGuard is the transport that tells the reach of every request: an
// answer, or a wait long enough to have the service probed. Silent, it
// sends nothing (but probes).
type reachGuard struct {
	base    http.RoundTripper
	r       *reach
	off     bool // Options.NoReach: answers still count, nothing is probed or held back
	answers bool // an answer says the service is back (the API's; not the object store's, another host)
}

var _ http.RoundTripper = (*reachGuard)(nil)

func (g *reachGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	probe := isProbe(req.Context()) || g.off
	if !probe {
		if s := g.r.now(); !s.Online && s.Silent {
			if req.Body != nil {
				req.Body.Close()
			}
			g.r.kick() // a user is waiting: ask now whether it is back
			return nil, &url.Error{Op: req.Method, URL: redacted(req.URL), Err: &OfflineError{Since: s.Since, Reason: s.Reason}}
		}
	}
	var t *time.Timer
	if !probe && req.ContentLength < probeBodyMax {
		// Not for a large body: its sending is no wait for an answer
		// (stallGuard cuts one that stops moving).
		t = time.AfterFunc(g.r.after, func() { g.r.check(context.Background(), time.Time{}) })
	}
	resp, err := g.base.RoundTrip(req)
	if t != nil {
		t.Stop()
	}
	if err == nil && g.answers {
		g.r.answered()
	}
	return resp, err
}

// probeBodyMax is the largest request body whose wait for an answer has
// the service probed (a JSON request; not a part of an upload).
const probeBodyMax = 64 << 10

// redacted is u without its query (a presigned URL's signature).
func redacted(u *url.URL) string {
	c := *u
	c.RawQuery = ""
	return c.String()
}
