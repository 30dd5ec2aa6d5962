package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/internal/emulator/faults"
)

// clock is a settable clock for expiry tests.
type clock struct {
	mu sync.Mutex
	t  time.Time // guarded by mu
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newServer starts a store (Dir and Secret filled in) behind an httptest server.
func newServer(t *testing.T, opts Options) (*Store, *httptest.Server) {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Secret == nil {
		opts.Secret = []byte("test-secret")
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.SetBaseURL(srv.URL)
	return s, srv
}

func randBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func md5ETag(b []byte) string {
	sum := md5.Sum(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

func mustWrite(t *testing.T, s *Store, key string, data []byte) string {
	t.Helper()
	n, etag, err := s.Write(key, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Write(%q): %v", key, err)
	}
	if n != int64(len(data)) || etag != md5ETag(data) {
		t.Fatalf("Write(%q) = %d, %s; want %d, %s", key, n, etag, len(data), md5ETag(data))
	}
	return etag
}

func do(t *testing.T, c *http.Client, method, u string, body []byte, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading body: %v", method, err)
	}
	return resp, b
}

// xmlCode checks an XML error answer and returns its Code and Message.
func xmlCode(t *testing.T, resp *http.Response, body []byte) (string, string) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/xml" {
		t.Errorf("Content-Type = %q, want application/xml", ct)
	}
	if !bytes.HasPrefix(body, []byte("<?xml")) {
		t.Errorf("body does not start with an XML declaration: %q", body)
	}
	var e struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}
	if err := xml.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Code, e.Message
}

