package api

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// folderServer serves a folder of n entries (ids 1..n) page by page, at
// most size a page whatever per_page asks; insertAfter, when above 0, puts
// an entry at the head of the folder once that many pages were served (the
// folder changing between pages). It counts requests and the most in flight.
type folderServer struct {
	mu          sync.Mutex
	ids         []int
	size        int
	insertAfter int
	appendAfter int // likewise at its end
	served      int
	requests    atomic.Int32
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
}

func (s *folderServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	n := s.inFlight.Add(1)
	for m := s.maxInFlight.Load(); n > m && !s.maxInFlight.CompareAndSwap(m, n); m = s.maxInFlight.Load() {
	}
	defer s.inFlight.Add(-1)
	// A round trip, so that pages overlap: held until 4 are in flight (a
	// client asking for pages at once), 100 ms at most (one asking one
	// after another; the last pages), whatever the machine's load.
	for deadline := time.Now().Add(100 * time.Millisecond); s.maxInFlight.Load() < 4 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	s.mu.Lock()
	ids := s.ids
	lo, hi := min((page-1)*s.size, len(ids)), min(page*s.size, len(ids))
	files := []any{}
	for _, id := range ids[lo:hi] {
		files = append(files, fileObj(id, "f"+strconv.Itoa(id)))
	}
	var next any
	if hi < len(ids) {
		next = page + 1
	}
	count := len(ids)
	s.served++
	if s.served == s.insertAfter {
		s.ids = append([]int{len(ids) + 1}, ids...)
	}
	if s.served == s.appendAfter {
		s.ids = append(ids, len(ids)+1)
	}
	s.mu.Unlock()
	writeJSON(w, 200, okBody(map[string]any{"files": files, "count": count, "page": page, "next_page": next}))
}

func newFolderServer(n, size int) *folderServer {
	s := &folderServer{size: size}
	for i := 1; i <= n; i++ {
		s.ids = append(s.ids, i)
	}
	return s
}

// wantIDs checks that files hold entries 1..n once each, and nothing else
// but (extra) the entries above n, at most once each.
func wantIDs(t *testing.T, files []File, n int, extra ...bool) {
	t.Helper()
	got := map[int64]int{}
	for _, f := range files {
		got[f.ID]++
	}
	for id := 1; id <= n; id++ {
		if got[int64(id)] != 1 {
			t.Fatalf("entry %d listed %d times (%d entries in all, want %d)", id, got[int64(id)], len(files), n)
		}
	}
	for id, k := range got {
		if id > int64(n) && (len(extra) == 0 || k > 1) {
			t.Fatalf("entry %d listed %d times", id, k)
		}
	}
}

// A folder of many pages is listed several pages at once, each page asked
// once, every entry once, kept without spare room; the page size is the
// service's (it answers 100 when 1000 are asked).
func TestCollectFetchesPagesAtOnce(t *testing.T) {
	s := newFolderServer(2550, 100)
	c, _ := newTestClient(t, s, func(o *Options) { o.PerPage = 1000 })
	files, err := c.SharedFiles(context.Background(), ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, files, 2550)
	if cap(files) != len(files) {
		t.Errorf("%d entries kept in room for %d", len(files), cap(files))
	}
	if n := s.requests.Load(); n != 26 {
		t.Errorf("%d requests for 26 pages", n)
	}
	if m := s.maxInFlight.Load(); m < 4 {
		t.Errorf("at most %d pages in flight at once, want several", m)
	}
}

// A folder that changes between pages (an entry put at its head shifts every
// later page by one) is still listed whole, every entry that was there all
// along once (the new one at the head was passed, as in a walk one page at a
// time): the pages stop agreeing and the walk goes on one page at a time.
func TestCollectFolderChangingBetweenPages(t *testing.T) {
	s := newFolderServer(1000, 100)
	s.insertAfter = 2 // after the first two pages, before the parallel ones
	c, _ := newTestClient(t, s)
	files, err := c.SharedFiles(context.Background(), ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, files, 1000, true)

	// An entry added at the end after the first page was served: the count
	// the pages were planned on is one short, and the new entry is on a
	// page past the plan, which the last planned page points at.
	s = newFolderServer(1000, 100)
	s.appendAfter = 1
	c, _ = newTestClient(t, s)
	if files, err = c.SharedFiles(context.Background(), ListFilesRequest{}).Collect(); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, files, 1001)
}

// A short folder takes one request, and its entries are kept without
// spare room (a listing of 100 entries in room for 128 would cost a tree's
// listings a quarter more); two pages take two.
func TestCollectSmallFolders(t *testing.T) {
	for _, c := range []struct{ n, requests int }{{0, 1}, {50, 1}, {100, 1}, {150, 2}} {
		s := newFolderServer(c.n, 100)
		cl, _ := newTestClient(t, s)
		files, err := cl.SharedFiles(context.Background(), ListFilesRequest{}).Collect()
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, files, c.n)
		if c.requests == 1 && cap(files) != len(files) {
			t.Errorf("%d entries kept in room for %d", c.n, cap(files))
		}
		if got := int(s.requests.Load()); got != c.requests {
			t.Errorf("%d entries: %d requests, want %d", c.n, got, c.requests)
		}
	}
}

// A count past any listing the walk would follow (maxPages pages) plans
// no pages at once: the pages are walked one at a time, as next_page says.
func TestCollectCountPastTheLimit(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		files, next := []any{}, any(page+1)
		if page <= 2 {
			files = []any{fileObj(2*page-1, "a"+strconv.Itoa(page)), fileObj(2*page, "b"+strconv.Itoa(page))}
		} else {
			next = nil
		}
		writeJSON(w, 200, okBody(map[string]any{"files": files, "count": int64(1) << 50, "page": page, "next_page": next}))
	}))
	files, err := c.SharedFiles(context.Background(), ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, files, 4)
}
