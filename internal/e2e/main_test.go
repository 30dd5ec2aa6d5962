package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/cli"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// binary is orgfs built once for the tests that run it as a child process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "orgfs-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "orgfs")
	if out, err := exec.Command("go", "build", "-o", binary, "github.com/orgfs/orgfs").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCmd runs orgfs in-process and returns its exit code and output.
func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cli.Main(append([]string{"orgfs"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeCreds writes a credentials file of c and returns its path.
func writeCreds(t *testing.T, c api.Credentials) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "creds.json")
	b, _ := json.Marshal(map[string]string{"endpoint": c.Endpoint, "key": c.Key, "secret": c.Secret})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHelpAndUsageErrors(t *testing.T) {
	if code, out, _ := runCmd("help"); code != 0 || !strings.Contains(out, "mount") || !strings.Contains(out, "emulator") {
		t.Errorf("help: %d %q", code, out)
	}
	if code, out, _ := runCmd("mount", "--help"); code != 0 || !strings.Contains(out, "--cache-max-size") || !strings.Contains(out, "never from") {
		t.Errorf("mount --help: %d %q", code, out)
	}
	if code, _, errOut := runCmd("nosuch"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd("mount", "--bogus", "x"); code != 2 || !strings.Contains(errOut, "--bogus") {
		t.Errorf("bad flag: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd("mount"); code != 2 || !strings.Contains(errOut, "MOUNTPOINT") {
		t.Errorf("no mount point: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd("mount", "--cache-max-size", "lots", "x"); code != 2 || !strings.Contains(errOut, "invalid size") {
		t.Errorf("bad size: %d %q", code, errOut)
	}
	// The built binary's, whose build information names its modules.
	if code, out := orgfsCmd(t, "version"); code != 0 || !strings.HasPrefix(out, "orgfs ") || !strings.Contains(out, "\ngo       go1.") ||
		!strings.Contains(out, "\ngo-fuse  v2.") || !strings.Contains(out, "\nplatform ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestMountStartErrors: a start that cannot work ends at once with one
// readable line and a non-zero status, and never shows the secret.
func TestMountStartErrors(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	good := testkit.Creds(t, srv, emulator.OrgA)
	bad, unreachable := good, good
	bad.Secret = "not-the-secret-0123456789"
	unreachable.Endpoint = "http://127.0.0.1:1"
	empty := t.TempDir()
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o600)
	tests := []struct {
		name  string
		creds string
		dir   string
		want  string
	}{
		{"bad secret", writeCreds(t, bad), empty, "refused the credentials"},
		{"unreachable endpoint", writeCreds(t, unreachable), empty, "cannot reach the service at http://127.0.0.1:1"},
		{"missing mount point", writeCreds(t, good), filepath.Join(empty, "nope"), "does not exist"},
		{"non-empty mount point", writeCreds(t, good), full, "is not empty"},
		{"missing credentials file", filepath.Join(empty, "none.json"), empty, "none.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, _, errOut := runCmd("mount", "--credentials", tt.creds, "--cache-dir", t.TempDir(), tt.dir)
			if code == 0 {
				t.Fatalf("mount succeeded")
			}
			if !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("stderr %q, want one line with %q", errOut, tt.want)
			}
			if strings.Contains(errOut, bad.Secret) || strings.Contains(errOut, good.Secret) {
				t.Errorf("stderr shows a secret: %q", errOut)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %v to fail", d)
			}
		})
	}
}

// A service that fails the first requests (a blip at boot: 503s) does not
// end the start: its probe tries again, and the mount comes up.
func TestMountStartRetriesAFlakyService(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	good := testkit.Creds(t, srv, emulator.OrgA)
	u, err := url.Parse(good.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	var n atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 3 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"client_code":503,"message":"unavailable"}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	flaky := good
	flaky.Endpoint = front.URL + u.Path
	d := startDaemon(t, t.TempDir(), "--credentials", writeCreds(t, flaky), "--cache-dir", t.TempDir())
	if got := n.Load(); got <= 3 {
		t.Fatalf("%d requests reached the service's front", got)
	}
	if _, err := os.ReadDir(filepath.Join(d.dir, "shared")); err != nil {
		t.Fatal(err)
	}
}

// daemon is orgfs mount running as a child process.
type daemon struct {
	t   *testing.T
	cmd *exec.Cmd
	out *testkit.SyncBuffer
	dir string
}

func startDaemon(t *testing.T, dir string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, out: &testkit.SyncBuffer{}, dir: dir}
	if len(args) == 0 {
		args = []string{"--demo"}
	}
	d.cmd = exec.Command(binary, append(append([]string{"mount", "--log-level", "info"}, args...), dir)...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
		exec.Command("fusermount3", "-u", "-z", dir).Run()
		if t.Failed() {
			t.Logf("the daemon's output:\n%s", d.out)
		}
	})
	testkit.WaitFor(t, 20*time.Second, "the mount to come up", func() bool {
		// The kernel may answer from its entry cache even for a dead mount:
		// the daemon's word comes first.
		if !strings.Contains(d.out.String(), "mounted at") {
			return false
		}
		_, err := os.Stat(filepath.Join(dir, "shared"))
		return err == nil
	})
	return d
}

// wait waits for the daemon to exit and returns its status.
func (d *daemon) wait() int {
	d.t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		d.cmd.Process.Kill()
		d.t.Fatalf("the daemon did not exit: %s", d.out)
	}
	return d.cmd.ProcessState.ExitCode()
}

func mounted(dir string) bool {
	b, _ := os.ReadFile("/proc/self/mounts")
	return strings.Contains(string(b), " "+dir+" ")
}

func TestDaemonLifecycle(t *testing.T) {
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Fatal("fusermount3 is needed (apt-get install fuse3)")
	}
	dir := t.TempDir()
	// A service of its own (not --demo's, gone with the daemon), so that
	// what exit status 0 promises is checked there: everything written is
	// on the service. An hour's write-back leaves the sending to the drain.
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedDemo})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	for i, stop := range []string{"SIGINT", "SIGTERM", "fusermount3 -u"} {
		t.Run(stop, func(t *testing.T) {
			d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "1h")
			b, err := os.ReadFile(filepath.Join(dir, "shared", "Welcome.txt"))
			if err != nil || len(b) == 0 {
				t.Fatalf("reading through the daemon: %v", err)
			}
			name, data := fmt.Sprintf("written-%d.bin", i), testkit.RandBytes(300<<10, int64(i))
			if err := os.WriteFile(filepath.Join(dir, "shared", name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if uploaded(client, name, len(data)) {
				t.Fatalf("%s was sent before the unmount (write-back 1h)", name)
			}
			switch stop {
			case "SIGINT":
				d.cmd.Process.Signal(os.Interrupt)
			case "SIGTERM":
				d.cmd.Process.Signal(syscall.SIGTERM)
			default:
				if out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput(); err != nil {
					t.Fatalf("fusermount3 -u: %v: %s", err, out)
				}
			}
			if code := d.wait(); code != 0 {
				t.Fatalf("exit status %d: %s", code, d.out)
			}
			if mounted(dir) {
				t.Fatalf("still mounted after %s", stop)
			}
			if got := serviceBytes(t, client, name); !bytes.Equal(got, data) {
				t.Fatalf("exit status 0 after %s, but the service holds %d bytes of %s, want the %d written", stop, len(got), name, len(data))
			}
		})
	}
	t.Run("dead mount after a crash", func(t *testing.T) {
		d := startDaemon(t, dir)
		d.cmd.Process.Kill()
		d.wait()
		// Reading the folder must reach the daemon (a stat may be answered
		// from the kernel's attribute cache).
		_, err := os.ReadDir(dir)
		if !errors.Is(err, syscall.ENOTCONN) {
			t.Fatalf("after SIGKILL the mount point answers %v, want ENOTCONN", err)
		}
		d2 := startDaemon(t, dir)
		if !strings.Contains(d2.out.String(), "clearing a dead mount") {
			t.Errorf("no word of the dead mount: %s", d2.out)
		}
		d2.cmd.Process.Signal(os.Interrupt)
		if code := d2.wait(); code != 0 || mounted(dir) {
			t.Fatalf("exit %d, mounted %v: %s", code, mounted(dir), d2.out)
		}
	})
}

