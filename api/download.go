package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

const (
	// defaultBlockSize is the block of a parallel download.
	defaultBlockSize = 8 * mib
	// maxURLRenewals bounds how often one DownloadTo renews an expired URL.
	maxURLRenewals = 2
	// Polling of bundle jobs.
	defaultPollInterval    = 500 * time.Millisecond
	defaultMaxPollInterval = 5 * time.Second
	// maxMissingURLPolls bounds the polls of an uploaded job without a URL.
	maxMissingURLPolls = 3
)

// errReaderClosed is returned by reads after Close.
var errReaderClosed = errors.New("api: read from a closed object reader")

// FileURL returns a presigned URL of one file, with its size, name and
// content type, and its expiry when the URL tells it
// (POST /files/download with file_ids [id]).
func (c *Client) FileURL(ctx context.Context, fileID int64) (*DownloadLink, error) {
	l, err := c.CreateDownload(ctx, CreateDownloadRequest{FileIDs: []int64{fileID}})
	if err != nil {
		return nil, err
	}
	if l.URL == "" {
		return nil, &Error{Op: "POST /files/download", HTTPStatus: http.StatusOK, Err: fmt.Errorf("%w: no url for a single file", ErrMalformedResponse)}
	}
	return l, nil
}

// rangeInfo is what an object answer told about the bytes it carries.
type rangeInfo struct {
	end     int64 // exclusive end of the bytes the body will carry; -1 when unknown
	total   int64 // object size; -1 when unknown
	partial bool  // a 206: the store honoured the Range
}

// openRange GETs bytes [off, end) of a presigned URL (end < 0: to the end of
// the object), retrying until the answer's head arrives. It accepts 206 with
// a Content-Range starting at off, and 200 (the whole object: the first off
// bytes are skipped). 416 gives ErrRangeNotSatisfiable (an io.EOF); other
// error answers, an *ObjectError (403: IsURLExpired).
func (c *Client) openRange(ctx context.Context, rawURL string, off, end int64) (io.ReadCloser, rangeInfo, error) {
	var body io.ReadCloser
	var info rangeInfo
	_, err := c.withRetry(ctx, opObjectGet, func(ctx context.Context, attempt int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
		if err != nil {
			return errors.New("invalid download URL")
		}
		if off > 0 || end >= 0 {
			r := "bytes=" + strconv.FormatInt(off, 10) + "-"
			if end >= 0 {
				r += strconv.FormatInt(end-1, 10)
			}
			req.Header.Set("Range", r)
		}
		resp, err := c.objectDo(req, attempt)
		if err != nil {
			return err
		}
		switch resp.StatusCode {
		case http.StatusPartialContent:
			start, last, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
			if !ok || start != off {
				drainClose(resp.Body)
				return &ObjectError{Op: req.Method, URL: redactURL(req.URL), HTTPStatus: resp.StatusCode, Message: "answer's Content-Range does not match the request"}
			}
			info = rangeInfo{end: last + 1, total: total, partial: true}
			if end >= 0 && end < info.end {
				info.end = end
			}
			body = resp.Body
			return nil
		case http.StatusOK:
			info = rangeInfo{end: -1, total: resp.ContentLength}
			if off > 0 {
				skipped, err := io.CopyN(io.Discard, resp.Body, off)
				if err != nil {
					resp.Body.Close()
					if errors.Is(err, io.EOF) && (info.total < 0 || skipped == info.total) {
						return fmt.Errorf("api: GET %s: %w", redactURL(req.URL), ErrRangeNotSatisfiable)
					}
					return err
				}
			}
			if info.total >= 0 {
				info.end = info.total
			}
			if end >= 0 && (info.end < 0 || end < info.end) {
				info.end = end
			}
			body = resp.Body
			return nil
		case http.StatusRequestedRangeNotSatisfiable:
			drainClose(resp.Body)
			return fmt.Errorf("api: GET %s: %w", redactURL(req.URL), ErrRangeNotSatisfiable)
		}
		return c.objectErrorOf(req, resp)
	})
	if err != nil {
		return nil, rangeInfo{}, err
	}
	return body, info, nil
}

