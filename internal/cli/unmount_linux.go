package cli

// Unmounting on Linux: through fusermount3, or umount2 as root.

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// lazyUnmount detaches a mount still in use: the path is free at once, and
// programs inside keep working until they leave.
func lazyUnmount(dir string) error {
	if os.Geteuid() == 0 {
		return syscall.Unmount(dir, syscall.MNT_DETACH)
	}
	out, err := exec.Command("fusermount3", "-u", "-z", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("fusermount3 -u -z: %v: %s", err, out)
	}
	return nil
}

// userUnmount unmounts a FUSE mount: directly as root, else with
// fusermount3 (a user may unmount what they mounted).
func userUnmount(dir string) error {
	if os.Geteuid() == 0 {
		return syscall.Unmount(dir, 0)
	}
	if out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("fusermount3 -u %s: %v: %s", dir, err, out)
	}
	return nil
}
