package fs

import (
	"fmt"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// probePassthrough finds whether the kernel takes backing files on this
// mount (Linux 6.9+, CAP_SYS_ADMIN, a cache folder not on a stacked file
// system): it registers one, a file beside the content cache's, and lets it
// go.
func (f *FS) probePassthrough(srv *fuse.Server) {
	f.pt.srv = srv
	if f.opts.NoPassthrough {
		f.pt.why.Store("turned off (--passthrough=false)")
		return
	}
	tmp, err := os.CreateTemp(f.store.Content.Dir(), "passthrough-probe-")
	if err != nil {
		f.pt.why.Store("no probe file: " + err.Error())
		return
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	id, errno := srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(tmp.Fd())})
	if errno != 0 {
		f.pt.why.Store("the kernel refused a backing file: " + errno.Error())
		f.log.WithField("reason", errno.Error()).Info("fs: FUSE passthrough off (it needs Linux 6.9+ and root): reads of cached files go through the daemon")
		return
	}
	srv.UnregisterBackingFd(id)
	if dir := f.store.StagingDir(); dir != "" && !sameDevice(dir, f.store.Content.Dir()) {
		// A writer of a file open in passthrough takes its cache file as its
		// staging copy: a link, within one file system only.
		f.pt.why.Store("the staging folder is on another file system than the cache")
		f.log.Info("fs: FUSE passthrough off: the staging folder is on another file system than the cache")
		return
	}
	f.pt.on.Store(true)
	f.log.Info("fs: FUSE passthrough on: reads of cached files go straight to the cache's files")
}

// linkFile gives the open file f another name, path (through /proc: linkat
// of the descriptor's link, followed).
func linkFile(f *os.File, path string) error {
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
}

// sameDevice reports whether two folders are on one file system.
func sameDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	return syscall.Stat(a, &sa) == nil && syscall.Stat(b, &sb) == nil && sa.Dev == sb.Dev
}
