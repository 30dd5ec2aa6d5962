package api_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// A service that accepts connections and never answers, or stops a body
// mid-stream, gives a *StallError within the I/O timeout and the retry
// policy, never a hang; once it answers again, so does the client.
func TestIOTimeoutCutsStalls(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	const timeout = 300 * time.Millisecond
	// The black hole is offline by the reach rules (reach.go), whose calls
	// then fail at once (TestOfflineWhenSilent): this is a test of the cut.
	c := testkit.Client(t, srv, emulator.OrgA, api.Options{IOTimeout: timeout, MaxAttempts: 2,
		BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, NoReach: true})
	ctx := context.Background()
	data := testkit.RandBytes(2<<20, 3)
	up, err := c.Upload(ctx, api.UploadRequest{Name: "big.bin", Size: int64(len(data)), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Emulator.ChangePlay(emulator.PlayChange{StreamRate: ptrTo(int64(4 << 20))})

	// A body stalls mid-stream.
	r, err := c.ReadRange(ctx, up.DownloadURL, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := make([]byte, 128<<10)
	if _, err := io.ReadFull(r, head); err != nil {
		t.Fatal(err)
	}
	srv.Emulator.SetOutage(emulator.OutageBlackHole)
	start := time.Now()
	_, err = io.ReadAll(r)
	took := time.Since(start)
	if !api.IsStall(err) || took > 10*timeout {
		t.Fatalf("stalled body: %v after %v, want a stall error within %v", err, took, 10*timeout)
	}

	// A call that is never answered.
	start = time.Now()
	_, err = c.FileURL(ctx, up.ID)
	if !api.IsStall(err) || time.Since(start) > 10*timeout {
		t.Fatalf("unanswered call: %v after %v", err, time.Since(start))
	}

	// A caller pausing between reads is not a stall; the service is back.
	srv.Emulator.SetOutage(emulator.OutageNone)
	r2, err := c.ReadRange(ctx, up.DownloadURL, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := io.ReadFull(r2, head); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * timeout)
	rest, err := io.ReadAll(r2)
	if err != nil || !bytes.Equal(append(head, rest...), data) {
		t.Fatalf("after a pause: %d bytes, %v", len(head)+len(rest), err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// An API attempt that runs out of time is temporary: retried, and an
// upload that meets it is retried too instead of failing for good.
func TestAttemptTimeoutIsTemporary(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	c := testkit.Client(t, srv, emulator.OrgA, api.Options{AttemptTimeout: 200 * time.Millisecond, IOTimeout: time.Hour,
		MaxAttempts: 2, BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	srv.Emulator.SetOutage(emulator.OutageBlackHole)
	_, err := c.Usage(context.Background())
	if !api.Temporary(err) || !api.IsStall(err) {
		t.Fatalf("an attempt out of time: %v (temporary %v)", err, api.Temporary(err))
	}
	srv.Emulator.SetOutage(emulator.OutageNone)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	if _, err := c.Usage(ctx); api.Temporary(err) {
		t.Fatalf("the caller's own deadline counts as temporary: %v", err)
	}
}
