package cli

// The .ctl client the desk commands (sync, status, unmount) share: finding
// an orgfs mount, reading and writing its control files (no second channel).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/orgfs/orgfs/fs/ctl"
)

// orgfsMounts lists the mount points of orgfs mounts (/proc/mounts).
func orgfsMounts() []string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && (f[2] == "fuse.orgfs" || f[0] == "orgfs") {
			out = append(out, unescapeMount(f[1]))
		}
	}
	return out
}

// unescapeMount undoes /proc/mounts' octal escapes (\040 for a space).
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// mountOf finds the orgfs mount holding path (the mount point itself, or a
// path below one); with no path, the only orgfs mount there is.
func mountOf(path string) (string, error) {
	mounts := orgfsMounts()
	if path == "" {
		switch len(mounts) {
		case 0:
			return "", errors.New("no orgfs mount here (name the mount point)")
		case 1:
			return mounts[0], nil
		}
		return "", fmt.Errorf("%d orgfs mounts (%s): name one", len(mounts), strings.Join(mounts, ", "))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	best := ""
	for _, m := range mounts {
		if (abs == m || strings.HasPrefix(abs, strings.TrimSuffix(m, "/")+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		// Not in /proc/mounts (another namespace): a folder with .ctl/README is one.
		for dir := abs; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, ".ctl", "README")); err == nil {
				return dir, nil
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
		return "", fmt.Errorf("%s is not in an orgfs mount", path)
	}
	return best, nil
}

// readCtl decodes a control file of the mount at mnt.
func readCtl(mnt, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(mnt, ".ctl", name))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// writeCtl writes one input to a control file and returns the error of the
// write or the close with the folder's result.
func writeCtl(mnt, name, input string) (ctl.Result, error) {
	p := filepath.Join(mnt, ".ctl", name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return ctl.Result{}, err
	}
	_, werr := f.WriteString(input)
	cerr := f.Close()
	var r ctl.Result
	if err := readCtl(mnt, filepath.Join(filepath.Dir(name), "result"), &r); err != nil && werr == nil && cerr == nil {
		return r, err
	}
	return r, errors.Join(werr, cerr)
}
