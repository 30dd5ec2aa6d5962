package testkit

// detachFlag: macOS has no lazy unmount; a forced one comes closest.
const detachFlag = 0x80000 // MNT_FORCE in <sys/mount.h>