// parseContentRange reads "bytes first-last/total" (total may be "*": -1).
func parseContentRange(v string) (first, last, total int64, ok bool) {
	v, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || t <= last {
			return 0, 0, 0, false
		}
		total = t
	}
	return first, last, total, true
}

// objectReader reads bytes [pos, end) of a presigned URL and resumes with a
// new ranged request from where it was when the stream breaks (a reset
// connection, a truncated body), up to Options.MaxAttempts times.
type objectReader struct {
	// dependencies
	c   *Client
	ctx context.Context
	url string
	// mutable state (a reader is not for concurrent use)
	body    io.ReadCloser
	pos     int64 // next object offset to read
	end     int64 // exclusive end; -1 until known
	total   int64 // object size; -1 until known
	resumes int
	err     error // sticky
}

var _ io.ReadCloser = (*objectReader)(nil)

func (r *objectReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for {
		if r.end >= 0 && r.pos >= r.end {
			return 0, io.EOF
		}
		if r.body == nil {
			body, info, err := r.c.openRange(r.ctx, r.url, r.pos, r.end)
			if err != nil {
				r.err = err
				return 0, err
			}
			r.body, r.end = body, info.end
			if info.total >= 0 {
				r.total = info.total
			}
			continue
		}
		q := p
		if r.end >= 0 && int64(len(q)) > r.end-r.pos {
			q = q[:r.end-r.pos]
		}
		n, err := r.body.Read(q)
		r.pos += int64(n)
		r.c.stats.bytesDown.Add(int64(n))
		if err == nil {
			return n, nil
		}
		if err == io.EOF {
			if r.end < 0 || r.pos >= r.end {
				r.end = r.pos
				return n, io.EOF
			}
			err = io.ErrUnexpectedEOF // ended before the bytes it announced
		}
		r.body.Close()
		r.body = nil
		if cerr := r.ctx.Err(); cerr != nil {
			r.err = cerr
			return n, cerr
		}
		if !Temporary(err) || r.resumes >= r.c.opts.MaxAttempts {
			r.err = err
			return n, err
		}
		r.resumes++
		r.c.log.WithField("offset", r.pos).WithField("error", err).Debug("api: object stream broke; resuming")
		if n > 0 {
			return n, nil
		}
	}
}

// Close releases the connection.
func (r *objectReader) Close() error {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
	if r.err == nil {
		r.err = errReaderClosed
	}
	return nil
}

// ReadRange returns a reader of bytes [off, off+n) of the object behind a
// presigned URL (n < 0: to the end of the object), with Range requests. The
// reader ends early (io.EOF) when the object does. The first request is made
// before ReadRange returns, so an expired URL (IsURLExpired) or a start past
// the end (ErrRangeNotSatisfiable, an io.EOF) show at once. A stream that
// breaks is resumed where it stopped.
func (c *Client) ReadRange(ctx context.Context, rawURL string, off, n int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, errors.New("api: negative offset")
	}
	if n == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	end := int64(-1)
	if n > 0 {
		end = off + n
	}
	body, info, err := c.openRange(ctx, rawURL, off, end)
	if err != nil {
		return nil, err
	}
	return &objectReader{c: c, ctx: ctx, url: rawURL, body: body, pos: off, end: info.end, total: info.total}, nil
}

// RangeProbe is the object store's answer to one Range request (ProbeRange).
type RangeProbe struct {
	// Partial: the store answered 206 with a Content-Range starting where
	// asked. Otherwise it sent the whole object (200), whose first bytes
	// were read past: every ranged read would cost a whole download.
	Partial bool
	Total   int64  // the object's size as the answer told it; -1 when it did not
	Data    []byte // bytes [off, off+n) of the object, fewer where it ends first
}

