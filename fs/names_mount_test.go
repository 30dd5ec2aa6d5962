package fs

// Tests of the names a mount refuses (names.go, checkName): over 255 bytes,
// not UTF-8, and in a computer's storage names Windows cannot hold. Each is
// refused at create, mkdir and rename with nothing staged or sent, and
// logged; lookups stay answered from what the service has.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// mountLogged mounts the env's store a second time, with a logger the test
// reads.
func (e *testEnv) mountLogged() (string, *logtest.Hook) {
	t := e.T
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	fsys := New(Deps{Store: e.Store, Log: logger}, Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Umask: 0o022})
	dir := t.TempDir()
	server, err := Mount(dir, fsys, MountOptions{})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			testkit.Detach(dir)
		}
	})
	return dir, hook
}

// errnoOf is the errno of a failed call, 0 for success.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if err == nil {
		return 0
	}
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.Errno(0xffff)
}

// stagedNames are the names of the files staged in the env.
func (e *testEnv) stagedNames() []string {
	var names []string
	for _, st := range e.Store.Staging.Entries() {
		names = append(names, st.Target.Name)
	}
	slices.Sort(names)
	return names
}

// changingRequests are the requests, other than reads (GET), the emulator
// answered, by route, and the object downloads.
func (e *testEnv) changingRequests() map[string]int64 {
	st := e.Emu.Stats()
	out := map[string]int64{"object GETs": st.Objects.Gets}
	for route, n := range st.Requests {
		if !strings.HasPrefix(route, "GET ") {
			out[route] = n
		}
	}
	return out
}

func TestBadNamesRefused(t *testing.T) {
	// An hour's write-back keeps pending.txt staged through the test.
	e := newEnv(t, envOptions{WriteBack: time.Hour})
	machine := e.Emu.Fixtures(e.Org).StoppedMachine
	dir, hook := e.mountLogged()
	for _, area := range []struct {
		path      string
		machineID int64
		machine   bool
	}{{"shared", 0, false}, {"computers/Workstation", machine, true}} {
		root := filepath.Join(dir, area.path)
		e.put(area.machineID, e.root(area.machineID), "src.txt", []byte("on the service"))
		if err := os.WriteFile(filepath.Join(root, "pending.txt"), []byte("staged"), 0o644); err != nil {
			t.Fatal(err)
		}
		for i, c := range badNames {
			want := c.shared
			if area.machine {
				want = c.machine
			}
			if want == 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", area.path, i), func(t *testing.T) {
				p := filepath.Join(root, c.name)
				reqs, staged := e.changingRequests(), e.stagedNames()
				hook.Reset()
				fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_TRUNC, 0o644)
				if err == nil {
					syscall.Close(fd)
				}
				got := map[string]syscall.Errno{
					"create":         errnoOf(err),
					"mkdir":          errnoOf(syscall.Mkdir(p, 0o755)),
					"rename":         errnoOf(syscall.Rename(filepath.Join(root, "src.txt"), p)),
					"rename pending": errnoOf(syscall.Rename(filepath.Join(root, "pending.txt"), p)),
				}
				for op, errno := range got {
					if errno != want {
						t.Errorf("%s %q: %v, want %v", op, c.name, errno, want)
					}
				}
				if after := e.changingRequests(); !sameCounts(reqs, after) {
					t.Errorf("the service got requests: before %v, after %v", reqs, after)
				}
				if after := e.stagedNames(); !slices.Equal(staged, after) {
					t.Errorf("staged before %q, after %q", staged, after)
				}
				if slices.Contains(fstest.ListNames(t, root), c.name) {
					t.Errorf("%q is listed", c.name)
				}
				for name, data := range map[string]string{"src.txt": "on the service", "pending.txt": "staged"} {
					if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != data {
						t.Errorf("%s reads %q (%v)", name, b, err)
					}
				}
				// One log line per refusal (create, mkdir, two renames),
				// naming the path and saying why (a name over 255 bytes is
				// refused by the lookup first, with no line).
				path := area.path + "/" + c.name
				if !utf8.ValidString(path) {
					path = strconv.Quote(path)
				}
				var lines int
				for _, en := range hook.AllEntries() {
					if en.Level == logrus.WarnLevel && en.Data["path"] == path && en.Data["errno"] == want.Error() &&
						strings.Contains(en.Message, path+": ") {
						lines++
					}
				}
				wantLines := len(got)
				if len(c.name) > maxName {
					// Refused by the lookup before any of them, as on a
					// local disk: nothing to log.
					wantLines = 0
				}
				if lines != wantLines {
					t.Errorf("%d log lines name %s, want %d: %v", lines, path, wantLines, hook.AllEntries())
				}
			})
		}
	}
	if t.Failed() {
		return
	}
	// The refusals left the pending file pending; it still uploads.
	if err := e.Store.Staging.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b := e.serviceBytes("pending.txt"); string(b) != "staged" {
		t.Fatalf("pending.txt uploaded as %q", b)
	}
}

