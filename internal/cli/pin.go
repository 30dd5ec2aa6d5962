package cli

// orgfs pin, orgfs unpin: keep files and folders on this desk (available
// offline), over the mount's .ctl/pins (cache/pins.go).

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/units"
)

const pinSynopsis = ` PATH...
       orgfs pin --list [MOUNTPOINT]

Keeps files and folders (a folder with everything below it) on this desk:
they are downloaded in the background, never evicted from the cache, and
followed while online (listed again every --dir-cache-time, or
--pin-refresh when longer: new and changed files are fetched, those gone
dropped). Pins last across restarts. A pin that cannot fit under
--cache-max-size beside the others is refused with the figures. 'orgfs pin
--list' shows each pin and how far it is; 'orgfs unpin PATH...' ends them.`

const unpinSynopsis = ` PATH...

Ends the pins of the paths (and the pins below them): what they kept is
evictable again.`

func runPin(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("pin", pinSynopsis, stdout)
	list := fs.Bool("list", false, "list the pins of a mount (the only one, or the one named) and their state")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *list {
		where := fs.Arg(0)
		if where == "" {
			if _, err := mountOf("."); err == nil {
				where = "." // in a mount: that one
			}
		}
		mnt, err := mountOf(where)
		if err != nil {
			return err
		}
		return printPins(stdout, mnt)
	}
	if fs.NArg() < 1 {
		return usagef("pin needs a path in a mount (see 'orgfs pin --help')")
	}
	return pinPaths(stdout, fs.Args(), "", "pinned")
}

func runUnpin(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("unpin", unpinSynopsis, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return usagef("unpin needs a path in a mount (see 'orgfs unpin --help')")
	}
	return pinPaths(stdout, fs.Args(), "-", "unpinned")
}

// pinPaths writes each path, with prefix, to its mount's .ctl/pins.
func pinPaths(stdout io.Writer, paths []string, prefix, done string) error {
	for _, p := range paths {
		mnt, rel, err := inMount(p)
		if err != nil {
			return err
		}
		if r, err := writeCtl(mnt, "pins", prefix+rel+"\n"); err != nil {
			return fmt.Errorf("%s: %s (%v)", p, r.Message, err)
		}
		fmt.Fprintf(stdout, "orgfs: %s %s\n", done, rel)
	}
	return nil
}

// inMount is path's mount and its path in it.
func inMount(path string) (mnt, rel string, err error) {
	if mnt, err = mountOf(path); err != nil {
		return "", "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	rel, err = filepath.Rel(mnt, abs)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", "", usagef("%s is not a file or folder in the mount at %s", path, mnt)
	}
	return mnt, filepath.ToSlash(rel), nil
}

// printPins lists the pins of the mount at mnt, a line each.
func printPins(w io.Writer, mnt string) error {
	var pins []cache.PinState
	if err := readCtl(mnt, "pins.json", &pins); err != nil {
		return err
	}
	if len(pins) == 0 {
		fmt.Fprintf(w, "no pins in %s ('orgfs pin PATH' keeps a file or folder on this desk)\n", mnt)
		return nil
	}
	for _, p := range pins {
		fmt.Fprintf(w, "%-40s %8s  %s\n", p.Path, units.FormatSize(p.Bytes), p.Summary())
		for _, f := range p.Failed {
			fmt.Fprintf(w, "    failed: %s: %s\n", f.Path, f.Error)
		}
	}
	return nil
}
