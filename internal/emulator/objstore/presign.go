package objstore

// Presigned URLs: making them (PresignGet, PresignPut) and checking a
// request's path, signature and expiry (see the package documentation).

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Query parameters of a presigned URL, and the version of its signature.
const (
	qExpires   = "expires"
	qMinSize   = "min_size"
	qFilename  = "filename"
	qSignature = "signature"
	sigVersion = "orgfs-objstore-v1"
)

// PresignGet returns a URL that GETs object key until ttl from now. filename, when
// not empty, is sent back as Content-Disposition.
func (s *Store) PresignGet(key string, ttl time.Duration, filename string) string {
	return s.presign(http.MethodGet, key, ttl, 0, filename)
}

// PresignPut returns a URL that PUTs object key until ttl from now. When
// minSize > 0 a body shorter than minSize is refused with 400 (S3's 5 MiB part minimum).
func (s *Store) PresignPut(key string, ttl time.Duration, minSize int64) string {
	return s.presign(http.MethodPut, key, ttl, minSize, "")
}

func (s *Store) presign(method, key string, ttl time.Duration, minSize int64, filename string) string {
	exp := s.now().Add(ttl)
	expires := exp.Unix()
	if time.Unix(expires, 0).Before(exp) {
		expires++ // round up: a URL is never valid for less than ttl
	}
	q := url.Values{}
	q.Set(qExpires, strconv.FormatInt(expires, 10))
	var minStr string
	if minSize > 0 {
		minStr = strconv.FormatInt(minSize, 10)
		q.Set(qMinSize, minStr)
	}
	if filename != "" {
		q.Set(qFilename, filename)
	}
	q.Set(qSignature, s.sign(method, key, q.Get(qExpires), minStr, filename))
	s.mu.Lock()
	base := s.base
	s.mu.Unlock()
	return base + escapeKey(key) + "?" + q.Encode()
}

// sign computes the hex HMAC of a request's signed fields, each length-prefixed
// so that no two field lists share a canonical text.
func (s *Store) sign(method, key, expires, minSize, filename string) string {
	m := hmac.New(sha256.New, s.secret)
	for _, f := range []string{sigVersion, method, key, expires, minSize, filename} {
		fmt.Fprintf(m, "%d:%s\n", len(f), f)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// escapeKey turns a key into a URL path ("/" + escaped segments).
func escapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return "/" + strings.Join(segs, "/")
}

// keyFromPath extracts the object key from the request path.
func (s *Store) keyFromPath(r *http.Request) (string, bool) {
	p := r.URL.EscapedPath()
	s.mu.Lock()
	bp := s.basePath
	s.mu.Unlock()
	if bp != "" {
		rest, ok := strings.CutPrefix(p, bp)
		if !ok {
			return "", false
		}
		p = rest
	}
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		return "", false
	}
	key, err := url.PathUnescape(rest)
	if err != nil {
		return "", false
	}
	return key, true
}

// signed holds the verified parameters of a presigned request.
type signed struct {
	key      string
	minSize  int64
	filename string
}

// verify checks the signature and expiry, answering 403 when they fail.
func (x *exchange) verify() (signed, bool) {
	q, err := url.ParseQuery(x.r.URL.RawQuery)
	if err != nil {
		x.fail(http.StatusForbidden, "AccessDenied", "Malformed query string.")
		return signed{}, false
	}
	for _, name := range []string{qExpires, qMinSize, qFilename, qSignature} {
		if len(q[name]) > 1 {
			x.fail(http.StatusForbidden, "AccessDenied", "Query parameter "+name+" is repeated.")
			return signed{}, false
		}
	}
	sig, expStr := q.Get(qSignature), q.Get(qExpires)
	if sig == "" || expStr == "" {
		x.fail(http.StatusForbidden, "AccessDenied", "Query-string authentication requires the signature and expires parameters.")
		return signed{}, false
	}
	minStr, filename := q.Get(qMinSize), q.Get(qFilename)
	want := x.s.sign(x.r.Method, x.key, expStr, minStr, filename)
	if !hmac.Equal([]byte(want), []byte(sig)) {
		msg := "The request signature we calculated does not match the signature you provided."
		for _, m := range []string{http.MethodGet, http.MethodPut} {
			if m != x.r.Method && hmac.Equal([]byte(x.s.sign(m, x.key, expStr, minStr, filename)), []byte(sig)) {
				msg += " This URL is signed for " + m + ", not " + x.r.Method + "."
			}
		}
		x.fail(http.StatusForbidden, "SignatureDoesNotMatch", msg)
		return signed{}, false
	}
	// Signed values are ours, so they parse.
	expires, err1 := strconv.ParseInt(expStr, 10, 64)
	var minSize int64
	var err2 error
	if minStr != "" {
		minSize, err2 = strconv.ParseInt(minStr, 10, 64)
	}
	if err1 != nil || err2 != nil {
		x.fail(http.StatusForbidden, "AccessDenied", "Malformed signed parameter.")
		return signed{}, false
	}
	if !x.s.now().Before(time.Unix(expires, 0)) {
		x.fail(http.StatusForbidden, "AccessDenied", "Request has expired")
		return signed{}, false
	}
	return signed{key: x.key, minSize: minSize, filename: filename}, true
}
