package fs

// Tests of the mount as a whole: options, permissions, statfs.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

func TestChangesRefusedReadOnly(t *testing.T) {
	e := newEnv(t, envOptions{ReadOnly: true})
	e.put(0, e.root(0), "ro.txt", []byte("x"))
	for what, err := range map[string]error{
		"create": os.WriteFile(e.Path("shared", "new.txt"), []byte("x"), 0o644),
		"mkdir":  os.Mkdir(e.Path("shared", "d"), 0o755),
		"remove": os.Remove(e.Path("shared", "ro.txt")),
		"write":  os.WriteFile(e.Path("shared", "ro.txt"), []byte("y"), 0o644),
	} {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", what, err)
		}
	}
}

func TestDefaultPermissionsWithAllowOther(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "secret.txt", []byte("only root"))
	// A second mount of the same service with --allow-other and umask 077.
	store, err := cache.OpenStore(cache.StoreOptions{Dir: t.TempDir(), Client: e.Client, DirCacheTime: time.Minute, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tree := New(Deps{Store: store, Log: testkit.Log(t)}, Options{UID: 0, GID: 0, Umask: 0o077})
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	server, err := Mount(dir, tree, MountOptions{AllowOther: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Unmount() })
	cat := exec.Command("cat", filepath.Join(dir, "shared", "secret.txt"))
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cat.CombinedOutput()
	if err == nil || strings.Contains(string(out), "only root") {
		t.Fatalf("user nobody read a 0600 file of root: %q", out)
	}
	if !strings.Contains(string(out), "Permission denied") {
		t.Fatalf("cat as nobody: %q", out)
	}
}

func TestStatfsOfEveryFolder(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, p := range []string{e.Dir, e.Path("shared"), e.Path("computers"), e.Path("recordings")} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(p, &st); err != nil || st.Bavail == 0 {
			t.Errorf("statfs %s: %d blocks free (%v)", p, st.Bavail, err)
		}
	}
}

// TestFixedFoldersCannotBeRemoved: the root's folders and computers'
// folders answer EPERM to rmdir and mv, and stay (.ctl's: package ctl's
// TestCtlEntriesCannotBeRemoved).
func TestFixedFoldersCannotBeRemoved(t *testing.T) {
	e := newEnv(t, envOptions{Seed: emulator.SeedDemo})
	seats, _ := api.Collect(e.Client.Seats(t.Context(), ""))
	for _, c := range []struct {
		op   string
		path string
	}{
		{"rmdir", "shared"}, {"rmdir", "recordings"}, {"rmdir", "computers"},
		{"rmdir", "computers/" + seats[0].Name},
		{"mv", "shared"},
	} {
		fstest.CannotRemove(t, c.op, e.Path(c.path))
	}
}
