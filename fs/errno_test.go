package fs

// Tests of the I/O timeout of operations (errno.go): in a black hole, each
// change that waits on the service gives up within --io-timeout.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

// In a black hole, each change that waits on the service gives up with EIO
// within the I/O timeout: mkdir, unlink and rmdir (their requests), create
// in a folder whose listing is not cached (the lookup's listing), and the
// whole-file copies of a file on the service (rename, truncate to a size
// other than 0, the first write through an open without O_TRUNC), whose
// content does not come; before the outage, such a copy on a slow link
// outlasts the I/O timeout, as content comes. What needs nothing from the
// service answers at once: a create in a listed folder, a truncate to 0, the
// open itself, the rename of a pending file. Each that gave up logs one
// warning naming what it waited for; after the outage the service holds
// what it held, but for a change whose request it took (which may have
// acted).
func TestBlackHoleBoundsEveryChange(t *testing.T) {
	const ioTimeout = time.Second
	const bound = 2*ioTimeout + time.Second // slack for a loaded machine
	logger, hook := logtest.NewNullLogger()
	e := newEnv(t, envOptions{Log: logger, IOTimeout: ioTimeout, Client: api.Options{IOTimeout: ioTimeout}})
	root := e.root(0)
	for _, name := range []string{"unlinked.txt", "renamed.txt", "truncated.txt", "edited.txt"} {
		e.put(0, root, name, testkit.RandBytes(64<<10, int64(len(name))))
	}
	slow := testkit.RandBytes(1<<20, 9)
	e.put(0, root, "slow.bin", slow)
	e.mkdir(0, root, "empty")
	cold := e.mkdir(0, root, "cold")
	e.put(0, cold, "inside.txt", []byte("listed only after the outage\n"))
	if _, err := os.ReadDir(e.Path("shared")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path("shared", "pending.txt"), []byte("staged here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if err := os.WriteFile(e.Path("shared", "pending2.txt"), []byte("staged here, not sent\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// On a slow link, a whole-file copy that outlasts the I/O timeout goes
	// on while content comes, as a read does.
	rate, unlimited := int64(384<<10), int64(0)
	e.Emu.ChangePlay(emulator.PlayChange{StreamRate: &rate})
	start := time.Now()
	if err := os.Truncate(e.Path("shared", "slow.bin"), 1000); err != nil {
		t.Fatalf("truncate on a slow link: %v after %v", err, time.Since(start))
	}
	if took := time.Since(start); took < ioTimeout {
		t.Fatalf("the copy on a slow link took %v: not slow enough to outlast --io-timeout", took)
	} else {
		t.Logf("truncate of a file on the service on a slow link: %v", took.Round(time.Millisecond))
	}
	e.Emu.ChangePlay(emulator.PlayChange{StreamRate: &unlimited})

	e.Emu.SetOutage(emulator.OutageBlackHole)
	t.Cleanup(func() { e.Emu.SetOutage(emulator.OutageNone) })
	edited, err := os.OpenFile(e.Path("shared", "edited.txt"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open for writing in the black hole: %v", err)
	}
	defer edited.Close()
	for _, c := range []struct {
		name string
		op   func() error
		fail bool // wants EIO or ETIMEDOUT after the I/O timeout; else success at once
	}{
		{"mkdir", func() error { return os.Mkdir(e.Path("shared", "made"), 0o755) }, true},
		{"unlink", func() error { return os.Remove(e.Path("shared", "unlinked.txt")) }, true},
		{"rmdir", func() error { return syscall.Rmdir(e.Path("shared", "empty")) }, true},
		{"create in a folder not listed", func() error {
			return os.WriteFile(e.Path("shared", "cold", "new.txt"), []byte("x"), 0o644)
		}, true},
		{"rename of a file on the service", func() error {
			return os.Rename(e.Path("shared", "renamed.txt"), e.Path("shared", "renamed2.txt"))
		}, true},
		{"truncate of a file on the service", func() error { return os.Truncate(e.Path("shared", "truncated.txt"), 5) }, true},
		{"first write after an open without O_TRUNC", func() error { _, err := edited.WriteAt([]byte("x"), 3); return err }, true},
		{"create in a listed folder", func() error {
			return os.WriteFile(e.Path("shared", "created.txt"), []byte("made in the outage\n"), 0o644)
		}, false},
		{"truncate to 0", func() error { return os.Truncate(e.Path("shared", "truncated.txt"), 0) }, false},
		{"rename of a pending file", func() error {
			return os.Rename(e.Path("shared", "pending2.txt"), e.Path("shared", "pending3.txt"))
		}, false},
	} {
		hook.Reset()
		start := time.Now()
		err := c.op()
		took := time.Since(start)
		t.Logf("%s: %v after %v", c.name, err, took.Round(time.Millisecond))
		timedOut := errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ETIMEDOUT)
		switch {
		case c.fail && !timedOut:
			t.Errorf("%s in the black hole: %v, want EIO or ETIMEDOUT", c.name, err)
		case c.fail && took > bound:
			t.Errorf("%s in the black hole took %v, want at most %v (--io-timeout %v)", c.name, took, bound, ioTimeout)
		case !c.fail && err != nil:
			t.Errorf("%s in the black hole: %v, want success", c.name, err)
		case !c.fail && took > ioTimeout/2:
			t.Errorf("%s in the black hole took %v, want at once", c.name, took)
		}
		var warnings []string
		for _, en := range hook.AllEntries() {
			if en.Level <= logrus.WarnLevel && (strings.Contains(en.Message, "io-timeout") || strings.Contains(en.Message, "offline")) {
				warnings = append(warnings, fmt.Sprintf("%s %v", en.Message, en.Data))
			}
		}
		if want := map[bool]int{true: 1, false: 0}[c.fail]; len(warnings) != want || want == 1 && !strings.Contains(warnings[0], "waited_for") {
			t.Errorf("%s: timeout warnings %q, want %d naming what it waited for", c.name, warnings, want)
		}
	}

	e.Emu.SetOutage(emulator.OutageNone)
	edited.Close()
	e.settle()
	for _, name := range []string{"unlinked.txt", "renamed.txt", "edited.txt", "empty", "cold/inside.txt", "pending.txt"} {
		if _, ok := e.serviceFile(name); !ok {
			t.Errorf("shared/%s is gone from the service after a change of it gave up", name)
		}
	}
	for _, name := range []string{"renamed2.txt", "cold/new.txt"} {
		if _, ok := e.serviceFile(name); ok {
			t.Errorf("shared/%s is on the service: the change gave up", name)
		}
	}
	// A request the service took before the outage may have acted anyway
	// (the emulator makes a folder whose request it held, once the outage
	// ends): the mount shows what the service holds once it lists again.
	_, made := e.serviceFile("made")
	t.Logf("the mkdir that gave up made the folder on the service after the outage: %v", made)
	e.Store.Dirs.DropAll()
	time.Sleep(1100 * time.Millisecond) // past the kernel's entry time
	if _, err := os.Stat(e.Path("shared", "made")); (err == nil) != made {
		t.Errorf("after a refresh, stat of the folder whose mkdir gave up: %v; on the service: %v", err, made)
	}
	if got := string(e.serviceBytes("created.txt")); got != "made in the outage\n" {
		t.Errorf("the file created in the outage is %q on the service", got)
	}
	if got := e.serviceBytes("slow.bin"); !bytes.Equal(got, slow[:1000]) {
		t.Errorf("the file truncated on a slow link has %d bytes on the service, want its first 1000", len(got))
	}
	if got := e.serviceBytes("truncated.txt"); len(got) != 0 {
		t.Errorf("the file truncated to 0 in the outage has %d bytes on the service", len(got))
	}
	if got := string(e.serviceBytes("pending3.txt")); got != "staged here, not sent\n" {
		t.Errorf("the pending file renamed in the outage is %q on the service", got)
	}
}

// An error of the network is EIO, never its own errno (ECONNREFUSED is no
// file system's); offline, each operation's failure is logged once per path
// and outage, not per call.
func TestNetworkErrorsAreEIOAndOfflineLogsOncePerPath(t *testing.T) {
	logger, hook := logtest.NewNullLogger()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	if got := Errno(logger, "listing shared/x", &api.Error{Op: "GET /files", Err: refused}); got != syscall.EIO {
		t.Errorf("a refused connection: %v, want EIO", got)
	}
	since := time.Now()
	offline := func(since time.Time) error {
		return &api.Error{Op: "GET /files", Err: &api.OfflineError{Since: since, Reason: "connection refused", Err: refused}}
	}
	warnings := func() int {
		n := 0
		for _, en := range hook.AllEntries() {
			if strings.Contains(en.Message, "offline") {
				n++
			}
		}
		return n
	}
	for range 3 {
		for _, what := range []string{"reading shared/a", "reading shared/b"} {
			if got := Errno(logger, what, offline(since)); got != syscall.EIO {
				t.Fatalf("%s offline: %v, want EIO", what, got)
			}
		}
	}
	if n := warnings(); n != 2 {
		t.Errorf("%d offline warnings for 2 paths failing 3 times each, want 2", n)
	}
	Errno(logger, "reading shared/a", offline(since.Add(time.Minute))) // the next outage
	if n := warnings(); n != 3 {
		t.Errorf("%d offline warnings after a path failed in a second outage, want 3", n)
	}
}
