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
// One file per concern: doc.go (this), admin.go (Admin, the service's
// management interface), format.go (the formats programs read: Result,
// Upload, Stats; records as indented JSON, values as one line), nodes.go (the
// folder, file, handle and link nodes and the entries that make them),
// results.go (actions, refusals, outcomes and each folder's result), memo.go
// (the service's answers kept for the listing cache time), tree.go (Tree:
// dependencies and state; .ctl/ itself: README, usage, software, seats,
// stats, refresh), uploads.go (uploads, uploads.json, sync, conflicts, conflicts.json), downloads.go
// (downloads/), machines.go (machines/<id>/), live.go (machines/<id>/live/
// and the task ZIPs of machines/<id>/tasks/), images.go (images/), logs.go
// (logs/), and readme.txt (.ctl/README, embedded).
//
// Locks: fileNode.mu, fileHandle.mu, folderState.mu, Tree.mu and memo.mu
// each guard their own fields, are held for memory only and are never
// nested, except fileHandle.mu, which is held across the action a write runs
// (it serializes the writes of one open file, requests included) and takes
// folderState.mu, Tree.mu and memo.mu inside; and streamHandle.mu, held
// across a read of a task's ZIP. Package cache's locks are taken inside the
// cache calls; none of ours is held when go-fuse calls a node.
package ctl
