package api

import (
	"context"
	"fmt"
	"iter"
	"net/url"
	"strconv"
)

// maxPages bounds the pages one listing follows, whatever the service says.
const maxPages = 1 << 20

// pageFetch fetches page number page (from 1) and returns its items and the
// number of the next page (nil or ≤ 0 at the end).
type pageFetch[T any] func(ctx context.Context, page int64) (items []T, next *lenientInt, err error)

// paginate returns an iterator over the items of all pages, following
// next_page from page 1. It guards against a service that repeats itself: an
// item whose id (by idOf; 0 means no id) was already yielded is skipped (a
// listing that shifted between pages), and a next_page already visited or a
// non-empty page of nothing but such repeats ends the listing with an error
// wrapping ErrPaginationLoop. An empty page ends the listing. An error ends
// the iteration after being yielded once.
func paginate[T any](ctx context.Context, opName string, fetch pageFetch[T], idOf func(*T) int64) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		newPageWalk(opName, idOf).follow(ctx, fetch, 1, yield)
	}
}

// pageWalk is what a walk over a listing's pages has seen: the ids yielded
// and the page numbers fetched (paginate, and FileList.Collect when its
// pages stop agreeing).
type pageWalk[T any] struct {
	op      string
	idOf    func(*T) int64
	seen    map[int64]struct{}
	visited map[int64]bool
}

func newPageWalk[T any](op string, idOf func(*T) int64) *pageWalk[T] {
	return &pageWalk[T]{op: op, idOf: idOf, seen: map[int64]struct{}{}, visited: map[int64]bool{}}
}

// take records page as fetched and yields its items not seen before; it
// returns how many those were, and false when yield asked to stop.
func (w *pageWalk[T]) take(page int64, items []T, yield func(T, error) bool) (fresh int, more bool) {
	w.visited[page] = true
	for i := range items {
		if id := w.idOf(&items[i]); id != 0 {
			if _, dup := w.seen[id]; dup {
				continue
			}
			w.seen[id] = struct{}{}
		}
		fresh++
		if !yield(items[i], nil) {
			return fresh, false
		}
	}
	return fresh, true
}

// after returns the page that follows page (of n items, fresh of them new)
// and whether there is one: none at a next_page null or ≤ 0 or after an
// empty page; an error wrapping ErrPaginationLoop at a next_page already
// visited or behind, or after a page of nothing new.
func (w *pageWalk[T]) after(page int64, next *lenientInt, n, fresh int) (int64, bool, error) {
	if next == nil || *next <= 0 || n == 0 {
		return 0, false, nil
	}
	to := int64(*next)
	if w.visited[to] || to <= page || fresh == 0 || len(w.visited) >= maxPages {
		return 0, false, &Error{Op: w.op, Err: fmt.Errorf("%w (page %d answered next_page %d)", ErrPaginationLoop, page, to)}
	}
	return to, true, nil
}

// follow fetches page and the pages it leads to, one at a time, yielding
// their items; an error is yielded once and ends the walk.
func (w *pageWalk[T]) follow(ctx context.Context, fetch pageFetch[T], page int64, yield func(T, error) bool) {
	var zero T
	for {
		items, next, err := fetch(ctx, page)
		if err != nil {
			yield(zero, err)
			return
		}
		fresh, more := w.take(page, items, yield)
		if !more {
			return
		}
		to, more, err := w.after(page, next, len(items), fresh)
		if err != nil {
			yield(zero, err)
		}
		if !more {
			return
		}
		page = to
	}
}

// Collect gathers the items of an iterator, stopping at the first error
// (returned with the items gathered before it).
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// pageQuery returns q (copied) with page and per_page set.
func (c *Client) pageQuery(q url.Values, page int64) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	out.Set("page", strconv.FormatInt(page, 10))
	out.Set("per_page", strconv.Itoa(c.opts.PerPage))
	return out
}
