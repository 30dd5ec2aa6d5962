package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/logging"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// Every attempt is signed afresh: a new nonce and the clock's timestamp; the
// query is not signed, the body is; Content-Type is application/json.
func TestSignerSignsEachAttempt(t *testing.T) {
	var mu sync.Mutex
	var auths []ParsedAuthorization
	var errs []error
	calls := 0
	clock := time.UnixMilli(1763778000000)
	var clockMu sync.Mutex
	// The server keeps the injected clock's time (the client corrects its
	// signatures by the service's time).
	stamped := func(body map[string]any) map[string]any {
		clockMu.Lock()
		defer clockMu.Unlock()
		body["timestamp"] = clock.UTC().Format(time.RFC3339Nano)
		return body
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p, err := verifySignature(r, body)
		mu.Lock()
		calls++
		n := calls
		auths = append(auths, p)
		if err != nil {
			errs = append(errs, err)
		}
		if r.Header.Get("Content-Type") != "application/json" {
			errs = append(errs, errorString("Content-Type "+r.Header.Get("Content-Type")))
		}
		mu.Unlock()
		if n < 3 {
			writeJSON(w, 503, stamped(errBody(503, "busy")))
			return
		}
		writeJSON(w, 200, stamped(okBody(map[string]any{"images": []any{}, "next_page": nil})))
	})
	c, _ := newTestClient(t, h, func(o *Options) {
		o.Clock = func() time.Time {
			clockMu.Lock()
			defer clockMu.Unlock()
			clock = clock.Add(time.Millisecond)
			return clock
		}
	})
	for _, err := range c.Images(context.Background(), "name with spaces&x=1") {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(auths) != 3 {
		t.Fatalf("%d attempts, want 3", len(auths))
	}
	seen := map[string]bool{}
	var lastTS int64
	for _, p := range auths {
		if !uuidV4.MatchString(p.Nonce) {
			t.Errorf("nonce %q is not a UUID v4", p.Nonce)
		}
		if seen[p.Nonce] {
			t.Errorf("nonce %q reused", p.Nonce)
		}
		seen[p.Nonce] = true
		ts, _ := strconv.ParseInt(p.Timestamp, 10, 64)
		if ts <= lastTS || ts < 1763778000000 || ts > 1763778000100 {
			t.Errorf("timestamp %d not from the injected clock, or not increasing", ts)
		}
		lastTS = ts
	}
	if st := c.Stats().Ops[opListImages]; st.Requests != 3 || st.Retries != 2 || st.Failures != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A POST body is signed byte for byte.
func TestSignerSignsBody(t *testing.T) {
	var got error
	var gotBody string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		gotBody = string(body)
		_, got = verifySignature(r, body)
		writeJSON(w, 200, okBody(map[string]any{"assigned_minutes": 5, "machine_id": "7", "machine_type": "Lake"}))
	})
	c, _ := newTestClient(t, h)
	res, err := c.AssignUsage(context.Background(), 7, 5)
	if err != nil || got != nil {
		t.Fatal(err, got)
	}
	if gotBody != `{"machine_id":7,"minutes":5}` || res.MachineID != 7 || res.AssignedMinutes != 5 {
		t.Fatalf("%s %+v", gotBody, res)
	}
}

// The signing transport refuses to sign for any host but the endpoint's.
func TestSignerRefusesForeignHost(t *testing.T) {
	s := &signer{base: http.DefaultTransport, clock: time.Now, key: "k", secret: "s", scheme: "http", host: "api.example:80"}
	req, _ := http.NewRequest("GET", "http://elsewhere.example/x", nil)
	if _, err := s.RoundTrip(req); err == nil {
		t.Fatal("signed a request to another host")
	}
}

func TestEndpointURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":                           "http://127.0.0.1:8080/organization-management/v1",
		"https://api.example/":                            "https://api.example/organization-management/v1",
		"https://api.example/organization-management/v1/": "https://api.example/organization-management/v1",
		"https://gw.example/proxy":                        "https://gw.example/proxy/organization-management/v1",
	} {
		u, err := endpointURL(in)
		if err != nil || u.String() != want {
			t.Errorf("endpointURL(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, bad := range []string{"", "ftp://x", "http://", "http://u:p@host", "api.example", "http://h/?q=1"} {
		if _, err := endpointURL(bad); err == nil {
			t.Errorf("endpointURL(%q) accepted", bad)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// When a kept-alive connection breaks after a GET was written, net/http
// must not send the same signed request again (the nonce would be replayed):
// the client retries with a fresh signature instead.
func TestNoTransportReplayOfSignedRequest(t *testing.T) {
	var mu sync.Mutex
	nonces := map[string]int{}
	perConn := map[string]int{}
	var bodies []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p, _ := ParseAuthorization(r.Header.Get("Authorization"))
		mu.Lock()
		nonces[p.Nonce]++
		perConn[r.RemoteAddr]++
		n := perConn[r.RemoteAddr]
		bodies = append(bodies, string(b)+"|"+r.Header.Get("Content-Length")+"|"+strings.Join(r.TransferEncoding, ","))
		mu.Unlock()
		if n == 2 { // the second request of a connection: executed, answer lost
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		writeJSON(w, 200, okBody(map[string]any{"usage_minutes": 1}))
	})
	// The reach rules' probes (reach.go) would take turns on the
	// connections this test counts: off.
	c, _ := newTestClient(t, h, func(o *Options) { o.NoReach = true })
	for i := 0; i < 3; i++ {
		if _, err := c.Usage(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for n, k := range nonces {
		if k > 1 {
			t.Fatalf("nonce %s sent %d times", n, k)
		}
	}
	for _, b := range bodies {
		if b != "||" {
			t.Fatalf("a GET carried a body or framing: %q", b)
		}
	}
	if c.Stats().Retries == 0 {
		t.Fatal("the lost answer was not retried")
	}
}

// Over TLS the body of a GET stays nil; a transport-level replay refused
// with 401 (replayed nonce) is retried once with a fresh signature.
func TestReplayOverTLSRetriedOnce(t *testing.T) {
	var mu sync.Mutex
	nonces := map[string]int{}
	perConn := map[string]int{}
	var requests, drops int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := ParseAuthorization(r.Header.Get("Authorization"))
		mu.Lock()
		requests++
		nonces[p.Nonce]++
		replay := nonces[p.Nonce] > 1
		perConn[r.RemoteAddr]++
		drop := perConn[r.RemoteAddr] == 2 && drops == 0
		if drop {
			drops++
		}
		mu.Unlock()
		if replay {
			writeJSON(w, 401, errBody(401, "nonce already used"))
			return
		}
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		writeJSON(w, 200, okBody(map[string]any{"usage_minutes": 1}))
	})
	srv := httptest.NewTLSServer(h)
	defer srv.Close()
	c, err := New(Credentials{Endpoint: srv.URL, Key: testKey, Secret: testSecret},
		Options{Transport: srv.Client().Transport, Logger: logging.Discard(), BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Usage(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	replays := 0
	for _, k := range nonces {
		replays += k - 1
	}
	dropped := drops
	mu.Unlock()
	if dropped != 1 || replays != 1 {
		t.Fatalf("scenario not played: %d drops, %d replays", dropped, replays)
	}
	// A genuine 401 is not retried forever: one retry, then the error.
	bad, _ := New(Credentials{Endpoint: srv.URL, Key: "other-key", Secret: "x"}, Options{Transport: srv.Client().Transport, Logger: logging.Discard()})
	mu.Lock()
	before := requests
	mu.Unlock()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		writeJSON(w, 401, errBody(401, "unknown key"))
	})
	if _, err := bad.Usage(context.Background()); !IsUnauthorized(err) {
		t.Fatal(err)
	}
	if _, err := bad.AssignUsage(context.Background(), 1, 1); !IsUnauthorized(err) {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if requests-before != 3 {
		t.Fatalf("%d requests for a bad key, want 2 (GET, retried once) + 1 (POST)", requests-before)
	}
}

// A service whose answers carry no envelope timestamp (a plain-text refusal,
// an envelope without one) still tells its clock by the Date header: the
// client learns it from the refusal and from every answer, and signs with it.
func TestClockSkewFromDateHeader(t *testing.T) {
	const offset = 10 * time.Minute
	var mu sync.Mutex
	refused, served := 0, 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().Add(offset)
		w.Header().Set("Date", now.UTC().Format(http.TimeFormat))
		p, err := verifySignature(r, nil)
		ms, _ := strconv.ParseInt(p.Timestamp, 10, 64)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || now.Sub(time.UnixMilli(ms)).Abs() > 5*time.Minute {
			refused++
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, "request expired\n")
			return
		}
		served++
		writeJSON(w, 200, map[string]any{"client_code": 200, "usage_minutes": 7, "machine_type": "Lake"})
	})
	c, _ := newTestClient(t, h)
	for range 3 {
		if u, err := c.Usage(context.Background()); err != nil || u.UsageMinutes != 7 {
			t.Fatalf("%+v %v", u, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if refused != 1 || served != 3 {
		t.Errorf("%d requests refused and %d served, want 1 and 3", refused, served)
	}
	if skew, known := c.ClockSkew(); !known || (skew-offset).Abs() > 2*time.Second {
		t.Errorf("ClockSkew %v (known %v), want about %v", skew, known, offset)
	}
}
