package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

const (
	mib = 1 << 20
	// minPartSize is the object store's minimum for every part but the last.
	minPartSize = 5 * mib
	// defaultChunkMB is the contract's default part size (250 MB).
	defaultChunkMB = 250
	// maxUploadParts is the object store's limit of parts per upload.
	maxUploadParts = 10000
	// defaultParallel is the default number of parts or blocks in flight.
	defaultParallel = 4
	// cleanupTimeout bounds the best-effort requests made after a failure
	// (deleting an incomplete upload, aborting a job), on a fresh context.
	cleanupTimeout = 30 * time.Second
)

// UploadRequest describes a file to upload with Upload.
type UploadRequest struct {
	MachineID   int64  // 0: the organization's shared storage
	ParentID    int64  // 0: the root
	Name        string // file name
	ContentType string // MIME type; "" sends application/octet-stream
	Size        int64  // bytes to upload: Body's bytes [0, Size)
	// ChunkSize is the part size in bytes, rounded up to whole MiB (the
	// request gives it in MB) and to at least 5 MiB. Zero chooses it from
	// Size: at least 8 MiB, at most the contract's default 250 MB, about
	// two parts per parallel stream, and never more than 10000 parts.
	ChunkSize int64
	Overwrite bool        // replace a file of the same name
	Body      io.ReaderAt // read part by part, never whole; must stay valid until Upload returns
	Parallel  int         // parts in flight; 0: 4
	// Slots, when set, is shared by uploads at once: each attempt to send a
	// part of an upload of several holds one (not its waits between
	// attempts), so that many files together keep at most its size of
	// parts in flight (Parallel still bounds each file's). An upload of one
	// part takes none: a small file never waits behind a big one's parts.
	Slots *semaphore.Weighted
	// Progress, when set, is called as bytes are sent, with the bytes done
	// so far (never decreasing) and Size. Calls never overlap; keep it fast.
	Progress func(done, total int64)
	// Created, when set, is called with the file's id once the service
	// made its record (POST /files answered), before a byte is sent: the
	// id the file has on the service if the upload completes, though its
	// answer may never come (a caller that crashes meanwhile can still
	// know the file for its own).
	Created func(id int64)
}

// UploadResult is the outcome of a successful Upload.
type UploadResult struct {
	ID          int64  // the file's id
	UID         string // from completion
	DownloadURL string // presigned, from completion; typically valid 1 hour
	Size        int64
	Parts       int   // parts uploaded
	PartSize    int64 // bytes per part (the last may be shorter)
}

// UploadError is the error of an Upload that failed after the service made
// the file's record (POST /files). ID is that record: when the failure was
// the client's (its context ended while the completion was in flight), the
// service may have completed it, and with Overwrite Upload then leaves it
// in place; a caller that no longer wants the file deletes it.
type UploadError struct {
	ID  int64
	Err error
}

func (e *UploadError) Error() string { return e.Err.Error() }
func (e *UploadError) Unwrap() error { return e.Err }

// UploadRecord returns the id of the file record a failed Upload made (an
// *UploadError's ID), or 0.
func UploadRecord(err error) int64 {
	var e *UploadError
	if errors.As(err, &e) {
		return e.ID
	}
	return 0
}

// chooseChunkSize picks the part size of an upload of size bytes.
func chooseChunkSize(size int64, parallel int) int64 {
	if parallel < 1 {
		parallel = 1
	}
	c := ceilDiv(size, int64(2*parallel))
	c = max(c, 8*mib)
	c = min(c, defaultChunkMB*mib)
	c = max(c, ceilDiv(size, maxUploadParts))
	return roundUpMiB(c)
}

func roundUpMiB(n int64) int64 { return ceilDiv(n, mib) * mib }

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// partsFor is the number of parts of size bytes cut in chunk-byte parts.
func partsFor(size, chunk int64) int64 { return max(1, ceilDiv(size, chunk)) }

// Units of chunk_size: MiB (the emulator's reading) or decimal MB.
const (
	unitMiB = mib
	unitMB  = 1_000_000
)

