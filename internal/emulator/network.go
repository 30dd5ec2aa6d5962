package emulator

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Network play that a test or a script switches while the emulator runs: the
// delays, the stream rate, the fault rate and outages. An outage is either a
// black hole (connections are accepted, requests and bodies in flight stall,
// nothing is answered until it ends) or a refusal (every request's
// connection is reset at once). It applies to both listeners, API and object
// store; the emulator's own paths (/_emulator/...) are never affected.

// PlayPath reads (GET) and changes (POST) the network play of a listening
// emulator. It answers only with the token the server writes beside the
// credentials (admin-token) as "Authorization: Bearer TOKEN", and only to
// loopback clients.
const PlayPath = "/_emulator/play"

// Outage kinds of Play.Outage.
const (
	OutageNone      = "none"
	OutageBlackHole = "blackhole"
	OutageRefuse    = "refuse"
)

// Play is the network play in force, as PlayPath shows it.
type Play struct {
	Latency       string  `json:"latency"`        // per API request, e.g. "20ms"
	ObjectLatency string  `json:"object_latency"` // before the first byte of an object transfer
	StreamRate    int64   `json:"stream_rate"`    // bytes/s per object connection; 0 unlimited
	FaultRate     float64 `json:"fault_rate"`     // 0..1
	Outage        string  `json:"outage"`         // none, blackhole or refuse
}

// PlayChange is a change of the play: the fields given change, the others
// stay. Durations are Go durations ("20ms", "1s").
type PlayChange struct {
	Latency       *string  `json:"latency,omitempty"`
	ObjectLatency *string  `json:"object_latency,omitempty"`
	StreamRate    *int64   `json:"stream_rate,omitempty"`
	FaultRate     *float64 `json:"fault_rate,omitempty"`
	Outage        *string  `json:"outage,omitempty"`
}

// network holds the play that changes at run time.
type network struct {
	latency atomic.Int64 // API latency in nanoseconds

	mu      sync.Mutex
	outage  string        // guarded by mu
	changed chan struct{} // guarded by mu; closed (and replaced) when outage changes
	quit    chan struct{} // closed when the emulator closes: stalled requests end
	closed  bool          // guarded by mu
}

func newNetwork(latency time.Duration) *network {
	n := &network{outage: OutageNone, changed: make(chan struct{}), quit: make(chan struct{})}
	n.latency.Store(int64(latency))
	return n
}

func (n *network) apiLatency() time.Duration { return time.Duration(n.latency.Load()) }

func (n *network) setOutage(kind string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.outage == kind {
		return
	}
	n.outage = kind
	close(n.changed)
	n.changed = make(chan struct{})
}

func (n *network) state() (string, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.outage, n.changed
}

func (n *network) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		n.closed = true
		close(n.quit)
	}
}

// pass waits out a black hole; it returns the outage in force afterwards
// (none or refuse), or "" when ctx ended or the emulator closed first.
func (n *network) pass(ctx context.Context) string {
	for {
		kind, changed := n.state()
		if kind != OutageBlackHole {
			return kind
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ""
		case <-n.quit:
			return ""
		}
	}
}

// Play returns the network play in force.
func (e *Emulator) Play() Play {
	lat, rate := e.store.Play()
	kind, _ := e.net.state()
	return Play{
		Latency:       e.net.apiLatency().String(),
		ObjectLatency: lat.String(),
		StreamRate:    rate,
		FaultRate:     e.faults.Rate(),
		Outage:        kind,
	}
}

