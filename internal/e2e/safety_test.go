package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/cli"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// Two organizations, one --cache-dir: what one left staged is never seen nor
// sent by a mount of the other, and goes to its own organization at its next
// mount.
func TestTwoOrganizationsShareNothingInOneCacheDir(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	credsA := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	credsB := writeCreds(t, testkit.Creds(t, srv, emulator.OrgB))
	dir, cacheDir := t.TempDir(), t.TempDir()
	d := startDaemon(t, dir, "--credentials", credsA, "--cache-dir", cacheDir, "--write-back", "1h")
	data := testkit.RandBytes(50_000, 1)
	if err := os.WriteFile(filepath.Join(dir, "shared", "org-a-only.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	d.cmd.Process.Kill()
	d.wait()

	d = startDaemon(t, dir, "--credentials", credsB, "--cache-dir", cacheDir)
	if _, err := os.Stat(filepath.Join(dir, "shared", "org-a-only.bin")); err == nil {
		t.Fatal("org-b's mount shows org-a's staged file")
	}
	time.Sleep(500 * time.Millisecond)
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("org-b's mount: exit %d", code)
	}
	clientA := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	clientB := testkit.Client(t, srv, emulator.OrgB, api.Options{})
	if uploaded(clientB, "org-a-only.bin", len(data)) || uploaded(clientA, "org-a-only.bin", len(data)) {
		t.Fatal("org-a's staged file was sent by org-b's mount")
	}

	d = startDaemon(t, dir, "--credentials", credsA, "--cache-dir", cacheDir)
	testkit.WaitFor(t, 15*time.Second, "org-a's file at org-a", func() bool { return uploaded(clientA, "org-a-only.bin", len(data)) })
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("org-a's second mount: exit %d", code)
	}
	if uploaded(clientB, "org-a-only.bin", len(data)) {
		t.Fatal("org-b holds org-a's file")
	}
}

// A mount that ends with files not uploaded says so, where they are and how
// they resume, with exit status 3; the log names them by their path; the
// next mount sends them once the cause is gone.
func TestExitStatusTellsOfFilesLeftStaged(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	if err := srv.Emulator.SetStorageQuota(emulator.OrgA, 0, 100); err != nil {
		t.Fatal(err)
	}
	dir, cacheDir := t.TempDir(), t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", cacheDir, "--write-back", "10ms", "--drain-timeout", "5s")
	if err := os.Mkdir(filepath.Join(dir, "shared", "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 5000)
	if err := os.WriteFile(filepath.Join(dir, "shared", "docs", "too-big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the failure in the log", func() bool {
		return strings.Contains(d.out.String(), "upload failed")
	})
	if !strings.Contains(d.out.String(), "shared/docs/too-big.bin") {
		t.Fatalf("the log does not name the file by its path:\n%s", d.out)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != cli.ExitUploadsLeft {
		t.Fatalf("exit status %d with a file left staged, want %d:\n%s", code, cli.ExitUploadsLeft, d.out)
	}
	if out := d.out.String(); !strings.Contains(out, "1 files not uploaded") || !strings.Contains(out, cacheDir) ||
		!strings.Contains(out, "next mount") {
		t.Fatalf("the last words do not say what is left, where and how it resumes:\n%s", out)
	}

	srv.Emulator.SetStorageQuota(emulator.OrgA, 0, 1<<30)
	d = startDaemon(t, dir, "--credentials", creds, "--cache-dir", cacheDir)
	testkit.WaitFor(t, 15*time.Second, "the file at the next mount", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "shared", "docs", "too-big.bin"))
		return err == nil && bytes.Equal(b, data) && srv.Emulator.Stats().Requests["POST /files/{id}/complete"] > 0
	})
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d after everything was sent:\n%s", code, d.out)
	}
}

