package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

func fileObj(id int, name string) map[string]any {
	return map[string]any{"id": strconv.Itoa(id), "type": "file", "attributes": map[string]any{
		"name": name, "size": id * 10, "content_type": "text/plain", "object_type": "file", "parent_id": 0,
		"path": nil, "file_storage_size": nil, "file_storage_usage": nil, "user": nil, "machine_id": nil,
		"status": "upload_completed", "last_modified_date": "2025-11-20T10:00:00.000Z",
	}}
}

func TestPaginationFollowsNextPage(t *testing.T) {
	var perPage atomic.Value
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/organization-management/v1/machines/7/files" {
			writeJSON(w, 404, errBody(404, "no route"))
			return
		}
		q := r.URL.Query()
		perPage.Store(q.Get("per_page"))
		if q.Get("parent_id") != "12" || q.Get("task_id") != "3" {
			writeJSON(w, 400, errBody(400, "bad query "+r.URL.RawQuery))
			return
		}
		page, _ := strconv.Atoi(q.Get("page"))
		var next any
		files := []any{}
		switch page {
		case 1:
			files = append(files, fileObj(1, "a"), fileObj(2, "b"))
			next = 2
		case 2:
			files = append(files, fileObj(3, "c"), fileObj(2, "b")) // b shifted: skipped
			next = "3"                                              // a string next_page is tolerated
		case 3:
			files = append(files, fileObj(4, "d"))
		}
		cur := map[string]any{"id": "12", "type": "file", "attributes": map[string]any{"name": "dir", "object_type": "directory"}}
		writeJSON(w, 200, okBody(map[string]any{"files": files, "current": cur, "count": 4, "page": page, "next_page": next}))
	}), func(o *Options) { o.PerPage = 2 })
	l := c.MachineFiles(context.Background(), 7, ListFilesRequest{ParentID: 12, TaskID: 3})
	files, err := l.Collect()
	if err != nil {
		t.Fatal(err)
	}
	var names string
	for _, f := range files {
		names += f.Name
	}
	if names != "abcd" {
		t.Fatalf("got %q", names)
	}
	if l.Count() != 4 || l.Current() == nil || l.Current().ID != 12 || !l.Current().IsDir() {
		t.Fatalf("count %d current %+v", l.Count(), l.Current())
	}
	if perPage.Load() != "2" {
		t.Fatalf("per_page %v", perPage.Load())
	}
	// Stopping early stops fetching.
	n := 0
	for _, err := range l.All() {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatal(n)
	}
}

func TestPaginationRepeatGuard(t *testing.T) {
	tests := []struct {
		name string
		page func(page int) (ids []int, next any)
	}{
		{"next_page points back", func(p int) ([]int, any) { return []int{p}, 1 }},
		{"next_page repeats itself", func(p int) ([]int, any) {
			if p == 1 {
				return []int{1}, 2
			}
			return []int{p}, p
		}},
		{"page parameter ignored", func(p int) ([]int, any) { return []int{1, 2}, p + 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if requests.Add(1) > 50 {
					writeJSON(w, 500, errBody(500, "runaway"))
					return
				}
				p, _ := strconv.Atoi(r.URL.Query().Get("page"))
				ids, next := tt.page(p)
				files := []any{}
				for _, id := range ids {
					files = append(files, fileObj(id, strconv.Itoa(id)))
				}
				writeJSON(w, 200, okBody(map[string]any{"files": files, "count": 99, "next_page": next}))
			}))
			_, err := c.SharedFiles(context.Background(), ListFilesRequest{}).Collect()
			if !errors.Is(err, ErrPaginationLoop) {
				t.Fatalf("%v after %d requests", err, requests.Load())
			}
			if requests.Load() > 3 {
				t.Fatalf("%d requests", requests.Load())
			}
		})
	}
}

func TestPaginationErrorYieldedOnce(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") == "2" {
			writeJSON(w, 404, errBody(404, "parent folder not found"))
			return
		}
		writeJSON(w, 200, okBody(map[string]any{"seats": []any{map[string]any{"id": "1", "type": "seat", "attributes": map[string]any{"name": "one"}}}, "next_page": 2}))
	}))
	var items, errs int
	for _, err := range c.Seats(context.Background(), "") {
		if err != nil {
			errs++
			if !IsNotFound(err) {
				t.Fatal(err)
			}
			continue
		}
		items++
	}
	if items != 1 || errs != 1 {
		t.Fatal(items, errs)
	}
}
