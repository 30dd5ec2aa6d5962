//go:build !linux

package fs

import (
	"errors"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// probePassthrough: FUSE passthrough is Linux's.
func (f *FS) probePassthrough(srv *fuse.Server) {
	f.pt.why.Store("not on this system")
}

// linkFile: passthrough, which alone links open files, is Linux's.
func linkFile(f *os.File, path string) error {
	return errors.New("not on this system")
}

// stampOf is f's size and modification time (fileStamp); passthrough, which
// alone asks, is Linux's.
func stampOf(f *os.File) (fileStamp, bool) {
	fi, err := f.Stat()
	if err != nil {
		return fileStamp{}, false
	}
	return fileStamp{size: fi.Size(), mtime: syscall.NsecToTimespec(fi.ModTime().UnixNano())}, true
}
