package fs

import "syscall"

// platformOptions are the mount options of the platform: none on Linux.
func platformOptions(MountOptions) []string { return nil }

// noXattr is getxattr's answer. ENOSYS tells the Linux kernel that the mount
// keeps no extended attributes: it answers EOPNOTSUPP itself from then on,
// for every file, so that neither `ls -l` (a security label per file) nor a
// write (the kernel asks for security.capability first) costs a request.
const noXattr = syscall.ENOSYS
