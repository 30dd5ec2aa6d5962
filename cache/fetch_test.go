package cache

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
)

func TestFetcherChunkFitsASmallReadAhead(t *testing.T) {
	c := openTest(t, t.TempDir(), 0)
	f, err := NewFetcher(FetcherOptions{Client: fakeclient.New(t), Content: c, ReadAhead: 4 * testBlock})
	if err != nil {
		t.Fatal(err)
	}
	if f.chunk > f.readAhead/2 || f.chunk < testBlock {
		t.Fatalf("chunk %d with read-ahead %d: read-ahead would never start", f.chunk, f.readAhead)
	}
}

// A read that gives up (Ctrl-C) cancels the fetch only it waited for; a read
// of the same bytes arriving just then fetches them itself and succeeds.
func TestGivingUpDoesNotFailAnotherReader(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, StreamRate: 2 << 20})
	org := srv.Credentials()[0].Name
	client := testkit.Client(t, srv, org, api.Options{})
	root, _ := srv.Emulator.RootID(org, 0)
	data := testkit.RandBytes(1<<20, 3)
	id, err := srv.Emulator.CreateFile(org, 0, root, "f", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	content, err := OpenContent(ContentOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFetcher(FetcherOptions{Client: client, Content: content, Log: testkit.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	m := Meta{ID: id, Size: int64(len(data))}
	a, _ := f.Open(m)
	b, _ := f.Open(m)
	defer a.Close()
	defer b.Close()
	for round := 0; round < 3; round++ {
		content.Invalidate(id)
		actx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		buf := make([]byte, 4096)
		if _, err := a.ReadAt(actx, buf, 0); err == nil {
			t.Fatal("the slow read was not cut short")
		}
		cancel()
		bctx, bcancel := context.WithTimeout(context.Background(), 20*time.Second)
		got := make([]byte, 4096)
		_, err := b.ReadAt(bctx, got, 0)
		bcancel()
		if err != nil || !bytes.Equal(got, data[:4096]) {
			t.Fatalf("round %d: the other reader failed: %v", round, err)
		}
	}
}