func TestGetWholeAndRanges(t *testing.T) {
	s, srv := newServer(t, Options{})
	data := randBytes(1000, 1)
	etag := mustWrite(t, s, "dir/obj.bin", data)
	u := s.PresignGet("dir/obj.bin", time.Minute, "report final.pdf")

	resp, body := do(t, srv.Client(), "GET", u, nil, nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("whole GET: %d, %d bytes", resp.StatusCode, len(body))
	}
	for h, want := range map[string]string{
		"ETag":                etag,
		"Content-Length":      "1000",
		"Accept-Ranges":       "bytes",
		"Content-Disposition": `attachment; filename="report final.pdf"`,
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if _, err := http.ParseTime(resp.Header.Get("Last-Modified")); err != nil {
		t.Errorf("Last-Modified %q: %v", resp.Header.Get("Last-Modified"), err)
	}

	tests := []struct {
		rng        string
		status     int
		contentRng string
		lo, hi     int // expected body data[lo:hi]
	}{
		{"bytes=0-9", 206, "bytes 0-9/1000", 0, 10},
		{"bytes=990-2000", 206, "bytes 990-999/1000", 990, 1000},
		{"bytes=500-", 206, "bytes 500-999/1000", 500, 1000},
		{"bytes=-100", 206, "bytes 900-999/1000", 900, 1000},
		{"bytes=-5000", 206, "bytes 0-999/1000", 0, 1000}, // suffix longer than the object
		{"bytes=1000-", 416, "bytes */1000", 0, 0},
		{"bytes=5000-6000", 416, "bytes */1000", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.rng, func(t *testing.T) {
			resp, body := do(t, srv.Client(), "GET", u, nil, map[string]string{"Range": tc.rng})
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get("Content-Range"); got != tc.contentRng {
				t.Errorf("Content-Range %q, want %q", got, tc.contentRng)
			}
			if tc.status == 416 {
				if code, _ := xmlCode(t, resp, body); code != "InvalidRange" {
					t.Errorf("code %q", code)
				}
				return
			}
			if !bytes.Equal(body, data[tc.lo:tc.hi]) {
				t.Errorf("body: %d bytes, want data[%d:%d]", len(body), tc.lo, tc.hi)
			}
			if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(tc.hi-tc.lo) {
				t.Errorf("Content-Length %q", got)
			}
		})
	}

	st := s.Stats()
	if st.Gets != 6 || st.RangeGets != 5 || st.Denied != 2 || st.BytesOut != 1000+10+10+500+100+1000 {
		t.Errorf("stats %+v", st)
	}
}

func TestGetMissing(t *testing.T) {
	s, srv := newServer(t, Options{})
	resp, body := do(t, srv.Client(), "GET", s.PresignGet("nope", time.Minute, ""), nil, nil)
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if code, _ := xmlCode(t, resp, body); code != "NoSuchKey" {
		t.Errorf("code %q", code)
	}
}

func TestExpiry(t *testing.T) {
	clk := &clock{t: time.Date(2025, 11, 22, 10, 0, 0, 0, time.UTC)}
	s, srv := newServer(t, Options{Now: clk.Now})
	mustWrite(t, s, "k", []byte("hello"))
	get := s.PresignGet("k", time.Minute, "")
	put := s.PresignPut("k2", time.Minute, 0)

	clk.Advance(59 * time.Second)
	if resp, _ := do(t, srv.Client(), "GET", get, nil, nil); resp.StatusCode != 200 {
		t.Fatalf("before expiry: %d", resp.StatusCode)
	}
	clk.Advance(2 * time.Second)
	for _, tc := range []struct{ method, url string }{{"GET", get}, {"PUT", put}} {
		resp, body := do(t, srv.Client(), tc.method, tc.url, []byte("x"), nil)
		if resp.StatusCode != 403 {
			t.Fatalf("%s after expiry: %d", tc.method, resp.StatusCode)
		}
		if code, msg := xmlCode(t, resp, body); code != "AccessDenied" || msg != "Request has expired" {
			t.Errorf("%s: %s %q", tc.method, code, msg)
		}
	}
	if _, _, err := s.Stat("k2"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("expired PUT stored something: %v", err)
	}
	if st := s.Stats(); st.Denied != 2 {
		t.Errorf("Denied = %d", st.Denied)
	}
}

func TestTampered(t *testing.T) {
	s, srv := newServer(t, Options{})
	mustWrite(t, s, "a/b", []byte("one"))
	mustWrite(t, s, "a/c", []byte("two"))
	get := s.PresignGet("a/b", time.Minute, "b.txt")
	put := s.PresignPut("up/part-1", time.Minute, 10)

	edit := func(raw string, f func(u *url.URL, q url.Values)) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		f(u, q)
		u.RawQuery = q.Encode()
		return u.String()
	}
	tests := []struct {
		name, method, url string
		code              string
	}{
		{"other key", "GET", edit(get, func(u *url.URL, q url.Values) { u.Path = "/a/c" }), "SignatureDoesNotMatch"},
		{"key prefix", "GET", edit(get, func(u *url.URL, q url.Values) { u.Path = "/x/a/b" }), "SignatureDoesNotMatch"},
		{"later expiry", "GET", edit(get, func(u *url.URL, q url.Values) {
			exp, _ := strconv.ParseInt(q.Get("expires"), 10, 64)
			q.Set("expires", strconv.FormatInt(exp+3600, 10))
		}), "SignatureDoesNotMatch"},
		{"signature", "GET", edit(get, func(u *url.URL, q url.Values) {
			sig := []byte(q.Get("signature"))
			sig[0] ^= 1
			q.Set("signature", string(sig))
		}), "SignatureDoesNotMatch"},
		{"filename", "GET", edit(get, func(u *url.URL, q url.Values) { q.Set("filename", "evil.exe") }), "SignatureDoesNotMatch"},
		{"no signature", "GET", edit(get, func(u *url.URL, q url.Values) { q.Del("signature") }), "AccessDenied"},
		{"repeated expires", "GET", get + "&expires=1", "AccessDenied"},
		{"min size removed", "PUT", edit(put, func(u *url.URL, q url.Values) { q.Del("min_size") }), "SignatureDoesNotMatch"},
		{"min size lowered", "PUT", edit(put, func(u *url.URL, q url.Values) { q.Set("min_size", "1") }), "SignatureDoesNotMatch"},
		{"PUT to a GET URL", "PUT", get, "SignatureDoesNotMatch"},
		{"GET of a PUT URL", "GET", put, "SignatureDoesNotMatch"},
		{"DELETE", "DELETE", get, "SignatureDoesNotMatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, srv.Client(), tc.method, tc.url, bytes.Repeat([]byte("z"), 20), nil)
			if resp.StatusCode != 403 {
				t.Fatalf("status %d, want 403", resp.StatusCode)
			}
			if code, msg := xmlCode(t, resp, body); code != tc.code {
				t.Errorf("code %q (%s), want %q", code, msg, tc.code)
			}
		})
	}
	// Nothing was overwritten or created.
	for key, want := range map[string]string{"a/b": "one", "a/c": "two"} {
		if _, etag, err := s.Stat(key); err != nil || etag != md5ETag([]byte(want)) {
			t.Errorf("Stat(%q) = %s, %v", key, etag, err)
		}
	}
	if _, _, err := s.Stat("up/part-1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("tampered PUT stored: %v", err)
	}
	if st := s.Stats(); st.Denied != int64(len(tests)) || st.Gets != 0 || st.Puts != 0 {
		t.Errorf("stats %+v", st)
	}
	// The untampered URLs still work.
	if resp, _ := do(t, srv.Client(), "GET", get, nil, nil); resp.StatusCode != 200 {
		t.Errorf("GET %d", resp.StatusCode)
	}
}

