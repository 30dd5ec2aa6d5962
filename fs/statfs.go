package fs

// statfs: what df shows for a path, the quota and use of the storage area
// it is in (the area root's file_storage_size and file_storage_usage).
//
// Locks: none of its own (the values are kept in the control tree's memo).

import (
	"context"
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
)

// space is an area's quota and use, in bytes.
type space struct{ size, used int64 }

// areaOf is the storage area a node is in: a folder's or a file's own, the
// shared storage for the root, computers/ and .ctl.
func (n *node) areaOf() cache.Area {
	switch op := n.Operations().(type) {
	case *dirNode:
		return op.key.Area
	case *fileNode:
		op.mu.Lock()
		defer op.mu.Unlock()
		return op.parent.Area
	}
	return cache.Area{Kind: cache.Shared}
}

// space returns area's quota and use, kept like listings. The root's own
// record carries them; it is the "current" record of a listing of the root
// by its id, which the root's entries give as their parent_id. An empty
// area (no entry to learn the root's id from) has none known.
func (f *FS) space(ctx context.Context, a cache.Area) (space, error) {
	list := func(parent int64) *api.FileList {
		switch a.Kind {
		case cache.Machine:
			return f.Admin.MachineFiles(ctx, a.MachineID, api.ListFilesRequest{ParentID: parent})
		case cache.Recordings:
			return f.Admin.Recordings(ctx, api.ListFilesRequest{ParentID: parent})
		}
		return f.Admin.SharedFiles(ctx, api.ListFilesRequest{ParentID: parent})
	}
	key := fmt.Sprintf("space/%d/%d", a.Kind, a.MachineID)
	return memoGet(ctx, f.ctl.memo, key, func(ctx context.Context) (space, error) {
		first := func(l *api.FileList) (*api.File, error) {
			for file, err := range l.All() {
				if err != nil {
					return nil, err
				}
				return &file, nil
			}
			return nil, nil
		}
		entry, err := first(list(0))
		if err != nil || entry == nil {
			return space{}, err
		}
		l := list(entry.ParentID)
		if _, err := first(l); err != nil {
			return space{}, err
		}
		cur := l.Current()
		if cur == nil || cur.FileStorageSize == nil || cur.FileStorageUsage == nil {
			return space{}, nil
		}
		return space{size: *cur.FileStorageSize, used: *cur.FileStorageUsage}, nil
	})
}

// fillStatfs answers statfs with the area's quota and use; without them
// (no .ctl client, an empty area, a failed request) a large, mostly free
// disk, so that file managers do not refuse a copy for want of space: the
// service's quota answers for real.
func (f *FS) fillStatfs(ctx context.Context, a cache.Area, out *fuse.StatfsOut) syscall.Errno {
	const bsize = 4096
	out.Bsize, out.Frsize, out.NameLen = bsize, bsize, 255
	out.Files, out.Ffree = 1<<30, 1<<30
	var sp space
	if f.Admin != nil {
		var err error
		if sp, err = f.space(ctx, a); err != nil {
			f.Log.WithError(err).Debug("statfs: the storage's quota is not known; showing a large disk")
		}
	}
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
