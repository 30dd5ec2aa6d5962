package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// TestCacheDirServesOneDaemon: a second orgfs mount of the same
// organization on the same --cache-dir is refused before it mounts (one
// line naming the cache dir in use); once the first daemon has exited, the
// lock is gone with it and a new mount of that cache dir starts.
func TestCacheDirServesOneDaemon(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	cache := t.TempDir()
	first := startDaemon(t, t.TempDir(), "--credentials", creds, "--cache-dir", cache)

	second := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "mount", "--credentials", creds, "--cache-dir", cache, second)
	t.Cleanup(func() { exec.Command("fusermount3", "-u", "-z", second).Run() })
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a second mount on the same cache dir started: %s", out)
	}
	if !strings.Contains(string(out), "is in use by another orgfs mount") {
		t.Errorf("the second mount said %q, want the cache dir in use", out)
	}
	if mounted(second) {
		t.Errorf("the second mount point is mounted")
	}

	first.cmd.Process.Signal(os.Interrupt)
	if code := first.wait(); code != 0 {
		t.Fatalf("the first daemon exited %d", code)
	}
	third := startDaemon(t, t.TempDir(), "--credentials", creds, "--cache-dir", cache)
	third.cmd.Process.Signal(os.Interrupt)
	if code := third.wait(); code != 0 {
		t.Fatalf("a mount of the cache dir after the first exited: exit %d: %s", code, third.out)
	}
}