// ChangePlay applies a change of the network play; nothing changes when any
// field is invalid.
func (e *Emulator) ChangePlay(c PlayChange) error {
	var lat, objLat time.Duration
	var err error
	if c.Latency != nil {
		if lat, err = time.ParseDuration(*c.Latency); err != nil || lat < 0 {
			return fmt.Errorf("latency %q: want a duration like 20ms", *c.Latency)
		}
	}
	if c.ObjectLatency != nil {
		if objLat, err = time.ParseDuration(*c.ObjectLatency); err != nil || objLat < 0 {
			return fmt.Errorf("object_latency %q: want a duration like 20ms", *c.ObjectLatency)
		}
	}
	if c.StreamRate != nil && *c.StreamRate < 0 {
		return fmt.Errorf("stream_rate %d: want bytes per second, 0 for unlimited", *c.StreamRate)
	}
	if c.FaultRate != nil && (*c.FaultRate < 0 || *c.FaultRate > 1) {
		return fmt.Errorf("fault_rate %v: want a fraction between 0 and 1", *c.FaultRate)
	}
	if c.Outage != nil && *c.Outage != OutageNone && *c.Outage != OutageBlackHole && *c.Outage != OutageRefuse {
		return fmt.Errorf("outage %q: want none, blackhole or refuse", *c.Outage)
	}
	if c.Latency != nil {
		e.net.latency.Store(int64(lat))
	}
	if c.ObjectLatency != nil {
		e.store.SetLatency(objLat)
	}
	if c.StreamRate != nil {
		e.store.SetStreamRate(*c.StreamRate)
	}
	if c.FaultRate != nil {
		e.SetFaultRate(*c.FaultRate)
	}
	if c.Outage != nil {
		e.net.setOutage(*c.Outage)
	}
	e.log.WithField("play", fmt.Sprintf("%+v", e.Play())).Info("network play changed")
	return nil
}

// SetOutage starts (blackhole, refuse) or ends (none) an outage.
func (e *Emulator) SetOutage(kind string) error { return e.ChangePlay(PlayChange{Outage: &kind}) }

// withOutages wraps a listener's handler: requests, their bodies and their
// answers stall in a black hole and are reset in a refusal.
func (e *Emulator) withOutages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch e.net.pass(r.Context()) {
		case "":
			return
		case OutageRefuse:
			reset(w)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &stallBody{ReadCloser: r.Body, n: e.net, ctx: r.Context()}
		}
		next.ServeHTTP(&stallWriter{ResponseWriter: w, n: e.net, ctx: r.Context()}, r)
	})
}

// reset closes a request's connection at once, with a TCP reset.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// errOutage ends a body or an answer cut by an outage.
var errOutage = fmt.Errorf("emulator: network outage")

// stallWriter is an answer that stalls in a black hole and is cut by a
// refusal.
type stallWriter struct {
	http.ResponseWriter
	n   *network
	ctx context.Context
}

func (w *stallWriter) Write(b []byte) (int, error) {
	switch w.n.pass(w.ctx) {
	case "":
		return 0, errOutage
	case OutageRefuse:
		reset(w.ResponseWriter)
		return 0, errOutage
	}
	return w.ResponseWriter.Write(b)
}

func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush and Hijack keep the interfaces handlers assert on the writer.
func (w *stallWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *stallWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// stallBody is a request body that stalls in a black hole.
type stallBody struct {
	io.ReadCloser
	n   *network
	ctx context.Context
}

func (b *stallBody) Read(p []byte) (int, error) {
	switch b.n.pass(b.ctx) {
	case "", OutageRefuse:
		return 0, errOutage
	}
	return b.ReadCloser.Read(p)
}

// servePlay is PlayPath: GET shows the play, POST changes it.
func (s *Server) servePlay(w http.ResponseWriter, r *http.Request) {
	if !s.adminAllowed(r) {
		http.Error(w, "emulator admin: a loopback client with the admin token (Authorization: Bearer TOKEN) is required\n", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost {
		var c PlayChange
		dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			http.Error(w, "emulator admin: "+err.Error()+"\n", http.StatusBadRequest)
			return
		}
		if err := s.Emulator.ChangePlay(c); err != nil {
			http.Error(w, "emulator admin: "+err.Error()+"\n", http.StatusBadRequest)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(s.Emulator.Play())
}

func (s *Server) adminAllowed(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return false
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(token), []byte(s.AdminToken)) == 1
}
