package fs

import (
	"fmt"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/splice"
)

// platformOptions are the mount options of the platform: on Linux, the
// largest read (maxRead).
func platformOptions(MountOptions) []string {
	return []string{fmt.Sprintf("max_read=%d", maxRead())}
}

// maxRead is the largest READ the kernel asks for: as large as a write
// (1 MiB), less what makes its reply too large for a pipe. go-fuse answers a
// read of the cache file by splicing it through a pipe, one copy, and falls
// back to reading it into memory and writing that, two copies, when the
// reply does not fit: at the default pipe-max-size of 1 MiB, a read of 1 MiB
// (cat's, with direct I/O: file.go's directColdMin) would not. The kernel
// takes the last max_read it is given: go-fuse gives its own (MaxWrite)
// before these options when it mounts directly (as root), after them through
// fusermount3, where reads stay at up to 1 MiB.
func maxRead() int {
	page := os.Getpagesize()
	return min(maxWrite, (splice.MaxPipeSize()-2*page)/page*page)
}

// noXattr is getxattr's answer. ENOSYS tells the Linux kernel that the mount
// keeps no extended attributes: it answers EOPNOTSUPP itself from then on,
// for every file, so that neither `ls -l` (a security label per file) nor a
// write (the kernel asks for security.capability first) costs a request.
const noXattr = syscall.ENOSYS
