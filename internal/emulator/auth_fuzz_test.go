package emulator_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
)

// FuzzAuthorization feeds arbitrary Authorization headers, paths and bodies
// to the emulator's signature check: parsing never panics and gives back
// what it was given, an unsigned or wrongly signed request is always a 401
// with the JSON envelope, and the same request signed with the
// organization's secret is always accepted. The seeds run in go test.
func FuzzAuthorization(f *testing.F) {
	e, err := emulator.New(emulator.Options{Seed: emulator.SeedEmpty})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	c, err := e.Credentials(emulator.OrgA)
	if err != nil {
		f.Fatal(err)
	}
	key, secret := c.Key, c.Secret
	for _, s := range []struct{ header, path, body string }{
		{"HMAC k:s:n:1", "/usage", ""},
		{"HMAC " + key + ":00:nonce:1700000000000", "/usage", ""},
		{"HMAC :::", "/files", "{}"},
		{"Bearer x", "/usage", ""},
		{"HMAC a:b:c:d:e", "/usage?x=1", ""},
		{"HMAC " + key + ":zz:n:-1", "/seats", "\x00\xff"},
	} {
		f.Add(s.header, s.path, []byte(s.body))
	}
	var nonces atomic.Int64
	f.Fuzz(func(t *testing.T, header, path string, body []byte) {
		if p, ok := api.ParseAuthorization(header); ok {
			if again := "HMAC " + p.Key + ":" + p.Signature + ":" + p.Nonce + ":" + p.Timestamp; again != header {
				t.Fatalf("parsed %q as %+v, which reads back as %q", header, p, again)
			}
		}
		path = "/" + strings.TrimLeft(strings.Map(func(r rune) rune {
			if r < 0x21 || r > 0x7e || r == '#' || r == '%' || r == '?' {
				return -1
			}
			return r
		}, path), "/")
		send := func(auth string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, emulator.Prefix+path, strings.NewReader(string(body)))
			req.Header.Set("Authorization", auth)
			w := httptest.NewRecorder()
			e.Handler().ServeHTTP(w, req)
			return w
		}
		if w := send(header); w.Code != 401 || !strings.Contains(w.Body.String(), `"client_code":401`) {
			t.Fatalf("header %q: HTTP %d %s, want a 401 envelope", header, w.Code, w.Body)
		}
		ts := strconv.FormatInt(e.Now().UnixMilli(), 10)
		nonce := fmt.Sprintf("fuzz-%d", nonces.Add(1))
		if w := send(api.AuthorizationHeader(key, secret, http.MethodGet, emulator.Prefix+path, ts, nonce, body)); w.Code == 401 {
			t.Fatalf("a correctly signed GET %s was refused: %s", path, w.Body)
		}
	})
}
