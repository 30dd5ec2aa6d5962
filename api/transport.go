package api

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

var (
	_ http.RoundTripper = (*signer)(nil)
	_ http.RoundTripper = (*presignedTransport)(nil)
	_ fmt.Stringer      = (*signer)(nil)
)

// signer is the RoundTripper of API requests: it signs every request it
// sends with a fresh nonce and timestamp, so each attempt of a retried call
// carries a new signature. It signs only requests to the endpoint's scheme
// and host, and refuses any other destination, so that a redirect or a
// misrouted URL can never carry the credentials elsewhere.
type signer struct {
	// dependencies
	base  http.RoundTripper
	clock func() time.Time
	// constants
	key, secret  string
	scheme, host string
}

// String describes the signer without its secret.
func (s *signer) String() string { return "api.signer{" + s.scheme + "://" + s.host + "}" }

// GoString describes the signer without its secret.
func (s *signer) GoString() string { return s.String() }

// RoundTrip signs req and sends it through the base transport. It does not
// modify req: the signed request is a clone.
func (s *signer) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readRequestBody(req)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(req.URL.Scheme, s.scheme) || !strings.EqualFold(req.URL.Host, s.host) {
		return nil, fmt.Errorf("api: refusing to sign a request to %s://%s, not the API endpoint", req.URL.Scheme, req.URL.Host)
	}
	nonce := newNonce()
	ts := strconv.FormatInt(s.clock().UnixMilli(), 10)
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", AuthorizationHeader(s.key, s.secret, req.Method, req.URL.Path, ts, nonce, body))
	r.Header.Set("Content-Type", "application/json")
	if len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	} else {
		r.Body, r.GetBody, r.ContentLength = nil, nil, 0
		if s.scheme == "http" {
			r.Body = noReplayBody{}
		}
	}
	return s.base.RoundTrip(r)
}

// noReplayBody is the body of signed requests that have none, over plain
// HTTP/1. net/http's Transport silently sends a GET again when a reused
// connection breaks after the request was written; sent again, it would
// carry the same nonce, which the service refuses as a replay (it may have
// received the first). A request whose body is not nil and has no GetBody is
// not replayable, so the transport leaves the retry to withRetry, which
// signs every attempt afresh; HTTP/1 sends an empty body of a GET, HEAD or
// DELETE as no body. Over https (where HTTP/2 would send an empty DATA frame
// for it) the body stays nil, and withRetry's one retry of a 401 for safe
// operations covers a replay refused by the service.
type noReplayBody struct{}

func (noReplayBody) Read([]byte) (int, error) { return 0, io.EOF }
func (noReplayBody) Close() error             { return nil }

// readRequestBody returns the bytes of req's body (to sign them) and closes
// it, as a RoundTripper must.
func readRequestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	return io.ReadAll(req.Body)
}

// newNonce returns a random (version 4) UUID from crypto/rand.
func newNonce() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// presignedTransport is the RoundTripper of presigned object-storage URLs.
// The URL carries its own signature; this transport makes sure that no
// credential of any kind is sent with it: no Authorization, no cookies.
type presignedTransport struct {
	base http.RoundTripper
}

// RoundTrip strips credential headers and sends req through the base transport.
func (t *presignedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.User != nil || req.Header.Get("Authorization") != "" || req.Header.Get("Cookie") != "" || req.Header.Get("Proxy-Authorization") != "" {
		r := req.Clone(req.Context())
		r.URL.User = nil
		r.Header.Del("Authorization")
		r.Header.Del("Proxy-Authorization")
		r.Header.Del("Cookie")
		req = r
	}
	return t.base.RoundTrip(req)
}

// redactURL gives the loggable form of a presigned URL: host and path,
// never the query (which carries the signature) nor user info.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Host + u.EscapedPath()
}

// cleanTransportError strips the URL that net/http puts in its errors (it
// would carry a presigned URL's signature) and keeps the cause.
func cleanTransportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// endpointURL parses an endpoint and returns its base URL, with the
// /organization-management/v1 prefix added when not already there.
func endpointURL(endpoint string) (*url.URL, error) {
	endpoint = strings.TrimSpace(endpoint)
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, errors.New("api: credentials: the endpoint is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("api: credentials: the endpoint must be an http or https URL")
	}
	if u.Host == "" {
		return nil, errors.New("api: credentials: the endpoint has no host")
	}
	if u.User != nil {
		return nil, errors.New("api: credentials: the endpoint must not carry user information")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("api: credentials: the endpoint must not carry a query or fragment")
	}
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, PathPrefix) {
		p += PathPrefix
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}, nil
}
