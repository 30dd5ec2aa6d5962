package emulator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
)

// t0 is the fake clock's start.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const step = 2 * time.Second

// env is a started emulator with a fake clock and clients of both organizations.
type env struct {
	t     *testing.T
	srv   *emulator.Server
	e     *emulator.Emulator
	clock *emutest.Clock
	a, b  *emutest.Client
}

func start(t *testing.T, seed string) *env {
	t.Helper()
	clock := emutest.NewClock(t0)
	srv := emutest.Start(t, emulator.Options{Seed: seed, Now: clock.Now, StepDelay: step})
	return &env{t: t, srv: srv, e: srv.Emulator, clock: clock,
		a: emutest.NewClient(t, srv, emulator.OrgA), b: emutest.NewClient(t, srv, emulator.OrgB)}
}

// call sends a request and checks its client_code (and HTTP status rule).
func (v *env) call(c *emutest.Client, wantCode int, method, path string, body any) map[string]any {
	v.t.Helper()
	r := c.Must(v.t, method, path, body)
	if r.JSON == nil {
		v.t.Fatalf("%s %s: answer is not JSON: %d %q", method, path, r.Status, r.Body)
	}
	if r.Code() != wantCode {
		v.t.Fatalf("%s %s: client_code %d (%v), want %d", method, path, r.Code(), r.JSON["message"], wantCode)
	}
	wantStatus := wantCode
	if wantCode >= 1000 {
		wantStatus = 400
	}
	if r.Status != wantStatus {
		v.t.Fatalf("%s %s: HTTP %d for client_code %d", method, path, r.Status, wantCode)
	}
	for _, k := range []string{"message", "timestamp"} {
		if _, ok := r.JSON[k].(string); !ok {
			v.t.Fatalf("%s %s: envelope lacks %s: %s", method, path, k, r.Body)
		}
	}
	return r.JSON
}

func (v *env) ok(c *emutest.Client, method, path string, body any) map[string]any {
	v.t.Helper()
	return v.call(c, 200, method, path, body)
}

// num reads a JSON number field.
func num(t *testing.T, m map[string]any, k string) int64 {
	t.Helper()
	f, ok := m[k].(float64)
	if !ok {
		t.Fatalf("field %s = %#v, not a number", k, m[k])
	}
	return int64(f)
}

func attrs(m any) map[string]any { return m.(map[string]any)["attributes"].(map[string]any) }

func list(m map[string]any, k string) []any {
	l, _ := m[k].([]any)
	return l
}

// names lists the attributes.name of a listing.
func names(m map[string]any, k string) []string {
	var out []string
	for _, it := range list(m, k) {
		out = append(out, attrs(it)["name"].(string))
	}
	return out
}

// mkdir creates a folder through the API.
func (v *env) mkdir(c *emutest.Client, machineID, parentID int64, name string) int64 {
	v.t.Helper()
	body := map[string]any{"file_name": name, "object_type": "directory", "parent_id": parentID}
	if machineID != 0 {
		body["machine_id"] = machineID
	}
	return num(v.t, v.ok(c, "POST", "/files", body), "id")
}

// upload runs the whole upload flow over HTTP and returns the file id.
func (v *env) upload(c *emutest.Client, machineID, parentID int64, name string, content []byte, chunkMiB int, overwrite bool) int64 {
	v.t.Helper()
	id, urls := v.initUpload(c, machineID, parentID, name, int64(len(content)), chunkMiB, overwrite, 200)
	chunk := int64(chunkMiB) << 20
	var parts []map[string]any
	for i, u := range urls {
		lo := int64(i) * chunk
		hi := min(lo+chunk, int64(len(content)))
		etag := v.put(u, content[lo:hi])
		parts = append(parts, map[string]any{"part_number": i + 1, "etag": etag})
	}
	r := v.ok(c, "POST", fmt.Sprintf("/files/%d/complete", id), map[string]any{"parts": parts})
	if r["uid"] == "" || r["download_url"] == "" {
		v.t.Fatalf("complete answer lacks uid/download_url: %v", r)
	}
	return id
}

// initUpload calls POST /files for a file; on success it returns the id and the part URLs.
func (v *env) initUpload(c *emutest.Client, machineID, parentID int64, name string, size int64, chunkMiB int, overwrite bool, want int) (int64, []string) {
	v.t.Helper()
	body := map[string]any{"file_name": name, "object_type": "file", "content_type": "application/octet-stream",
		"size": size, "chunk_size": chunkMiB, "overwrite": overwrite, "parent_id": parentID}
	if machineID != 0 {
		body["machine_id"] = machineID
	}
	r := v.call(c, want, "POST", "/files", body)
	if want != 200 {
		return 0, nil
	}
	var urls []string
	for i, it := range list(r, "upload_urls") {
		m := it.(map[string]any)
		if int(m["part_number"].(float64)) != i+1 {
			v.t.Fatalf("upload_urls[%d] has part_number %v", i, m["part_number"])
		}
		urls = append(urls, m["url"].(string))
	}
	return num(v.t, r, "id"), urls
}

// put PUTs a part to a presigned URL and returns its ETag.
func (v *env) put(url string, b []byte) string {
	v.t.Helper()
	req, _ := http.NewRequest("PUT", url, bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		v.t.Fatalf("PUT part: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		v.t.Fatalf("PUT part: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("ETag")
}

// get fetches a presigned URL.
func (v *env) get(url string) []byte {
	v.t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		v.t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		v.t.Fatalf("GET object: %d %v %.200s", resp.StatusCode, err, b)
	}
	return b
}

// seat returns a computer record by id.
func (v *env) seat(c *emutest.Client, id int64) map[string]any {
	v.t.Helper()
	for _, s := range list(v.ok(c, "GET", "/seats?per_page=1000", nil), "seats") {
		if s.(map[string]any)["id"] == fmt.Sprint(id) {
			return s.(map[string]any)
		}
	}
	v.t.Fatalf("no computer %d", id)
	return nil
}

func (v *env) seatStatus(c *emutest.Client, id int64) string {
	v.t.Helper()
	return attrs(v.seat(c, id))["friendly_status"].(string)
}

func dump(m any) string {
	b, _ := json.MarshalIndent(m, "", " ")
	return string(b)
}
