// Package ctl is the control tree .ctl/ of a mount: the organization's
// management interface as files (computers, images, balances, logs, download
// jobs), the upload queue, the mount's counters and refresh. Reading a
// control file never changes anything; a write runs its action in write(2),
// returns its errno there, and keeps the outcome in the folder's result.
//
// The tree is built over a mount of package fs (Deps.Mount: its attributes,
// read-only state and statfs are the control tree's too) and handed to it as
// fs.MountOptions.Ctl; package fs knows nothing of it. It asks the service
// through Admin (the management methods of *api.Client) and reads the
// caches through the cache.Store; service errors become errnos through
// fs.Errno, the mount's one mapper.
//
// Its files and its locks are in docs/ARCHITECTURE.md; .ctl/README is
// readme.txt, embedded.
package ctl
