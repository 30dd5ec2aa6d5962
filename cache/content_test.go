package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/testkit"
)

const testBlock = 4096

func openTest(t *testing.T, dir string, max int64) *Content {
	t.Helper()
	c, err := OpenContent(ContentOptions{Dir: dir, MaxSize: max, BlockSize: testBlock})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fill writes every block of data into h.
func fill(t *testing.T, h *Handle, data []byte) {
	t.Helper()
	for i := int64(0); i*testBlock < int64(len(data)); i++ {
		off, n := h.BlockRange(i)
		if err := h.WriteBlock(i, data[off:off+n]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBlocksAndRead(t *testing.T) {
	c := openTest(t, t.TempDir(), 0)
	data := testkit.RandBytes(3*testBlock+10, 1)
	m := Meta{ID: 7, Size: int64(len(data)), ModTime: time.Unix(1700000000, 0)}
	h, err := c.Acquire(m)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if got := h.Missing(0, m.Size); len(got) != 4 {
		t.Fatalf("missing %v, want 4 blocks", got)
	}
	if err := h.WriteBlock(3, data[3*testBlock:]); err != nil {
		t.Fatal(err)
	}
	if err := h.WriteBlock(1, data[:10]); err == nil {
		t.Fatal("a short block was accepted")
	}
	if got := h.Missing(testBlock, 3*testBlock); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("missing %v, want [1 2]", got)
	}
	if got := h.Missing(m.Size, 10); got != nil {
		t.Fatalf("missing past the end: %v", got)
	}
	fill(t, h, data)
	if !h.Complete() {
		t.Fatal("not complete after every block")
	}
	buf := make([]byte, 100)
	if _, err := h.ReadAt(buf, testBlock-50); err != nil || !bytes.Equal(buf, data[testBlock-50:testBlock+50]) {
		t.Fatalf("read across a block boundary differs (%v)", err)
	}
	if st := c.Stats(); st.Used != m.Size || st.Entries != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBudgetEvictsLeastRecentlyUsedNotInUse(t *testing.T) {
	c := openTest(t, t.TempDir(), 3*testBlock)
	data := testkit.RandBytes(testBlock, 2)
	acquireFull := func(id int64) *Handle {
		h, err := c.Acquire(Meta{ID: id, Size: testBlock})
		if err != nil {
			t.Fatal(err)
		}
		fill(t, h, data)
		return h
	}
	pinned := acquireFull(1) // held open throughout
	for id := int64(2); id <= 5; id++ {
		acquireFull(id).Release()
	}
	st := c.Stats()
	if st.Used > 3*testBlock {
		t.Fatalf("used %d over the budget %d", st.Used, 3*testBlock)
	}
	if st.Evictions != 2 {
		t.Fatalf("evictions %d, want 2", st.Evictions)
	}
	if !pinned.Complete() {
		t.Fatal("an entry in use was evicted")
	}
	for id, want := range map[int64]bool{2: false, 3: false, 4: true, 5: true} {
		_, err := os.Stat(c.dataPath(id))
		if (err == nil) != want {
			t.Errorf("entry %d on disk = %v, want %v", id, err == nil, want)
		}
	}
	pinned.Release()
}

func TestRemountReusesValidEntriesAndDropsChanged(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, 0)
	data := testkit.RandBytes(2*testBlock+1, 3)
	mtime := time.Unix(1700000000, 0).UTC()
	for _, id := range []int64{10, 11} {
		h, err := c.Acquire(Meta{ID: id, Size: int64(len(data)), ModTime: mtime})
		if err != nil {
			t.Fatal(err)
		}
		fill(t, h, data)
		h.Release()
	}
	half, _ := c.Acquire(Meta{ID: 12, Size: int64(len(data)), ModTime: mtime})
	half.WriteBlock(0, data[:testBlock])
	half.Release()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2 := openTest(t, dir, 0)
	if st := c2.Stats(); st.Entries != 3 || st.Used != 2*int64(len(data))+testBlock {
		t.Fatalf("after reopen: %+v", st)
	}
	same, _ := c2.Acquire(Meta{ID: 10, Size: int64(len(data)), ModTime: mtime})
	if !same.Complete() {
		t.Fatal("an unchanged entry was not reused")
	}
	buf := make([]byte, len(data))
	if _, err := same.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, data) {
		t.Fatalf("reused content differs (%v)", err)
	}
	same.Release()
	changed, _ := c2.Acquire(Meta{ID: 11, Size: int64(len(data)), ModTime: mtime.Add(time.Second)})
	if len(changed.Missing(0, int64(len(data)))) != 3 {
		t.Fatal("a changed file's entry was reused")
	}
	changed.Release()
	partial, _ := c2.Acquire(Meta{ID: 12, Size: int64(len(data)), ModTime: mtime})
	if got := partial.Missing(0, int64(len(data))); len(got) != 2 || got[0] != 1 {
		t.Fatalf("partial entry missing %v, want [1 2]", got)
	}
	partial.Release()
	if st := c2.Stats(); st.Invalidate != 1 {
		t.Fatalf("invalidations %d, want 1", st.Invalidate)
	}
}

func TestModesAndDroppedRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	c := openTest(t, dir, 0)
	h, _ := c.Acquire(Meta{ID: 1, Size: 5})
	if err := h.WriteAll(bytes.NewReader([]byte("hello"))); err != nil {
		t.Fatal(err)
	}
	h.Release()
	if err := h.WriteAll(bytes.NewReader([]byte("toolong"))); err == nil {
		t.Fatal("WriteAll accepted more bytes than the size")
	}
	c.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, c.dataPath(1): 0o600, c.recordPath(1): 0o600} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, st.Mode().Perm(), err, want)
		}
	}
	os.WriteFile(c.recordPath(2), []byte("{not json"), 0o600)
	os.WriteFile(c.dataPath(3), []byte("orphan"), 0o600)
	c2 := openTest(t, dir, 0)
	if st := c2.Stats(); st.Entries != 1 {
		t.Fatalf("entries %d after reopen, want 1", st.Entries)
	}
	for _, p := range []string{c.recordPath(2), c.dataPath(3)} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was kept", p)
		}
	}
}

