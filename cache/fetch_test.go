package cache

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
)

// A read that gives up (Ctrl-C) cancels the fetch only it waited for; a read
// of the same bytes arriving just then fetches them itself and succeeds.
func TestGivingUpDoesNotFailAnotherReader(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, StreamRate: 2 << 20})
	c := srv.Credentials()[0]
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	client, err := api.New(api.Credentials{Endpoint: c.Endpoint, Key: c.Key, Secret: c.Secret}, api.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := srv.Emulator.RootID(c.Name, 0)
	data := randBytes(1<<20, 3)
	id, err := srv.Emulator.CreateFile(c.Name, 0, root, "f", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	content, err := OpenContent(ContentOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFetcher(FetcherOptions{Client: client, Content: content, Log: quiet})
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
