package emulator_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

func (v *env) job(id int64, query string) map[string]any {
	v.t.Helper()
	r := v.ok(v.a, "GET", fmt.Sprintf("/files/downloads/%d%s", id, query), nil)
	if r["id"] != fmt.Sprint(id) || r["type"] != "download" {
		v.t.Fatalf("job record: %v", r)
	}
	return r
}

func TestDownloadJobs(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	d := v.mkdir(v.a, 0, 0, "bundle")
	s := v.mkdir(v.a, 0, d, "sub dir")
	v.mkdir(v.a, 0, d, "empty")
	a := v.upload(v.a, 0, d, "a #1.txt", []byte("alpha"), 5, false)
	b := v.upload(v.a, 0, s, "b ü.txt", []byte("bravo!"), 5, false)

	r := v.ok(v.a, "POST", "/files/download", map[string]any{"directory_id": d})
	id := num(t, r, "download_id")
	if r["url"] != nil || num(t, r, "size") != 11 || r["content_type"] != "application/zip" || r["name"] != "bundle.zip" {
		t.Fatalf("job creation: %v", r)
	}
	j := v.job(id, "")
	if attrs(j)["status"] != "pending" || attrs(j)["download_url"] != nil || attrs(j)["expires_at"] != "2025-06-02T12:00:00.000Z" {
		t.Fatalf("new job: %v", dump(j))
	}
	v.clock.Advance(step)
	if st := attrs(v.job(id, ""))["status"]; st != "processing" {
		t.Fatalf("after a step: %v", st)
	}
	// The ZIP is built from the content as the job was created: a file
	// added meanwhile is not in it.
	c := v.upload(v.a, 0, d, "late.txt", []byte("charlie"), 5, false)
	v.clock.Advance(step)
	j = v.job(id, "?generate_download_url=false")
	if attrs(j)["status"] != "uploaded" || attrs(j)["download_url"] != nil || num(t, attrs(j), "size") != 11 {
		t.Fatalf("uploaded without url: %v", dump(j))
	}
	j = v.job(id, "")
	url, _ := attrs(j)["download_url"].(string)
	if url == "" {
		t.Fatalf("uploaded job without download_url: %v", dump(j))
	}
	got := testkit.Unzip(t, v.get(url))
	want := map[string][]byte{"a #1.txt": []byte("alpha"), "sub dir/": {}, "sub dir/b ü.txt": []byte("bravo!"), "empty/": {}}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("ZIP entries %q, want %q", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	v.call(v.a, 4716, "DELETE", fmt.Sprintf("/files/downloads/%d", id), nil)
	v.call(v.a, 400, "GET", fmt.Sprintf("/files/downloads/%d?generate_download_url=maybe", id), nil)
	v.call(v.b, 404, "GET", fmt.Sprintf("/files/downloads/%d", id), nil)

	// Several files: flat names, repeated names made unique.
	dup := v.upload(v.a, 0, s, "a #1.txt", []byte("other alpha"), 5, false)
	r = v.ok(v.a, "POST", "/files/download", map[string]any{"file_ids": []int64{a, b, dup}})
	fid := num(t, r, "download_id")
	v.clock.Advance(2 * step)
	got = testkit.Unzip(t, v.get(attrs(v.job(fid, ""))["download_url"].(string)))
	want = map[string][]byte{"a #1.txt": []byte("alpha"), "b ü.txt": []byte("bravo!"), "a #1 (2).txt": []byte("other alpha")}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("files ZIP entries %q", slices.Sorted(maps.Keys(got)))
	}

	// Abort: pending and processing → cancelled; then 4716.
	for _, wait := range []time.Duration{0, step} {
		r = v.ok(v.a, "POST", "/files/download", map[string]any{"directory_id": d})
		jid := num(t, r, "download_id")
		v.clock.Advance(wait)
		v.ok(v.a, "DELETE", fmt.Sprintf("/files/downloads/%d", jid), nil)
		v.clock.Advance(3 * step)
		if st := attrs(v.job(jid, ""))["status"]; st != "cancelled" {
			t.Fatalf("aborted job: %v", st)
		}
		v.call(v.a, 4716, "DELETE", fmt.Sprintf("/files/downloads/%d", jid), nil)
	}

	// A job whose content vanished before it was built fails; failed jobs cannot be aborted.
	gone := v.mkdir(v.a, 0, 0, "gone")
	v.upload(v.a, 0, gone, "x.txt", []byte("x"), 5, false)
	r = v.ok(v.a, "POST", "/files/download", map[string]any{"directory_id": gone})
	gid := num(t, r, "download_id")
	v.ok(v.a, "DELETE", fmt.Sprintf("/files/%d", gone), nil)
	v.clock.Advance(2 * step)
	if st := attrs(v.job(gid, ""))["status"]; st != "failed" {
		t.Fatalf("job of a deleted folder: %v", st)
	}
	v.call(v.a, 4716, "DELETE", fmt.Sprintf("/files/downloads/%d", gid), nil)

	// Expiry: 24 h after creation, 404.
	v.clock.Advance(24 * time.Hour)
	v.call(v.a, 404, "GET", fmt.Sprintf("/files/downloads/%d", id), nil)
	v.call(v.a, 404, "DELETE", fmt.Sprintf("/files/downloads/%d", id), nil)

	// Refusals.
	empty := v.mkdir(v.a, 0, 0, "nothing here")
	v.mkdir(v.a, 0, empty, "only folders")
	for _, tt := range []struct {
		code int
		body map[string]any
	}{
		{4722, map[string]any{}},
		{4722, map[string]any{"file_ids": []int64{}}},
		{4722, map[string]any{"directory_id": d, "file_ids": []int64{a}}},
		{4722, map[string]any{"directory_id": d, "task_id": 5}},
		{4717, map[string]any{"directory_id": 987654}},
		{4717, map[string]any{"directory_id": a}},
		{4717, map[string]any{"file_ids": []int64{987654}}},
		{4717, map[string]any{"file_ids": []int64{d}}},
		{4718, map[string]any{"file_ids": []int64{a, 987654}}},
		{4719, map[string]any{"directory_id": empty}},
		{404, map[string]any{"task_id": 987654}},
		{400, map[string]any{"directory_id": "x"}},
	} {
		v.call(v.a, tt.code, "POST", "/files/download", tt.body)
	}
	v.e.InjectError("POST /files/download", 4720, 1)
	v.call(v.a, 4720, "POST", "/files/download", map[string]any{"file_ids": []int64{a}})
	v.ok(v.a, "POST", "/files/download", map[string]any{"file_ids": []int64{a}})

	// org-b has no multiple_file_download: 4710 for several files, a directory or a task; one file works.
	bd := v.mkdir(v.b, 0, 0, "b dir")
	b1 := v.upload(v.b, 0, bd, "one.txt", []byte("1"), 5, false)
	b2 := v.upload(v.b, 0, bd, "two.txt", []byte("2"), 5, false)
	v.call(v.b, 4710, "POST", "/files/download", map[string]any{"directory_id": bd})
	v.call(v.b, 4710, "POST", "/files/download", map[string]any{"file_ids": []int64{b1, b2}})
	v.call(v.b, 4710, "POST", "/files/download", map[string]any{"task_id": 1})
	v.ok(v.b, "POST", "/files/download", map[string]any{"file_ids": []int64{b1}})
	_ = c
}

