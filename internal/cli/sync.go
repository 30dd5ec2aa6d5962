package cli

// orgfs sync: wait until what was written is on the service.

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

const syncSynopsis = ` MOUNTPOINT [PATH...]

Returns once everything written before it (under the PATHs given, files or
folders, or in the whole mount) is on the service; exit status 1, with the
files and their errors, when some could not be sent. 'sync -f' on the mount
does not wait for uploads; this does.`

func runSync(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sync", syncSynopsis, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return usagef("sync needs the mount point (see 'orgfs sync --help')")
	}
	mnt, err := mountOf(fs.Arg(0))
	if err != nil {
		return err
	}
	var lines []string
	for _, p := range fs.Args()[1:] {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(mnt, abs)
		if err != nil || strings.HasPrefix(rel, "..") {
			return usagef("%s is not in the mount at %s", p, mnt)
		}
		lines = append(lines, filepath.ToSlash(rel))
	}
	start := time.Now()
	r, err := writeCtl(mnt, "sync", strings.Join(lines, "\n")+"\n")
	if err != nil {
		return fmt.Errorf("%s (%v)", r.Message, err)
	}
	rec, _ := r.Record.(map[string]any)
	fmt.Fprintf(stdout, "orgfs: %v files on the service (%s)\n", rec["files"], time.Since(start).Round(time.Millisecond))
	return nil
}
