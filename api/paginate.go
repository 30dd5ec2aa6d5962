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
		var zero T
		visited := map[int64]bool{}
		seen := map[int64]struct{}{}
		for page := int64(1); ; {
			items, next, err := fetch(ctx, page)
			if err != nil {
				yield(zero, err)
				return
			}
			visited[page] = true
			fresh := 0
			for i := range items {
				if id := idOf(&items[i]); id != 0 {
					if _, dup := seen[id]; dup {
						continue
					}
					seen[id] = struct{}{}
				}
				fresh++
				if !yield(items[i], nil) {
					return
				}
			}
			if next == nil || *next <= 0 || len(items) == 0 {
				return
			}
			n := int64(*next)
			if visited[n] || n <= page || fresh == 0 || len(visited) >= maxPages {
				yield(zero, &Error{Op: opName, Err: fmt.Errorf("%w (page %d answered next_page %d)", ErrPaginationLoop, page, n)})
				return
			}
			page = n
		}
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