func TestAuthorizationHeaderRefused(t *testing.T) {
	s, srv := newServer(t, Options{})
	mustWrite(t, s, "k", []byte("data"))
	for _, tc := range []struct{ method, url string }{
		{"PUT", s.PresignPut("new", time.Minute, 0)},
		{"GET", s.PresignGet("k", time.Minute, "")},
	} {
		resp, body := do(t, srv.Client(), tc.method, tc.url, []byte("payload"),
			map[string]string{"Authorization": "HMAC demo-key-a:abc:nonce:1"})
		if resp.StatusCode != 400 {
			t.Fatalf("%s: status %d, want 400", tc.method, resp.StatusCode)
		}
		code, msg := xmlCode(t, resp, body)
		if code != "InvalidArgument" || !strings.Contains(msg, "presigned URL") {
			t.Errorf("%s: %s %q", tc.method, code, msg)
		}
		if tc.method == "GET" && bytes.Contains(body, []byte("data")) {
			t.Errorf("object served despite the refusal")
		}
	}
	if _, _, err := s.Stat("new"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused PUT stored: %v", err)
	}
}

func TestPut(t *testing.T) {
	s, srv := newServer(t, Options{})
	data := randBytes(300<<10, 2)
	resp, _ := do(t, srv.Client(), "PUT", s.PresignPut("up/1/part-1", time.Minute, 0), data, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := resp.Header.Get("ETag"); got != md5ETag(data) {
		t.Errorf("ETag %s, want %s", got, md5ETag(data))
	}
	size, etag, err := s.Stat("up/1/part-1")
	if err != nil || size != int64(len(data)) || etag != md5ETag(data) {
		t.Errorf("Stat = %d, %s, %v", size, etag, err)
	}
	f, err := s.Open("up/1/part-1")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, data) {
		t.Error("stored content differs")
	}
	// Overwrite, then read it back through a GET URL.
	data2 := []byte("smaller")
	if resp, _ := do(t, srv.Client(), "PUT", s.PresignPut("up/1/part-1", time.Minute, 0), data2, nil); resp.StatusCode != 200 {
		t.Fatalf("second PUT: %d", resp.StatusCode)
	}
	resp, body := do(t, srv.Client(), "GET", s.PresignGet("up/1/part-1", time.Minute, ""), nil, nil)
	if !bytes.Equal(body, data2) || resp.Header.Get("ETag") != md5ETag(data2) {
		t.Errorf("GET after overwrite: %q %s", body, resp.Header.Get("ETag"))
	}
	if st := s.Stats(); st.Puts != 2 || st.BytesIn != int64(len(data)+len(data2)) || st.Gets != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestPutMinSize(t *testing.T) {
	s, srv := newServer(t, Options{})
	tests := []struct {
		name   string
		size   int
		status int
	}{
		{"short", 99, 400},
		{"empty", 0, 400},
		{"exact", 100, 200},
		{"longer", 150, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := "part-" + tc.name
			resp, body := do(t, srv.Client(), "PUT", s.PresignPut(key, time.Minute, 100), make([]byte, tc.size), nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			_, _, err := s.Stat(key)
			if tc.status == 400 {
				if code, _ := xmlCode(t, resp, body); code != "EntityTooSmall" {
					t.Errorf("code %q", code)
				}
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("refused part stored: %v", err)
				}
			} else if err != nil {
				t.Errorf("Stat: %v", err)
			}
		})
	}
	assertNoStrayFiles(t, s)
}

