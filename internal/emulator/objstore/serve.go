package objstore

// Serving presigned requests: GET with Range and PUT, paced, with injected
// faults and S3-style XML errors.

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/internal/emulator/faults"
)

// ServeHTTP serves presigned GET and PUT requests.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &exchange{s: s, w: w, r: r, start: time.Now()}
	defer x.logDone()

	key, keyOK := s.keyFromPath(r)
	x.key = key
	if r.Header.Get("Authorization") != "" {
		x.fail(http.StatusBadRequest, "InvalidArgument",
			"Credentials must not be sent to a presigned URL: the request carries an Authorization header; the URL's signature is the only authentication accepted")
		return
	}
	if !keyOK {
		x.fail(http.StatusForbidden, "SignatureDoesNotMatch", "The request path is not a presigned object path.")
		return
	}
	sr, ok := x.verify()
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodGet:
		x.get(sr)
	case http.MethodPut:
		x.put(sr)
	default: // unreachable: only GET and PUT are signed
		x.fail(http.StatusForbidden, "AccessDenied", "Method not allowed by this URL.")
	}
}

// exchange is one request being served.
type exchange struct {
	s     *Store
	w     http.ResponseWriter
	r     *http.Request
	start time.Time
	key   string
	// filled in while serving, read by logDone
	status int   // 0: no answer (connection cut or client gone)
	bytes  int64 // body bytes sent or received
	fault  faults.Kind
}

// roll draws the request's fault and counts it.
func (x *exchange) roll() {
	x.fault = x.s.faults.Roll(x.s.kinds...)
	if x.fault != faults.None {
		x.s.stats.faults.Add(1)
	}
}

