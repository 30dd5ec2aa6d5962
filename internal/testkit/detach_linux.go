package testkit

import "syscall"

// detachFlag unmounts lazily: the mount leaves the tree at once.
const detachFlag = syscall.MNT_DETACH
