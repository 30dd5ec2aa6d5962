package api

import (
	"encoding/xml"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Requests to presigned object-storage URLs (upload parts, downloads). They
// go through Client.objects, whose transport never signs and strips any
// credential header; they are logged as host + path only, never with the
// query that carries the URL's signature.

// maxObjectErrorBody bounds the error body read from the object store.
const maxObjectErrorBody = 64 << 10

// objectDo sends one object-store request (one attempt) and logs it.
// Transport errors come back without the URL net/http puts in them.
func (c *Client) objectDo(req *http.Request, attempt int) (*http.Response, error) {
	req.Header.Set("User-Agent", c.opts.UserAgent)
	start := time.Now()
	resp, err := c.objects.Do(req)
	fields := logrus.Fields{"method": req.Method, "url": redactURL(req.URL), "attempt": attempt, "duration": time.Since(start).Round(time.Microsecond)}
	if err != nil {
		err = cleanTransportError(err)
		c.log.WithFields(fields).WithField("error", err).Debug("object request failed")
		return nil, err
	}
	fields["status"] = resp.StatusCode
	c.log.WithFields(fields).Debug("object request")
	return resp, nil
}

// objectErrorOf reads an error answer of the object store (an S3-style XML
// <Error><Code/><Message/></Error>, or anything else) and closes its body.
func (c *Client) objectErrorOf(req *http.Request, resp *http.Response) *ObjectError {
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxObjectErrorBody))
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	_ = xml.Unmarshal(data, &x) // anything not XML leaves both empty
	e := &ObjectError{
		Op: req.Method, URL: redactURL(req.URL), HTTPStatus: resp.StatusCode,
		Code: cleanMessage(x.Code), Message: cleanMessage(x.Message),
	}
	e.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), c.clock())
	return e
}

// drainClose reads a little of what is left of a body (so the connection
// can be reused) and closes it.
func drainClose(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	body.Close()
}

// countingReader reports the running count of bytes read through it.
type countingReader struct {
	r  io.Reader
	n  int64
	on func(n int64)
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.n += int64(n)
		r.on(r.n)
	}
	return n, err
}

// progress sums the bytes done over the pieces of a transfer (parts or
// blocks) and reports the total to a callback. A piece counts the most bytes
// any of its attempts reached, so the reported total never goes back. The
// callback is called with mu held: calls never overlap, and are in order.
type progress struct {
	fn    func(done, total int64)
	total int64

	mu     sync.Mutex
	pieces []int64 // guarded by mu
	done   int64   // guarded by mu
}

func newProgress(fn func(done, total int64), total int64, pieces int) *progress {
	return &progress{fn: fn, total: total, pieces: make([]int64, pieces)}
}

// set records that piece i has n bytes done.
func (p *progress) set(i int, n int64) {
	if p == nil || p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i < 0 || i >= len(p.pieces) || n <= p.pieces[i] {
		return
	}
	p.done += n - p.pieces[i]
	p.pieces[i] = n
	p.fn(p.done, p.total)
}
