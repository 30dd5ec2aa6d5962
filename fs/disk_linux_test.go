package fs

// What programs that expect a disk meet: folder fsync, access times, link
// counts of unlinked open files, long names, blocks of sparse files.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fsync of a folder succeeds (atomic-write routines sync the parent after
// their rename), in the fixed folders and in the storage.
func TestFolderFsync(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := os.Mkdir(e.Path("shared", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// os.replace, then fsync of the folder, as Python's and Go's atomic
	// writers do.
	if err := os.WriteFile(e.Path("shared", "sub", ".tmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(e.Path("shared", "sub", ".tmp"), e.Path("shared", "sub", "final")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{e.Path(), e.Path("shared"), e.Path("shared", "sub"), e.Path("computers"), e.Path("recordings")} {
		d, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Errorf("fsync of %s: %v", p, err)
		}
		d.Close()
	}
}

func TestAttributesAsOnADisk(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "f")
	if err := os.WriteFile(p, []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The access time is the modification time, not 1970 (age-based
	// cleaners read it), pending and uploaded.
	checkAtime := func(when string) {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Atim != st.Mtim || st.Atim.Sec < time.Now().Add(-time.Hour).Unix() {
			t.Errorf("%s: atime %v, mtime %v", when, st.Atim, st.Mtim)
		}
	}
	checkAtime("pending")
	e.settle()
	time.Sleep(1100 * time.Millisecond)
	checkAtime("uploaded")

	// A name longer than 255 bytes is ENAMETOOLONG, not ENOENT.
	if _, err := os.Stat(e.Path("shared", strings.Repeat("n", 256))); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("lookup of a 256-byte name: %v, want ENAMETOOLONG", err)
	}

	// st_nlink is 0 once an open file is unlinked: a service file and a
	// pending one.
	pending := e.Path("shared", "pending")
	if err := os.WriteFile(pending, []byte("not yet up"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{p, pending} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 {
			t.Errorf("fstat of %s unlinked while open: nlink %d (%v), want 0", name, st.Nlink, err)
		}
		f.Close()
	}

	// A sparse staged file counts the blocks it holds, as du expects.
	sparse := e.Path("shared", "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("end"), 64<<20); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st.Size != 64<<20+3 || st.Blocks*512 >= 1<<20 {
		t.Errorf("sparse file of %d bytes shows %d blocks (%d bytes), want what it holds", st.Size, st.Blocks, st.Blocks*512)
	}
}

// A file manager's "New Folder", then its name: an empty folder renames at
// once and is usable under its new name at once; so does one with content.
func TestRenameEmptyFolder(t *testing.T) {
	e := newEnv(t, envOptions{})
	old, renamed := e.Path("shared", "Untitled Folder"), e.Path("shared", "Budget 2027")
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(old, renamed); err != nil {
		t.Fatalf("rename of an empty folder: %v", err)
	}
	// At once, through the moved folder: a file made in it goes to the new
	// folder on the service.
	if err := os.WriteFile(filepath.Join(renamed, "plan.txt"), []byte("plan"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if _, ok := e.serviceFile("Untitled Folder"); ok {
		t.Error("the old folder is still on the service")
	}
	if got := string(e.serviceBytes("Budget 2027/plan.txt")); got != "plan" {
		t.Errorf("Budget 2027/plan.txt holds %q on the service", got)
	}
	if after, err := os.Stat(renamed); err != nil || !os.SameFile(before, after) {
		t.Errorf("the renamed folder: %v (same inode: %v)", err, err == nil && os.SameFile(before, after))
	}
	// As a file manager does it: gio rename (GLib's, as Nautilus and the
	// GTK file chooser use).
	gio, err := exec.LookPath("gio")
	if err != nil {
		t.Fatal("gio is needed (apt-get install libglib2.0-bin)")
	}
	if err := os.Mkdir(e.Path("shared", "Untitled Folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gio, "rename", e.Path("shared", "Untitled Folder"), "Minutes").CombinedOutput(); err != nil {
		t.Fatalf("gio rename of an empty folder: %v: %s", err, out)
	}
	if fi, err := os.Stat(e.Path("shared", "Minutes")); err != nil || !fi.IsDir() {
		t.Fatalf("after gio rename: %v", err)
	}
	// With content: the folder with it (rename_tree_test.go has more).
	if err := os.Rename(renamed, e.Path("shared", "Budget 2028")); err != nil {
		t.Errorf("rename of a folder with content: %v", err)
	}
	e.settle()
	if got := string(e.serviceBytes("Budget 2028/plan.txt")); got != "plan" {
		t.Errorf("after the rename, Budget 2028/plan.txt holds %q", got)
	}
}
