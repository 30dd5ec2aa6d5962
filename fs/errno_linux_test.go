package fs

// Tests of errors as errnos (errno.go) that need Linux: the errno of each
// service error, and EINTR for a caller interrupted by a signal.

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/testkit"
)

// Each service error a change meets reaches the program as the errno of
// the mapping (errno.go), here through mkdir, whose one request answers the
// code injected at the emulator (one attempt per call: the client retries
// 429 and 5xx). A caller interrupted by a signal while it waits gets EINTR.
func TestServiceErrorsAsErrnos(t *testing.T) {
	e := newEnv(t, envOptions{Client: api.Options{MaxAttempts: 1}})
	folder := e.mkdir(0, e.root(0), "held")
	if _, err := os.ReadDir(e.Path("shared")); err != nil { // listed: a mkdir sends its own request only
		t.Fatal(err)
	}
	for _, c := range []struct {
		code int
		want syscall.Errno
	}{
		{api.CodeNotFound, syscall.ENOENT},
		{api.CodeDownloadTargetNotFound, syscall.ENOENT},
		{api.CodeForbidden, syscall.EACCES},
		{api.CodePermissionRequired, syscall.EACCES},
		{api.CodeStorageFull, syscall.ENOSPC},
		{api.CodeFileExists, syscall.EEXIST},
		{api.CodeTooManyRequests, syscall.EAGAIN},
		{api.CodeBadRequest, syscall.EINVAL},
		{api.CodeDirectoryEmpty, syscall.EINVAL}, // any other 4xxx
		{500, syscall.EIO},
		{503, syscall.EIO},
	} {
		name := fmt.Sprintf("refused %d", c.code)
		e.Emu.InjectError("POST /files", c.code, 1)
		err := os.Mkdir(e.Path("shared", name), 0o755)
		if !errors.Is(err, c.want) {
			t.Errorf("mkdir answered %d by the service: %v, want %v", c.code, err, c.want)
		}
		if _, ok := e.serviceFile(name); ok {
			t.Errorf("the folder refused with %d is on the service", c.code)
		}
	}
	if n := e.Emu.Stats().Injected; n != 11 {
		t.Errorf("%d answers injected, want 11 (one per mkdir)", n)
	}

	// A lookup waiting for a listing, interrupted by a signal (SIGURG: the
	// Go runtime takes it and goes on), answers EINTR; the listing goes on.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.setHook(func(r *http.Request, answered bool) {
		if !answered && isListing(r, folder) {
			once.Do(func() { close(held) })
			<-release
		}
	})
	t.Cleanup(func() { closeOnce(release) })
	// Signaled once the daemon has the lookup: the thread waits in the
	// kernel for its answer.
	done := testkit.SignalDuring(t, held, "the lookup sent no listing", func() error {
		var st unix.Stat_t
		return unix.Stat(e.Path("shared", "held", "x"), &st)
	})
	if err := testkit.ResultWithin(t, done, 10*time.Second, "stat interrupted by a signal did not return"); !errors.Is(err, syscall.EINTR) {
		t.Errorf("stat interrupted by a signal: %v, want EINTR", err)
	}
	closeOnce(release)
	if _, err := os.Stat(e.Path("shared", "held", "x")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("stat once the listing came: %v, want ENOENT", err)
	}
}
