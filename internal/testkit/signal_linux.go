package testkit

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SignalDuring runs call on a thread of its own, waits until held closes
// (the call's request is where the test holds it; what is waited for is
// named in the failure), and sends that thread SIGURG, as a Go program's
// runtime does at any time: the kernel interrupts the call's FUSE request.
// call makes its syscall once (no retry on EINTR, as Go's os package
// makes). The result comes back on the channel returned (ResultWithin).
func SignalDuring(t *testing.T, held <-chan struct{}, what string, call func() error) <-chan error {
	t.Helper()
	tid, done := make(chan int, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread() // its thread ends with it
		tid <- unix.Gettid()
		done <- call()
	}()
	thread := <-tid
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
	if err := unix.Tgkill(os.Getpid(), thread, unix.SIGURG); err != nil {
		t.Fatal(err)
	}
	return done
}

// ResultWithin is the result of a call SignalDuring interrupted, or the
// test's end (what: the failure) when it takes longer than d.
func ResultWithin(t *testing.T, done <-chan error, d time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatal(what)
		return nil
	}
}
