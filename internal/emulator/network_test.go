package emulator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// admin sends a request to the play endpoint with token ("" sends none).
func admin(t *testing.T, srv *emulator.Server, token, method, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.APIURL+emulator.PlayPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPlayEndpoint(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	if code, _ := admin(t, srv, "", "GET", ""); code != 401 {
		t.Fatalf("no token: %d, want 401", code)
	}
	if code, _ := admin(t, srv, "wrong", "GET", ""); code != 401 {
		t.Fatalf("wrong token: %d, want 401", code)
	}
	code, body := admin(t, srv, srv.AdminToken, "GET", "")
	var p emulator.Play
	if code != 200 || json.Unmarshal([]byte(body), &p) != nil || p.Outage != emulator.OutageNone || p.Latency != "0s" {
		t.Fatalf("GET: %d %s", code, body)
	}
	for _, bad := range []string{`{"latency":"soon"}`, `{"fault_rate":2}`, `{"outage":"flood"}`, `{"stream_rate":-1}`, `{"nope":1}`, `not json`} {
		if code, _ := admin(t, srv, srv.AdminToken, "POST", bad); code != 400 {
			t.Errorf("POST %s: %d, want 400", bad, code)
		}
	}
	if srv.Emulator.Play() != p {
		t.Fatalf("a refused change changed the play: %+v", srv.Emulator.Play())
	}
	code, body = admin(t, srv, srv.AdminToken, "POST", `{"latency":"150ms","object_latency":"5ms","stream_rate":1000000,"fault_rate":0.25}`)
	want := emulator.Play{Latency: "150ms", ObjectLatency: "5ms", StreamRate: 1000000, FaultRate: 0.25, Outage: emulator.OutageNone}
	if code != 200 || srv.Emulator.Play() != want {
		t.Fatalf("POST: %d %s; play %+v", code, body, srv.Emulator.Play())
	}
	srv.Emulator.SetFaultRate(0)
	c := emutest.NewClient(t, srv, emulator.OrgA)
	start := time.Now()
	c.Must(t, "GET", "/usage", nil)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("a request took %v under a 150ms latency", d)
	}

	dir := filepath.Join(t.TempDir(), "creds")
	if err := srv.WriteCredentials(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, emulator.AdminTokenFile))
	if fi, _ := os.Stat(filepath.Join(dir, emulator.AdminTokenFile)); err != nil || strings.TrimSpace(string(b)) != srv.AdminToken || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %q %v", b, err)
	}
}

func TestOutages(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	c := emutest.NewClient(t, srv, emulator.OrgA)
	if err := srv.Emulator.SetOutage(emulator.OutageBlackHole); err != nil {
		t.Fatal(err)
	}
	c.HTTP = &http.Client{Timeout: 300 * time.Millisecond}
	if _, err := c.Do("GET", "/usage", nil); err == nil {
		t.Fatal("a request was answered in a black hole")
	}
	// A request waiting in the black hole is answered once it ends.
	c.HTTP = &http.Client{Timeout: time.Minute}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		r, err := c.Do("GET", "/usage", nil)
		if err == nil && r.Status != 200 {
			err = fmt.Errorf("status %d", r.Status)
		}
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	if err := srv.Emulator.SetOutage(emulator.OutageNone); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("after the black hole: %v after %v", err, time.Since(start))
	}
	// A refusal resets at once.
	srv.Emulator.SetOutage(emulator.OutageRefuse)
	start = time.Now()
	if _, err := c.Do("GET", "/usage", nil); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("refused: %v after %v", err, time.Since(start))
	}
	srv.Emulator.SetOutage(emulator.OutageNone)
	c.Must(t, "GET", "/usage", nil)
}

// A black hole that starts while an object streams stalls the body: no byte
// until it ends, then the rest, intact.
func TestBlackHoleStallsBodyInFlight(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	data := testkit.RandBytes(1<<20, 7)
	id := v.upload(v.a, 0, 0, "big.bin", data, 1, false)
	r := v.ok(v.a, "POST", "/files/download", map[string]any{"file_ids": []int64{id}})
	url, _ := r["url"].(string)
	if url == "" {
		t.Fatalf("no url in %v", r)
	}
	v.e.ChangePlay(emulator.PlayChange{StreamRate: ptr(int64(2 << 20))}) // 0.5 s for the whole object
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	head := make([]byte, 64<<10)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	v.e.SetOutage(emulator.OutageBlackHole)
	got := make(chan []byte, 1)
	go func() {
		rest, _ := io.ReadAll(resp.Body)
		got <- rest
	}()
	time.Sleep(700 * time.Millisecond) // longer than the whole object takes
	select {
	case rest := <-got:
		t.Fatalf("the body ended (%d more bytes) inside the black hole", len(rest))
	default:
	}
	v.e.SetOutage(emulator.OutageNone)
	rest := <-got
	if !bytes.Equal(append(head, rest...), data) {
		t.Fatalf("body after the black hole: %d bytes, not the object", len(head)+len(rest))
	}
}

func ptr[T any](v T) *T { return &v }
