// Package emutest starts emulators for tests and gives them a fake clock and
// a minimal signing HTTP client (plain net/http, independent of package api's
// client).
package emutest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
)

// Start serves an emulator on 127.0.0.1 (free ports) and closes it when the
// test ends.
func Start(t testing.TB, opts emulator.Options) *emulator.Server {
	t.Helper()
	s, err := emulator.Listen(opts, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("starting the emulator: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the emulator: %v", err)
		}
	})
	return s
}

// Clock is a fake clock for Options.Now: it stands still until advanced.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Client sends signed requests to an emulator's API as one organization.
type Client struct {
	Creds emulator.OrgCredentials
	HTTP  *http.Client
	Now   func() time.Time // signing clock; default time.Now
}

// NewClient returns a client for the named organization ("org-a", "org-b").
func NewClient(t testing.TB, s *emulator.Server, org string) *Client {
	t.Helper()
	for _, c := range s.Credentials() {
		if c.Name == org {
			return &Client{Creds: c, HTTP: &http.Client{Timeout: time.Minute}, Now: s.Emulator.Now}
		}
	}
	t.Fatalf("no organization %q", org)
	return nil
}

// Response is a decoded answer.
type Response struct {
	Status int
	Body   []byte
	JSON   map[string]any
}

// Code is the answer's client_code (0 when absent).
func (r *Response) Code() int {
	if v, ok := r.JSON["client_code"].(float64); ok {
		return int(v)
	}
	return 0
}

// Do sends method path (relative to /organization-management/v1, query
// allowed) with body (nil, []byte, string or a value marshalled to JSON),
// signed with the client's credentials. Each request goes over a connection
// of its own, so that a dropped answer shows as an error.
func (c *Client) Do(method, path string, body any) (*Response, error) {
	var b []byte
	switch v := body.(type) {
	case nil:
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	full := emulator.Prefix + path
	signed, _, _ := strings.Cut(full, "?")
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ts := strconv.FormatInt(now().UnixMilli(), 10)
	req, err := http.NewRequest(method, c.Creds.Endpoint+full, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", api.AuthorizationHeader(c.Creds.Key, c.Creds.Secret, method, signed, ts, Nonce(), b))
	req.Header.Set("Content-Type", "application/json")
	// One connection per request: over a reused keep-alive connection that
	// breaks (the emulator's Drop fault), Go's transport silently re-sends a
	// bodiless GET with the same Authorization header, whose nonce the
	// emulator then refuses as replayed (401) instead of the caller seeing
	// the lost answer.
	req.Close = true
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	r := &Response{Status: resp.StatusCode, Body: rb}
	if err := json.Unmarshal(rb, &r.JSON); err != nil {
		r.JSON = nil
	}
	return r, nil
}

// Must is Do failing the test on a transport error.
func (c *Client) Must(t testing.TB, method, path string, body any) *Response {
	t.Helper()
	r, err := c.Do(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// Nonce returns a random hyphenated UUID.
func Nonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
