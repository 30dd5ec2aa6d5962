package emulator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// startIn starts an emulator keeping its state in dir, on clock.
func startIn(t *testing.T, dir, seed string, clock *emutest.Clock) *env {
	t.Helper()
	srv := emutest.Start(t, emulator.Options{DataDir: dir, Seed: seed, Now: clock.Now, StepDelay: step})
	return &env{t: t, srv: srv, e: srv.Emulator, clock: clock,
		a: emutest.NewClient(t, srv, emulator.OrgA), b: emutest.NewClient(t, srv, emulator.OrgB)}
}

// close closes the emulator (the test's cleanup then does nothing).
func (v *env) close() {
	v.t.Helper()
	if err := v.srv.Close(); err != nil {
		v.t.Fatalf("closing: %v", err)
	}
}

// view is what the API shows of an organization, to compare before and
// after a restart: computers, images, usage, every file listing of every
// storage area (walked folder by folder), recordings, action logs. The
// envelope's timestamp is left out.
func (v *env) view(c *emutest.Client) map[string]any {
	v.t.Helper()
	out := map[string]any{}
	get := func(path string) map[string]any {
		r := v.ok(c, "GET", path, nil)
		delete(r, "timestamp")
		out[path] = r
		return r
	}
	var walk func(base string, parent string)
	walk = func(base, parent string) {
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		r := get(base + sep + "per_page=1000" + parent)
		for _, f := range list(r, "files") {
			if attrs(f)["object_type"] == "directory" {
				walk(base, "&parent_id="+f.(map[string]any)["id"].(string))
			}
		}
	}
	seats := get("/seats?per_page=1000")
	get("/images?per_page=1000")
	get("/usage")
	get("/usage/machines")
	walk("/files", "")
	walk("/files/recordings", "")
	for _, s := range list(seats, "seats") {
		walk("/machines/"+s.(map[string]any)["id"].(string)+"/files", "")
	}
	now := v.clock.Now()
	get("/user-action-logs?start_date=" + url.QueryEscape(now.Add(-29*24*time.Hour).Format(time.RFC3339)) + "&end_date=" + url.QueryEscape(now.Add(time.Hour).Format(time.RFC3339)))
	return out
}

