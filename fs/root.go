package fs

// The mount's root: shared/, computers/, recordings/ and, when the command
// gives one, the control tree .ctl/ (package fs/ctl); .Trash-UID answers a
// lookup (trash.go), unlisted.
//
// Locks: none (its children are fixed).

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/place"
)

// CtlName is the control tree's folder in the root.
const CtlName = ".ctl"

// rootNode is the mount point: shared/, computers/, recordings/, .ctl/.
type rootNode struct {
	node
	ctl gofs.InodeEmbedder // the control tree's root; nil: no .ctl
}

var (
	_ = (gofs.NodeOnAdder)((*rootNode)(nil))
	_ = (gofs.NodeGetattrer)((*rootNode)(nil))
	_ = (gofs.NodeLookuper)((*rootNode)(nil))
	_ = (gofs.NodeReaddirer)((*rootNode)(nil))
	_ = (gofs.NodeCreater)((*rootNode)(nil))
	_ = (gofs.NodeMkdirer)((*rootNode)(nil))
)

func (n *rootNode) OnAdd(ctx context.Context) {
	add := func(name string, ch gofs.InodeEmbedder, ino uint64) {
		n.AddChild(name, n.NewPersistentInode(ctx, ch, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino}), false)
	}
	add("shared", n.fsys.newDirNode(place.DirKey{Area: place.Area{Kind: place.Shared}}, time.Time{}), inoShared)
	add("computers", &computersNode{node: node{fsys: n.fsys}}, inoComputers)
	add("recordings", n.fsys.newDirNode(place.DirKey{Area: place.Area{Kind: place.Recordings}}, time.Time{}), inoRecordings)
	if n.ctl != nil {
		add(CtlName, n.ctl, inoCtl)
	}
}

func (n *rootNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fsys.setDirAttr(&out.Attr, time.Time{})
	return 0
}

// Lookup answers the fixed children (kept by go-fuse), and .Trash-UID with
// the file that tells GLib the mount has no trash (trash.go); anything else
// does not exist.
func (n *rootNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if ch := n.GetChild(name); ch != nil {
		EntryAttr(ctx, ch, out)
		return ch, 0
	}
	if uid, ok := trashUID(name); ok {
		return n.trashMarkerChild(ctx, uid, out), 0
	}
	if len(name) > maxName {
		return nil, syscall.ENAMETOOLONG
	}
	return nil, syscall.ENOENT
}

func (n *rootNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	es := []fuse.DirEntry{
		{Name: "shared", Mode: syscall.S_IFDIR, Ino: inoShared},
		{Name: "computers", Mode: syscall.S_IFDIR, Ino: inoComputers},
		{Name: "recordings", Mode: syscall.S_IFDIR, Ino: inoRecordings},
	}
	if n.ctl != nil {
		es = append(es, fuse.DirEntry{Name: CtlName, Mode: syscall.S_IFDIR, Ino: inoCtl})
	}
	return gofs.NewListDirStream(es), 0
}

// Create refuses: the root holds only the fixed folders.
func (n *rootNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

// Mkdir refuses: the root holds only the fixed folders.
func (n *rootNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

var _ = (gofs.NodeFsyncer)((*rootNode)(nil))

// Fsync of the root has nothing to make durable: success (atomic-write
// routines fsync the folder after their rename). Only folders have a node
// Fsync: go-fuse asks a node's before a file handle's.
func (n *rootNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return 0
}
