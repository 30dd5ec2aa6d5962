// Package fs is the FUSE side of orgfs: go-fuse nodes for the data tree of a
// mount (shared/, computers/<name>/, recordings/), their file handles, and
// the one mapping of service errors to errnos. It never speaks HTTP and
// never asks the service itself: content, metadata and quotas come through
// package cache (its Store makes every change). The control tree .ctl/ is
// package fs/ctl's: the command builds it over the FS and hands it to Mount
// (MountOptions.Ctl); fs does not import it.
//
// One file per concern: fs.go (options, the FS and its dependencies,
// mounting, and the package's lock order), base.go (what every node shares:
// the base node and Common's answers, inode numbers, attributes), root.go
// (the root and its fixed folders), trash.go (the file that tells
// file managers the mount has no trash), computers.go (computers/), dir.go (a
// folder of a storage area: listing, and the changes made in it),
// rename_file.go (rename of a file or a link), rename_folder.go and
// rename_tree.go (rename of a folder, empty or with content), file.go (a
// file: attributes, open, staging for writing), links.go (symbolic links,
// kept on the service as NAME.rclonelink files), handle.go (the read handle
// and the staged handle), kernel.go (what the kernel keeps of files, and
// when it is told to forget it), unlinked.go (files unlinked while open),
// local.go (entries kept in memory: desktop litter, special nodes),
// special.go (fifos, sockets and device nodes: mknod, and their renames),
// names.go (names shown and names refused), statfs.go (quota and use, from
// the listing cache), errno.go (errors as errnos, and the I/O timeout of
// operations), mount_linux.go and mount_darwin.go (the platform's mount
// options).
//
// Package fs/fstest mounts trees for the tests of fs and fs/ctl.
package fs
