// Package fs is the FUSE side of orgfs: go-fuse nodes for the data tree of a
// mount (shared/, computers/<name>/, recordings/), their file handles, and
// the one mapping of service errors to errnos. It never speaks HTTP and
// never asks the service itself: content, metadata and quotas come through
// package cache (its Store makes every change). The control tree .ctl/ is
// package fs/ctl's: the command builds it over the FS and hands it to Mount
// (MountOptions.Ctl); fs does not import it.
//
// Its files, and the lock order of its nodes and handles, are in
// docs/ARCHITECTURE.md.
//
// Package fs/fstest mounts trees for the tests of fs and fs/ctl.
package fs