// sameCounts reports whether two sets of request counts are the same.
func sameCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestWindowsNamesInShared: shared storage is no Windows file system; names
// a computer could not hold are made there, and upload.
func TestWindowsNamesInShared(t *testing.T) {
	e := newEnv(t, envOptions{})
	var want []string
	for i, c := range badNames {
		if c.shared != 0 || c.machine == 0 {
			continue
		}
		want = append(want, c.name)
		if err := os.WriteFile(e.Path("shared", c.name), []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatalf("creating %q: %v", c.name, err)
		}
	}
	if err := os.Mkdir(e.Path("shared", "aux.d "), 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	if err := os.Rename(e.Path("shared", "a:b"), e.Path("shared", "LPT1.txt")); err != nil {
		t.Fatalf("rename: %v", err)
	}
	e.settle()
	ents, err := os.ReadDir(e.Path("shared"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, d := range ents {
		listed[d.Name()] = true
	}
	for _, n := range want {
		if n == "a:b" {
			n = "LPT1.txt"
		}
		if !listed[n] {
			t.Errorf("%q is not listed in shared/", n)
		}
	}
	for i, c := range badNames {
		if c.shared != 0 || c.machine == 0 {
			continue
		}
		name := c.name
		if name == "a:b" {
			name = "LPT1.txt"
		}
		if b := e.serviceBytes(name); string(b) != strconv.Itoa(i) {
			t.Errorf("%q is %q on the service", name, b)
		}
	}
	if f, ok := e.serviceFile("aux.d "); !ok || !f.IsDir() {
		t.Errorf("folder %q not on the service", "aux.d ")
	}
}

// TestLookupOfBadNames: a lookup of a name over 255 bytes answers
// ENAMETOOLONG with no request, as a local disk does (FUSE passes names of
// any length up to the path limit; the kernel itself refuses a path over
// 4095 bytes); names
// a computer could not have been given but the service holds still read.
func TestLookupOfBadNames(t *testing.T) {
	e := newEnv(t, envOptions{})
	machine := e.Emu.Fixtures(e.Org).StoppedMachine
	odd := []string{"CON", "a:b", "trail.", "q?", "nul.txt"}
	for _, n := range odd {
		e.put(machine, e.root(machine), n, []byte("kept "+n))
	}
	multi := strings.Repeat("é", 127) + "a" // 255 bytes
	e.put(0, e.root(0), multi, []byte("long"))

	before := e.allRequests()
	for n, want := range map[int]syscall.Errno{256: syscall.ENAMETOOLONG, 300: syscall.ENAMETOOLONG, 1025: syscall.ENAMETOOLONG, 3000: syscall.ENAMETOOLONG, 5000: syscall.ENAMETOOLONG} {
		var st syscall.Stat_t
		if errno := errnoOf(syscall.Stat(e.Path("shared", strings.Repeat("a", n)), &st)); errno != want {
			t.Errorf("stat of a %d-byte name: %v, want %v", n, errno, want)
		}
		if errno := errnoOf(syscall.Stat(e.Path("computers", strings.Repeat("a", n)), &st)); errno != want {
			t.Errorf("stat of computers/ + a %d-byte name: %v, want %v", n, errno, want)
		}
	}
	if d := e.allRequests() - before; d != 0 {
		t.Errorf("lookups of over-long names made %d requests", d)
	}
	for _, n := range odd {
		if b, err := os.ReadFile(e.Path("computers", "Workstation", n)); err != nil || string(b) != "kept "+n {
			t.Errorf("computers/Workstation/%s reads %q (%v)", n, b, err)
		}
	}
	if b, err := os.ReadFile(e.Path("shared", multi)); err != nil || !bytes.Equal(b, []byte("long")) {
		t.Errorf("a 255-byte name reads %q (%v)", b, err)
	}
	if !slices.Contains(fstest.ListNames(t, e.Path("shared")), multi) {
		t.Errorf("the 255-byte name is not listed")
	}
}
