package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/logging"
)

func TestRetry503Then200(t *testing.T) {
	var n atomic.Int32
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			writeJSON(w, 503, errBody(503, "unavailable"))
			return
		}
		writeJSON(w, 200, okBody(map[string]any{"usage_minutes": 10, "machine_type": "Lake"}))
	}))
	u, err := c.Usage(context.Background())
	if err != nil || u.UsageMinutes != 10 || n.Load() != 2 {
		t.Fatal(err, u, n.Load())
	}
	s := c.Stats()
	if s.Requests != 2 || s.Retries != 1 || s.Failures != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	var n atomic.Int32
	var first, second time.Time
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "0.3")
			writeJSON(w, 429, errBody(429, "slow down"))
			return
		}
		second = time.Now()
		writeJSON(w, 200, okBody(map[string]any{"assigned_minutes": 1}))
	}))
	// Even a POST that is not retried on 5xx is retried on 429 (refused unprocessed).
	if _, err := c.AssignUsage(context.Background(), 1, 1); err != nil {
		t.Fatal(err)
	}
	if d := second.Sub(first); d < 300*time.Millisecond {
		t.Fatalf("retried after %v, Retry-After asked 300ms", d)
	}
}

func TestRetryAfterBeyondBudgetStops(t *testing.T) {
	var n atomic.Int32
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "120")
		writeJSON(w, 503, errBody(503, "later"))
	}), func(o *Options) { o.MaxRetryTime = time.Second })
	start := time.Now()
	_, err := c.Usage(context.Background())
	if !IsCode(err, 503) || n.Load() != 1 || time.Since(start) > 500*time.Millisecond {
		t.Fatal(err, n.Load(), time.Since(start))
	}
}

func TestRetryBoundedAttempts(t *testing.T) {
	var n atomic.Int32
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		writeJSON(w, 500, errBody(500, "boom"))
	}), func(o *Options) { o.MaxAttempts = 4 })
	_, err := c.Usage(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Code != 500 || e.Op != "GET /usage" {
		t.Fatal(err)
	}
	if n.Load() != 4 {
		t.Fatalf("%d attempts, want 4", n.Load())
	}
	if st := c.Stats().Ops[opUsage]; st.Requests != 4 || st.Retries != 3 || st.Failures != 1 {
		t.Fatalf("%+v", st)
	}
}

func TestRetryTotalTimeBound(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 503, errBody(503, "x"))
	}), func(o *Options) {
		o.MaxAttempts = 1000
		o.BaseBackoff = 20 * time.Millisecond
		o.MaxBackoff = 40 * time.Millisecond
		o.MaxRetryTime = 300 * time.Millisecond
	})
	start := time.Now()
	_, err := c.Usage(context.Background())
	if !IsCode(err, 503) {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 600*time.Millisecond {
		t.Fatalf("gave up after %v, bound 300ms", d)
	}
}

func TestRetryContextCancelStopsAtOnce(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 503, errBody(503, "x"))
	}), func(o *Options) {
		o.BaseBackoff = 10 * time.Second
		o.MaxBackoff = 10 * time.Second
		o.MaxRetryTime = time.Minute
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Usage(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Op != "GET /usage" {
		t.Fatalf("%T %v", err, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

// A per-attempt timeout is retried for a safe call.
func TestRetryAttemptTimeout(t *testing.T) {
	var n atomic.Int32
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			return
		}
		writeJSON(w, 200, okBody(map[string]any{"usage_minutes": 3}))
	}), func(o *Options) { o.AttemptTimeout = 100 * time.Millisecond })
	u, err := c.Usage(context.Background())
	if err != nil || u.UsageMinutes != 3 {
		t.Fatal(err)
	}
}

// A non-idempotent POST is not retried on a 500, nor when the connection
// drops after the request was sent.
func TestPostNotRetriedOn500(t *testing.T) {
	var n atomic.Int32
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		writeJSON(w, 500, errBody(500, "boom"))
	}))
	if _, err := c.AssignUsage(context.Background(), 1, 10); !IsCode(err, 500) {
		t.Fatal(err)
	}
	if err := c.StartMachine(context.Background(), 1, StartOptions{}); !IsCode(err, 500) {
		t.Fatal(err)
	}
	if n.Load() != 2 {
		t.Fatalf("%d requests, want 2 (no retries)", n.Load())
	}
}

