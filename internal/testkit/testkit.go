// Package testkit holds what tests across the packages share: the
// emulator's credentials as a client's, a client, a quiet logger, random
// bytes, waiting for a condition and reading a ZIP.
package testkit

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/logging"
)

// Creds returns the named organization's credentials ("org-a", "org-b") of
// a running emulator, as the client takes them.
func Creds(t testing.TB, s *emulator.Server, org string) api.Credentials {
	t.Helper()
	for _, c := range s.Credentials() {
		if c.Name == org {
			return api.Credentials{Endpoint: c.Endpoint, Key: c.Key, Secret: c.Secret}
		}
	}
	t.Fatalf("the emulator has no organization %q", org)
	return api.Credentials{}
}

// Client returns an API client of the named organization of a running
// emulator, logging nowhere; opts may tune it (its Logger is filled in when
// nil).
func Client(t testing.TB, s *emulator.Server, org string, opts api.Options) *api.Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = Log(t)
	}
	c, err := api.New(Creds(t, s, org), opts)
	if err != nil {
		t.Fatalf("api client: %v", err)
	}
	return c
}

// Log is a logger for a test: silent, or debug on standard error under
// go test -v or with ORGFS_TEST_DEBUG set in the environment.
func Log(t testing.TB) *logrus.Logger {
	l := logging.Discard()
	if testing.Verbose() || os.Getenv("ORGFS_TEST_DEBUG") != "" {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

// Quiet is a logger that writes nothing.
func Quiet() *logrus.Logger { return logging.Discard() }

// RandBytes returns n bytes of a seeded pseudo-random sequence: the same
// seed gives the same bytes.
func RandBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test naming what it waited for when timeout passes first.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Unzip reads every entry of a ZIP: a file's content by its name, a
// folder's name ("sub/") with nil.
func Unzip(t testing.TB, b []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a ZIP (%d bytes): %v", len(b), err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			out[f.Name] = nil
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name] = data
	}
	return out
}

// SyncBuffer is a bytes.Buffer safe to write from one goroutine (a logger, a
// child process) while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// SmallDisk mounts a tmpfs of size bytes (mode 0700) on dir, unmounted at the
// end of the test. It needs root, as the CI runs.
func SmallDisk(t testing.TB, dir string, size int64) {
	t.Helper()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a tmpfs on %s (needs root): %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			syscall.Unmount(dir, detachFlag)
		}
	})
}

// FillDisk writes a file in dir until its disk is full.
func FillDisk(t testing.TB, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 16<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// Detach unmounts dir lazily (forced on macOS), best effort: the cleanup of
// a mount that did not end cleanly.
func Detach(dir string) { syscall.Unmount(dir, detachFlag) }
