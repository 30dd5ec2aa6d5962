package emulator_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/emulator/faults"
)

func TestInjectError(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	v.e.InjectError("GET /files", 4710, 2)
	v.call(v.a, 4710, "GET", "/files", nil)
	v.call(v.b, 4710, "GET", "/files", nil)
	v.ok(v.a, "GET", "/files", nil)
	// An injected error executes nothing.
	v.e.InjectError("POST /files", 500, 1)
	v.call(v.a, 500, "POST", "/files", map[string]any{"file_name": "x", "object_type": "directory"})
	if n := len(list(v.ok(v.a, "GET", "/files", nil), "files")); n != 0 {
		t.Fatalf("injected error executed the request: %d files", n)
	}
	v.e.InjectError("GET /files/{id}/download", 4720, 1)
	v.call(v.a, 4720, "GET", "/files/1/download", nil)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("InjectError on an unknown route did not panic")
			}
		}()
		v.e.InjectError("GET /nope", 400, 1)
	}()
	if st := v.e.Stats(); st.Injected != 4 || st.Codes[4710] != 2 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestDropExecutesButAnswersNothing(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	v.e.InjectDrop("POST /files", 1)
	if r, err := v.a.Do("POST", "/files", map[string]any{"file_name": "made anyway", "object_type": "directory"}); err == nil {
		t.Fatalf("dropped request answered: %d %s", r.Status, r.Body)
	}
	if got := names(v.ok(v.a, "GET", "/files", nil), "files"); len(got) != 1 || got[0] != "made anyway" {
		t.Fatalf("dropped request not executed: %v", got)
	}
	// A dropped complete can be retried: the same success.
	id, urls := v.initUpload(v.a, 0, 0, "retry.bin", 3, 5, false, 200)
	parts := []map[string]any{{"part_number": 1, "etag": v.put(urls[0], []byte("abc"))}}
	v.e.InjectDrop("POST /files/{id}/complete", 1)
	if _, err := v.a.Do("POST", fmt.Sprintf("/files/%d/complete", id), map[string]any{"parts": parts}); err == nil {
		t.Fatal("dropped complete answered")
	}
	v.ok(v.a, "POST", fmt.Sprintf("/files/%d/complete", id), map[string]any{"parts": parts})
}

// firstFault finds a seed whose first API roll at rate 1 is kind.
func firstFault(t *testing.T, kind faults.Kind) int64 {
	for seed := int64(1); seed < 1000; seed++ {
		if faults.New(1, seed).Roll(faults.Status500, faults.Status503, faults.Drop) == kind {
			return seed
		}
	}
	t.Fatalf("no seed gives %v first", kind)
	return 0
}

func TestFaultRate(t *testing.T) {
	for _, tt := range []struct {
		kind     faults.Kind
		status   int
		executed bool
	}{
		{faults.Status500, 500, false},
		{faults.Status503, 503, false},
		{faults.Drop, 0, true},
	} {
		t.Run(tt.kind.String(), func(t *testing.T) {
			clock := emutest.NewClock(t0)
			srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, Now: clock.Now, FaultRate: 1, FaultSeed: firstFault(t, tt.kind)})
			c := emutest.NewClient(t, srv, emulator.OrgA)
			r, err := c.Do("POST", "/files", map[string]any{"file_name": "d", "object_type": "directory"})
			switch {
			case tt.status == 0 && err == nil:
				t.Fatalf("dropped request answered %d", r.Status)
			case tt.status != 0 && (err != nil || r.Status != tt.status || r.Code() != tt.status):
				t.Fatalf("got %v %v, want %d", r, err, tt.status)
			}
			srv.Emulator.SetFaultRate(0)
			r, err = c.Do("GET", "/files", nil)
			if err != nil || r.Status != 200 {
				t.Fatalf("after faults off: %v %v", r, err)
			}
			if got := len(r.JSON["files"].([]any)); (got == 1) != tt.executed {
				t.Fatalf("executed=%v, want %v", got == 1, tt.executed)
			}
			if st := srv.Emulator.Stats(); st.Faults[tt.kind.String()] != 1 {
				t.Fatalf("fault stats %v", st.Faults)
			}
		})
	}
}

func TestLatency(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, Latency: 50 * time.Millisecond})
	c := emutest.NewClient(t, srv, emulator.OrgA)
	begin := time.Now()
	c.Must(t, "GET", "/usage", nil)
	if d := time.Since(begin); d < 50*time.Millisecond {
		t.Fatalf("answered in %v with 50ms latency", d)
	}
}

func TestConcurrentClients(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				name := fmt.Sprintf("w%d-%d", i, j)
				r, err := v.a.Do("POST", "/files", map[string]any{"file_name": name, "object_type": "directory"})
				if err != nil || r.Code() != 200 {
					t.Errorf("mkdir %s: %v %v", name, r, err)
					return
				}
				if r, err := v.a.Do("GET", "/files?per_page=1000", nil); err != nil || r.Code() != 200 {
					t.Errorf("list: %v %v", r, err)
				}
			}
		}()
	}
	wg.Wait()
	if n := num(t, v.ok(v.a, "GET", "/files", nil), "count"); n != 40 {
		t.Fatalf("count %d", n)
	}
}

func TestServerCredentials(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := srv.Credentials()
	if len(creds) != 2 || creds[0].Name != "org-a" || creds[1].Name != "org-b" || creds[0].Endpoint != srv.APIURL || creds[0].Secret == creds[1].Secret {
		t.Fatalf("credentials %+v", creds)
	}
	dir := filepath.Join(t.TempDir(), "creds")
	if err := srv.WriteCredentials(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode: %v %v", fi.Mode(), err)
	}
	for _, name := range []string{"org-a.json", "org-b.json"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v", name, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "org-a.json"))
	if want := fmt.Sprintf(`"endpoint": %q`, srv.APIURL); !contains(string(b), want) || contains(string(b), "name") {
		t.Fatalf("org-a.json: %s", b)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