// planPartSize finds the part boundaries of an upload: parts of the chunk
// size the service answered, or else the one requested, read as MiB or as
// decimal MB, whichever cuts size into exactly n parts (n = the number of
// upload URLs); when both do, in unit (the one an earlier upload told, MiB
// until one did); failing both, n even parts. told is the unit the count
// proved (the only one that fits), or 0.
func planPartSize(size, answeredMB, requestedMB int64, n int, unit int64) (part, told int64, err error) {
	if n <= 0 {
		return 0, 0, errors.New("no upload URLs in the answer")
	}
	units := []int64{unitMiB, unitMB}
	if unit == unitMB {
		units = []int64{unitMB, unitMiB}
	}
	for _, mb := range []int64{answeredMB, requestedMB} {
		if mb <= 0 {
			continue
		}
		var fit []int64
		for _, u := range units {
			if partsFor(size, mb*u) == int64(n) {
				fit = append(fit, u)
			}
		}
		switch len(fit) {
		case 1:
			return mb * fit[0], fit[0], nil
		case 2:
			return mb * fit[0], 0, nil
		}
	}
	if even := ceilDiv(size, int64(n)); even > 0 && partsFor(size, even) == int64(n) {
		return even, 0, nil
	}
	if size == 0 && n == 1 {
		return 0, 0, nil
	}
	return 0, 0, fmt.Errorf("%d upload URLs do not fit a file of %d bytes", n, size)
}

