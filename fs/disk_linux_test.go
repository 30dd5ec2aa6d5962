package fs

// What programs that expect a disk meet: folder fsync, access times, link
// counts of unlinked open files, long names, blocks of sparse files, byte
// range locks held across an fsync (SQLite).

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

// Linux's open file description locks (fcntl.h): POSIX byte range locks
// owned by an open file rather than a process, in the same lock table, so
// that two opens in one test conflict as two processes' locks do.
const (
	fOFDGetlk = 36 // F_OFD_GETLK
	fOFDSetlk = 37 // F_OFD_SETLK
)

// SQLite's locking on the mount (docs/SEMANTICS.md, "SQLite"): byte range
// locks are the local kernel's (the mount asks for no lock requests), and a
// lock stays held while its owner's fsync waits for the upload; meanwhile
// others open, read and ask for the lock without waiting, and are refused
// (SQLite's SQLITE_BUSY, unless it has a busy timeout). Timing-free: the
// upload is held at its completion.
func TestLocksAreLocalAndHeldAcrossFsync(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "app.db")
	owner, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := owner.Write([]byte("page one")); err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock := func(f *os.File, typ int16) error {
		lk := syscall.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 1}
		return syscall.FcntlFlock(f.Fd(), fOFDSetlk, &lk)
	}
	if err := lock(owner, syscall.F_WRLCK); err != nil {
		t.Fatalf("write lock: %v", err)
	}
	if err := lock(other, syscall.F_RDLCK); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("read lock of a byte another open holds for writing: %v, want EAGAIN", err)
	}

	u := newUploadRace(e)
	synced := make(chan error, 1)
	go func() { synced <- owner.Sync() }()
	u.waitHeld()
	// The upload is held: fsync cannot have returned, and the lock is held.
	select {
	case err := <-synced:
		t.Fatalf("fsync returned (%v) while its upload was held", err)
	default:
	}
	if err := lock(other, syscall.F_RDLCK); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("read lock during the owner's fsync: %v, want EAGAIN", err)
	}
	lk := syscall.Flock_t{Type: syscall.F_RDLCK, Whence: 0, Start: 0, Len: 1}
	if err := syscall.FcntlFlock(other.Fd(), fOFDGetlk, &lk); err != nil || lk.Type != syscall.F_WRLCK {
		t.Errorf("F_OFD_GETLK during the owner's fsync: type %d (%v), want the write lock (%d)", lk.Type, err, syscall.F_WRLCK)
	}
	// Opens and reads go on during the upload.
	if b, err := os.ReadFile(p); err != nil || string(b) != "page one" {
		t.Errorf("read during the upload: %q, %v", b, err)
	}

	u.releaseOnly()
	select {
	case err := <-synced:
		if err != nil {
			t.Fatalf("fsync: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("fsync did not return once its upload was let go")
	}
	if got := string(e.serviceBytes("app.db")); got != "page one" {
		t.Errorf("after fsync the service holds %q", got)
	}
	if err := lock(owner, syscall.F_UNLCK); err != nil {
		t.Fatal(err)
	}
	if err := lock(other, syscall.F_RDLCK); err != nil {
		t.Errorf("read lock once the owner unlocked: %v", err)
	}
}
