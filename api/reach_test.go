package api

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/logging"
)

// usageHandler answers GET /usage (and the probe) with a balance.
func usageHandler(n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		writeJSON(w, 200, okBody(map[string]any{"usage_minutes": 1}))
	})
}

// A refused connection is offline at once: the call fails after one
// attempt, in well under a second, with an *OfflineError that says why; the
// next call too; and the first answer after the service is back ends the
// offline state, with no wait for the probe's backoff.
func TestOfflineAtARefusedConnection(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(usageHandler(&n))
	addr := srv.Listener.Addr().String()
	c, err := New(Credentials{Endpoint: srv.URL, Key: testKey, Secret: testSecret},
		Options{Logger: logging.Discard(), BaseBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Usage(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Close() // the address now refuses connections
	for i := range 2 {
		before := c.Stats().Ops[opUsage].Requests
		start := time.Now()
		_, err := c.Usage(ctx)
		took := time.Since(start)
		if !IsOffline(err) || took > time.Second {
			t.Fatalf("call %d with the service refusing: %v after %v, want an offline error within 1s", i, err, took)
		}
		if got := c.Stats().Ops[opUsage].Requests - before; got != 1 {
			t.Errorf("call %d: %d attempts, want 1 (no retries offline)", i, got)
		}
	}
	if r := c.Reachability(); r.Online || r.Reason != "connection refused" || r.Since.IsZero() || r.Silent {
		t.Fatalf("reachability %+v, want offline since a time, connection refused", r)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the address could not be taken again: %v", err)
	}
	back := &http.Server{Handler: usageHandler(&n)}
	go back.Serve(l)
	t.Cleanup(func() { back.Close() })
	if _, err := c.Usage(ctx); err != nil {
		t.Fatalf("the first call once the service is back: %v", err)
	}
	if r := c.Reachability(); !r.Online {
		t.Fatalf("reachability %+v after an answer, want online", r)
	}
}

// A silent service (requests accepted, never answered) is found by a probe
// with a short deadline: the call that waited fails at its I/O timeout, the
// calls after fail at once without being sent, and the probe loop finds the
// service's return.
func TestOfflineWhenSilent(t *testing.T) {
	var silent atomic.Bool
	var seen atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if silent.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		writeJSON(w, 200, okBody(map[string]any{"usage_minutes": 1}))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	const ioTimeout = 400 * time.Millisecond
	c, err := New(Credentials{Endpoint: srv.URL, Key: testKey, Secret: testSecret},
		Options{Logger: logging.Discard(), IOTimeout: ioTimeout, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	silent.Store(true)
	start := time.Now()
	_, err = c.Usage(ctx)
	if took := time.Since(start); !IsOffline(err) || took > 4*ioTimeout {
		t.Fatalf("a call to a silent service: %v after %v, want an offline error within %v", err, took, 4*ioTimeout)
	}
	if r := c.Reachability(); r.Online || !r.Silent {
		t.Fatalf("reachability %+v, want offline, silent", r)
	}
	sent := seen.Load()
	start = time.Now()
	_, err = c.Usage(ctx)
	if took := time.Since(start); !IsOffline(err) || took > ioTimeout/4 {
		t.Fatalf("a call once found silent: %v after %v, want an offline error at once", err, took)
	}
	silent.Store(false)
	for deadline := time.Now().Add(5 * time.Second); !c.Reachability().Online; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the probe did not find the service back within 5s")
		}
	}
	if got := seen.Load() - sent; got > 3 {
		t.Errorf("%d requests reached the silent service after it was found silent, want only the probes (at most 3)", got)
	}
	if _, err := c.Usage(ctx); err != nil {
		t.Fatalf("a call once back: %v", err)
	}
}

// A connection cut once before an answer, by a service that answers the
// probe, is no outage: the call is retried and succeeds, online throughout;
// an error answer is an answer (online).
func TestALoneCutIsNotOffline(t *testing.T) {
	var n atomic.Int32
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		default:
			writeJSON(w, 200, okBody(map[string]any{"usage_minutes": 1}))
		}
	}))
	var changes atomic.Int32
	c.WatchReach(func(Reachability) { changes.Add(1) })
	if _, err := c.Usage(context.Background()); err != nil {
		t.Fatalf("a call whose first connection was cut: %v", err)
	}
	if r := c.Reachability(); !r.Online || changes.Load() != 0 {
		t.Fatalf("reachability %+v after %d changes, want online throughout", r, changes.Load())
	}
	refusing, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 403, map[string]any{"status": "error", "message": "no"})
	}))
	if _, err := refusing.Usage(context.Background()); err == nil || IsOffline(err) {
		t.Fatalf("a refused call: %v, want the service's refusal", err)
	}
	if r := refusing.Reachability(); !r.Online {
		t.Fatalf("reachability %+v after an error answer, want online", r)
	}
}

// A failure is judged by a probe begun after it: one already in flight
// (answered just before the network went) is waited for, and another asks
// again. Joining the older probe took its answer as the service's word, and
// a request refused offline failed with its transport error instead of
// going offline.
func TestAProbeFromBeforeAFailureDoesNotSpeakForIt(t *testing.T) {
	release := make(chan struct{})
	var probes atomic.Int32
	r := newReach(func(ctx context.Context) error {
		if probes.Add(1) == 1 {
			<-release // answered, but only once the network went
			return nil
		}
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}, logging.Discard(), 0)
	early := make(chan bool)
	go func() { early <- r.check(context.Background(), time.Time{}) }()
	waitUntil(t, func() bool { return probes.Load() == 1 })
	failed := time.Now()
	late := make(chan bool)
	go func() { late <- r.check(context.Background(), failed) }()
	time.Sleep(20 * time.Millisecond) // the late caller joins the probe in flight
	close(release)
	if !<-early {
		t.Fatal("the probe begun before the failure: unreachable, want its own answer (reachable)")
	}
	if <-late {
		t.Fatalf("a failure judged by the probe begun before it: reachable after %d probes, want a probe of its own (refused)", probes.Load())
	}
	if r.now().Online {
		t.Fatalf("reachability %+v after a refused probe, want offline", r.now())
	}
}

// waitUntil polls cond for up to 5 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("timed out")
		}
	}
}