func TestPostNotRetriedOnDroppedAnswer(t *testing.T) {
	var n atomic.Int32
	// A server that cuts every connection is offline by the reach rules
	// (reach.go), which end any retry: this is a test of the policy alone.
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // executed, answer dropped
		}
	}), func(o *Options) { o.NoReach = true })
	err := c.ResetMachine(context.Background(), 4)
	if err == nil || n.Load() != 1 {
		t.Fatalf("%v, %d requests", err, n.Load())
	}
	// A harmless POST (complete) is retried after the same failure.
	n.Store(0)
	if _, err := c.CompleteFile(context.Background(), 9, []Part{{1, `"e"`}}); err == nil {
		t.Fatal("no error")
	}
	if n.Load() < 2 {
		t.Fatalf("complete not retried: %d requests", n.Load())
	}
}

// A POST whose connection could not even be established (connection
// refused: provably unsent) is retried.
func TestPostRetriedOnDialError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, okBody(map[string]any{"assigned_minutes": 10, "machine_id": 1, "machine_type": "Lake"}))
	}))
	defer srv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		if dials.Add(1) == 1 {
			return d.DialContext(ctx, network, deadAddr) // connection refused
		}
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	c, err := New(Credentials{Endpoint: srv.URL, Key: testKey, Secret: testSecret},
		Options{Transport: tr, Logger: logging.Discard(), BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.AssignUsage(context.Background(), 1, 10)
	if err != nil || res.AssignedMinutes != 10 {
		t.Fatal(err)
	}
	if st := c.Stats().Ops[opAssignUsage]; st.Requests != 2 || st.Retries != 1 {
		t.Fatalf("%+v", st)
	}
}

// All attempts refused: the error says so, wrapped in *Error.
func TestDialErrorExhausted(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	// Refused every time is offline by the reach rules (reach.go), which end
	// the retries at once (TestOfflineAtARefusedConnection): this is a test
	// of the policy alone.
	c, err := New(Credentials{Endpoint: "http://" + addr, Key: testKey, Secret: testSecret},
		Options{Logger: logging.Discard(), BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxAttempts: 3, NoReach: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Usage(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.HTTPStatus != 0 || e.Code != 0 || !Temporary(err) {
		t.Fatalf("%T %v", err, err)
	}
	if st := c.Stats().Ops[opUsage]; st.Requests != 3 || st.Failures != 1 {
		t.Fatalf("%+v", st)
	}
}

// A DELETE retried after a lost answer that then answers 404 is done.
func TestDeleteRetryNotFoundIsDone(t *testing.T) {
	var n atomic.Int32
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		writeJSON(w, 404, errBody(404, "file not found"))
	}))
	if err := c.DeleteFile(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	// A first-attempt 404 stays an error.
	n.Store(1)
	if err := c.DeleteFile(context.Background(), 5); !IsNotFound(err) {
		t.Fatal(err)
	}
}

// Every operation the client uses has its entry in the retry table.
func TestRetryTableComplete(t *testing.T) {
	for _, op := range []string{opUsage, opMachinesUsage, opMachineUsage, opAssignUsage, opRetrieveUsage, opListImages,
		opGetImage, opCreateImage, opInstallImage, opAssignImage, opDeleteImage, opSoftware, opCreateSeats, opListSeats,
		opStartMachine, opStopMachine, opAccessLink, opResetMachine, opMachineTypes, opSetMachineType, opListContent,
		opMachineFiles, opSharedFiles, opRecordings, opCreateFile, opCreateDirectory, opCompleteFile, opDeleteFile,
		opFileDownloadURL, opCreateDownload, opDownloadStatus, opAbortDownload, opUserActionLogs, opObjectPutPart, opObjectGet} {
		if _, ok := retryTable[op]; !ok {
			t.Errorf("%s missing from retryTable", op)
		}
	}
	for _, op := range []string{opAssignUsage, opRetrieveUsage, opCreateImage, opInstallImage, opAssignImage, opCreateSeats, opStartMachine, opStopMachine, opResetMachine} {
		if retryTable[op] != retryUnsent {
			t.Errorf("%s is retried", op)
		}
	}
}
