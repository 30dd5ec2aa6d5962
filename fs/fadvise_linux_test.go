package fs

// Dropping a file's pages from the kernel's cache, for the read tests (Linux).

import (
	"os"
	"syscall"
)

// fadviseDontNeed drops a file's pages from the kernel's page cache
// (posix_fadvise POSIX_FADV_DONTNEED).
func fadviseDontNeed(f *os.File) error {
	const posixFadvDontneed = 4
	_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, posixFadvDontneed, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
