package fs

// statfs: what df shows for a path, the quota and use of the storage area
// it is in (the area root's file_storage_size and file_storage_usage, from
// the listing cache).
//
// Locks: none of its own (the listings are kept by cache.Dirs).

import (
	"context"
	"slices"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
)

// space is an area's quota and use, in bytes.
type space struct{ size, used int64 }

// areaOf is the storage area a node is in: a folder's or a file's own, the
// shared storage for the root, computers/ and .ctl.
func (n *node) areaOf() place.Area {
	switch op := n.Operations().(type) {
	case *dirNode:
		return op.dirKey().Area
	case *fileNode:
		op.mu.Lock()
		defer op.mu.Unlock()
		return op.parent.Area
	}
	return place.Area{Kind: place.Shared}
}

// space returns area's quota and use, kept like listings. The root's own
// record carries them; it is the "current" record of a listing of the root
// by its id, which the root's entries give as their parent_id. An empty
// area (no entry to learn the root's id from) has none known, nor has one
// whose only entries the mount made itself (their records do not know it).
func (f *FS) space(ctx context.Context, a place.Area) (space, error) {
	top, err := f.store.Dirs.List(ctx, place.DirKey{Area: a})
	if err != nil {
		return space{}, err
	}
	i := slices.IndexFunc(top.Files, func(e api.File) bool { return e.ParentID > 0 })
	if i < 0 {
		return space{}, nil
	}
	root, err := f.store.Dirs.List(ctx, place.DirKey{Area: a, ID: top.Files[i].ParentID})
	if err != nil {
		return space{}, err
	}
	cur := root.Current
	if cur == nil || cur.FileStorageSize == nil || cur.FileStorageUsage == nil {
		return space{}, nil
	}
	return space{size: *cur.FileStorageSize, used: *cur.FileStorageUsage}, nil
}

// Statfs answers statfs with area's quota and use; without them (an empty
// area, a failed request) a large, mostly free disk, so that file managers
// do not refuse a copy for want of space: the service's quota answers for
// real. The control tree's nodes answer with the shared storage's.
func (f *FS) Statfs(ctx context.Context, a place.Area, out *fuse.StatfsOut) syscall.Errno {
	const bsize = 4096
	out.Bsize, out.Frsize, out.NameLen = bsize, bsize, 255
	out.Files, out.Ffree = 1<<30, 1<<30
	bctx, cancel := f.bound(ctx)
	sp, err := f.space(bctx, a)
	switch {
	case cache.AsTimeout(bctx, err) != nil:
		f.log.WithField("waited_for", "the quota of "+a.String()).WithError(err).
			Warn("fs: statfs: no answer from the service within --io-timeout; showing a large disk")
	case err != nil:
		f.log.WithError(err).Debug("statfs: the storage's quota is not known; showing a large disk")
	}
	cancel()
	if sp.size <= 0 {
		const blocks = 1 << 30 // 4 TiB
		out.Blocks, out.Bfree, out.Bavail = blocks, blocks, blocks
		return 0
	}
	free := max(sp.size-sp.used, 0)
	out.Blocks = uint64(sp.size / bsize)
	out.Bfree = uint64(free / bsize)
	out.Bavail = out.Bfree
	return 0
}
