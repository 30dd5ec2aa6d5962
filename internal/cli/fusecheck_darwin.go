package cli

import (
	"errors"
	"os"
)

// checkFUSE says in one line, with the fix, why a mount cannot work: macOS
// needs macFUSE (or FUSE-T) installed.
func checkFUSE(allowOther bool) error {
	for _, p := range []string{"/Library/Filesystems/macfuse.fs", "/Library/Filesystems/fuse-t.fs", "/usr/local/lib/libfuse-t.dylib"} {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	return errors.New("neither macFUSE nor FUSE-T is installed: install one (brew install --cask macfuse, or the FUSE-T package)")
}