// ProbeRange asks the object store behind a presigned URL for bytes
// [off, off+n) with one Range request (retried like every read) and tells
// whether it honoured the Range, with the bytes (n is at most 1 MiB).
func (c *Client) ProbeRange(ctx context.Context, rawURL string, off, n int64) (*RangeProbe, error) {
	if off < 0 || n <= 0 || n > mib {
		return nil, errors.New("api: probe range: want an offset of 0 or more and 1 to 1 MiB bytes")
	}
	body, info, err := c.openRange(ctx, rawURL, off, off+n)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, n))
	c.stats.bytesDown.Add(int64(len(data)))
	if err != nil {
		return nil, err
	}
	return &RangeProbe{Partial: info.partial, Total: info.total, Data: data}, nil
}

// ReadRangeAt copies bytes [off, off+n) of the object behind a presigned URL
// into w at the same offsets (n < 0: to the end), streaming (memory bounded,
// whatever n). It returns the bytes written; like io.ReaderAt, fewer than n
// come with io.EOF when the object ends first.
func (c *Client) ReadRangeAt(ctx context.Context, rawURL string, w io.WriterAt, off, n int64) (int64, error) {
	written, _, err := c.readRangeAt(ctx, rawURL, w, off, n, nil)
	return written, err
}

// readRangeAt is ReadRangeAt that also returns the object size (-1 when
// unknown) and reports the running count of bytes written to onBytes.
func (c *Client) readRangeAt(ctx context.Context, rawURL string, w io.WriterAt, off, n int64, onBytes func(int64)) (int64, int64, error) {
	rc, err := c.ReadRange(ctx, rawURL, off, n)
	if err != nil {
		return 0, -1, err
	}
	defer rc.Close()
	var src io.Reader = rc
	if onBytes != nil {
		src = &countingReader{r: rc, on: onBytes}
	}
	written, err := io.Copy(io.NewOffsetWriter(w, off), src)
	total := int64(-1)
	if or, ok := rc.(*objectReader); ok {
		total = or.total
	}
	if err != nil {
		return written, total, err
	}
	if n >= 0 && written < n {
		return written, total, io.EOF
	}
	return written, total, nil
}

// DownloadToRequest describes a parallel ranged download with DownloadTo.
type DownloadToRequest struct {
	URL string // presigned URL; "" asks FileURL(FileID) for one
	// FileID, when set, lets DownloadTo renew the URL when the object store
	// refuses it as expired (403), up to twice.
	FileID    int64
	Dst       io.WriterAt // receives byte i of the object at offset i
	Size      int64       // object size; 0: learned from the link or the first block
	BlockSize int64       // bytes per ranged request; 0: 8 MiB
	Parallel  int         // blocks in flight; 0: 4
	// Progress, when set, is called as bytes arrive with the bytes done so
	// far (never decreasing) and the size (-1 while unknown). Calls never
	// overlap; keep it fast.
	Progress func(done, total int64)
}

// urlHolder is the current URL of a download, renewed when it expires.
type urlHolder struct {
	c      *Client
	fileID int64

	mu       sync.Mutex
	url      string // guarded by mu
	gen      int    // guarded by mu; counts renewals
	renewals int    // guarded by mu
}

func (h *urlHolder) get() (string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.url, h.gen
}

// renew replaces the URL of generation gen (once: concurrent callers that
// saw the same generation share the renewal's result). No lock is held
// during the request.
func (h *urlHolder) renew(ctx context.Context, gen int) (bool, error) {
	h.mu.Lock()
	if h.gen != gen {
		h.mu.Unlock()
		return true, nil
	}
	if h.fileID == 0 || h.renewals >= maxURLRenewals {
		h.mu.Unlock()
		return false, nil
	}
	h.renewals++
	h.mu.Unlock()
	l, err := h.c.FileURL(ctx, h.fileID)
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	if h.gen == gen {
		h.url = l.URL
		h.gen++
	}
	h.mu.Unlock()
	return true, nil
}

