package writeback

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// These tests walk a staged file through its states against the in-memory
// fake client, with the errors it injects.

func TestStagedStatesPrintTheirNames(t *testing.T) {
	for st, want := range map[stagedState]string{
		stWaiting: "waiting", stQueued: "queued", stUploading: "uploading",
		stRetrying: "retrying", stFailed: "failed", stUploaded: "uploaded",
	} {
		if got := st.String(); got != want {
			t.Errorf("state %d prints %q, want %q", int(st), got, want)
		}
	}
}

// A permanent failure ends in "failed", is reported once, is not retried on
// its own, and is uploaded by Retry.
func TestStagingPermanentFailureWaitsForRetry(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour})
	tg := stagingShared("full.dat")
	data := testkit.RandBytes(3000, 20)
	st := e.create(s, tg, 0, data)
	e.fake.FailNext("Upload", &api.Error{Op: "POST /files", HTTPStatus: 200, Code: api.CodeStorageFull, Message: "storage full"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Flush(ctx, st); !api.IsStorageFull(err) {
		t.Fatalf("Flush: %v, want 450", err)
	}
	if ents := s.Entries(); len(ents) != 1 || ents[0].State != "failed" || ents[0].Attempts != 1 {
		t.Fatalf("entries %v", ents)
	}
	if f := e.onFailed(); len(f) != 1 || !api.IsStorageFull(f[0]) {
		t.Fatalf("OnFailed calls %v", f)
	}
	time.Sleep(100 * time.Millisecond) // ten backoffs: no retry on its own
	if n := e.fake.Count("Upload"); n != 1 {
		t.Fatalf("%d upload attempts before Retry, want 1", n)
	}
	e.absent(tg)

	e.retryAndWant(s, st, 1, data)
}

// A transient failure is "retrying" after a backoff, is not the file's Err
// nor reported, and a Flush retries it at once and waits through the next.
func TestStagingTransientFailureRetries(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: 10 * time.Millisecond, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	unavailable := &api.Error{Op: "POST /files", HTTPStatus: 503, Code: 503, Message: "unavailable"}
	e.fake.FailNext("Upload", unavailable, unavailable)
	tg := stagingShared("flaky.dat")
	data := testkit.RandBytes(2000, 21)
	st := e.create(s, tg, 0, data)
	testkit.WaitFor(t, 5*time.Second, "a retry to be planned", func() bool {
		ents := s.Entries()
		return len(ents) == 1 && ents[0].State == "retrying" && ents[0].Attempts == 1
	})
	if err := st.Err(); err != nil {
		t.Fatalf("Err() = %v after a transient failure", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Flush(ctx, st); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Count("Upload"); n != 3 {
		t.Fatalf("%d upload attempts, want 3", n)
	}
	if f := e.onFailed(); len(f) != 0 {
		t.Fatalf("OnFailed calls %v for transient failures", f)
	}
	e.want(tg, data)
	e.wantNothingStaged(s)
}

// A crash while a staging copy is being filled leaves nothing to upload: the
// next start finds data without a record and removes it, and the service's
// file is never replaced by a half copy. A failed fill leaves nothing at all.
func TestStagingCreateFromIsInvisibleUntilComplete(t *testing.T) {
	e := newFakeStagingEnv(t)
	s1 := e.open(StagingOptions{WriteBack: time.Hour})
	tg := stagingShared("big.bin")
	old := testkit.RandBytes(300_000, 1)
	id := e.serviceFile(tg, old)
	crashDir := filepath.Join(t.TempDir(), "staging")
	_, err := s1.CreateFrom(tg, id, func(f *os.File) error {
		if _, err := f.WriteAt(old[:100_000], 0); err != nil {
			return err
		}
		if s1.Lookup(tg) != nil || len(s1.Entries()) != 0 {
			t.Error("a copy being filled is visible")
		}
		// The disk as a SIGKILL here would leave it.
		if err := os.CopyFS(crashDir, os.DirFS(e.dir)); err != nil {
			return err
		}
		return errors.New("fill failed")
	})
	if err == nil || s1.Lookup(tg) != nil || len(e.stagedNames()) != 0 {
		t.Fatalf("after a failed fill: %v, staged %v", err, e.stagedNames())
	}
	e.dir = crashDir
	s2 := e.open(StagingOptions{})
	stagingDrain(t, s2, 10*time.Second)
	if n := len(e.onUploaded()); n != 0 || len(e.stagedNames()) != 0 {
		t.Fatalf("after the crash %d uploads, staged %v", n, e.stagedNames())
	}
	e.want(tg, old)

	// A complete fill is staged with the caller's writer open: uploaded
	// after its close.
	st, err := s2.CreateFrom(tg, id, func(f *os.File) error { _, err := f.WriteAt(old, 0); return err })
	if err != nil {
		t.Fatal(err)
	}
	e.writeOpen(st, append(old, 'x'))
	st.CloseWriter()
	stagingDrain(t, s2, 10*time.Second)
	e.want(tg, append(old, 'x'))
}

// A failure the service would give again (a refused request) is not retried
// at the next start, only on Retry; a curable one (storage full) is. The
// record keeps the path the user knows the file by, and the log names it.
func TestStagingFinalFailuresWaitAcrossStarts(t *testing.T) {
	e := newFakeStagingEnv(t)
	s1 := e.open(StagingOptions{WriteBack: time.Hour})
	refused, full := stagingShared("refused.bin"), stagingShared("full.bin")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		tg   place.Target
		code int
	}{{refused, api.CodeBadRequest}, {full, api.CodeStorageFull}} {
		st := e.create(s1, c.tg, 0, []byte(c.tg.Name))
		st.SetPath("shared/docs/" + c.tg.Name)
		e.fake.FailNext("Upload", &api.Error{Op: "POST /files", HTTPStatus: 400, Code: c.code, Message: "no"})
		if err := s1.Flush(ctx, st); err == nil {
			t.Fatalf("%s: uploaded through an injected %d", c.tg.Name, c.code)
		}
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	var logBuf testkit.SyncBuffer
	log := testkit.Quiet()
	log.SetOutput(&logBuf)
	s2 := e.open(StagingOptions{Log: log})
	testkit.WaitFor(t, 10*time.Second, "the curable upload, again", func() bool { return s2.Stats().Uploaded == 1 })
	e.want(full, []byte(full.Name))
	time.Sleep(100 * time.Millisecond)
	if n := e.fake.Count("Upload"); n != 3 {
		t.Fatalf("%d upload attempts, want 3: the refused file was retried at the start", n)
	}
	ents := s2.Entries()
	if len(ents) != 1 || ents[0].State != "failed" || ents[0].Path != "shared/docs/refused.bin" ||
		!strings.Contains(ents[0].String(), "shared/docs/refused.bin") {
		t.Fatalf("entries after the restart: %v", ents)
	}
	if !strings.Contains(logBuf.String(), "shared/docs/refused.bin") || !strings.Contains(logBuf.String(), "not retried") {
		t.Fatalf("the log does not name the file kept back by its path:\n%s", logBuf.String())
	}
	e.retryAndWant(s2, s2.Lookup(refused), 2, []byte(refused.Name))
}

// TestRetryDuringAnAttemptRetriesItsFailure: a retry asked while an attempt
// is under way (the user raised the quota meanwhile) is not lost when that
// attempt fails for good.
func TestRetryDuringAnAttemptRetriesItsFailure(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: 10 * time.Millisecond})
	release := e.fake.Hold("Upload")
	defer release()
	e.fake.FailNext("Upload", &api.Error{Op: "POST /files", HTTPStatus: 200, Code: api.CodeStorageFull, Message: "storage full"})
	tg := stagingShared("quota.bin")
	e.create(s, tg, 0, []byte("retried"))
	testkit.WaitFor(t, 5*time.Second, "the attempt", func() bool { return s.Stats().Uploading == 1 })
	s.Retry() // while the attempt that will fail is under way
	release()
	testkit.WaitFor(t, 5*time.Second, "the upload", func() bool { return s.Stats().Uploaded == 1 })
	e.want(tg, []byte("retried"))
	if n := e.fake.Count("Upload"); n != 2 {
		t.Fatalf("%d upload attempts, want 2", n)
	}
}