func TestDemoSeedTaskAndRecordings(t *testing.T) {
	v := start(t, emulator.SeedDemo)
	fx := v.e.Fixtures(emulator.OrgA)
	// Task listing on the machines path only.
	r := v.ok(v.a, "GET", fmt.Sprintf("/machines/%d/files?task_id=%d", fx.RunningMachine, fx.Task), nil)
	folders := names(r, "files")
	if len(folders) != 2 || num(t, r, "count") != 2 || r["current"] != nil {
		t.Fatalf("task folders: %v", dump(r))
	}
	v.call(v.a, 404, "GET", fmt.Sprintf("/machines/%d/files?task_id=%d", fx.StoppedMachine, fx.Task), nil)
	// The task bundle: one top-level folder per task folder.
	j := v.ok(v.a, "POST", "/files/download", map[string]any{"task_id": fx.Task})
	id := num(t, j, "download_id")
	v.clock.Advance(2 * step)
	got := testkit.Unzip(t, v.get(attrs(v.job(id, ""))["download_url"].(string)))
	tops := map[string]bool{}
	for name := range got {
		top, _, _ := bytes.Cut([]byte(name), []byte("/"))
		tops[string(top)] = true
	}
	if len(tops) != 2 || !tops[folders[0]] || !tops[folders[1]] {
		t.Fatalf("task ZIP top-level folders %v, want %v", slices.Sorted(maps.Keys(tops)), folders)
	}
	if len(got[folders[0]+"/render.log"]) == 0 && len(got[folders[1]+"/render.log"]) == 0 {
		t.Fatalf("task ZIP lacks render.log: %q", slices.Sorted(maps.Keys(got)))
	}
	// Recordings: per-machine folders, machine_id filter.
	rec := v.ok(v.a, "GET", "/files/recordings", nil)
	if num(t, rec, "count") != 3 {
		t.Fatalf("recordings root: %v", names(rec, "files"))
	}
	only := v.ok(v.a, "GET", fmt.Sprintf("/files/recordings?machine_id=%d", fx.RunningMachine), nil)
	if num(t, only, "count") != 1 || num(t, attrs(list(only, "files")[0]), "machine_id") != fx.RunningMachine {
		t.Fatalf("recordings of one machine: %v", dump(only))
	}
	v.call(v.a, 404, "GET", "/files/recordings?machine_id=1", nil)
	v.e.InjectError("GET /files/recordings", 403, 1)
	v.call(v.a, 403, "GET", "/files/recordings", nil)
	// GET /files/{id}/download of a recording: 404 (shared and computer storage only).
	sess := v.ok(v.a, "GET", fmt.Sprintf("/files/recordings?q=recording.webm&machine_id=%d", fx.RunningMachine), nil)
	webm := list(sess, "files")[0].(map[string]any)["id"].(string)
	v.call(v.a, 404, "GET", "/files/"+webm+"/download", nil)
	// POST /files/download serves recordings.
	if d := v.ok(v.a, "POST", "/files/download", "{\"file_ids\":["+webm+"]}"); d["name"] != "recording.webm" || d["content_type"] != "video/webm" {
		t.Fatalf("recording download: %v", d)
	}
}
