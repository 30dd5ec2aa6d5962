package fs

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// folderTree writes a folder with content: uploaded files in it and in a
// subfolder, one made executable, and a file still pending in a deeper one.
func folderTree(t *testing.T, e *testEnv, top string) map[string][]byte {
	t.Helper()
	want := map[string][]byte{
		"a.txt":        []byte("alpha"),
		"run.sh":       []byte("#!/bin/sh\necho ran\n"),
		"sub/b.bin":    testkit.RandBytes(300<<10, 3),
		"sub/deep/c":   []byte("pending at the rename"),
		"sub/deep/old": []byte("uploaded"),
	}
	for _, name := range []string{"a.txt", "run.sh", "sub/b.bin", "sub/deep/old"} {
		p := e.Path("shared", top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, want[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(e.Path("shared", top, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if err := os.WriteFile(e.Path("shared", top, "sub/deep/c"), want["sub/deep/c"], 0o644); err != nil {
		t.Fatal(err)
	}
	return want
}

// checkTree checks the files of want under shared/top, in the mount and, once
// uploaded, on the service.
func checkTree(t *testing.T, e *testEnv, top string, want map[string][]byte, onService bool) {
	t.Helper()
	for name, data := range want {
		got, err := os.ReadFile(e.Path("shared", top, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s/%s in the mount: %d bytes, %v; want %d bytes", top, name, len(got), err, len(data))
		}
		if onService {
			if got := e.serviceBytes(top + "/" + name); !bytes.Equal(got, data) {
				t.Errorf("%s/%s on the service: %d bytes, want %d", top, name, len(got), len(data))
			}
		}
	}
}

// A folder with content renames at once in the mount; the service follows:
// the files at the new place, the old folder deleted once emptied. Modes go
// with the files; nothing is lost or doubled.
func TestFolderRenameWithContent(t *testing.T) {
	e := newEnv(t, envOptions{})
	want := folderTree(t, e, "proj")
	past := time.Date(2022, 2, 2, 2, 2, 2, 0, time.UTC)
	if err := os.Chtimes(e.Path("shared", "proj", "sub"), past, past); err != nil {
		t.Fatal(err)
	}
	subBefore := statAttrs(t, e.Path("shared", "proj", "sub", "deep")).Mtime
	// A reader of the pending file holds it across the rename.
	held, err := os.Open(e.Path("shared", "proj", "sub", "deep", "c"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.Rename(e.Path("shared", "proj"), e.Path("shared", "Budget 2027")); err != nil {
		t.Fatalf("rename of a folder with content: %v", err)
	}
	// The folders keep their times, as on a disk.
	if got := statAttrs(t, e.Path("shared", "Budget 2027", "sub")).Mtime; !got.Equal(past) {
		t.Errorf("sub's time after the rename: %v, want %v", got, past)
	}
	if got := statAttrs(t, e.Path("shared", "Budget 2027", "sub", "deep")).Mtime; !got.Equal(subBefore) {
		t.Errorf("sub/deep's time after the rename: %v, want %v", got, subBefore)
	}
	if _, err := os.Stat(e.Path("shared", "proj")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old name after the rename: %v", err)
	}
	checkTree(t, e, "Budget 2027", want, false)
	if out, err := runOnMount(e.Path("shared", "Budget 2027", "run.sh")); err != nil || string(out) != "ran\n" {
		t.Fatalf("run.sh after the rename: %q %v (%+v)", out, err, statAttrs(t, e.Path("shared", "Budget 2027", "run.sh")))
	}
	e.settle()
	checkTree(t, e, "Budget 2027", want, true)
	if got, err := io.ReadAll(held); err != nil || string(got) != string(want["sub/deep/c"]) {
		t.Errorf("the descriptor held across the rename reads %q, %v", got, err)
	}
	testkit.WaitFor(t, 20*time.Second, "the old folder's deletion", func() bool {
		_, ok := e.serviceFile("proj")
		return !ok
	})
	if names := fstest.ListNames(t, e.Path("shared")); len(names) != 1 || names[0] != "Budget 2027" {
		t.Fatalf("shared/ lists %v", names)
	}
	// A file manager's rename (GIO) of a full folder.
	if err := exec.Command("gio", "rename", e.Path("shared", "Budget 2027"), "Budget 2028").Run(); err != nil {
		t.Fatalf("gio rename of a full folder: %v", err)
	}
	checkTree(t, e, "Budget 2028", want, false)
}

// A crash (the daemon gone before the uploads) resumes: after the next mount
// the files reach the new place and the old folder goes.
func TestFolderRenameResumesAfterACrash(t *testing.T) {
	e := newEnv(t, envOptions{})
	want := folderTree(t, e, "proj")
	// No part reaches the service until the "crash".
	e.setHook(func(r *http.Request, answered bool) {
		if r.Method == http.MethodPut && !answered {
			<-r.Context().Done()
		}
	})
	if err := os.Rename(e.Path("shared", "proj"), e.Path("shared", "moved")); err != nil {
		t.Fatal(err)
	}
	// Gone without draining: what is staged stays staged.
	if err := e.Server.Unmount(); err != nil {
		t.Fatal(err)
	}
	e.Store.Close()
	e.setHook(nil)
	if _, ok := e.serviceFile("proj/a.txt"); !ok {
		t.Fatal("the old file left the service before its copy was up")
	}
	e.Mount()
	if _, err := os.Stat(e.Path("shared", "proj")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the crash the old folder shows again: %v", err)
	}
	if got := statAttrs(t, e.Path("shared", "moved", "run.sh")).Mode; got != 0o755 {
		t.Errorf("after the crash run.sh shows mode %o, want 755", got)
	}
	e.settle()
	checkTree(t, e, "moved", want, true)
	testkit.WaitFor(t, 20*time.Second, "the old folder's deletion", func() bool {
		_, ok := e.serviceFile("proj")
		return !ok
	})
}

// A folder whose content is not in the cache and larger than the limit
// answers EXDEV (mv copies it); nothing changes.
func TestFolderRenameTooLargeIsEXDEV(t *testing.T) {
	e := &testEnv{hooks: &hookTransport{base: http.DefaultTransport.(*http.Transport).Clone()}}
	e.Env = fstest.Start(t, envOptions{}, func(env *fstest.Env, dir string) (*fuse.Server, error) {
		e.fsys = New(Deps{Store: env.Store, Log: env.Log}, Options{RenameFetchMax: 1 << 10})
		return Mount(dir, e.fsys, MountOptions{})
	})
	dir := e.mkdir(0, e.root(0), "big")
	e.put(0, dir, "a.bin", testkit.RandBytes(64<<10, 1)) // on the service only
	err := os.Rename(e.Path("shared", "big"), e.Path("shared", "big2"))
	if !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("rename of a folder past the limit: %v, want EXDEV", err)
	}
	if _, ok := e.serviceFile("big/a.bin"); !ok {
		t.Fatal("the refused rename changed the service")
	}
	if _, err := os.Stat(e.Path("shared", "big2")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused rename made %v", err)
	}
}

// Another writer's file put in the old folder while the renamed files are
// still on their way is not deleted with it: the old folder stays on the
// service with that file, and shows again.
func TestFolderRenameKeepsAnotherWritersFile(t *testing.T) {
	e := newEnv(t, envOptions{})
	want := folderTree(t, e, "proj")
	old, ok := e.serviceFile("proj")
	if !ok {
		t.Fatal("proj is not on the service")
	}
	release := make(chan struct{})
	e.setHook(func(r *http.Request, answered bool) {
		if r.Method == http.MethodPut && !answered {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	if err := os.Rename(e.Path("shared", "proj"), e.Path("shared", "moved")); err != nil {
		t.Fatal(err)
	}
	e.put(0, old.ID, "theirs.txt", []byte("another desk's")) // before the copies are up
	close(release)
	e.settle()
	checkTree(t, e, "moved", want, true)
	var last error
	defer func() {
		if t.Failed() {
			t.Logf("the last stat of proj/theirs.txt: %v", last)
		}
	}()
	testkit.WaitFor(t, 20*time.Second, "the old folder shown again", func() bool {
		_, last = os.Stat(e.Path("shared", "proj", "theirs.txt"))
		return last == nil
	})
	if got := string(e.serviceBytes("proj/theirs.txt")); got != "another desk's" {
		t.Fatalf("the other writer's file holds %q on the service", got)
	}
}

// renameWithOldDeleteHeld makes shared/old on a mount with an I/O timeout
// of 500 ms and renames it to shared/new while the old folder's delete is
// held until its request gives up: before the service sees it (done false)
// or once the service did it, the answer lost (done true). meanwhile, when
// set, runs as the delete is held, with the id of the folder made for the
// new name. It returns the rename's error.
func renameWithOldDeleteHeld(t *testing.T, done bool, meanwhile func(e *testEnv, newID int64)) (*testEnv, error) {
	e := newEnv(t, envOptions{IOTimeout: 500 * time.Millisecond})
	if err := os.Mkdir(e.Path("shared", "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	old, ok := e.serviceFile("old")
	if !ok {
		t.Fatal("mkdir made no folder on the service")
	}
	e.setHook(func(r *http.Request, answered bool) {
		if answered != done || r.Method != http.MethodDelete || !strings.HasSuffix(r.URL.Path, "/"+strconv.FormatInt(old.ID, 10)) {
			return
		}
		if meanwhile != nil {
			files, err := e.Client.SharedFiles(e.T.Context(), api.ListFilesRequest{}).Collect()
			for _, f := range files {
				if f.Name == "new" && err == nil {
					meanwhile(e, f.ID)
				}
			}
		}
		<-r.Context().Done()
	})
	err := os.Rename(e.Path("shared", "old"), e.Path("shared", "new"))
	e.setHook(nil)
	return e, err
}

// wantNames checks which of shared/old and shared/new the service and the
// mount show.
func wantNames(t *testing.T, e *testEnv, oldThere, newThere bool) {
	t.Helper()
	for _, c := range []struct {
		name string
		want bool
	}{{"old", oldThere}, {"new", newThere}} {
		if _, ok := e.serviceFile(c.name); ok != c.want {
			t.Errorf("shared/%s on the service: %v, want %v", c.name, ok, c.want)
		}
		if _, err := os.Stat(e.Path("shared", c.name)); (err == nil) != c.want {
			t.Errorf("shared/%s in the mount: %v, want it there: %v", c.name, err, c.want)
		}
	}
}

// A folder rename whose delete of the old folder outlasts --io-timeout
// answers EIO and takes back the folder it made for the new name: the
// service holds the folder under its old name only, not under both (the
// undo runs on an I/O timeout of its own, not on the rename's, spent).
func TestFolderRenameTimedOutTakesBackTheNewFolder(t *testing.T) {
	e, err := renameWithOldDeleteHeld(t, false, nil)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename with the old folder's delete past --io-timeout: %v, want EIO", err)
	}
	wantNames(t, e, true, false)
}

// A folder rename whose old folder the service deleted, with the answer lost
// past --io-timeout, stands: the mount lists the old folder anew, finds it
// gone, and keeps the new one (undoing it would leave the folder under
// neither name).
func TestFolderRenameWhoseDeleteAnswerIsLostStands(t *testing.T) {
	e, err := renameWithOldDeleteHeld(t, true, nil)
	if err != nil {
		t.Fatalf("rename whose old folder's delete was done, its answer lost: %v, want success", err)
	}
	wantNames(t, e, false, true)
}

// Two desks: another writer puts a file in the folder a rename made for the
// new name while the rename waits on the old folder's delete. The rename
// fails, and its undo keeps the new folder with that file, both names shown,
// rather than delete it.
func TestFolderRenameUndoKeepsAnotherWritersFile(t *testing.T) {
	e, err := renameWithOldDeleteHeld(t, false, func(e *testEnv, newID int64) {
		if _, err := e.Emu.CreateFile(e.Org, 0, newID, "theirs.txt", strings.NewReader("another desk's file\n")); err != nil {
			t.Error(err)
		}
	})
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename with the old folder's delete past --io-timeout: %v, want EIO", err)
	}
	if got := string(e.serviceBytes("new/theirs.txt")); got != "another desk's file\n" {
		t.Errorf("the other writer's file in the new folder: %q", got)
	}
	// The kernel keeps the failed rename's lookup of the new name (a negative
	// entry) for the attribute timeout, 1 s.
	testkit.WaitFor(t, 5*time.Second, "the mount to show the new folder", func() bool {
		_, err := os.Stat(e.Path("shared", "new", "theirs.txt"))
		return err == nil
	})
	wantNames(t, e, true, true)
}
