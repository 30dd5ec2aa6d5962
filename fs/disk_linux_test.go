package fs

// What programs that expect a disk meet: folder fsync, access times, link
// counts of unlinked open files, long names, blocks of sparse files.

import (
	"errors"
	"os"
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
