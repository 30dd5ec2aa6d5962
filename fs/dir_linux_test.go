package fs

// Tests of folders (dir.go) that need Linux: the flags of renameat2, and
// the errno of a mkdir of a name another desk made (expectErrno is Linux's:
// posix_linux_test.go).

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// renameat2(RENAME_WHITEOUT) is taken as a plain rename: the file moves,
// and no whiteout is left at the old name (the mount cannot hold one).
// The kernel lets only CAP_MKNOD ask it; the test runs as root.
func TestRenameWhiteoutIsAPlainRename(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("RENAME_WHITEOUT needs CAP_MKNOD")
	}
	e := newEnv(t, envOptions{})
	if err := os.WriteFile(e.Path("shared", "w"), []byte("moved"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if err := renameat2(e.Path("shared", "w"), e.Path("shared", "w2"), 4); err != nil {
		t.Fatalf("RENAME_WHITEOUT: %v", err)
	}
	if got := readFile(t, e.Path("shared", "w2")); got != "moved" {
		t.Errorf("w2 reads %q", got)
	}
	if _, err := os.Lstat(e.Path("shared", "w")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old name after RENAME_WHITEOUT: %v, want ENOENT", err)
	}
	e.settle()
	if got := e.serviceBytes("w2"); string(got) != "moved" {
		t.Errorf("w2 on the service: %q", got)
	}
	if _, ok := e.serviceFile("w"); ok {
		t.Errorf("the old name is still on the service")
	}
}

// mkdir of a name another desk made since this desk listed the folder is
// EEXIST from the service: folders are not merged, the other's stays.
func TestMkdirOfANameAnotherDeskMade(t *testing.T) {
	a, b := twoDesks(t)
	if _, err := os.ReadDir(b.Path("shared")); err != nil { // B lists shared/ (cached for a minute) before A makes d
		t.Fatal(err)
	}
	if err := os.Mkdir(a.Path("shared", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.Path("shared", "d", "a's"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.settle()
	expectErrno(t, "mkdir on B of a name A made", os.Mkdir(b.Path("shared", "d"), 0o755), syscall.EEXIST)
	files, err := a.Client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if f.Name == "d" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d folders named d on the service, want 1", n)
	}
	b.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	time.Sleep(1100 * time.Millisecond)
	if got := readFile(t, b.Path("shared", "d", "a's")); got != "a" {
		t.Errorf("B reads d/a's %q", got)
	}
}
