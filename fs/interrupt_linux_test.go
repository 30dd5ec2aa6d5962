package fs

import (
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"golang.org/x/sys/unix"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/testkit"
)

// A change interrupted by a signal after the service made it still
// succeeds, as on a disk: the service request of a mkdir, unlink, rmdir or
// folder rename the kernel interrupts (a Go program's runtime sends its
// threads SIGURG at any time) goes on to its end (cache.settled).
// Canceled halfway, the syscall answered EINTR, Go retried it, and the retry met the change made by the first: mkdir gave
// EEXIST, unlink and rmdir ENOENT (the model test met it under load).
func TestChangeInterruptedAfterTheServiceMadeIt(t *testing.T) {
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	e := newEnv(t, envOptions{StoreLog: logger})
	d := e.mkdir(0, e.root(0), "d")
	e.put(0, d, "f", testkit.RandBytes(100, 1))
	e.mkdir(0, d, "empty")
	e.mkdir(0, d, "old")
	if _, err := os.ReadDir(e.Path("shared", "d")); err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return e.Path("shared", "d", name) }
	for _, c := range []struct {
		op     string
		method string // of the request held once the service answered it
		call   func() error
		gone   []string
		there  []string
	}{
		{"mkdir", http.MethodPost, func() error { return unix.Mkdir(p("new"), 0o755) }, nil, []string{"new"}},
		{"unlink", http.MethodDelete, func() error { return unix.Unlink(p("f")) }, []string{"f"}, nil},
		{"rmdir", http.MethodDelete, func() error { return unix.Rmdir(p("empty")) }, []string{"empty"}, nil},
		{"rename of a folder", http.MethodDelete, func() error { return unix.Rename(p("old"), p("renamed")) }, []string{"old"}, []string{"renamed"}},
	} {
		held, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		e.setHook(func(r *http.Request, answered bool) {
			if answered && r.Method == c.method {
				once.Do(func() {
					close(held)
					<-release
				})
			}
		})
		t.Cleanup(func() { closeOnce(release) })
		// Signaled once the service has made the change; the thread waits
		// in the kernel.
		hook.Reset()
		done := testkit.SignalDuring(t, held, c.op+": no "+c.method+" request", c.call)
		// The service's answer is held until the kernel's interrupt has
		// reached the daemon and canceled the syscall's context.
		testkit.WaitFor(t, 10*time.Second, c.op+": the interrupt to reach the daemon", func() bool {
			for _, en := range hook.AllEntries() {
				if en.Message == cache.CallerGaveUp {
					return true
				}
			}
			return false
		})
		closeOnce(release)
		if err := testkit.ResultWithin(t, done, 10*time.Second, c.op+" interrupted by a signal did not return"); err != nil {
			t.Errorf("%s interrupted after the service made it: %v, want success", c.op, err)
		}
		e.setHook(nil)
		for _, name := range c.gone {
			if _, err := os.Lstat(p(name)); !os.IsNotExist(err) {
				t.Errorf("after the %s: %s is still in the mount (%v)", c.op, name, err)
			}
			if _, ok := e.serviceFile("d/" + name); ok {
				t.Errorf("after the %s: %s is still on the service", c.op, name)
			}
		}
		for _, name := range c.there {
			if _, err := os.Lstat(p(name)); err != nil {
				t.Errorf("after the %s: %s: %v", c.op, name, err)
			}
			if _, ok := e.serviceFile("d/" + name); !ok {
				t.Errorf("after the %s: %s is not on the service", c.op, name)
			}
		}
	}
}

// What only reads stays interruptible: a rename of an uploaded file copies
// its content before anything changes, and a signal ends that copy with
// EINTR, both names as they were (the kernel waits for the daemon's answer
// even for a killed program: a copy run to its end would hold mv's Ctrl-C
// for the whole download).
func TestRenameCopyStaysInterruptible(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.mkdir(0, e.root(0), "d")
	e.put(0, d, "big", testkit.RandBytes(1<<20, 2))
	p := func(name string) string { return e.Path("shared", "d", name) }
	if _, err := os.ReadDir(e.Path("shared", "d")); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.setHook(func(r *http.Request, answered bool) {
		if !answered && r.Method == http.MethodGet && r.Header.Get("Range") != "" {
			once.Do(func() { close(held) })
			select { // a content request on a slow link, until canceled
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	t.Cleanup(func() { closeOnce(release) })
	done := testkit.SignalDuring(t, held, "the rename fetched no content", func() error { return unix.Rename(p("big"), p("moved")) })
	if err := testkit.ResultWithin(t, done, 5*time.Second, "a rename interrupted while it copied waits for the copy"); err != unix.EINTR {
		t.Errorf("rename interrupted while it copied: %v, want EINTR", err)
	}
	closeOnce(release)
	e.setHook(nil)
	if _, err := os.Lstat(p("big")); err != nil {
		t.Errorf("after the interrupted rename, big: %v", err)
	}
	if _, err := os.Lstat(p("moved")); !os.IsNotExist(err) {
		t.Errorf("after the interrupted rename, moved is there (%v)", err)
	}
}

// A change interrupted by a signal whose request then outlasts the I/O
// timeout answers EIO, as an outage does: EINTR would have the program make
// it again (go-fuse's canceled context carries no timeout as its cause).
func TestChangeInterruptedThenTimedOutIsEIO(t *testing.T) {
	const ioTimeout = 500 * time.Millisecond
	e := newEnv(t, envOptions{IOTimeout: ioTimeout})
	if _, err := os.ReadDir(e.Path("shared")); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.setHook(func(r *http.Request, answered bool) {
		if !answered && r.Method == http.MethodPost {
			once.Do(func() { close(held) })
			select { // no answer: a black hole, until the request gives up
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	t.Cleanup(func() { closeOnce(release) })
	done := testkit.SignalDuring(t, held, "the mkdir sent no request", func() error { return unix.Mkdir(e.Path("shared", "slow"), 0o755) })
	if err := testkit.ResultWithin(t, done, 10*time.Second, "mkdir interrupted, then past the I/O timeout, did not return"); err != unix.EIO {
		t.Errorf("mkdir interrupted, then past the I/O timeout: %v, want EIO", err)
	}
}
