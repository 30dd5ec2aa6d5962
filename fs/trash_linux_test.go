package fs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Move to Trash, as a file manager asks GLib for it (Nautilus, the GTK file
// chooser and gio all use g_file_trash and access::can-trash): the mount has
// no trash, says so before anyone tries (can-trash FALSE, so file managers
// offer "Delete Permanently" at once), and a trash attempt fails as "not
// supported" without touching the file, here or on the service.
func TestMoveToTrashIsRefusedAtOnce(t *testing.T) {
	gio, err := exec.LookPath("gio")
	if err != nil {
		t.Fatal("gio is needed (apt-get install libglib2.0-bin)")
	}
	e := newEnv(t, envOptions{})
	data := []byte("minutes of the board meeting\n")
	e.put(0, e.root(0), "Quarterly report.txt", data)
	e.put(0, e.mkdir(0, e.root(0), "Minutes"), "2027-01.txt", data)
	acting := func() int64 { // requests that change something on the service
		var n int64
		for route, c := range e.Emu.Stats().Requests {
			if !strings.HasPrefix(route, "GET ") && route != "POST /files/download" {
				n += c
			}
		}
		return n
	}
	for _, p := range []string{e.Path("shared", "Quarterly report.txt"), e.Path("shared", "Minutes")} {
		out := run(t, gio, "info", "-a", "access::can-trash", p)
		if !strings.Contains(out, "access::can-trash: FALSE") {
			t.Errorf("gio info -a access::can-trash %s:\n%s\nwant FALSE (the mount has no trash)", p, out)
		}
		before, start := acting(), time.Now()
		b, err := exec.Command(gio, "trash", p).CombinedOutput()
		if err == nil {
			t.Fatalf("gio trash %s succeeded: %s", p, b)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("gio trash took %v to fail, want at once", took)
		}
		marker := fmt.Sprintf(".Trash-%d", os.Geteuid())
		if !strings.Contains(string(b), marker) {
			t.Errorf("gio trash %s: %s; want GLib's refusal for the unusable %s", p, b, marker)
		}
		if n := acting() - before; n != 0 {
			t.Errorf("gio trash sent %d requests that act", n)
		}
	}
	// Nothing was lost: the file and the folder are as they were, here and
	// on the service.
	if b, err := os.ReadFile(e.Path("shared", "Quarterly report.txt")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("after gio trash the file reads %q, %v", b, err)
	}
	if b, err := os.ReadFile(e.Path("shared", "Minutes", "2027-01.txt")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("after gio trash the folder's file reads %q, %v", b, err)
	}
	if !bytes.Equal(e.serviceBytes("Quarterly report.txt"), data) || !bytes.Equal(e.serviceBytes("Minutes/2027-01.txt"), data) {
		t.Error("after gio trash the service holds other content")
	}
	checkTrashMarker(t, e)
}

// checkTrashMarker checks what GLib finds at MOUNTPOINT/.Trash-UID: a
// read-only file that says why there is no trash, not listed, not removable.
func checkTrashMarker(t *testing.T, e *testEnv) {
	t.Helper()
	marker := e.Path(fmt.Sprintf(".Trash-%d", os.Geteuid()))
	fi, err := os.Lstat(marker)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("lstat %s: %v, %v; want a regular file", marker, fi, err)
	}
	if b, err := os.ReadFile(marker); err != nil || !strings.Contains(string(b), "no trash") || int64(len(b)) != fi.Size() {
		t.Errorf("%s reads %q, %v (size %d)", marker, b, err, fi.Size())
	}
	if names := run(t, "ls", "-a", e.Path()); slices.Contains(strings.Fields(names), fi.Name()) {
		t.Errorf("the root lists %s: %s", fi.Name(), names)
	}
	if err := os.Remove(marker); !errors.Is(err, syscall.EPERM) {
		t.Errorf("rm %s: %v, want EPERM", marker, err)
	}
	if err := os.WriteFile(marker, []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing %s: %v, want EROFS", marker, err)
	}
	if err := os.Truncate(marker, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("truncate %s: %v, want EROFS", marker, err)
	}
	for _, name := range []string{".Trash", ".Trash-", ".Trash-01", ".Trash-x"} {
		if _, err := os.Lstat(e.Path(name)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("lstat of the root's %s: %v, want ENOENT", name, err)
		}
	}
}