func TestSIGHUPDropsCachedListings(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir := t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--dir-cache-time", "1h")
	if names, err := os.ReadDir(filepath.Join(dir, "shared")); err != nil || len(names) != 0 {
		t.Fatalf("shared/ = %v, %v; want empty", names, err)
	}
	root, err := srv.Emulator.RootID(emulator.OrgA, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Emulator.CreateFile(emulator.OrgA, 0, root, "later.txt", strings.NewReader("hello")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond) // past the kernel's own 1 s entry cache
	if _, err := os.Stat(filepath.Join(dir, "shared", "later.txt")); !os.IsNotExist(err) {
		t.Fatalf("a new file showed within the listing cache time: %v", err)
	}
	d.cmd.Process.Signal(syscall.SIGHUP)
	testkit.WaitFor(t, 5*time.Second, "later.txt to read \"hello\" after SIGHUP", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "shared", "later.txt"))
		return err == nil && string(b) == "hello"
	})
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, d.out)
	}
}

// TestCrashLosesNoWrite: files written, the daemon killed before they were
// uploaded, the next mount of the same cache uploads them all.
func TestCrashLosesNoWrite(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir, cacheDir := t.TempDir(), t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", cacheDir, "--write-back", "1h")
	want := map[string][]byte{}
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("crash-%02d.bin", i)
		want[name] = bytes.Repeat([]byte{byte(i)}, 1000+i*4099)
		if err := os.WriteFile(filepath.Join(dir, "shared", name), want[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d.cmd.Process.Kill()
	d.wait()
	if n := srv.Emulator.Stats().Requests["POST /files/{id}/complete"]; n != 0 {
		t.Fatalf("%d uploads completed before the crash; the test needs none", n)
	}
	d2 := startDaemon(t, dir, "--credentials", creds, "--cache-dir", cacheDir)
	testkit.WaitFor(t, 60*time.Second, "the 50 files after the restart", func() bool {
		for name, data := range want {
			b, err := os.ReadFile(filepath.Join(dir, "shared", name))
			if err != nil || !bytes.Equal(b, data) {
				return false
			}
		}
		return srv.Emulator.Stats().Requests["POST /files/{id}/complete"] >= 50
	})
	d2.cmd.Process.Signal(os.Interrupt)
	if code := d2.wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, d2.out)
	}
	// What the service holds, read through a new mount with an empty cache.
	d3 := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--read-only")
	for name, data := range want {
		if b, err := os.ReadFile(filepath.Join(dir, "shared", name)); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("%s on the service differs (%v)", name, err)
		}
	}
	d3.cmd.Process.Signal(os.Interrupt)
	d3.wait()
}

