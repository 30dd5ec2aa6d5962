package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs/ctl"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// orgfsCmd runs the built orgfs and returns its exit status and output.
func orgfsCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// TestSyncStatusUnmount: orgfs sync returns once the files written are on
// the service (checked through the API), status shows the queue and its
// failures, unmount drains and says by its exit status whether all went.
func TestSyncStatusUnmount(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	dir := t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "1h") // passthrough on by default

	data := testkit.RandBytes(3<<20, 7)
	if err := os.WriteFile(filepath.Join(dir, "shared", "a.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "shared", "b.txt"), []byte("b"), 0o644)
	// Nothing is sent before the write-back delay (1h) ...
	if uploaded(client, "a.bin", len(data)) {
		t.Fatal("a.bin uploaded before sync")
	}
	code, out := orgfsCmd(t, "status", dir)
	if code != 0 || !strings.Contains(out, "2 pending") || !strings.Contains(out, "shared/a.bin") || !strings.Contains(out, "%") {
		t.Fatalf("status: %d %s", code, out)
	}
	// It says how reads of cached files run: in FUSE passthrough here (the
	// default; root, Linux 6.9+, as in CI), or off and why.
	if want := "kernel    passthrough on; "; !strings.Contains(out, want) && (os.Getenv("CI") != "" || !strings.Contains(out, "kernel    passthrough off: ")) {
		t.Errorf("status does not say the passthrough mode: %s", out)
	}
	code, out = orgfsCmd(t, "status", "--json", dir)
	var st struct {
		Uploads []ctl.Upload `json:"uploads"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Uploads) != 2 {
		t.Fatalf("status --json: %d %s", code, out)
	}
	// ... sync of one path sends that file only ...
	code, out = orgfsCmd(t, "sync", dir, filepath.Join(dir, "shared", "a.bin"))
	if code != 0 || !strings.Contains(out, "1 files on the service") {
		t.Fatalf("sync a.bin: %d %s", code, out)
	}
	if !uploaded(client, "a.bin", len(data)) || uploaded(client, "b.txt", 1) {
		t.Fatal("after sync of a.bin: want a.bin on the service and b.txt not yet")
	}
	// ... a failure is an exit status and a reason.
	if err := srv.Emulator.SetStorageQuota(emulator.OrgA, 0, 1); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "shared", "c.txt"), []byte("ccc"), 0o644)
	code, out = orgfsCmd(t, "sync", dir)
	if code != 1 || !strings.Contains(out, "c.txt") {
		t.Fatalf("sync with a full storage: %d %s", code, out)
	}
	code, out = orgfsCmd(t, "status", dir)
	if code != 0 || !strings.Contains(out, "FAILED") || !strings.Contains(out, "shared/c.txt") {
		t.Errorf("status does not show the failure: %s", out)
	}
	code, out = orgfsCmd(t, "unmount", dir)
	if code != 3 || !strings.Contains(out, "not uploaded") {
		t.Fatalf("unmount with a failed upload: %d %s", code, out)
	}
	if mounted(dir) {
		t.Fatal("still mounted after orgfs unmount")
	}
	if c := d.wait(); c != 3 {
		t.Errorf("the daemon exited %d, want 3 (a file left staged)", c)
	}

	// A clean unmount: everything sent, exit 0.
	srv.Emulator.SetStorageQuota(emulator.OrgA, 0, 1<<40)
	startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "1h")
	os.WriteFile(filepath.Join(dir, "shared", "d.txt"), []byte("dd"), 0o644)
	code, out = orgfsCmd(t, "unmount", dir)
	if code != 0 || !uploaded(client, "d.txt", 2) || mounted(dir) {
		t.Fatalf("unmount: %d %s", code, out)
	}
	// Nothing to send: no progress drawn, one line.
	startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir())
	code, out = orgfsCmd(t, "unmount", dir)
	if code != 0 || strings.Contains(out, "total") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("unmount with nothing to send: %d %q", code, out)
	}
}

// orgfs status --watch redraws what is true at each poll: its counters line
// and its total follow the queue (they stayed at their first frame: "1.0 b /
// 1.0 b" for the total), and --until-empty returns once everything is sent.
func TestStatusWatchRedraws(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, StreamRate: 4 << 20})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir := t.TempDir()
	startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "300ms")
	if err := os.WriteFile(filepath.Join(dir, "shared", "a.bin"), testkit.RandBytes(6<<20, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := orgfsCmd(t, "status", "--watch", "--until-empty", dir)
	if code != 0 {
		t.Fatalf("status --watch --until-empty: exit %d: %s", code, out)
	}
	if !strings.Contains(out, "uploads 0 pending, 0 in flight, 0 failed; 1 sent") {
		t.Errorf("the counters line did not follow the queue:\n%s", out)
	}
	if !strings.Contains(out, "6.0 MiB / 6.0 MiB") || strings.Contains(out, "1.0 b / 1.0 b") {
		t.Errorf("the total did not follow the queue:\n%s", out)
	}
}

// TestMetrics: --metrics-addr serves the counters of .ctl/stats as
// Prometheus metrics.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, "--demo", "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`url="?(http://[^ "]+/metrics)`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no metrics address in the log: %s", d.out)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "shared", "Welcome.txt")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "shared", "m.txt"), []byte("m"), 0o644)
	if code, out := orgfsCmd(t, "sync", dir); code != 0 {
		t.Fatal(out)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`orgfs_requests_total{op="GET /files"}`, `orgfs_uploads_total 1`, "orgfs_cache_max_bytes 1.073741824e+10",
		"# TYPE orgfs_uploaded_bytes_total counter", "# TYPE orgfs_uploads_pending gauge", "go_goroutines",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
