package ctl

// Rules of the control tree that no other test held: the input limit, the
// modes of the files that only act, chmod and chown, reads under live/, and
// renames into .ctl.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/fs/fstest"
)

// Input over 1 MiB is EFBIG with the reason in result and no request sent
// (also for the rest of a write(2) the kernel cut where the limit fell: it
// was taken as new input, EINVAL, before);
// chmod and chown of a control file are EPERM and change nothing; the files
// that only act are 0200.
func TestCtlInputLimitModesAndOwners(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	m := fmt.Sprint(e.Emu.Fixtures(e.Org).StoppedMachine)
	before := e.actingRequests()
	big := `{"name": "` + strings.Repeat("a", 1200_000) // 1.2 MiB of a JSON object never complete
	e.refused(syscall.EFBIG, big, "images", "new")
	if n := e.actingRequests() - before; n != 0 {
		t.Errorf("input over 1 MiB sent %d requests that act", n)
	}

	for _, p := range [][]string{{"refresh"}, {"sync"}, {"images", "new"}, {"machines", m, "power"}, {"machines", m, "assign"}} {
		st, err := os.Stat(e.ctl(p...))
		if err != nil || st.Mode().Perm() != 0o200 {
			t.Errorf(".ctl/%s: mode %v (%v), want 0200", strings.Join(p, "/"), st.Mode().Perm(), err)
		}
	}

	for _, p := range [][]string{{"usage"}, {"machines", m, "power"}} {
		path := e.ctl(p...)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o666); !errors.Is(err, syscall.EPERM) {
			t.Errorf("chmod .ctl/%s: %v, want EPERM", strings.Join(p, "/"), err)
		}
		if err := os.Chown(path, 4242, 4242); !errors.Is(err, syscall.EPERM) {
			t.Errorf("chown .ctl/%s: %v, want EPERM", strings.Join(p, "/"), err)
		}
		after, err := os.Stat(path)
		if err != nil || after.Mode() != st.Mode() || after.Sys().(*syscall.Stat_t).Uid != st.Sys().(*syscall.Stat_t).Uid {
			t.Errorf(".ctl/%s changed: %v → %v (%v)", strings.Join(p, "/"), st.Mode(), after.Mode(), err)
		}
	}
}

// A file under live/ of a running computer is listed but not served:
// EACCES.
func TestCtlLiveFilesAreNotServed(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	m := fmt.Sprint(e.Emu.Fixtures(e.Org).RunningMachine)
	var file string
	errFound := errors.New("found")
	filepath.WalkDir(e.ctl("machines", m, "live"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			file = p
			return errFound
		}
		return nil
	})
	if file == "" {
		t.Fatal("no file under live/ of the running computer")
	}
	if _, err := os.ReadFile(file); !errors.Is(err, syscall.EACCES) {
		t.Errorf("reading %s: %v, want EACCES", file, err)
	}
}

// A rename into .ctl (of a file or from a storage folder) is EROFS; the
// file stays where it was.
func TestCtlRenameIntoIsEROFS(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	src := e.Path("shared", "f")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{e.ctl("f"), e.ctl("images", "f")} {
		if err := os.Rename(src, to); !errors.Is(err, syscall.EROFS) {
			t.Errorf("rename shared/f → %s: %v, want EROFS", to, err)
		}
	}
	if b, err := os.ReadFile(src); err != nil || string(b) != "x" {
		t.Errorf("shared/f after the refused renames: %q %v", b, err)
	}
}

// A file another client adds shows after echo > .ctl/refresh, not before
// (listings kept an hour): the refresh drops the file listings too.
func TestCtlRefreshDropsFileListings(t *testing.T) {
	e := ctlEnv(t, envOptions{DirTTL: time.Hour})
	has := func() bool { return slices.Contains(fstest.ListNames(t, e.Path("shared")), "from-elsewhere.txt") }
	if has() {
		t.Fatal("from-elsewhere.txt is there before it was made")
	}
	root, err := e.Emu.RootID(e.Org, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Emu.CreateFile(e.Org, 0, root, "from-elsewhere.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the kernel's own entry cache
	if has() {
		t.Fatal("a file made elsewhere shows within the listing cache time, without a refresh")
	}
	e.mustWrite("\n", "refresh")
	time.Sleep(1100 * time.Millisecond)
	if !has() {
		t.Errorf("a file made elsewhere does not show after echo > .ctl/refresh")
	}
}