// trashUID takes the names GLib makes (".Trash-" and the uid as %lu) and
// no other.
func TestTrashUID(t *testing.T) {
	for _, c := range []struct {
		name string
		uid  uint32
		ok   bool
	}{
		{".Trash-0", 0, true},
		{".Trash-1000", 1000, true},
		{".Trash-4294967295", 4294967295, true},
		{".Trash-4294967296", 0, false},
		{".Trash-01", 0, false},
		{".Trash-+1", 0, false},
		{".Trash--1", 0, false},
		{".Trash-", 0, false},
		{".Trash", 0, false},
		{".trash-1000", 0, false},
		{".Trash-1000 ", 0, false},
	} {
		if uid, ok := trashUID(c.name); uid != c.uid || ok != c.ok {
			t.Errorf("trashUID(%q) = %d, %v; want %d, %v", c.name, uid, ok, c.uid, c.ok)
		}
	}
}

// GLib takes x-gvfs-notrash from the mount's entry in utab, where mount(8)
// writes the x- options of a mount it makes: gio trash then refuses before
// it looks for .Trash-UID ("Trashing on system internal mounts is not
// supported"), and nothing changes. From an fstab line alone (the mount
// made otherwise) GLib 2.74 takes nothing (it reads fstab's options only
// for a mount entry without any), and the mount's own refusal answers
// (.Trash-UID a file: can-trash FALSE, trash not possible). The
// utab and fstab are the test's, given to GLib through libmount's
// LIBMOUNT_UTAB and LIBMOUNT_FSTAB.
func TestTrashWithANotrashOptionInUtab(t *testing.T) {
	gio, err := exec.LookPath("gio")
	if err != nil {
		t.Fatal("gio is needed (apt-get install libglib2.0-bin)")
	}
	e := newEnv(t, envOptions{})
	data := []byte("kept where it is\n")
	e.put(0, e.root(0), "report.txt", data)
	utab := filepath.Join(t.TempDir(), "utab")
	if err := os.WriteFile(utab, []byte("SRC=orgfs TARGET="+e.Dir+" ROOT=/ OPTS=x-gvfs-notrash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fstab := filepath.Join(t.TempDir(), "fstab")
	if err := os.WriteFile(fstab, []byte("orgfs "+e.Dir+" fuse.orgfs x-gvfs-notrash 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ env, want string }{
		{"LIBMOUNT_UTAB=" + utab, "Trashing on system internal mounts is not supported"},
		{"LIBMOUNT_FSTAB=" + fstab, fmt.Sprintf("Unable to find or create trash directory %s", e.Path(fmt.Sprintf(".Trash-%d", os.Geteuid())))},
	} {
		before := e.changingRequests()
		cmd := exec.Command(gio, "trash", e.Path("shared", "report.txt"))
		cmd.Env = append(os.Environ(), c.env)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("gio trash with %s: %v %s; want %q", c.env, err, out, c.want)
		}
		if after := e.changingRequests(); !sameCounts(before, after) {
			t.Errorf("gio trash with %s sent requests: %v, then %v", c.env, before, after)
		}
		cmd = exec.Command(gio, "info", "-a", "access::can-trash", e.Path("shared", "report.txt"))
		cmd.Env = append(os.Environ(), c.env)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "access::can-trash: FALSE") {
			t.Errorf("gio info -a access::can-trash with %s: %v %s; want FALSE", c.env, err, out)
		}
	}
	if b, err := os.ReadFile(e.Path("shared", "report.txt")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("after gio trash the file reads %q, %v", b, err)
	}
	if !bytes.Equal(e.serviceBytes("report.txt"), data) {
		t.Error("after gio trash the service holds other content")
	}
}
