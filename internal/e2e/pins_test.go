package e2e

// What the built binary does with files still open for writing at orgfs
// sync and at unmount, and with what a demo could not upload.

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// holder is a shell holding a file of the mount open for writing: each line
// sent to it is appended to the file, which stays open until the shell ends.
type holder struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	path  string
	wrote int
}

func holdOpen(t *testing.T, path string) *holder {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `exec 3>"$1"; while IFS= read -r line; do printf '%s' "$line" >&3; done`, "sh", path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{t: t, cmd: cmd, in: in, path: path}
	t.Cleanup(h.end)
	return h
}

// write has the shell append s and waits until the file has it.
func (h *holder) write(s string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, s+"\n"); err != nil {
		h.t.Fatal(err)
	}
	h.wrote += len(s)
	testkit.WaitFor(h.t, 10*time.Second, "the shell's write", func() bool {
		st, err := os.Stat(h.path)
		return err == nil && st.Size() == int64(h.wrote)
	})
}

// end closes the file: the shell ends.
func (h *holder) end() {
	if h.cmd.ProcessState != nil {
		return
	}
	h.in.Close()
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}

// orgfs sync sends a file still open for writing as it is, and the file
// stays open and writable; the next sync sends what was written since.
// orgfs unmount sends it too, then fails (exit 1) as the file keeps the
// mount busy. The daemon's own unmount with it still open (SIGTERM, which
// detaches the mount in use, then SIGTERM again to end while the program
// holds it) sends it as it is, exit 0.
func TestSyncAndUnmountSendOpenFilesAsTheyAre(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	dir := t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "1h")
	h := holdOpen(t, filepath.Join(dir, "shared", "open.log"))
	h.write("first")
	if code, out := orgfsCmd(t, "sync", dir); code != 0 || !strings.Contains(out, "1 files on the service") {
		t.Fatalf("sync with a file open for writing: %d %s", code, out)
	}
	if got := string(serviceBytes(t, client, "open.log")); got != "first" {
		t.Fatalf("after sync the service holds %q, want the open file as it was, %q", got, "first")
	}
	h.write(" second")
	if code, out := orgfsCmd(t, "sync", dir); code != 0 {
		t.Fatalf("second sync: %d %s", code, out)
	}
	if got := string(serviceBytes(t, client, "open.log")); got != "first second" {
		t.Fatalf("after the second sync the service holds %q", got)
	}

	// orgfs unmount sends it, then cannot unmount while it is open.
	h.write(" third")
	code, out := orgfsCmd(t, "unmount", dir)
	if code != 1 || !strings.Contains(out, "programs still use it") || !mounted(dir) {
		t.Fatalf("orgfs unmount with a file open: exit %d, mounted %v: %s", code, mounted(dir), out)
	}
	if got := string(serviceBytes(t, client, "open.log")); got != "first second third" {
		t.Fatalf("after orgfs unmount the service holds %q", got)
	}

	h.write(" fourth")
	d.cmd.Process.Signal(syscall.SIGTERM)
	testkit.WaitFor(t, 10*time.Second, "the daemon to detach the mount in use", func() bool {
		return strings.Contains(d.out.String(), "the mount is in use: detached it")
	})
	if got := string(serviceBytes(t, client, "open.log")); got != "first second third" {
		t.Fatalf("while the detached mount is in use the service holds %q: sent before the end", got)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, d.out)
	}
	if got := string(serviceBytes(t, client, "open.log")); got != "first second third fourth" {
		t.Errorf("after the unmount the service holds %q, want the open file as it was", got)
	}
}

// orgfs mount --demo without --cache-dir keeps its cache in a folder of its
// own, removed at exit with the demo organization: what could not be
// uploaded (here a file larger than the demo's storage, refused at once) is
// discarded, said in the log, exit 0.
func TestDemoWithoutCacheDirDiscardsWhatWasNotUploaded(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, "--demo", "--write-back", "1h")
	m := regexp.MustCompile(`\(cache ([^)]+)\)`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("the daemon did not say where its cache is: %s", d.out)
	}
	cacheDir := m[1]
	// A sparse file past the demo's shared storage (100 GiB): staged, never
	// accepted by the service.
	f, err := os.Create(filepath.Join(dir, "shared", "too large.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(200 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Stat(filepath.Join(cacheDir, "staging")); err != nil {
		t.Fatalf("the demo's cache dir has no staging: %v", err)
	}
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d, want 0 (a demo's files are discarded): %s", code, d.out)
	}
	out := d.out.String()
	if !strings.Contains(out, "demo: files not uploaded are discarded with the demo organization") || strings.Contains(out, "stay staged") {
		t.Errorf("the last words do not say the file was discarded:\n%s", lastLines(out, 5))
	}
	if _, err := os.Stat(cacheDir); !os.IsNotExist(err) {
		t.Errorf("the demo's cache dir %s is still there (%v)", cacheDir, err)
	}
}

// lastLines are the last n lines of s.
func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
