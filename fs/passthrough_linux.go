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
		f.pt.why.Store("--passthrough=false")
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
	f.pt.fineTimes.Store(fineTimes(tmp))
	f.pt.on.Store(true)
	f.log.Info("fs: FUSE passthrough on: reads of cached files go straight to the cache's files")
}

// linkFile gives the open file f another name, path (through /proc: linkat
// of the descriptor's link, followed).
func linkFile(f *os.File, path string) error {
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
}

// fineTimes reports whether f's file system stamps a write made after a
// stat with another time than the stat saw (multigrain timestamps), so that
// a writer in passthrough is seen to have written from the file's stat
// alone (notePassthroughWrites). 200 tries, each a write, a stat, a write
// and a stat.
func fineTimes(f *os.File) bool {
	for range 200 {
		if _, err := f.WriteAt([]byte{'a'}, 0); err != nil {
			return false
		}
		a, ok := stampOf(f)
		if _, err := f.WriteAt([]byte{'b'}, 0); err != nil || !ok {
			return false
		}
		if b, ok := stampOf(f); !ok || a == b {
			return false
		}
	}
	return true
}

// stampOf is f's size and times (fileStamp).
func stampOf(f *os.File) (fileStamp, bool) {
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return fileStamp{}, false
	}
	return fileStamp{st.Size, st.Mtim}, true
}
