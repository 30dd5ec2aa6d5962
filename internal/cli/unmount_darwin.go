package cli

import "syscall"

// lazyUnmount: macOS has no lazy unmount; a forced one is the nearest (the
// programs inside get errors instead of being served until they leave).
func lazyUnmount(dir string) error { return syscall.Unmount(dir, mntForce) }

// mntForce is MNT_FORCE of <sys/mount.h> (package syscall lacks it on darwin).
const mntForce = 0x80000

// userUnmount unmounts a FUSE mount (macFUSE and FUSE-T let the user who
// mounted it unmount it).
func userUnmount(dir string) error { return syscall.Unmount(dir, 0) }
