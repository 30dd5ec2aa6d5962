package fs

// Dropping a file's pages from the kernel's cache, for the read tests (macOS).

import (
	"os"
	"syscall"
)

// fadviseDontNeed drops a file's cached pages; on macOS F_NOCACHE on the
// descriptor is the nearest (reads through it skip the cache).
func fadviseDontNeed(f *os.File) error {
	const fNoCache = 48 // F_NOCACHE of <fcntl.h>
	_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fNoCache, 1)
	if errno != 0 {
		return errno
	}
	return nil
}