func TestStatePersists(t *testing.T) {
	dir := t.TempDir()
	clock := emutest.NewClock(t0)
	v := startIn(t, dir, emulator.SeedDemo, clock)
	if v.e.Restored() || v.e.StateFile() != filepath.Join(dir, "state.json") {
		t.Fatalf("first start: restored %v, state file %q", v.e.Restored(), v.e.StateFile())
	}
	fx := v.e.Fixtures(emulator.OrgA)
	creds := v.srv.Credentials()

	// Changes of every kind.
	docs := v.mkdir(v.a, 0, 0, "docs #1")
	content := []byte("kept across restarts\n")
	file := v.upload(v.a, 0, docs, "notes ü.txt", content, 5, false)
	v.upload(v.a, fx.StoppedMachine, 0, "on the computer.txt", []byte("machine"), 5, false)
	v.upload(v.b, 0, 0, "org-b.txt", []byte("bee"), 5, false)
	v.ok(v.a, "DELETE", fmt.Sprintf("/files/%d", fx.SmallFilesDir), nil)
	// An upload left incomplete, its part uploaded.
	pending, urls := v.initUpload(v.a, 0, docs, "pending.bin", 3, 5, false, 200)
	etag := v.put(urls[0], []byte("abc"))
	// A download job that is ready, one still pending.
	job := num(t, v.ok(v.a, "POST", "/files/download", map[string]any{"directory_id": docs}), "download_id")
	v.clock.Advance(2 * step)
	if st := attrs(v.job(job, ""))["status"]; st != "uploaded" {
		t.Fatalf("job %v", st)
	}
	task := num(t, v.ok(v.a, "POST", "/files/download", map[string]any{"task_id": fx.Task}), "download_id")
	// Computers: one being created, one starting, one stopping; usage; a
	// machine type.
	created := list(v.ok(v.a, "POST", "/seats", map[string]any{"seat_plan_id": 1}), "seats")[0].(map[string]any)["id"].(string)
	v.ok(v.a, "POST", fmt.Sprintf("/machines/%d/start", fx.StoppedMachine), nil)
	v.ok(v.a, "POST", fmt.Sprintf("/machines/%d/stop", fx.RunningMachine), map[string]any{"gracefully": true})
	v.ok(v.a, "POST", "/usage/assign", map[string]any{"machine_id": fx.StoppedMachine, "minutes": 123})
	v.ok(v.a, "POST", fmt.Sprintf("/machines/%d/machine-type", fx.StoppedMachine), map[string]any{"machine_type_id": 2})
	// Images: one being installed, one assigned, one deleted.
	img := v.ok(v.a, "POST", "/images/install", map[string]any{"name": "kept image", "software_ids": []int{101, 105}})
	v.ok(v.a, "POST", fmt.Sprintf("/images/%d/assign", fx.AvailableImage), map[string]any{"machine_ids": []int64{fx.NoImageMachine}})
	v.ok(v.a, "DELETE", fmt.Sprintf("/images/%d", fx.FailedImage), nil)
	fileURL := v.ok(v.a, "GET", fmt.Sprintf("/files/%d/download", file), nil)["url"].(string)

	beforeA, beforeB := v.view(v.a), v.view(v.b)
	v.close()
	if fi, err := os.Stat(filepath.Join(dir, "state.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", fi, err)
	}

	// Started again, with another seed: the state is restored, not seeded.
	w := startIn(t, dir, emulator.SeedEmpty, clock)
	if !w.e.Restored() {
		t.Fatal("not restored")
	}
	if got := w.srv.Credentials(); len(got) != 2 || got[0].Key != creds[0].Key || got[0].Secret != creds[0].Secret || got[1].Secret != creds[1].Secret {
		t.Fatalf("credentials changed: %+v, were %+v", got, creds)
	}
	if w.e.Fixtures(emulator.OrgA) != fx {
		t.Fatalf("fixtures %+v, were %+v", w.e.Fixtures(emulator.OrgA), fx)
	}
	// A client holding the credentials of the first run (at the new address).
	old := &emutest.Client{Creds: creds[0], HTTP: w.a.HTTP, Now: clock.Now}
	old.Creds.Endpoint = w.srv.APIURL
	afterA, afterB := w.view(old), w.view(w.b)
	for path, b := range beforeA {
		if !reflect.DeepEqual(b, afterA[path]) {
			t.Errorf("org-a %s changed:\nbefore %s\nafter  %s", path, dump(b), dump(afterA[path]))
		}
	}
	if !reflect.DeepEqual(beforeB, afterB) {
		t.Errorf("org-b changed:\nbefore %s\nafter  %s", dump(beforeB), dump(afterB))
	}
	if t.Failed() {
		t.FailNow()
	}

	// Contents, through a fresh URL and through the first run's (the
	// signing secret is kept; the object store moved).
	if got := w.get(w.ok(w.a, "GET", fmt.Sprintf("/files/%d/download", file), nil)["url"].(string)); !bytes.Equal(got, content) {
		t.Fatalf("content %q", got)
	}
	u, _ := url.Parse(fileURL)
	if got := w.get(w.srv.ObjectsURL + u.RequestURI()); !bytes.Equal(got, content) {
		t.Fatalf("content through the first run's URL %q", got)
	}
	zip := testkit.Unzip(t, w.get(attrs(w.job(job, ""))["download_url"].(string)))
	if !bytes.Equal(zip["notes ü.txt"], content) {
		t.Fatalf("ZIP of the job: %v", zip)
	}
	// The incomplete upload completes.
	w.ok(w.a, "POST", fmt.Sprintf("/files/%d/complete", pending), map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": etag}}})

	// Time goes on where it stopped.
	if st := w.seatStatus(w.a, fx.StoppedMachine); st != "turning_on" {
		t.Fatalf("starting computer: %s", st)
	}
	w.clock.Advance(2 * step)
	for id, want := range map[string]string{fmt.Sprint(fx.StoppedMachine): "ready", fmt.Sprint(fx.RunningMachine): "off", created: "off"} {
		n, _ := strconv.ParseInt(id, 10, 64)
		if st := w.seatStatus(w.a, n); st != want {
			t.Fatalf("computer %s: %s, want %s", id, st, want)
		}
	}
	if st := attrs(w.ok(w.a, "GET", "/images/"+img["id"].(string), nil))["status"]; st != "available" {
		t.Fatalf("installed image: %v", st)
	}
	if st := attrs(w.job(task, ""))["status"]; st != "uploaded" {
		t.Fatalf("task job: %v", st)
	}
	// New ids follow the old ones.
	last, _ := strconv.ParseInt(img["id"].(string), 10, 64) // the last id of the first run
	if id := w.mkdir(w.a, 0, 0, "after"); id <= last {
		t.Fatalf("new id %d not above %d", id, last)
	}
	w.close()

	// A third run sees the second run's changes.
	x := startIn(t, dir, emulator.SeedDemo, clock)
	if n := names(x.ok(x.a, "GET", "/files?q=after", nil), "files"); len(n) != 1 {
		t.Fatalf("third run: %v", n)
	}
	if n := names(x.ok(x.a, "GET", fmt.Sprintf("/files?parent_id=%d", docs), nil), "files"); len(n) != 2 || n[1] != "pending.bin" {
		t.Fatalf("third run: %v", n)
	}
}

// The state is saved soon after a change, without waiting for Close.
func TestStateSavedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	v := startIn(t, dir, emulator.SeedEmpty, emutest.NewClock(t0))
	v.mkdir(v.a, 0, 0, "saved soon")
	testkit.WaitFor(t, 5*time.Second, "the state to be saved", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "state.json"))
		return bytes.Contains(b, []byte(`"saved soon"`))
	})
	if _, err := emulator.New(emulator.Options{DataDir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second emulator on the directory: %v", err)
	}
}