// serverFault answers a Status500 or Status503 fault; false for other kinds.
func (x *exchange) serverFault() bool {
	switch x.fault {
	case faults.Status500:
		x.fail(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case faults.Status503:
		x.fail(http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	default:
		return false
	}
	return true
}

// get serves a GET of sr.key.
func (x *exchange) get(sr signed) {
	f, err := x.s.Open(sr.key)
	switch {
	case errors.Is(err, ErrInvalidKey):
		x.fail(http.StatusBadRequest, "InvalidArgument", "Invalid object key.")
		return
	case errors.Is(err, fs.ErrNotExist):
		x.fail(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	case err != nil:
		x.fail(http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	defer f.Close()
	m, err := x.s.metaOf(sr.key, f)
	if err != nil {
		x.fail(http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	x.roll()
	if x.serverFault() {
		return
	}
	if x.fault == faults.Drop {
		x.hangUp()
		return
	}
	if sleepCtx(x.r.Context(), time.Duration(x.s.latency.Load())) != nil {
		return
	}
	h := x.w.Header()
	h.Set("ETag", m.etag)
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "application/octet-stream")
	if sr.filename != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": sr.filename}))
	}
	gw := &getWriter{ResponseWriter: x.w, x: x, pace: &pacer{rate: x.s.rate.Load()}, cut: -1}
	http.ServeContent(gw, x.r, "", m.fi.ModTime(), f)
}

// errHungUp stops http.ServeContent once the connection was cut under it.
var errHungUp = errors.New("objstore: connection cut by fault injection")

// getWriter wraps the ResponseWriter under http.ServeContent: it paces the
// body, cuts it for a Reset fault, turns a 416 into an XML error and counts.
type getWriter struct {
	http.ResponseWriter
	x       *exchange
	pace    *pacer
	wrote   bool  // WriteHeader called
	swallow bool  // our own body was written (416): drop ServeContent's
	dead    bool  // connection cut
	cut     int64 // body bytes to send before a Reset; -1: no cut
}

// Unwrap lets http.ResponseController reach the connection.
func (g *getWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func (g *getWriter) WriteHeader(code int) {
	if g.wrote {
		return
	}
	g.wrote = true
	x := g.x
	x.status = code
	if code == http.StatusRequestedRangeNotSatisfiable {
		body := errorBody("InvalidRange", "The requested range is not satisfiable", x.key)
		h := g.Header()
		h.Del("X-Content-Type-Options")
		h.Set("Content-Type", "application/xml")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		g.ResponseWriter.WriteHeader(code)
		g.ResponseWriter.Write(body)
		g.swallow = true
		x.s.stats.denied.Add(1)
		return
	}
	ok := code == http.StatusOK || code == http.StatusPartialContent
	if ok && x.fault == faults.Reset {
		cl, _ := strconv.ParseInt(g.Header().Get("Content-Length"), 10, 64)
		if cl <= 0 {
			g.dead = true
			x.hangUp()
			return
		}
		g.cut = int64(x.s.faults.Intn(int(min(cl, 1<<30))))
	}
	if ok && x.fault == faults.None {
		x.s.stats.gets.Add(1)
		if code == http.StatusPartialContent {
			x.s.stats.rangeGets.Add(1)
		}
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *getWriter) Write(p []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.dead {
		return 0, errHungUp
	}
	if g.swallow {
		return len(p), nil
	}
	ctx := g.x.r.Context()
	written := 0
	for len(p) > 0 {
		n := min(len(p), chunkSize)
		cutNow := false
		if g.cut >= 0 && g.x.bytes+int64(n) >= g.cut {
			n, cutNow = int(g.cut-g.x.bytes), true
		}
		if err := g.pace.wait(ctx, n); err != nil {
			return written, err
		}
		m, err := g.ResponseWriter.Write(p[:n])
		written += m
		g.x.bytes += int64(m)
		g.x.s.stats.bytesOut.Add(int64(m))
		if err != nil {
			return written, err
		}
		if cutNow {
			http.NewResponseController(g.ResponseWriter).Flush()
			g.dead = true
			g.x.hangUp()
			return written, errHungUp
		}
		p = p[n:]
	}
	return written, nil
}

// put serves a PUT of sr.key.
func (x *exchange) put(sr signed) {
	x.roll()
	if x.serverFault() {
		return
	}
	ctx := x.r.Context()
	if sleepCtx(ctx, time.Duration(x.s.latency.Load())) != nil {
		return
	}
	body := &pacedReader{r: x.r.Body, ctx: ctx, pace: &pacer{rate: x.s.rate.Load()}, x: x}
	if x.fault == faults.Reset {
		limit := x.r.ContentLength
		if limit <= 0 {
			limit = resetLimit
		}
		io.CopyN(io.Discard, body, int64(x.s.faults.Intn(int(min(limit, 1<<30)))))
		x.hangUp()
		return
	}
	_, etag, err := x.s.store(sr.key, body, sr.minSize)
	var be *bodyError
	switch {
	case errors.Is(err, errTooSmall):
		x.fail(http.StatusBadRequest, "EntityTooSmall", fmt.Sprintf(
			"Your proposed upload is smaller than the minimum allowed size: %d bytes, at least %d required.", x.bytes, sr.minSize))
		return
	case errors.Is(err, ErrInvalidKey):
		x.fail(http.StatusBadRequest, "InvalidArgument", "Invalid object key.")
		return
	case errors.As(err, &be):
		if ctx.Err() != nil {
			return // client gone: nobody to answer
		}
		x.fail(http.StatusBadRequest, "IncompleteBody", "The request body could not be read completely: "+be.err.Error())
		return
	case err != nil:
		x.fail(http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	x.s.stats.puts.Add(1)
	if x.fault == faults.Drop {
		x.hangUp()
		return
	}
	x.w.Header().Set("ETag", etag)
	x.w.WriteHeader(http.StatusOK)
	x.status = http.StatusOK
}

// pacedReader reads a request body at the store's rate, counting bytes.
type pacedReader struct {
	r    io.Reader
	ctx  context.Context
	pace *pacer
	x    *exchange
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if len(b) > chunkSize {
		b = b[:chunkSize]
	}
	n, err := p.r.Read(b)
	p.x.bytes += int64(n)
	p.x.s.stats.bytesIn.Add(int64(n))
	if werr := p.pace.wait(p.ctx, n); werr != nil && err == nil {
		err = werr
	}
	return n, err
}

// hangUp closes the connection without (further) answer: hijacked and closed
// when the server allows it, else by aborting the handler.
func (x *exchange) hangUp() {
	x.status = 0
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// fail answers an S3-style XML error, after reading (up to maxDrain) and
// discarding any request body so that the client sees the answer rather than
// a broken pipe.
func (x *exchange) fail(status int, code, msg string) {
	if x.r.Body != nil {
		n, _ := io.CopyN(io.Discard, x.r.Body, maxDrain)
		x.s.stats.bytesIn.Add(n)
	}
	body := errorBody(code, msg, x.key)
	h := x.w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.w.WriteHeader(status)
	x.w.Write(body)
	x.status = status
	if status >= 400 && status < 500 {
		x.s.stats.denied.Add(1)
	}
}

// logDone writes the request's debug line (never the query string: it holds
// the signature).
func (x *exchange) logDone() {
	f := logrus.Fields{
		"method":   x.r.Method,
		"key":      x.key,
		"status":   x.status,
		"bytes":    x.bytes,
		"duration": time.Since(x.start).Round(time.Microsecond),
	}
	if x.fault != faults.None {
		f["fault"] = x.fault.String()
	}
	x.s.log.WithFields(f).Debug("objstore request")
}

// xmlError is S3's error document.
type xmlError struct {
	XMLName xml.Name `xml:"Error"`
	Code    string
	Message string
	Key     string `xml:",omitempty"`
}

func errorBody(code, msg, key string) []byte {
	b, err := xml.Marshal(xmlError{Code: code, Message: msg, Key: key})
	if err != nil { // cannot happen for strings
		b = []byte("<Error><Code>InternalError</Code></Error>")
	}
	return append([]byte(xml.Header), b...)
}

// pacer spaces a stream so that after n bytes at least n/rate seconds have
// passed since its first chunk.
type pacer struct {
	rate  int64 // bytes/s; 0: unlimited
	start time.Time
	done  int64
}

// wait accounts n more bytes and sleeps until they are due; an error when ctx
// ends first.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p.rate <= 0 {
		return ctx.Err()
	}
	if p.start.IsZero() {
		p.start = time.Now()
	}
	p.done += int64(n)
	due := p.start.Add(time.Duration(float64(p.done) / float64(p.rate) * float64(time.Second)))
	return sleepCtx(ctx, time.Until(due))
}

// sleepCtx sleeps for d, or less when ctx ends (returning its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
