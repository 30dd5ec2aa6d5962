package cache

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// outageEnv is an emulator whose client never cuts a request itself (the
// I/O timeout under test is the callers'), and a file of 1 MiB on it.
func outageEnv(t *testing.T) (*emulator.Server, *api.Client, Meta, []byte) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	org := srv.Credentials()[0].Name
	client := testkit.Client(t, srv, org, api.Options{IOTimeout: time.Hour, AttemptTimeout: time.Hour})
	root, _ := srv.Emulator.RootID(org, 0)
	data := testkit.RandBytes(1<<20, 5)
	id, err := srv.Emulator.CreateFile(org, 0, root, "f", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Emulator.SetOutage(emulator.OutageNone) })
	return srv, client, Meta{ID: id, Size: int64(len(data))}, data
}

// A listing caller whose I/O timeout passes in a black hole gets a
// *TimeoutError at that time; the listing it waited for goes on, and
// another caller, who waits longer, gets it once the service answers: one
// request for both.
func TestListingCallerGivesUpTheSharedListingGoesOn(t *testing.T) {
	const timeout = 500 * time.Millisecond
	srv, client, _, _ := outageEnv(t)
	d := NewDirs(client, time.Hour, nil)
	key := place.DirKey{Area: place.Area{Kind: place.Shared}}
	srv.Emulator.SetOutage(emulator.OutageBlackHole)
	other := make(chan error, 1)
	go func() {
		l, err := d.List(context.Background(), key)
		if err == nil && len(l.Files) != 1 {
			err = errors.New("wrong listing")
		}
		other <- err
	}()
	ctx, cancel := (&Store{ioTimeout: timeout}).Bound(context.Background())
	defer cancel()
	start := time.Now()
	_, err := d.List(ctx, key)
	took := time.Since(start)
	if AsTimeout(ctx, err) == nil || took > timeout+2*time.Second {
		t.Fatalf("the bounded caller: %v after %v, want a timeout after %v", err, took, timeout)
	}
	select {
	case err := <-other:
		t.Fatalf("the other caller ended in the outage: %v", err)
	case <-time.After(timeout):
	}
	srv.Emulator.SetOutage(emulator.OutageNone)
	select {
	case err := <-other:
		if err != nil {
			t.Fatalf("the other caller, after the outage: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the other caller still waits after the outage")
	}
	if n := d.Stats().Listings; n != 1 {
		t.Errorf("%d listings fetched, want the one both callers shared", n)
	}
}

// A read waits while content comes, even longer than the I/O timeout, and
// gives up once none came for it: with a *TimeoutError, at once again
// while nothing came since, and without cancelling the fetch another reader
// of the file still waits for, which succeeds once the service answers.
func TestReadGivesUpOnlyWhenNoContentComes(t *testing.T) {
	const timeout = 2 * time.Second
	srv, client, m, data := outageEnv(t)
	content := openTest(t, t.TempDir(), 0)
	f, err := NewFetcher(FetcherOptions{Client: client, Content: content, IOTimeout: timeout, Log: testkit.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Open(m)
	b, _ := f.Open(m)
	defer a.Close()
	defer b.Close()

	// A slow link: the block takes longer than the I/O timeout.
	rate := int64(200 << 10)
	srv.Emulator.ChangePlay(emulator.PlayChange{StreamRate: &rate})
	start := time.Now()
	if _, err := a.Ready(context.Background(), 0, m.Size); err != nil {
		t.Fatalf("a slow read: %v after %v", err, time.Since(start))
	}
	if took := time.Since(start); took < timeout {
		t.Fatalf("the slow read took %v only: the link was not slow enough to test it", took)
	}

	content.Invalidate(m.ID)
	a.Close()
	b.Close()
	a, _ = f.Open(m)
	b, _ = f.Open(m)
	srv.Emulator.SetOutage(emulator.OutageBlackHole)
	first := make(chan error, 1)
	start = time.Now()
	go func() {
		_, err := a.Ready(context.Background(), 0, m.Size)
		first <- err
	}()
	time.Sleep(timeout / 2) // b's wait begins later: it would time out later
	other := make(chan error, 1)
	go func() {
		_, err := b.Ready(context.Background(), 0, m.Size)
		other <- err
	}()
	err = <-first
	var te *TimeoutError
	if took := time.Since(start); !errors.As(err, &te) || took > timeout+timeout/4 {
		t.Fatalf("a read in the black hole: %v after %v, want a *TimeoutError after %v", err, took, timeout)
	}
	start = time.Now()
	if _, err = a.Ready(context.Background(), 0, m.Size); !errors.As(err, &te) || time.Since(start) > timeout/4 {
		t.Fatalf("the same read again, still in the outage: %v after %v, want a *TimeoutError at once", err, time.Since(start))
	}
	srv.Emulator.SetOutage(emulator.OutageNone)
	select {
	case err := <-other:
		if err != nil {
			t.Fatalf("the other reader: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other reader still waits after the outage")
	}
	got := make([]byte, m.Size)
	if _, err := b.File().ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the other reader's bytes: %v", err)
	}
}

// Once a caller's I/O timeout cut its wait for a listing, the service counts
// as silent: an expired listing is the answer (at the I/O timeout, then at
// once), one never fetched fails at the I/O timeout, and the fetch that goes
// on refreshes the cache when the service answers, which ends the silence.
func TestExpiredListingAnsweredWhileTheServiceIsSilent(t *testing.T) {
	const timeout = 200 * time.Millisecond
	fake := fakeclient.New(t)
	shared := place.Area{Kind: place.Shared}
	fake.Put(shared, 0, "a", nil)
	sub := fake.Mkdir(shared, 0, "sub")
	clock := emutest.NewClock(time.Unix(1700000000, 0))
	d := NewDirs(fake, time.Minute, clock.Now)
	root := place.DirKey{Area: shared}
	if got := names(t, d, root); !slices.Equal(got, []string{"a", "sub"}) {
		t.Fatalf("before: %v", got)
	}
	bounded := func() (context.Context, context.CancelFunc) {
		return (&Store{ioTimeout: timeout}).Bound(context.Background())
	}
	clock.Advance(2 * time.Minute)
	release := fake.Hold("SharedFiles")
	defer release()
	fake.Put(shared, 0, "b", nil)
	for i, within := range []time.Duration{timeout + time.Second, timeout / 2} {
		ctx, cancel := bounded()
		start := time.Now()
		l, err := d.List(ctx, root)
		took := time.Since(start)
		cancel()
		if err != nil || len(l.Files) != 2 || took > within {
			t.Fatalf("expired listing, try %d: %v, %v after %v (within %v)", i, l, err, took, within)
		}
	}
	ctx, cancel := bounded()
	if _, err := d.List(ctx, place.DirKey{Area: shared, ID: sub.ID}); AsTimeout(ctx, err) == nil {
		t.Fatalf("a folder never listed, in the silence: %v, want the I/O timeout", err)
	}
	cancel()
	if st := d.Stats(); st.Stale != 2 {
		t.Errorf("%d stale answers, want 2", st.Stale)
	}
	release()
	testkit.WaitFor(t, 10*time.Second, "the listing refreshed once the service answers", func() bool {
		l, ok := d.Cached(root)
		return ok && len(l.Files) == 3
	})
	ctx, cancel = bounded()
	defer cancel()
	if l, err := d.List(ctx, root); err != nil || len(l.Files) != 3 {
		t.Fatalf("after the silence: %v, %v", l, err)
	}
}
