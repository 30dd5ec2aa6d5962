package api

import (
	"context"
	"fmt"
	"net/url"

	"golang.org/x/sync/errgroup"
)

// PageStreams is how many list pages of one folder Collect fetches at once
// once the first page told it how many there are.
const PageStreams = 16

// filesPage is one page of a folder listing.
type filesPage struct {
	Files    []File      `json:"files"`
	Current  *File       `json:"current"`
	Count    lenientInt  `json:"count"`
	NextPage *lenientInt `json:"next_page"`
}

// page fetches page number page of the listing; the first page's record of
// the folder and count are kept (Current, Count).
func (l *FileList) page(ctx context.Context, page int64) (filesPage, error) {
	var p filesPage
	cl := call{op: l.op, method: "GET", path: l.path, query: l.c.pageQuery(l.query, page), out: &p}
	var err error
	if l.suffix != "" {
		var learn *call
		if l.query.Has("task_id") {
			// A task's folders: only the /machines form documents
			// task_id, so the form is learned from a plain listing.
			plain := call{op: l.op, method: "GET", query: url.Values{"parent_id": {"0"}, "per_page": {"1"}}}
			learn = &plain
		}
		_, err = l.c.computerCall(ctx, cl, l.machineID, l.suffix, learn)
	} else {
		_, err = l.c.do(ctx, cl)
	}
	if err == nil && page == 1 {
		l.mu.Lock()
		l.current, l.count = p.Current, int64(p.Count)
		l.mu.Unlock()
	}
	return p, err
}

// Collect returns all the folder's entries. A folder of many pages is
// fetched PageStreams pages at once: the first page gives the item count and
// the page size the service keeps to (its per_page may be smaller than the
// one asked), so the number of pages is known once the second page showed
// that the service numbers its pages as asked (new entries, a full page,
// next_page 3). Every page is then checked as the sequential walk would:
// each one but the last full and pointing at the next, the last pointing
// nowhere. Where they stop agreeing (the listing changed meanwhile), or when
// the first two pages give nothing to go on, the walk goes on one page at a
// time, following next_page with paginate's guards against a service that
// repeats itself; an entry seen twice is kept once.
func (l *FileList) Collect() ([]File, error) {
	w := &pageWalk{l: l, seen: map[int64]bool{}, visited: map[int64]bool{}}
	first, err := w.fetch(1)
	if err != nil {
		return nil, err
	}
	size, count := int64(len(first.Files)), int64(first.Count)
	if !w.follows(first, 1, size) || count <= size {
		return w.rest(first, 1)
	}
	second, err := w.fetch(2)
	if err != nil {
		return w.out, err
	}
	pages := (count + size - 1) / size
	if pages <= 2 || !w.follows(second, 2, size) {
		return w.rest(second, 2)
	}
	got := make([]filesPage, pages+1) // by page number, from 3
	g, ctx := errgroup.WithContext(l.ctx)
	g.SetLimit(PageStreams)
	for n := int64(3); n <= pages; n++ {
		g.Go(func() error {
			p, err := l.page(ctx, n)
			got[n] = p
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return w.out, err
	}
	for n := int64(3); n <= pages; n++ {
		w.visited[n] = true
		w.add(got[n].Files)
		if n == pages || !w.follows(got[n], n, size) {
			return w.rest(got[n], n)
		}
	}
	return w.out, nil // not reached
}

// pageWalk gathers a listing's pages.
type pageWalk struct {
	l       *FileList
	seen    map[int64]bool // the ids gathered
	visited map[int64]bool // the page numbers fetched
	out     []File
	fresh   int // entries of the latest page not seen before
}

// fetch fetches page n and gathers its entries.
func (w *pageWalk) fetch(n int64) (filesPage, error) {
	p, err := w.l.page(w.l.ctx, n)
	if err == nil {
		w.visited[n] = true
		w.add(p.Files)
	}
	return p, err
}

// add gathers entries, each id once.
func (w *pageWalk) add(fs []File) {
	w.fresh = 0
	for _, f := range fs {
		if f.ID != 0 {
			if w.seen[f.ID] {
				continue
			}
			w.seen[f.ID] = true
		}
		w.fresh++
		w.out = append(w.out, f)
	}
}

// follows reports whether page n, just gathered, is what a listing numbered
// as asked gives: full, all new, pointing at page n+1.
func (w *pageWalk) follows(p filesPage, n, size int64) bool {
	return size > 0 && int64(len(p.Files)) == size && int64(w.fresh) == size &&
		p.NextPage != nil && int64(*p.NextPage) == n+1
}

// rest goes on from page n, just gathered, one page at a time, following
// next_page: the end at a page pointing nowhere or empty; an error at a
// next_page already visited or behind, or a page of nothing new.
func (w *pageWalk) rest(p filesPage, n int64) ([]File, error) {
	for {
		if p.NextPage == nil || *p.NextPage <= 0 || len(p.Files) == 0 {
			return w.out, nil
		}
		next := int64(*p.NextPage)
		if w.visited[next] || next <= n || w.fresh == 0 || len(w.visited) >= maxPages {
			return w.out, &Error{Op: "GET " + w.l.path, Err: fmt.Errorf("%w (page %d answered next_page %d)", ErrPaginationLoop, n, next)}
		}
		var err error
		if p, err = w.fetch(next); err != nil {
			return w.out, err
		}
		n = next
	}
}