// assertNoStrayFiles fails when Dir holds a temporary file, a file not mode
// 0600 or a directory not mode 0700.
func assertNoStrayFiles(t *testing.T, s *Store) {
	t.Helper()
	filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			t.Error(err)
			return nil
		}
		switch {
		case p == s.dir: // made by t.TempDir
		case d.IsDir() && fi.Mode().Perm() != 0o700:
			t.Errorf("dir %s mode %v", p, fi.Mode())
		case !d.IsDir() && fi.Mode().Perm() != 0o600:
			t.Errorf("file %s mode %v", p, fi.Mode())
		case !d.IsDir() && !strings.HasSuffix(p, objSuffix):
			t.Errorf("stray file %s", p)
		}
		return nil
	})
}

func TestKeysOnDisk(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{
		"x", "x/y", "x@obj", "../../escape", "..", ".", ".hidden/./f", "a//b", "/lead", "trail/",
		"spaces and ü/%41%", "a\x00b", strings.Repeat("k", 200),
	}
	for i, k := range keys {
		mustWrite(t, s, k, []byte(fmt.Sprint("content ", i)))
	}
	for i, k := range keys {
		f, err := s.Open(k)
		if err != nil {
			t.Fatalf("Open(%q): %v", k, err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != fmt.Sprint("content ", i) {
			t.Errorf("Open(%q) = %q", k, b)
		}
	}
	// Nothing escaped the store's directory, and every object file maps back to its key.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files outside Dir: %v", entries)
	}
	found := map[string]bool{}
	filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			k, ok := s.keyOf(p)
			if !ok {
				t.Errorf("object file %s does not map back to a key", p)
			}
			found[k] = true
		}
		return nil
	})
	for _, k := range keys {
		if !found[k] {
			t.Errorf("key %q not found by walking", k)
		}
	}
	assertNoStrayFiles(t, s)
	for _, k := range []string{"", strings.Repeat("k", 1025)} {
		if _, _, err := s.Write(k, strings.NewReader("x")); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Write(%d-byte key) err %v, want ErrInvalidKey", len(k), err)
		}
	}
	// A new store on the same directory recomputes the ETags it does not know.
	s2, err := New(Options{Dir: s.dir})
	if err != nil {
		t.Fatal(err)
	}
	if size, etag, err := s2.Stat("x/y"); err != nil || size != 9 || etag != md5ETag([]byte("content 1")) {
		t.Errorf("Stat after restart = %d, %s, %v", size, etag, err)
	}
	// It lists them all (the emulator tidies up what its state no longer names).
	listed, err := s2.Keys()
	slices.Sort(listed)
	want := slices.Sorted(slices.Values(keys))
	if err != nil || !slices.Equal(listed, want) {
		t.Errorf("Keys() = %q, %v; want %q", listed, err, want)
	}
}

