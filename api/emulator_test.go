package api_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// These tests run the upload and download helpers against the in-process
// emulator (its API and its object store on their own listeners).

func startEmulator(t *testing.T, opts emulator.Options) (*emulator.Server, *api.Client) {
	t.Helper()
	if opts.Seed == "" {
		opts.Seed = emulator.SeedDemo
	}
	if opts.StepDelay == 0 {
		opts.StepDelay = 20 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = testkit.Quiet()
	}
	s := emutest.Start(t, opts)
	c := testkit.Client(t, s, emulator.OrgA, api.Options{BaseBackoff: 2 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxAttempts: 10})
	return s, c
}

type memWriterAt struct {
	mu  sync.Mutex
	buf []byte
}

func (w *memWriterAt) WriteAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	copy(w.buf[off:], p)
	return len(p), nil
}

// A 100 MiB upload in parallel parts, downloaded back byte-identical, with ranged reads.
func TestEmulatorUploadDownload(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MiB transfer")
	}
	_, c := startEmulator(t, emulator.Options{})
	ctx := context.Background()
	data := testkit.RandBytes(100<<20+4321, 1)
	var last int64
	res, err := c.Upload(ctx, api.UploadRequest{
		Name: "hundred.bin", ContentType: "application/octet-stream", Size: int64(len(data)),
		Body: bytes.NewReader(data), Parallel: 6,
		Progress: func(done, total int64) {
			if done < last || total != int64(len(data)) {
				t.Errorf("progress %d/%d after %d", done, total, last)
			}
			last = done
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Parts < 4 || last != int64(len(data)) {
		t.Fatalf("%+v, progress %d", res, last)
	}
	files, err := c.SharedFiles(ctx, api.ListFilesRequest{Query: "hundred.bin"}).Collect()
	if err != nil || len(files) != 1 || files[0].ID != res.ID || files[0].Size != int64(len(data)) {
		t.Fatalf("%+v %v", files, err)
	}
	w := &memWriterAt{buf: make([]byte, len(data))}
	n, err := c.DownloadTo(ctx, api.DownloadToRequest{FileID: res.ID, Dst: w, Parallel: 6})
	if err != nil || n != int64(len(data)) || !bytes.Equal(w.buf, data) {
		t.Fatalf("download: %d %v, equal %v", n, err, bytes.Equal(w.buf, data))
	}
	link, err := c.FileURL(ctx, res.ID)
	if err != nil || link.ExpiresAt.IsZero() {
		t.Fatal(link, err)
	}
	for _, r := range []struct{ off, n int64 }{{0, 10}, {5 << 20, 1 << 20}, {int64(len(data)) - 7, 100}} {
		rc, err := c.ReadRange(ctx, link.URL, r.off, r.n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		end := min(r.off+r.n, int64(len(data)))
		if err != nil || !bytes.Equal(got, data[r.off:end]) {
			t.Fatalf("range %+v: %d bytes, %v", r, len(got), err)
		}
	}
	if _, err := c.ReadRange(ctx, link.URL, int64(len(data)), 1); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if st := c.Stats(); st.BytesUploaded != int64(len(data)) || st.Retries != 0 || st.Failures != 1 { // the 416
		t.Fatalf("%+v", st)
	}
}

func TestEmulatorBundle(t *testing.T) {
	s, c := startEmulator(t, emulator.Options{})
	fx := s.Emulator.Fixtures(emulator.OrgA)
	ctx := context.Background()
	rc, job, err := c.Bundle(ctx, api.BundleRequest{DirectoryID: fx.SmallFilesDir, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || job.ID == 0 || job.Status != api.DownloadUploaded {
		t.Fatal(err, job)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, f := range zr.File {
		if !f.FileInfo().IsDir() {
			files++
		}
	}
	if files != 300 {
		t.Fatalf("%d files in the ZIP", files)
	}
	// An empty directory: 4719.
	if _, _, err := c.Bundle(ctx, api.BundleRequest{DirectoryID: fx.EmptyDir}); !api.IsCode(err, api.CodeDirectoryEmpty) {
		t.Fatal(err)
	}
}

// Cancelling while the job is pending aborts it.
func TestEmulatorBundleCancelAborts(t *testing.T) {
	s, c := startEmulator(t, emulator.Options{StepDelay: time.Hour})
	fx := s.Emulator.Fixtures(emulator.OrgA)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, job, err := c.Bundle(ctx, api.BundleRequest{DirectoryID: fx.SmallFilesDir, PollInterval: 20 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || job == nil || job.ID == 0 {
		t.Fatal(err, job)
	}
	st, err := c.DownloadStatus(context.Background(), job.ID, false)
	if err != nil || st.Status != api.DownloadCancelled {
		t.Fatal(st, err)
	}
	if err := c.AbortDownload(context.Background(), job.ID); !api.IsCode(err, api.CodeDownloadNotAbortable) {
		t.Fatal(err)
	}
}

// Lost answers: a directory creation is recovered, a DELETE is done, an
// upload part is retried, a non-idempotent POST is not repeated.
func TestEmulatorLostAnswers(t *testing.T) {
	s, c := startEmulator(t, emulator.Options{Seed: emulator.SeedEmpty})
	e := s.Emulator
	ctx := context.Background()

	e.InjectDrop("POST /files", 1)
	dir, err := c.CreateDirectory(ctx, api.CreateDirectoryRequest{Name: "made twice"})
	if err != nil || !dir.Recovered || dir.ID == 0 {
		t.Fatal(dir, err)
	}
	// A genuine duplicate is an error.
	if _, err := c.CreateDirectory(ctx, api.CreateDirectoryRequest{Name: "made twice"}); !api.IsExists(err) {
		t.Fatal(err)
	}
	e.InjectDrop("DELETE /files/{id}", 1)
	if err := c.DeleteFile(ctx, dir.ID); err != nil {
		t.Fatal(err)
	}

	fx := e.Fixtures(emulator.OrgA)
	before := e.Stats().Requests["POST /usage/assign"]
	e.InjectDrop("POST /usage/assign", 1)
	if _, err := c.AssignUsage(ctx, fx.StoppedMachine, 5); err == nil {
		t.Fatal("a lost answer of assign reported success")
	}
	if got := e.Stats().Requests["POST /usage/assign"] - before; got != 1 {
		t.Fatalf("assign sent %d times", got)
	}
}

// A failed completion (452) deletes nothing twice and reports the code.
func TestEmulatorUploadCompleteError(t *testing.T) {
	s, c := startEmulator(t, emulator.Options{Seed: emulator.SeedEmpty})
	s.Emulator.InjectError("POST /files/{id}/complete", 452, 1)
	data := testkit.RandBytes(1000, 2)
	_, err := c.Upload(context.Background(), api.UploadRequest{Name: "x.bin", Size: int64(len(data)), Body: bytes.NewReader(data)})
	if !api.IsSizeMismatch(err) {
		t.Fatal(err)
	}
	if api.UploadRecord(err) <= 0 { // the record the failed upload made, named
		t.Fatalf("no record id in %v", err)
	}
	files, err := c.SharedFiles(context.Background(), api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "x.bin" {
			t.Fatal("incomplete upload listed")
		}
	}
	// The same name uploads fine afterwards.
	if _, err := c.Upload(context.Background(), api.UploadRequest{Name: "x.bin", Size: int64(len(data)), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
}

// Client operations complete under a 20% fault rate, with retries counted.
func TestEmulatorFaultRate(t *testing.T) {
	s, c := startEmulator(t, emulator.Options{FaultRate: 0.2, FaultSeed: 42})
	fx := s.Emulator.Fixtures(emulator.OrgA)
	ctx := context.Background()
	for range 5 {
		if _, err := c.SharedFiles(ctx, api.ListFilesRequest{ParentID: fx.SmallFilesDir}).Collect(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Usage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	data := testkit.RandBytes(12<<20, 3)
	res, err := c.Upload(ctx, api.UploadRequest{Name: "flaky.bin", Size: int64(len(data)), Body: bytes.NewReader(data), ChunkSize: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	w := &memWriterAt{buf: make([]byte, len(data))}
	if _, err := c.DownloadTo(ctx, api.DownloadToRequest{FileID: res.ID, Dst: w, BlockSize: 1 << 20}); err != nil || !bytes.Equal(w.buf, data) {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Retries == 0 {
		t.Fatalf("no retries under a 20%% fault rate: %+v", st)
	}
	t.Logf("requests %d, retries %d, emulator faults %v", st.Requests, st.Retries, s.Emulator.Stats().Faults)
}
