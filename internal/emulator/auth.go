package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/orgfs/orgfs/api"
)

// authenticate verifies the request's HMAC signature (service-notes.md):
// HMAC-SHA256 keyed with the secret over key + METHOD + path + timestamp +
// nonce + body, the path without the query string, the timestamp in
// milliseconds within ±5 minutes of now, the nonce not seen within that window.
// Every refusal is a 401; messages never carry the secret or the expected
// signature. Called with mu held.
func (e *Emulator) authenticate(r *http.Request, body []byte, now time.Time) (*org, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, errf(401, "missing Authorization header")
	}
	p, ok := api.ParseAuthorization(h)
	if !ok {
		return nil, errf(401, "malformed Authorization header: want HMAC key:signature:nonce:timestamp")
	}
	o := e.byKey[p.Key]
	if o == nil {
		return nil, errf(401, "unknown API key")
	}
	ms, err := strconv.ParseInt(p.Timestamp, 10, 64)
	if err != nil {
		return nil, errf(401, "malformed timestamp")
	}
	ts := time.UnixMilli(ms)
	if d := now.Sub(ts); d > authWindow || d < -authWindow {
		return nil, errf(401, "timestamp outside the accepted window of ±%v", authWindow)
	}
	got, err := hex.DecodeString(p.Signature)
	if err != nil {
		return nil, errf(401, "invalid signature")
	}
	valid := false
	for _, path := range signedPaths(r) {
		want, _ := hex.DecodeString(api.Sign(o.key, o.secret, r.Method, path, p.Timestamp, p.Nonce, body))
		if hmac.Equal(got, want) {
			valid = true
			break
		}
	}
	if !valid {
		return nil, errf(401, "invalid signature")
	}
	nk := o.key + "\x00" + p.Nonce
	if until, seen := e.nonces[nk]; seen && now.Before(until) {
		return nil, errf(401, "nonce already used")
	}
	e.nonces[nk] = ts.Add(authWindow).Add(time.Second)
	if e.nonceAdds++; e.nonceAdds >= 1024 {
		e.nonceAdds = 0
		for k, until := range e.nonces {
			if !now.Before(until) {
				delete(e.nonces, k)
			}
		}
	}
	return o, nil
}

// offsetClock is now moved by off: with Options.ClockOffset the emulator's
// clock (signature windows, timestamps, expiries, state machines) stands off
// the desks' by off, as a service's or a desk's clock may.
func offsetClock(now func() time.Time, off time.Duration) func() time.Time {
	if off == 0 {
		return now
	}
	return func() time.Time { return now().Add(off) }
}

// dated has every API answer carry a Date header of the emulator's clock,
// as the envelope's timestamp does (net/http would write its own time).
func (e *Emulator) dated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", e.now().UTC().Format(http.TimeFormat))
		h.ServeHTTP(w, r)
	})
}

// signedPaths are the spellings of the request path a client may have signed:
// as sent on the wire, and decoded.
func signedPaths(r *http.Request) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	if r.RequestURI != "" && strings.HasPrefix(r.RequestURI, "/") {
		p, _, _ := strings.Cut(r.RequestURI, "?")
		add(p)
	}
	add(r.URL.EscapedPath())
	add(r.URL.Path)
	return out
}

// sha256Hex is used by the seed for deterministic ids.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
