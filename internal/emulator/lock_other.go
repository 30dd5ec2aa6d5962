//go:build !unix

package emulator

import "os"

// lockDir does not lock on this platform.
func lockDir(dir string) (*os.File, error) { return nil, nil }
