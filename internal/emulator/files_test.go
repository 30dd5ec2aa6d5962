package emulator_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

func TestListingPaginationAndSearch(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	dir := v.mkdir(v.a, 0, 0, "many")
	sub := v.mkdir(v.a, 0, dir, "zz sub")
	for i := range 45 {
		if _, err := v.e.CreateFile(emulator.OrgA, 0, dir, fmt.Sprintf("f%02d.txt", i), strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.e.CreateFile(emulator.OrgA, 0, sub, "Deep F99.txt", strings.NewReader("deep")); err != nil {
		t.Fatal(err)
	}
	var all []string
	for page := 1; ; page++ {
		r := v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d&page=%d", dir, page), nil)
		if num(t, r, "count") != 46 || num(t, r, "page") != int64(page) {
			t.Fatalf("page %d: count %v page %v", page, r["count"], r["page"])
		}
		if cur := r["current"].(map[string]any); cur["id"] != fmt.Sprint(dir) {
			t.Fatalf("current %v", cur)
		}
		all = append(all, names(r, "files")...)
		if r["next_page"] == nil {
			if page != 3 {
				t.Fatalf("last page %d, want 3 (default per_page 20)", page)
			}
			break
		}
		if num(t, r, "next_page") != int64(page+1) {
			t.Fatalf("next_page %v", r["next_page"])
		}
	}
	if len(all) != 46 || all[0] != "zz sub" || all[1] != "f00.txt" || all[45] != "f44.txt" {
		t.Fatalf("order (directories first, then by name): %v", all)
	}
	r := v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d&page=9", dir), nil)
	if len(list(r, "files")) != 0 || r["next_page"] != nil {
		t.Fatalf("past the end: %v", r)
	}
	r = v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d&per_page=5000", dir), nil)
	if len(list(r, "files")) != 46 {
		t.Fatalf("per_page clamp: %d", len(list(r, "files")))
	}
	// q: case-insensitive substring, whole subtree.
	r = v.ok(v.a, "GET", "/files?q=f99", nil)
	if got := names(r, "files"); !slices.Equal(got, []string{"Deep F99.txt"}) || num(t, r, "count") != 1 {
		t.Fatalf("q=f99 from the root: %v", got)
	}
	// Root: current null at parent_id 0; the root's own id lists it too, with storage fields.
	root, _ := v.e.RootID(emulator.OrgA, 0)
	r0 := v.ok(v.a, "GET", "/files", nil)
	if r0["current"] != nil || !slices.Equal(names(r0, "files"), []string{"many"}) {
		t.Fatalf("root listing: %v", dump(r0))
	}
	f := attrs(list(r0, "files")[0])
	if num(t, f, "parent_id") != root || f["object_type"] != "directory" || f["content_type"] != "directory" || f["path"] != "/many" ||
		f["file_storage_size"] != nil || f["machine_id"] != nil || f["status"] != "upload_completed" {
		t.Fatalf("record: %v", dump(f))
	}
	rr := v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d", root), nil)
	if cur := attrs(rr["current"]); cur["object_type"] != "root" || num(t, cur, "file_storage_size") <= 0 || num(t, cur, "file_storage_usage") != 49 {
		t.Fatalf("root record: %v", dump(rr["current"]))
	}
	v.call(v.a, 404, "GET", "/files?parent_id=999999", nil)
	file := list(r, "files")[0].(map[string]any)["id"].(string)
	v.call(v.a, 400, "GET", "/files?parent_id="+file, nil)

	// A computer's storage: machine_id on records.
	m := v.e.Fixtures(emulator.OrgA).StoppedMachine
	md := v.mkdir(v.a, m, 0, "on the computer")
	mr := v.ok(v.a, "GET", fmt.Sprintf("/machines/%d/files", m), nil)
	if got := attrs(list(mr, "files")[0]); num(t, got, "machine_id") != m || got["name"] != "on the computer" {
		t.Fatalf("computer listing: %v", dump(mr))
	}
	v.call(v.a, 404, "GET", fmt.Sprintf("/files?parent_id=%d", md), nil) // not in the shared storage
	v.call(v.a, 404, "GET", "/machines/424242/files", nil)
}

func TestUploadFlow(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	content := testkit.RandBytes(11<<20+123, 1) // three parts of 5 MiB
	id := v.upload(v.a, 0, 0, "big file #1 ü.bin", content, 5, false)
	d := v.ok(v.a, "GET", fmt.Sprintf("/files/%d/download", id), nil)
	if num(t, d, "size") != int64(len(content)) || d["name"] != "big file #1 ü.bin" || d["content_type"] != "application/octet-stream" {
		t.Fatalf("download: %v", d)
	}
	if got := v.get(d["url"].(string)); !bytes.Equal(got, content) {
		t.Fatalf("downloaded %d bytes differ", len(got))
	}
	pd := v.ok(v.a, "POST", "/files/download", map[string]any{"file_ids": []int64{id}})
	if pd["download_id"] != nil || pd["url"] == nil || num(t, pd, "size") != int64(len(content)) {
		t.Fatalf("single POST /files/download: %v", pd)
	}

	// A 0-byte file has one part.
	zid, urls := v.initUpload(v.a, 0, 0, "empty.txt", 0, 0, false, 200)
	if len(urls) != 1 {
		t.Fatalf("0-byte file: %d parts", len(urls))
	}
	etag := v.put(urls[0], nil)
	parts := []map[string]any{{"part_number": 1, "etag": etag}}
	c1 := v.ok(v.a, "POST", fmt.Sprintf("/files/%d/complete", zid), map[string]any{"parts": parts})
	// Repeating a successful complete answers the same success.
	c2 := v.ok(v.a, "POST", fmt.Sprintf("/files/%d/complete", zid), map[string]any{"parts": parts})
	if c1["uid"] != c2["uid"] {
		t.Fatalf("repeated complete: %v vs %v", c1, c2)
	}
	v.call(v.a, 400, "POST", fmt.Sprintf("/files/%d/complete", zid), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": `"other"`}}})

	// Default chunk size 250 MiB: one part; chunk_size below 5 MiB is raised to 5.
	r := v.ok(v.a, "POST", "/files", map[string]any{"file_name": "c.bin", "object_type": "file", "content_type": "x/y", "size": 12 << 20})
	if num(t, r, "chunk_size") != 250 || len(list(r, "upload_urls")) != 1 {
		t.Fatalf("default chunk: %v", r)
	}
	r = v.ok(v.a, "POST", "/files", map[string]any{"file_name": "c.bin", "object_type": "file", "content_type": "x/y", "size": 12 << 20, "chunk_size": 1})
	if num(t, r, "chunk_size") != 5 || len(list(r, "upload_urls")) != 3 {
		t.Fatalf("chunk 1: %v", r)
	}
	// Incomplete uploads are not listed.
	if got := names(v.ok(v.a, "GET", "/files", nil), "files"); !slices.Equal(got, []string{"big file #1 ü.bin", "empty.txt"}) {
		t.Fatalf("listing shows incomplete uploads: %v", got)
	}

	// Bad parts: 400.
	bid, burls := v.initUpload(v.a, 0, 0, "parts.bin", 6<<20, 5, false, 200)
	e1 := v.put(burls[0], content[:5<<20])
	cp := func() string { return fmt.Sprintf("/files/%d/complete", bid) }
	v.call(v.a, 400, "POST", cp(), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": e1}}})                                        // too few
	v.call(v.a, 400, "POST", cp(), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": e1}, {"part_number": 2, "etag": `"abc"`}}})   // part 2 not uploaded
	v.call(v.a, 400, "POST", cp(), map[string]any{"parts": []map[string]any{{"part_number": 2, "etag": e1}, {"part_number": 1, "etag": e1}}})        // order
	v.call(v.a, 400, "POST", cp(), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": strings.Trim(e1, `"`)}, {"part_number": 2}}}) // no etag
	v.call(v.a, 400, "POST", cp(), map[string]any{})
	e2 := v.put(burls[1], content[:1<<20])
	v.call(v.a, 400, "POST", cp(), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": strings.Trim(e1, `"`)}, {"part_number": 2, "etag": e2}}}) // quotes matter
	v.ok(v.a, "POST", cp(), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": e1}, {"part_number": 2, "etag": e2}}})
	v.call(v.a, 404, "POST", "/files/99999999/complete", map[string]any{"parts": []any{}})

	// 452: size differs; the file is deleted.
	sid, surls := v.initUpload(v.a, 0, 0, "short.bin", 100, 5, false, 200)
	se := v.put(surls[0], content[:99])
	v.call(v.a, 452, "POST", fmt.Sprintf("/files/%d/complete", sid), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": se}}})
	v.call(v.a, 404, "POST", fmt.Sprintf("/files/%d/complete", sid), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": se}}})

	// 451, and overwrite gives a new id and removes the old record.
	v.initUpload(v.a, 0, 0, "empty.txt", 10, 5, false, 451)
	v.call(v.a, 451, "POST", "/files", map[string]any{"file_name": "empty.txt", "object_type": "directory"})
	newID := v.upload(v.a, 0, 0, "empty.txt", []byte("now with content"), 5, true)
	if newID == zid {
		t.Fatal("overwrite kept the id")
	}
	v.call(v.a, 404, "GET", fmt.Sprintf("/files/%d/download", zid), nil)
	l := v.ok(v.a, "GET", "/files?q=empty.txt", nil)
	if num(t, l, "count") != 1 || num(t, attrs(list(l, "files")[0]), "size") != 16 {
		t.Fatalf("after overwrite: %v", dump(l))
	}

	// 400s of POST /files.
	for _, body := range []map[string]any{
		{"file_name": "x", "object_type": "folder"},
		{"object_type": "file", "content_type": "a/b", "size": 1},
		{"file_name": "x", "object_type": "file", "size": 1},
		{"file_name": "x", "object_type": "file", "content_type": "a/b"},
		{"file_name": "a/b", "object_type": "directory"},
		{"file_name": "x", "object_type": "directory", "parent_id": 77777777},
		{"file_name": "x", "object_type": "directory", "parent_id": id}, // a file
	} {
		v.call(v.a, 400, "POST", "/files", body)
	}
	v.call(v.a, 404, "POST", "/files", map[string]any{"file_name": "x", "object_type": "directory", "machine_id": 4242})
}

func TestQuota(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	if err := v.e.SetStorageQuota(emulator.OrgA, 0, 1000); err != nil {
		t.Fatal(err)
	}
	v.upload(v.a, 0, 0, "a.bin", make([]byte, 600), 5, false)
	v.initUpload(v.a, 0, 0, "b.bin", 401, 5, false, 450)
	// Overwriting counts the replaced file out.
	v.upload(v.a, 0, 0, "a.bin", make([]byte, 900), 5, true)
	// Two uploads that each fit, but not together: the second complete answers 450 and is deleted.
	id1, u1 := v.initUpload(v.a, 0, 0, "c.bin", 60, 5, false, 200)
	id2, u2 := v.initUpload(v.a, 0, 0, "d.bin", 60, 5, false, 200)
	p1 := []map[string]any{{"part_number": 1, "etag": v.put(u1[0], make([]byte, 60))}}
	p2 := []map[string]any{{"part_number": 1, "etag": v.put(u2[0], make([]byte, 60))}}
	v.ok(v.a, "POST", fmt.Sprintf("/files/%d/complete", id1), map[string]any{"parts": p1})
	v.call(v.a, 450, "POST", fmt.Sprintf("/files/%d/complete", id2), map[string]any{"parts": p2})
	v.call(v.a, 404, "POST", fmt.Sprintf("/files/%d/complete", id2), map[string]any{"parts": p2})
	// A computer's storage has its own quota.
	m := v.e.Fixtures(emulator.OrgA).StoppedMachine
	if err := v.e.SetStorageQuota(emulator.OrgA, m, 10); err != nil {
		t.Fatal(err)
	}
	v.initUpload(v.a, m, 0, "big", 11, 5, false, 450)
	v.initUpload(v.a, 0, 0, "fits in shared? no", 41, 5, false, 450)
	v.initUpload(v.a, 0, 0, "fits", 40, 5, false, 200)
}

func TestDelete(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	root, _ := v.e.RootID(emulator.OrgA, 0)
	v.call(v.a, 450, "DELETE", fmt.Sprintf("/files/%d", root), nil)
	d := v.mkdir(v.a, 0, 0, "tree")
	s := v.mkdir(v.a, 0, d, "sub")
	f := v.upload(v.a, 0, s, "leaf.txt", []byte("leaf"), 5, false)
	pending, _ := v.initUpload(v.a, 0, s, "pending.bin", 10, 5, false, 200)
	v.ok(v.a, "DELETE", fmt.Sprintf("/files/%d", d), nil)
	if got := names(v.ok(v.a, "GET", "/files", nil), "files"); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
	v.call(v.a, 404, "GET", fmt.Sprintf("/files?parent_id=%d", s), nil)
	v.call(v.a, 404, "GET", fmt.Sprintf("/files/%d/download", f), nil)
	v.call(v.a, 404, "POST", fmt.Sprintf("/files/%d/complete", pending), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": `"x"`}}})
	v.call(v.a, 404, "DELETE", fmt.Sprintf("/files/%d", d), nil)
	rr := v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d", root), nil)
	if u := num(t, attrs(rr["current"]), "file_storage_usage"); u != 0 {
		t.Fatalf("usage after delete: %d", u)
	}
	f2 := v.upload(v.a, 0, 0, "single.txt", []byte("x"), 5, false)
	v.ok(v.a, "DELETE", fmt.Sprintf("/files/%d", f2), nil)
	v.call(v.a, 404, "DELETE", fmt.Sprintf("/files/%d", f2), nil)
}