// An outage in the middle of a workload: a reader streaming a file gets EIO
// within the I/O timeout (--io-timeout reaches the mount's waits), not after
// the client's retries, never a hang; a file written during the outage is
// uploaded by itself when the service answers again.
func TestOutageMidWorkload(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	big := testkit.RandBytes(64<<20, 9)
	if _, err := srv.Emulator.CreateFile(emulator.OrgA, 0, 0, "big.bin", bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	rate := int64(4 << 20)
	srv.Emulator.ChangePlay(emulator.PlayChange{StreamRate: &rate})
	dir := t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "10ms",
		"--io-timeout", "1s", "--read-ahead", "4M")
	f, err := os.Open(filepath.Join(dir, "shared", "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	if _, err := io.ReadFull(f, buf); err != nil {
		t.Fatal(err)
	}
	srv.Emulator.SetOutage(emulator.OutageBlackHole)
	start := time.Now()
	readErr := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, f)
		readErr <- err
	}()
	during := []byte("written during the outage\n")
	if err := os.WriteFile(filepath.Join(dir, "shared", "during.txt"), during, 0o644); err != nil {
		t.Fatalf("writing during the outage: %v", err)
	}
	select {
	case err := <-readErr:
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("the reader in the outage got %v after %v, want EIO", err, time.Since(start))
		}
		t.Logf("the reader got EIO after %v", time.Since(start).Round(time.Millisecond))
		// --io-timeout 1s; the client's retries took 20 s.
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the reader got EIO after %v, want it within --io-timeout 1s (and some slack)", took)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the reader hangs in the outage")
	}
	f.Close()
	srv.Emulator.SetOutage(emulator.OutageNone)
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	testkit.WaitFor(t, 90*time.Second, "the file written during the outage, uploaded by itself", func() bool {
		return uploaded(client, "during.txt", len(during))
	})
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// A closed log pipe (orgfs mount ... 2>&1 | head -c 1, a terminal gone)
// does not kill the mount: it logs on into the void and serves, and still
// unmounts cleanly (it died of SIGPIPE at its next log line before).
func TestClosedLogPipeDoesNotKillTheMount(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedDemo})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "mount", "--credentials", creds, "--cache-dir", t.TempDir(), "--log-level", "debug", dir)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		exec.Command("fusermount3", "-u", "-z", dir).Run()
	})
	// Read its output until the mount is up, then close the pipe.
	up := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "mounted at") {
				up <- true
				return
			}
		}
		up <- false
	}()
	select {
	case ok := <-up:
		if !ok {
			t.Fatal("the mount's output ended before it came up")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the mount did not come up")
	}
	r.Close()
	// Every request now logs a debug line into the closed pipe.
	for range 3 {
		if _, err := os.ReadDir(filepath.Join(dir, "shared")); err != nil {
			t.Fatalf("listing after the log pipe closed: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "shared", "Welcome.txt")); err != nil || len(b) == 0 {
			t.Fatalf("reading after the log pipe closed: %v", err)
		}
		cmd.Process.Signal(syscall.SIGHUP) // logs, and drops the listings
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the daemon died after its log pipe closed: %v", err)
	default:
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) && !ee.Exited() {
			t.Fatalf("the daemon was killed by a signal at unmount: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not end")
	}
}

// --drain-timeout: a service that does not answer at unmount leaves the file
// staged, exit 3 once the timeout ran out (not after the outage), and the
// next mount sends it.
func TestDrainTimeoutLeavesFilesStaged(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir, cacheDir := t.TempDir(), t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", cacheDir, "--write-back", "1h",
		"--drain-timeout", "1s", "--io-timeout", "1s")
	data := []byte("written before the outage, sent after it\n")
	if err := os.WriteFile(filepath.Join(dir, "shared", "late.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Emulator.SetOutage(emulator.OutageBlackHole)
	t.Cleanup(func() { srv.Emulator.SetOutage(emulator.OutageNone) })
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != cli.ExitUploadsLeft {
		t.Fatalf("exit status %d when --drain-timeout ran out, want %d:\n%s", code, cli.ExitUploadsLeft, d.out)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the daemon took %v to end with --drain-timeout 1s", took)
	}
	if out := d.out.String(); !strings.Contains(out, "1 files not uploaded") || !strings.Contains(out, cacheDir) {
		t.Fatalf("the last words do not say what is left and where:\n%s", out)
	}
	srv.Emulator.SetOutage(emulator.OutageNone)
	d = startDaemon(t, dir, "--credentials", creds, "--cache-dir", cacheDir, "--write-back", "10ms")
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	testkit.WaitFor(t, 15*time.Second, "the file at the next mount", func() bool { return uploaded(client, "late.txt", len(data)) })
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d after everything was sent:\n%s", code, d.out)
	}
}
