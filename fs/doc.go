// Package fs is the FUSE side of orgfs: go-fuse nodes for the mounted tree
// (shared/, computers/<name>/, recordings/), their file handles, and the one
// mapping of service errors to errnos. It never speaks HTTP: content and
// metadata come through package cache (its Store makes every change).
//
// One file per type: fs.go (options, wiring, mounting, and the package's lock
// order), base.go (what every node shares: statfs, extended attributes,
// attributes, inode numbers), root.go, computers.go, dir.go (a folder of a
// storage area: listing, and the changes made in it), file.go (a file:
// attributes, open, staging for writing), handle.go (the read handle and the
// staged handle), names.go (names shown) and
// errno.go (errors as errnos).
package fs
