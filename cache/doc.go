// Package cache is what orgfs keeps between the kernel and the service, and
// the one door to it: the Store. The read side lives here: folder listings
// (Dirs, with their read-ahead), file contents in sparse files on local disk
// under a byte budget (Content), fetched by ranged GETs with read-ahead
// (Fetcher, Reader), past the cache when it cannot hold a block, and a
// folder's small files as one ZIP (Bundler); the modes, owners and times set
// on this desk (Attrs); the I/O timeout of a caller's wait. The write side is
// package writeback, which the Store drives. Package fs changes state only
// through the Store's named operations, each with its ordering rules.
//
// Every request goes through Client, the methods of *api.Client the package
// calls. The package's files and its lock order are in docs/ARCHITECTURE.md.
package cache
