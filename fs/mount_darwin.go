package fs

import "syscall"

// platformOptions are the macFUSE / FUSE-T options: the volume's name in
// Finder. AppleDouble files stay allowed (no noappledouble): Finder keeps a
// file's extended attributes in them, and the mount keeps them local-only
// (local.go), so copies succeed and nothing extra is uploaded.
func platformOptions(mo MountOptions) []string { return []string{"volname=" + mo.FsName} }

// noXattr is getxattr's answer on macOS: no data, as before Linux's became
// ENOSYS (macFUSE's handling of ENOSYS is not tried here).
const noXattr = syscall.ENODATA
