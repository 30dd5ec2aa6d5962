// Package safefile writes a small file whole or not at all: into a
// temporary file beside it, synced, then renamed over it.
package safefile

import (
	"bufio"
	"io"
	"os"
)

// Write writes path anew (mode 0600) with what write gives, synced and
// renamed into place; on failure path is as it was and nothing is left
// beside it. The caller syncs the folder when the rename itself must be
// durable.
func Write(path string, write func(w io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