func TestInvalidateWhileInUse(t *testing.T) {
	c := openTest(t, t.TempDir(), 0)
	old := testkit.RandBytes(testBlock, 4)
	h, _ := c.Acquire(Meta{ID: 1, Size: testBlock})
	fill(t, h, old)
	c.Invalidate(1)
	buf := make([]byte, testBlock)
	if _, err := h.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, old) {
		t.Fatal("a holder lost its content on invalidation")
	}
	h2, _ := c.Acquire(Meta{ID: 1, Size: testBlock})
	if h2.Complete() {
		t.Fatal("the new entry inherited the invalidated content")
	}
	fresh := testkit.RandBytes(testBlock, 5)
	fill(t, h2, fresh)
	h.Release() // the old holder's release must not touch the new entry
	h2.Release()
	h3, _ := c.Acquire(Meta{ID: 1, Size: testBlock})
	defer h3.Release()
	if _, err := h3.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, fresh) || !h3.Complete() {
		t.Fatal("the new entry was damaged by the old one's release")
	}
}

func TestSmallFilesCountTheirBytes(t *testing.T) {
	c := openTest(t, t.TempDir(), 10*testBlock)
	for id := int64(1); id <= 20; id++ {
		h, _ := c.Acquire(Meta{ID: id, Size: 1000})
		if err := h.WriteAll(bytes.NewReader(testkit.RandBytes(1000, id))); err != nil {
			t.Fatal(err)
		}
		h.Release()
	}
	if st := c.Stats(); st.Used != 20000 || st.Evictions != 0 {
		t.Fatalf("20 files of 1000 bytes: %+v", st)
	}
}

func TestMissingDataFileIsNotServedAsZeros(t *testing.T) {
	c := openTest(t, t.TempDir(), 0)
	data := testkit.RandBytes(2*testBlock, 8)
	m := Meta{ID: 3, Size: int64(len(data))}
	h, _ := c.Acquire(m)
	fill(t, h, data)
	h.Release()
	os.Remove(c.dataPath(3)) // a cache cleaner, or another process
	h, err := c.Acquire(m)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if h.Complete() || len(h.Missing(0, m.Size)) != 2 {
		t.Fatal("an entry whose data file vanished still claims its blocks")
	}
	if st := c.Stats(); st.Used != 0 {
		t.Fatalf("used %d after the data vanished", st.Used)
	}
}

func TestCacheFromAnotherBootStartsEmpty(t *testing.T) {
	if bootID() == "" {
		t.Skip("no boot id on this system")
	}
	dir := t.TempDir()
	c := openTest(t, dir, 0)
	h, _ := c.Acquire(Meta{ID: 1, Size: 5})
	h.WriteAll(bytes.NewReader([]byte("hello")))
	h.Release()
	// The daemon dies (no Close): same boot, the entry is reused.
	c2 := openTest(t, dir, 0)
	if c2.Stats().Entries != 1 {
		t.Fatal("a cache left by a crashed daemon on the same boot was dropped")
	}
	// The machine went down: the session file names another boot.
	os.WriteFile(filepath.Join(dir, sessionFile), []byte("another-boot\n"), 0o600)
	c3 := openTest(t, dir, 0)
	if st := c3.Stats(); st.Entries != 0 {
		t.Fatalf("a cache from another boot was reused: %+v", st)
	}
	c3.Close()
	if _, err := os.Stat(filepath.Join(dir, sessionFile)); !os.IsNotExist(err) {
		t.Fatal("a clean close left the session mark")
	}
}
