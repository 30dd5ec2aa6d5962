package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/logging"
)

const (
	testKey    = "test-key-1234"
	testSecret = "test-secret-abcdef-0123456789"
)

// newTestClient starts an httptest server with h and returns a client of it
// with fast retries.
func newTestClient(t *testing.T, h http.Handler, mods ...func(*Options)) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	opts := Options{
		Logger:       logging.Discard(),
		BaseBackoff:  time.Millisecond,
		MaxBackoff:   5 * time.Millisecond,
		MaxRetryTime: 10 * time.Second,
	}
	for _, m := range mods {
		m(&opts)
	}
	c, err := New(Credentials{Endpoint: srv.URL, Key: testKey, Secret: testSecret}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

// writeJSON answers v as JSON with the given HTTP status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// stampNow is the envelope's timestamp of an answer made now: the test
// servers keep the right time (the client learns the service's clock from it).
func stampNow() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

// okBody returns fields plus a success envelope.
func okBody(fields map[string]any) map[string]any {
	out := map[string]any{"client_code": 200, "message": "OK", "timestamp": stampNow()}
	for k, v := range fields {
		out[k] = v
	}
	return out
}

// errBody returns an error envelope.
func errBody(code int, msg string) map[string]any {
	return map[string]any{"client_code": code, "message": msg, "timestamp": stampNow()}
}

// verifySignature checks a request's Authorization header as the service
// does, and returns the parsed header.
func verifySignature(r *http.Request, body []byte) (ParsedAuthorization, error) {
	p, ok := ParseAuthorization(r.Header.Get("Authorization"))
	if !ok {
		return p, fmt.Errorf("bad Authorization header %q", r.Header.Get("Authorization"))
	}
	if p.Key != testKey {
		return p, fmt.Errorf("key %q", p.Key)
	}
	want := Sign(testKey, testSecret, r.Method, r.URL.Path, p.Timestamp, p.Nonce, body)
	if p.Signature != want {
		return p, fmt.Errorf("signature mismatch for %s %s", r.Method, r.URL.Path)
	}
	if _, err := strconv.ParseInt(p.Timestamp, 10, 64); err != nil {
		return p, err
	}
	return p, nil
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }
