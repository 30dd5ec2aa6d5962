package fs

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// Local-only desktop files: one holds at most 8 MiB (EFBIG), all of them 64
// MiB (ENOSPC); chmod and chown of one are kept; they last for the life of
// the mount; a folder of such a name is made on the service like any folder.
func TestLocalOnlyFileLimits(t *testing.T) {
	e := newEnv(t, envOptions{})
	sh := func(name string) string { return e.Path("shared", name) }
	mib := bytes.Repeat([]byte{7}, 1<<20)

	write := func(name string, mibs int) error {
		f, err := os.OpenFile(sh(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		for range mibs {
			if _, err := f.Write(mib); err != nil {
				return err
			}
		}
		return f.Close()
	}
	if err := write(".DS_Store", 8); err != nil {
		t.Fatalf("8 MiB into .DS_Store: %v", err)
	}
	// chmod and chown are kept with it, in memory.
	if err := os.Chmod(sh(".DS_Store"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sh(".DS_Store"), 42, 43); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, sh(".DS_Store")); st.Mode != syscall.S_IFREG|0o600 || st.Uid != 42 || st.Gid != 43 {
		t.Errorf(".DS_Store after chmod 0600, chown 42:43: mode %o owner %d:%d", st.Mode, st.Uid, st.Gid)
	}
	f, err := os.OpenFile(sh(".DS_Store"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write([]byte("x"))
	f.Close()
	expectErrno(t, "a byte past 8 MiB in one local-only file", err, syscall.EFBIG)

	// 8 MiB are there; seven more files of 8 MiB fill 64 MiB, the eighth
	// finds no room.
	for i := range 7 {
		if err := write(fmt.Sprintf("._f%d", i), 8); err != nil {
			t.Fatalf("file %d of 8 MiB: %v", i+2, err)
		}
	}
	expectErrno(t, "past 64 MiB of local-only files", write("._full", 1), syscall.ENOSPC)
	if err := os.Remove(sh("._f0")); err != nil {
		t.Fatal(err)
	}
	if err := write("._again", 1); err != nil {
		t.Errorf("a write once room was made: %v", err)
	}

	if err := os.Mkdir(sh(".Trash-1000"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if f, ok := e.serviceFile(".Trash-1000"); !ok || !f.IsDir() {
		t.Error("mkdir .Trash-1000 in a folder was not made on the service")
	}
	if _, ok := e.serviceFile(".DS_Store"); ok {
		t.Error(".DS_Store was uploaded")
	}

	e.unmount()
	e.Mount()
	if _, err := os.Stat(sh(".DS_Store")); !os.IsNotExist(err) {
		t.Errorf("a local-only file after a remount: %v, want it gone", err)
	}
}

// A local-only file opened with O_TRUNC is emptied by the open (the kernel's
// atomic O_TRUNC: no truncate follows it).
func TestLocalOnlyFileTruncatedByItsOpen(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", ".DS_Store")
	if err := os.WriteFile(p, []byte("a longer first content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "x" {
		t.Fatalf("after a rewrite: %q, %v; want \"x\"", b, err)
	}
}