// A state file that does not load is an error that says so; nothing is
// seeded over it.
func TestCorruptState(t *testing.T) {
	for name, corrupt := range map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"not json":  func([]byte) []byte { return []byte("hello\n") },
		"version":   func(b []byte) []byte { return bytes.Replace(b, []byte(`"version": 1`), []byte(`"version": 99`), 1) },
		"reference": func(b []byte) []byte {
			var st map[string]any
			json.Unmarshal(b, &st)
			st["computers"].([]any)[0].(map[string]any)["assigned_image_id"] = 999999
			b, _ = json.Marshal(st)
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			v := startIn(t, dir, emulator.SeedEmpty, emutest.NewClock(t0))
			v.upload(v.a, 0, 0, "a.txt", []byte("a"), 5, false)
			v.close()
			path := filepath.Join(dir, "state.json")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bad := corrupt(b)
			os.WriteFile(path, bad, 0o600)
			_, err = emulator.New(emulator.Options{DataDir: dir})
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s", err, path)
			}
			t.Log(err)
			if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
				t.Fatal("the state file was changed")
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, "objects", "files")); len(ents) != 1 {
				t.Fatalf("objects: %v", ents)
			}
		})
	}
}

// Without a data directory nothing is kept.
func TestStateNotKeptWithoutDataDir(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	if v.e.StateFile() != "" || v.e.Restored() {
		t.Fatalf("state file %q", v.e.StateFile())
	}
	if _, err := os.Stat(filepath.Join(v.e.DataDir(), "state.json")); !os.IsNotExist(err) {
		t.Fatalf("state.json in the temporary directory: %v", err)
	}
}
