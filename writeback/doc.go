// Package writeback is the write side of the mount: the files written
// through it, kept in a staging folder on local disk (Staging, Staged) until
// an upload queue has them on the service, with the check before an upload
// replaces a file of whose version the name holds (conflict copies), and
// what users ask of the queue (flush, retry, discard). It knows nothing of
// the read side (package cache, whose Store drives it) nor of FUSE.
//
// Its one lock, Staging.mu, and what it is held across are in the lock
// order of docs/ARCHITECTURE.md, with the package's files.
package writeback