// fetch copies one block, renewing the URL when the object store refuses it.
func (h *urlHolder) fetch(ctx context.Context, w io.WriterAt, off, n int64, onBytes func(int64)) (int64, int64, error) {
	for {
		u, gen := h.get()
		written, total, err := h.c.readRangeAt(ctx, u, w, off, n, onBytes)
		if err == nil || !IsURLExpired(err) {
			return written, total, err
		}
		renewed, rerr := h.renew(ctx, gen)
		if rerr != nil {
			return written, total, rerr
		}
		if !renewed {
			return written, total, err
		}
	}
}

// DownloadTo downloads an object into req.Dst with parallel ranged requests
// of BlockSize bytes (memory bounded: each block streams into Dst), each
// resumed and retried on its own. It returns the bytes written, which is the
// object size; an object shorter than a given Size is io.ErrUnexpectedEOF.
func (c *Client) DownloadTo(ctx context.Context, req DownloadToRequest) (int64, error) {
	if req.Dst == nil {
		return 0, errors.New("api: download: no destination")
	}
	block := req.BlockSize
	if block <= 0 {
		block = defaultBlockSize
	}
	parallel := req.Parallel
	if parallel <= 0 {
		parallel = defaultParallel
	}
	size := req.Size
	h := &urlHolder{c: c, fileID: req.FileID, url: req.URL}
	if h.url == "" {
		if req.FileID == 0 {
			return 0, errors.New("api: download: neither URL nor file id")
		}
		l, err := c.FileURL(ctx, req.FileID)
		if err != nil {
			return 0, err
		}
		h.url = l.URL
		if size <= 0 && l.Size != nil {
			if *l.Size == 0 {
				return 0, nil
			}
			size = *l.Size
		}
	}
	first := int64(0)
	var firstDone int64
	if size <= 0 {
		// Unknown size: the first block tells it.
		var onFirst func(int64)
		if req.Progress != nil {
			onFirst = func(n int64) { req.Progress(n, -1) }
		}
		written, total, err := h.fetch(ctx, req.Dst, 0, block, onFirst)
		if errors.Is(err, ErrRangeNotSatisfiable) {
			return 0, nil // an empty object
		}
		if err != nil && !(errors.Is(err, io.EOF) && written > 0) {
			return written, err
		}
		if written < block || total < 0 {
			if total < 0 && written == block {
				return written, errors.New("api: download: the object store does not tell the object size")
			}
			return written, nil
		}
		size, first, firstDone = total, 1, written
	}
	blocks := int(ceilDiv(size, block))
	pr := newProgress(req.Progress, size, blocks)
	pr.set(0, firstDone)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i := int(first); i < blocks; i++ {
		off := int64(i) * block
		n := min(block, size-off)
		g.Go(func() error {
			written, _, err := h.fetch(gctx, req.Dst, off, n, func(k int64) { pr.set(i, k) })
			if errors.Is(err, io.EOF) || (err == nil && written < n) {
				return fmt.Errorf("api: download: object shorter than %d bytes: %w", size, io.ErrUnexpectedEOF)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	return size, nil
}

// BundleRequest describes a bundle download with Bundle. Exactly one of
// DirectoryID, FileIDs and TaskID must be set.
type BundleRequest struct {
	DirectoryID int64   // zip a directory and its subdirectories
	FileIDs     []int64 // zip these files (one file gives the file itself, not a ZIP)
	TaskID      int64   // zip a task's output and recording folders
	// PollInterval is the first wait between status polls (default 500ms);
	// it grows by half each poll up to MaxPollInterval (default 5s).
	PollInterval    time.Duration
	MaxPollInterval time.Duration
	// OnJob, when set, is told the job's id as soon as the service gave it
	// (before the job is done), so that callers can show or abort it.
	OnJob func(id int64)
}

// Bundle creates a download job (POST /files/download), polls it with
// backoff until it is uploaded (failed or cancelled give an error wrapping
// ErrDownloadFailed), and returns a stream of its ZIP with the job. When ctx
// is cancelled before the job completes, the job is aborted
// (DELETE /files/downloads/{id}, on a fresh short context) and returned with
// the error (with its ID at least, even when a status poll was cut). When the
// service answers a URL at once (a single file id), the stream is that file
// and the job has ID 0.
func (c *Client) Bundle(ctx context.Context, req BundleRequest) (io.ReadCloser, *DownloadJob, error) {
	link, err := c.CreateDownload(ctx, CreateDownloadRequest{DirectoryID: req.DirectoryID, FileIDs: req.FileIDs, TaskID: req.TaskID})
	if err != nil {
		return nil, nil, err
	}
	var job *DownloadJob
	switch {
	case link.DownloadID != 0:
		if req.OnJob != nil {
			req.OnJob(link.DownloadID)
		}
		if job, err = c.waitDownload(ctx, link.DownloadID, req); err != nil {
			return nil, job, err
		}
	case link.URL != "":
		job = &DownloadJob{Status: DownloadUploaded, DownloadURL: link.URL, Size: link.Size, ExpiresAt: link.ExpiresAt}
	default:
		return nil, nil, &Error{Op: "POST /files/download", HTTPStatus: http.StatusOK, Err: fmt.Errorf("%w: neither url nor download_id", ErrMalformedResponse)}
	}
	rc, err := c.ReadRange(ctx, job.DownloadURL, 0, -1)
	if err != nil && IsURLExpired(err) && job.ID != 0 {
		// The URL expired between the poll and the read: ask for a new one.
		fresh, serr := c.DownloadStatus(ctx, job.ID, true)
		if serr == nil && fresh.DownloadURL != "" {
			job = fresh
			rc, err = c.ReadRange(ctx, job.DownloadURL, 0, -1)
		}
	}
	if err != nil {
		return nil, job, err
	}
	return rc, job, nil
}

// waitDownload polls a job until it is uploaded with a URL. It aborts the job
// when ctx is cancelled or polling fails, and returns it (its id at least)
// with the error.
func (c *Client) waitDownload(ctx context.Context, id int64, req BundleRequest) (*DownloadJob, error) {
	wait := req.PollInterval
	if wait <= 0 {
		wait = defaultPollInterval
	}
	maxWait := req.MaxPollInterval
	if maxWait <= 0 {
		maxWait = defaultMaxPollInterval
	}
	opName := pathf("GET /files/downloads/%d", id)
	missingURL := 0
	last := &DownloadJob{ID: id} // the job as last polled, returned with a failed poll
	for {
		job, err := c.DownloadStatus(ctx, id, true)
		if err != nil {
			c.abortJob(ctx, id)
			return last, err
		}
		last = job
		switch job.Status {
		case DownloadUploaded:
			if job.DownloadURL != "" {
				return job, nil
			}
			if missingURL++; missingURL > maxMissingURLPolls {
				return job, &Error{Op: opName, HTTPStatus: http.StatusOK, Err: fmt.Errorf("%w: uploaded job without download_url", ErrMalformedResponse)}
			}
		case DownloadFailed, DownloadCancelled:
			return job, &Error{Op: opName, HTTPStatus: http.StatusOK, Err: fmt.Errorf("%w: job %d is %s", ErrDownloadFailed, id, job.Status)}
		}
		// Sleep wait ± 20%.
		d := wait - wait/5 + rand.N(wait*2/5+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			c.abortJob(ctx, id)
			return job, &Error{Op: opName, Err: ctx.Err()}
		case <-t.C:
		}
		wait = min(wait*3/2, maxWait)
	}
}

// abortJob aborts a download job, best effort, on a fresh short context.
func (c *Client) abortJob(ctx context.Context, id int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout/3)
	defer cancel()
	err := c.AbortDownload(ctx, id)
	switch {
	case err == nil:
		c.log.WithField("download_id", id).Debug("api: download job aborted")
	case IsCode(err, CodeDownloadNotAbortable), IsNotFound(err):
	default:
		c.log.WithField("download_id", id).WithField("error", err).Warn("api: could not abort the download job")
	}
}