// TestSIGUSR1ListsAndRetriesFailedUploads: a permanent failure stays staged
// and is named in the log; SIGUSR1 lists the queue and retries it.
func TestSIGUSR1ListsAndRetriesFailedUploads(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	if err := srv.Emulator.SetStorageQuota(emulator.OrgA, 0, 100); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "10ms")
	data := bytes.Repeat([]byte("x"), 5000)
	if err := os.WriteFile(filepath.Join(dir, "shared", "too-big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog := func(what string) {
		t.Helper()
		testkit.WaitFor(t, 15*time.Second, fmt.Sprintf("%q in the log", what), func() bool {
			return strings.Contains(d.out.String(), what)
		})
	}
	waitLog("too-big.bin") // the failure is logged with the file's path
	d.cmd.Process.Signal(syscall.SIGUSR1)
	waitLog("SIGUSR1: upload queue")
	// The queue's own line for the file says it failed (the failure's log
	// line, there before the signal, must not count).
	var listed bool
	for _, l := range strings.Split(d.out.String(), "\n") {
		listed = listed || strings.Contains(l, "SIGUSR1: upload queue") && strings.Contains(l, "upload=\"failed ") && strings.Contains(l, "too-big.bin")
	}
	if !listed {
		t.Fatalf("the queue listing does not show the failure:\n%s", d.out)
	}
	srv.Emulator.SetStorageQuota(emulator.OrgA, 0, 1<<30)
	d.cmd.Process.Signal(syscall.SIGUSR1)
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{Logger: testkit.Quiet()})
	testkit.WaitFor(t, 15*time.Second, "the retried upload", func() bool {
		return srv.Emulator.Stats().Requests["POST /files/{id}/complete"] > 0 && uploaded(client, "too-big.bin", len(data))
	})
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, d.out)
	}
}

// serviceBytes downloads shared/name through the API (nil when it is not
// there).
func serviceBytes(t *testing.T, client *api.Client, name string) []byte {
	t.Helper()
	files, err := client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == name {
			b, err := fileBytes(t.Context(), client, f)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	return nil
}

// fileBytes downloads service file f through the API.
func fileBytes(ctx context.Context, client *api.Client, f api.File) ([]byte, error) {
	if f.Size == 0 {
		return []byte{}, nil
	}
	link, err := client.FileURL(ctx, f.ID)
	if err != nil {
		return nil, err
	}
	r, err := client.ReadRange(ctx, link.URL, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// uploaded reports whether shared/name is on the service with size bytes.
func uploaded(client *api.Client, name string, size int) bool {
	files, err := client.SharedFiles(context.Background(), api.ListFilesRequest{}).Collect()
	if err != nil {
		return false
	}
	for _, f := range files {
		if f.Name == name && f.Size == int64(size) {
			return true
		}
	}
	return false
}