// Upload uploads a file: POST /files, then the parts PUT in parallel to
// their presigned URLs (each streamed from Body through an io.SectionReader,
// each retried on its own with a fresh reader, each ETag kept exactly as
// returned), then POST /files/{id}/complete. On a failure after the file
// record was created it deletes the incomplete record (best effort, logged;
// with Overwrite, only when the record is not the listed, completed file
// being replaced) and returns the error as an *UploadError naming the record.
func (c *Client) Upload(ctx context.Context, req UploadRequest) (*UploadResult, error) {
	if req.Size < 0 {
		return nil, errors.New("api: upload: negative size")
	}
	if req.Body == nil && req.Size > 0 {
		return nil, errors.New("api: upload: no body")
	}
	parallel := req.Parallel
	if parallel <= 0 {
		parallel = defaultParallel
	}
	chunk := req.ChunkSize
	if chunk <= 0 {
		chunk = chooseChunkSize(req.Size, parallel)
	} else {
		chunk = roundUpMiB(max(chunk, minPartSize))
	}
	chunkMB := chunk / mib
	init, err := c.CreateFile(ctx, CreateFileRequest{
		MachineID: req.MachineID, ParentID: req.ParentID, Name: req.Name, ContentType: req.ContentType,
		Size: req.Size, ChunkSizeMB: chunkMB, Overwrite: req.Overwrite,
	})
	if err != nil {
		return nil, err
	}
	if req.Created != nil {
		req.Created(init.ID)
	}
	fail := func(err error) (*UploadResult, error) {
		c.abandonUpload(ctx, req, init.ID, err)
		return nil, &UploadError{ID: init.ID, Err: err}
	}
	urls := slices.Clone(init.UploadURLs)
	slices.SortFunc(urls, func(a, b UploadURL) int { return a.PartNumber - b.PartNumber })
	for i, u := range urls {
		if u.PartNumber != i+1 || u.URL == "" {
			return fail(&Error{Op: "POST /files", HTTPStatus: 200, Err: fmt.Errorf("%w: upload URLs are not parts 1..%d", ErrMalformedResponse, len(urls))})
		}
	}
	partSize := int64(0)
	if len(urls) > 0 || req.Size > 0 {
		var told int64
		if partSize, told, err = planPartSize(req.Size, init.ChunkSize, chunkMB, len(urls), c.dialect.chunkUnit.Load()); err != nil {
			return fail(&Error{Op: "POST /files", HTTPStatus: 200, Err: fmt.Errorf("%w: %v", ErrMalformedResponse, err)})
		}
		if told != 0 && c.dialect.chunkUnit.Swap(told) != told {
			c.log.WithField("unit_bytes", told).Debug("api: the number of upload URLs tells the unit of chunk_size")
		}
	}
	pr := newProgress(req.Progress, req.Size, len(urls))
	etags := make([]string, len(urls))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	slots := req.Slots
	if len(urls) < 2 {
		slots = nil
	}
	for i, u := range urls {
		off := int64(i) * partSize
		n := min(partSize, req.Size-off)
		g.Go(func() error {
			etag, err := c.putPart(gctx, slots, u.URL, req.Body, off, n, func(done int64) { pr.set(i, done) })
			if err != nil {
				return fmt.Errorf("api: upload %q part %d: %w", req.Name, u.PartNumber, err)
			}
			etags[i] = etag
			pr.set(i, n)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("api: upload %q: %w", req.Name, ctx.Err())
		}
		return fail(err)
	}
	parts := make([]Part, len(urls))
	for i, u := range urls {
		parts[i] = Part{PartNumber: u.PartNumber, ETag: etags[i]}
	}
	done, err := c.CompleteFile(ctx, init.ID, parts)
	if err != nil {
		return fail(err)
	}
	return &UploadResult{
		ID: init.ID, UID: done.UID, DownloadURL: done.DownloadURL, Size: req.Size,
		Parts: len(urls), PartSize: partSize,
	}, nil
}

// putPart PUTs body's bytes [off, off+n) to a part URL, retrying on its own
// with a fresh reader for each attempt, and returns the ETag exactly as the
// object store answered it. Each attempt holds one of slots (nil: none).
func (c *Client) putPart(ctx context.Context, slots *semaphore.Weighted, rawURL string, body io.ReaderAt, off, n int64, onBytes func(int64)) (string, error) {
	var etag string
	_, err := c.withRetry(ctx, opObjectPutPart, func(ctx context.Context, attempt int) error {
		if slots != nil {
			if err := slots.Acquire(ctx, 1); err != nil {
				return err
			}
			defer slots.Release(1)
		}
		var rd io.Reader = http.NoBody
		if n > 0 {
			rd = &countingReader{r: io.NewSectionReader(body, off, n), on: onBytes}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, rawURL, rd)
		if err != nil {
			return errors.New("invalid upload URL")
		}
		req.ContentLength = n
		req.GetBody = func() (io.ReadCloser, error) {
			if n == 0 {
				return http.NoBody, nil
			}
			return io.NopCloser(io.NewSectionReader(body, off, n)), nil
		}
		resp, err := c.objectDo(req, attempt)
		if err != nil {
			return err
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return c.objectErrorOf(req, resp)
		}
		drainClose(resp.Body)
		etag = resp.Header.Get("ETag")
		if etag == "" {
			return &ObjectError{Op: req.Method, URL: redactURL(req.URL), HTTPStatus: resp.StatusCode, Message: "answer without an ETag"}
		}
		c.stats.bytesUp.Add(n)
		return nil
	})
	return etag, err
}

// abandonUpload deletes the incomplete record of a failed upload, best
// effort, on a fresh context. With Overwrite the record's id could be the
// replaced file's, so it is deleted only when the folder does not list it
// as a file (an incomplete upload is not listed).
func (c *Client) abandonUpload(ctx context.Context, req UploadRequest, id int64, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	log := c.log.WithField("id", id).WithField("cause", cause)
	if req.Overwrite {
		f, err := c.findChild(ctx, req.MachineID, req.ParentID, req.Name)
		if err != nil || (f != nil && f.ID == id) {
			log.Debug("api: upload failed; incomplete record left in place (overwrite)")
			return
		}
	}
	if err := c.DeleteFile(ctx, id); err != nil && !IsNotFound(err) {
		log.WithField("error", err).Warn("api: upload failed; could not delete the incomplete file record")
		return
	}
	log.Debug("api: upload failed; incomplete file record deleted")
}
