// Package fs is the FUSE side of orgfs: go-fuse nodes for the mounted tree
// (shared/, computers/<name>/, recordings/, .ctl/), their file handles, and the
// one mapping of service errors to errnos. It never speaks HTTP: content and
// metadata come through package cache and the api client.
package fs
