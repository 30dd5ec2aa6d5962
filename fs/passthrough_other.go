//go:build !linux

package fs

import (
	"errors"
	"os"

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
