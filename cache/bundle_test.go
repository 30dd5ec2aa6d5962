package cache

import (
	"slices"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// A bundle asks for its files in the listing's order, the order readdir
// shows them in and cp -r reads them in: the ZIP comes in that order, so
// that the reader is served while the ZIP is unpacked. Its ZIP comes in
// ranges of an eighth of its files' bytes (at least 1 MiB), eight at once:
// the ZIP of 1,000 files of 8 KiB came in one 8 MiB range before.
func TestBundleAsksInTheListingsOrderAndFetchesInRanges(t *testing.T) {
	fake := fakeclient.New(t)
	content, err := OpenContent(ContentOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { content.Close() })
	b, err := NewBundler(BundleOptions{Client: fake, Content: content, TempDir: t.TempDir(), PollInterval: 10 * time.Millisecond, Log: testkit.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	shared := place.Area{Kind: place.Shared}
	var listing []api.File
	for i := range 40 {
		// Created in one order, listed in another (by name, backwards).
		listing = append(listing, fake.Put(shared, 0, string(rune('z'-i%26))+string(rune('a'+i)), testkit.RandBytes(100, int64(i))))
	}
	slices.Reverse(listing)
	dir := place.DirKey{Area: shared}
	b.Opened(dir, listing, listing[0])
	b.Opened(dir, listing, listing[1])
	testkit.WaitFor(t, 5*time.Second, "the bundle", func() bool { return b.Stats().Completed == 1 })
	jobs, downloads := fake.Bundles()
	var want []int64
	for _, f := range listing {
		want = append(want, f.ID)
	}
	if len(jobs) != 1 {
		t.Fatalf("bundle jobs %v, want one", jobs)
	}
	for _, ids := range jobs {
		if !slices.Equal(ids, want) {
			t.Fatalf("the bundle asks for %v, want the listing's order %v", ids, want)
		}
	}
	if len(downloads) != 1 || downloads[0].Parallel != 8 || downloads[0].BlockSize != 1<<20 {
		t.Fatalf("ZIP downloads %+v, want one of 8 streams of 1 MiB", downloads)
	}
	if got := bundleBlock(64 << 20); got != 8<<20 {
		t.Errorf("block of 64 MiB: %d", got)
	}
	if got := bundleBlock(32 << 20); got != 4<<20 {
		t.Errorf("block of 32 MiB: %d", got)
	}
	for _, f := range listing {
		if !content.Complete(Meta{ID: f.ID, Size: f.Size, ModTime: f.LastModified}) {
			t.Fatalf("%s not in the cache after the bundle", f.Name)
		}
	}
}
