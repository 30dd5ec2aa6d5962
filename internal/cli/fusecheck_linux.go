package cli

// Is FUSE there (Linux): /dev/fuse, and fusermount3 for a user who is not root.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// checkFUSE says in one line, with the fix, why a mount by this user cannot
// work, before trying: root mounts directly; a user needs /dev/fuse and
// fusermount3, and user_allow_other in /etc/fuse.conf for --allow-other.
func checkFUSE(allowOther bool) error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("/dev/fuse does not exist: load the fuse module (modprobe fuse) or, in a container, pass the device (--device /dev/fuse)")
	case errors.Is(err, os.ErrPermission):
		owner := ""
		if st, serr := os.Stat("/dev/fuse"); serr == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				owner = fmt.Sprintf(" (mode %v, group %d)", st.Mode().Perm(), sys.Gid)
			}
		}
		return fmt.Errorf("this user may not open /dev/fuse%s: an administrator can allow FUSE for users (chmod 0666 /dev/fuse, the usual setting, or add the user to the device's group), or mount as root", owner)
	case err != nil:
		return fmt.Errorf("opening /dev/fuse: %w", err)
	}
	f.Close()
	if os.Geteuid() == 0 {
		return nil
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		return errors.New("fusermount3 is not installed: mounting as a user needs it (apt-get install fuse3)")
	}
	if allowOther {
		b, _ := os.ReadFile("/etc/fuse.conf")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) == "user_allow_other" {
				return nil
			}
		}
		return errors.New("--allow-other needs the line user_allow_other in /etc/fuse.conf (as root: echo user_allow_other >> /etc/fuse.conf)")
	}
	return nil
}