func TestConcatRemove(t *testing.T) {
	s, _ := newServer(t, Options{})
	parts := [][]byte{randBytes(70<<10, 3), randBytes(1, 4), randBytes(40<<10, 5)}
	var keys []string
	digests := md5.New()
	var all []byte
	for i, p := range parts {
		k := fmt.Sprintf("up/7/part-%d", i+1)
		mustWrite(t, s, k, p)
		keys = append(keys, k)
		sum := md5.Sum(p)
		digests.Write(sum[:])
		all = append(all, p...)
	}
	size, err := s.Concat("files/7", keys)
	if err != nil || size != int64(len(all)) {
		t.Fatalf("Concat = %d, %v", size, err)
	}
	wantETag := `"` + hex.EncodeToString(digests.Sum(nil)) + `-3"`
	if sz, etag, err := s.Stat("files/7"); err != nil || sz != size || etag != wantETag {
		t.Errorf("Stat = %d, %s, %v; want %s", sz, etag, err, wantETag)
	}
	f, err := s.Open("files/7")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, all) {
		t.Error("concatenation differs")
	}

	if size, err := s.Concat("empty", nil); err != nil || size != 0 {
		t.Errorf("Concat of nothing = %d, %v", size, err)
	}
	if _, etag, err := s.Stat("empty"); err != nil || etag != md5ETag(nil) {
		t.Errorf("empty concat: %s, %v", etag, err)
	}
	if _, err := s.Concat("bad", []string{keys[0], "up/7/missing"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Concat with a missing part: %v", err)
	}
	if _, _, err := s.Stat("bad"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed Concat left an object: %v", err)
	}

	// Remove and RemovePrefix.
	for _, k := range []string{"up/7", "up/70/part-1", "up/8/part-1", "up7"} {
		mustWrite(t, s, k, []byte(k))
	}
	if err := s.Remove("files/7"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("files/7"); err != nil {
		t.Errorf("Remove of a missing object: %v", err)
	}
	if err := s.RemovePrefix("up/7/"); err != nil {
		t.Fatal(err)
	}
	exists := func(k string) bool { _, _, err := s.Stat(k); return err == nil }
	want := map[string]bool{"files/7": false, "up/7/part-1": false, "up/7/part-3": false,
		"up/7": true, "up/70/part-1": true, "up/8/part-1": true, "up7": true, "empty": true}
	for k, w := range want {
		if exists(k) != w {
			t.Errorf("after RemovePrefix(up/7/): exists(%q) = %v", k, !w)
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, "up", "7")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("emptied directory left: %v", err)
	}
	if err := s.RemovePrefix("up/7"); err != nil {
		t.Fatal(err)
	}
	want = map[string]bool{"up/7": false, "up/70/part-1": false, "up/8/part-1": true, "up7": true}
	for k, w := range want {
		if exists(k) != w {
			t.Errorf("after RemovePrefix(up/7): exists(%q) = %v", k, !w)
		}
	}
	if err := s.RemovePrefix("nothing/here/"); err != nil {
		t.Errorf("RemovePrefix of nothing: %v", err)
	}
	if err := s.RemovePrefix(""); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(s.dir); len(entries) != 0 {
		t.Errorf("RemovePrefix(\"\") left %v", entries)
	}
	// Writes into pruned directories work again.
	mustWrite(t, s, "up/7/part-1", []byte("again"))
}

func TestStreamRate(t *testing.T) {
	const size = 256 << 10
	s, srv := newServer(t, Options{StreamRate: 1 << 20})
	data := randBytes(size, 6)
	mustWrite(t, s, "big", data)
	get := s.PresignGet("big", time.Minute, "")

	fetch := func() error {
		resp, err := srv.Client().Get(get)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && !bytes.Equal(b, data) {
			err = errors.New("body differs")
		}
		return err
	}
	start := time.Now()
	if err := fetch(); err != nil {
		t.Fatal(err)
	}
	one := time.Since(start)
	if one < 200*time.Millisecond || one > 2*time.Second {
		t.Errorf("256 KiB at 1 MiB/s took %v, want about 250ms", one)
	}

	start = time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- fetch() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	four := time.Since(start)
	// Paced per stream: 4 streams take about as long as one (a shared limit would take 1s).
	if four < 200*time.Millisecond || four > 750*time.Millisecond {
		t.Errorf("4 parallel streams took %v, want about 250ms", four)
	}

	start = time.Now()
	resp, _ := do(t, srv.Client(), "PUT", s.PresignPut("up", time.Minute, 0), data, nil)
	if el := time.Since(start); resp.StatusCode != 200 || el < 200*time.Millisecond || el > 2*time.Second {
		t.Errorf("PUT of 256 KiB at 1 MiB/s: %d in %v, want 200 in about 250ms", resp.StatusCode, el)
	}
}

func TestObjectLatency(t *testing.T) {
	s, srv := newServer(t, Options{ObjectLatency: 150 * time.Millisecond})
	mustWrite(t, s, "k", []byte("x"))
	start := time.Now()
	resp, _ := do(t, srv.Client(), "GET", s.PresignGet("k", time.Minute, ""), nil, nil)
	if el := time.Since(start); resp.StatusCode != 200 || el < 140*time.Millisecond {
		t.Errorf("GET: %d after %v, want 200 after ≥150ms", resp.StatusCode, el)
	}
	start = time.Now()
	resp, _ = do(t, srv.Client(), "PUT", s.PresignPut("k2", time.Minute, 0), []byte("y"), nil)
	if el := time.Since(start); resp.StatusCode != 200 || el < 140*time.Millisecond {
		t.Errorf("PUT: %d after %v, want 200 after ≥150ms", resp.StatusCode, el)
	}

	// A cancelled request does not wait out the latency.
	s2, srv2 := newServer(t, Options{ObjectLatency: 10 * time.Second})
	mustWrite(t, s2, "k", []byte("x"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s2.PresignGet("k", time.Minute, ""), nil)
	start = time.Now()
	if resp, err := srv2.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Error("request beyond its deadline succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a request cancelled after 50ms returned after %v", d)
	}
	// srv2.Close (cleanup) waits for the handler: it must have returned promptly.
	done := make(chan struct{})
	go func() { srv2.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Error("handler still sleeping after the client went away")
	}
}

func TestFaults(t *testing.T) {
	data := randBytes(200<<10, 7)
	tests := []struct {
		kind   faults.Kind
		method string
		check  func(t *testing.T, s *Store, resp *http.Response, body []byte, err error)
	}{
		{faults.Status500, "GET", func(t *testing.T, s *Store, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 500 {
				t.Fatalf("want 500, got %v %v", resp, err)
			}
			if code, _ := xmlCode(t, resp, body); code != "InternalError" {
				t.Errorf("code %q", code)
			}
		}},
		{faults.Status503, "PUT", func(t *testing.T, s *Store, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 503 {
				t.Fatalf("want 503, got %v %v", resp, err)
			}
			if code, _ := xmlCode(t, resp, body); code != "SlowDown" {
				t.Errorf("code %q", code)
			}
			if _, _, err := s.Stat("put"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("503 PUT stored: %v", err)
			}
		}},
		{faults.Reset, "GET", func(t *testing.T, s *Store, resp *http.Response, body []byte, err error) {
			if resp == nil || resp.StatusCode != 200 {
				t.Fatalf("want 200 headers, got %v %v", resp, err)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(body) >= len(data) || !bytes.Equal(body, data[:len(body)]) {
				t.Errorf("want a short prefix and unexpected EOF, got %d bytes, %v", len(body), err)
			}
		}},
		{faults.Reset, "PUT", func(t *testing.T, s *Store, resp *http.Response, body []byte, err error) {
			if err == nil {
				t.Fatalf("want a connection error, got %d", resp.StatusCode)
			}
			if _, _, err := s.Stat("put"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("reset PUT stored: %v", err)
			}
		}},
		{faults.Drop, "PUT", func(t *testing.T, s *Store, resp *http.Response, body []byte, err error) {
			if err == nil {
				t.Fatalf("want a connection error, got %d", resp.StatusCode)
			}
			if size, etag, err := s.Stat("put"); err != nil || size != int64(len(data)) || etag != md5ETag(data) {
				t.Errorf("dropped PUT not stored: %d %s %v", size, etag, err)
			}
			if st := s.Stats(); st.Puts != 1 {
				t.Errorf("Puts = %d", st.Puts)
			}
		}},
		{faults.Drop, "GET", func(t *testing.T, s *Store, resp *http.Response, body []byte, err error) {
			if err == nil {
				t.Fatalf("want a connection error, got %d", resp.StatusCode)
			}
		}},
	}
	for i, tc := range tests {
		t.Run(tc.kind.String()+" "+tc.method, func(t *testing.T) {
			s, srv := newServer(t, Options{Faults: faults.New(1, int64(i))})
			s.kinds = []faults.Kind{tc.kind}
			mustWrite(t, s, "get", data) // server-side writes never fault

			u, body := s.PresignGet("get", time.Minute, ""), []byte(nil)
			if tc.method == "PUT" {
				u, body = s.PresignPut("put", time.Minute, 0), data
			}
			req, _ := http.NewRequest(tc.method, u, bytes.NewReader(body))
			if body == nil {
				req.Body = nil
			}
			resp, err := srv.Client().Do(req)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			tc.check(t, s, resp, got, err)
			if st := s.Stats(); st.Faults < 1 || st.Gets != 0 {
				t.Errorf("stats %+v", st)
			}
			if n := s.faults.Count(tc.kind); n < 1 {
				t.Errorf("injector counted %d %v faults", n, tc.kind)
			}
			assertNoStrayFiles(t, s)
		})
	}
}

func TestLogHidesSignature(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := logrus.New()
	log.SetOutput(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}))
	log.SetLevel(logrus.DebugLevel)
	s, srv := newServer(t, Options{Log: log})
	u := s.PresignPut("logged/key", time.Minute, 0)
	if resp, _ := do(t, srv.Client(), "PUT", u, []byte("abc"), nil); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	srv.Close() // the handler has returned and logged
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	sig := u[strings.Index(u, "signature=")+len("signature="):]
	if !strings.Contains(out, "logged/key") || !strings.Contains(out, "status=200") || !strings.Contains(out, "bytes=3") {
		t.Errorf("log lacks key/status/bytes: %q", out)
	}
	if strings.Contains(out, sig) || strings.Contains(out, "signature") {
		t.Errorf("log shows the signature: %q", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestBasePath(t *testing.T) {
	s, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/objects/", s)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s.SetBaseURL(srv.URL + "/objects/")
	mustWrite(t, s, "a b/c", []byte("x"))
	u := s.PresignGet("a b/c", time.Minute, "")
	if !strings.HasPrefix(u, srv.URL+"/objects/a%20b/c?") {
		t.Errorf("URL %s", u)
	}
	if resp, body := do(t, srv.Client(), "GET", u, nil, nil); resp.StatusCode != 200 || string(body) != "x" {
		t.Errorf("GET: %d %q", resp.StatusCode, body)
	}
}

func TestConcurrentPutGet(t *testing.T) {
	s, srv := newServer(t, Options{})
	versions := [][]byte{randBytes(64<<10, 8), randBytes(96<<10, 9)}
	etags := map[string][]byte{md5ETag(versions[0]): versions[0], md5ETag(versions[1]): versions[1]}
	mustWrite(t, s, "hot", versions[0])
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 5 {
				if i%2 == 0 {
					resp, err := srv.Client().Do(mustReq(t, "PUT", s.PresignPut("hot", time.Minute, 0), versions[(i+j)%2]))
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					continue
				}
				resp, err := srv.Client().Get(s.PresignGet("hot", time.Minute, ""))
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want, ok := etags[resp.Header.Get("ETag")]; err != nil || !ok || !bytes.Equal(b, want) {
					t.Errorf("GET: ETag %s does not describe the %d-byte body (%v)", resp.Header.Get("ETag"), len(b), err)
				}
			}
		})
	}
	wg.Wait()
	assertNoStrayFiles(t, s)
}

func mustReq(t *testing.T, method, u string, body []byte) *http.Request {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Error(err)
	}
	return req
}
