package fs

// What every node shares: the base node (statfs, extended attributes,
// refusals in fixed folders), inode numbers, and attributes as the mount
// shows them.
//
// Locks: none of its own.

import (
	"context"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/writeback"
)

// node is embedded in every node of the tree: its go-fuse inode, the mount it
// belongs to, and the answers every node gives alike (statfs, and Common's).
type node struct {
	gofs.Inode
	Common
	fsys *FS
}

var _ = (gofs.NodeStatfser)((*node)(nil))

// Statfs reports the quota and use of the storage the node is in (see
// statfs.go). Every node answers (go-fuse asks the node statfs names).
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fsys.Statfs(ctx, n.areaOf(), out)
}

// Common is embedded in every node of the mount, the control tree's (package
// fs/ctl) too: the answers they all give alike but statfs.
type Common struct{}

var (
	_ = (gofs.NodeGetxattrer)(Common{})
	_ = (gofs.NodeSetxattrer)(Common{})
	_ = (gofs.NodeListxattrer)(Common{})
	_ = (gofs.NodeUnlinker)(Common{})
	_ = (gofs.NodeRmdirer)(Common{})
	_ = (gofs.NodeRenamer)(Common{})
)

// Getxattr exposes nothing (noXattr: on Linux, the kernel asks once per
// mount).
func (Common) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	getxattrAsked.Add(1)
	return 0, noXattr
}

// getxattrAsked counts the getxattr requests that reached the daemon.
var getxattrAsked atomic.Int64

// Setxattr: extended attributes are not kept. ENOTSUP is what copy tools
// take as "not supported here" rather than as a failure.
func (Common) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOTSUP
}

// Unlink, Rmdir and Rename refuse, in the folders whose entries are fixed
// (the root, computers/, .ctl): go-fuse would answer success for a node
// without them, and the entry would vanish from the kernel's view while
// nothing happened. Folders of the storage (dirNode) have their own.
func (Common) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EPERM }

func (Common) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EPERM }

func (Common) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EPERM
}

// Listxattr lists none.
func (Common) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) { return 0, 0 }

// Inode numbers: the fixed folders are small; a service object's is its id
// above 2^40 (ids are unique across the organization and its areas); a
// computer's folder is its id above 2^41; a file not yet on the service has
// its staged copy's number above 2^62 + 2^61 (stagedIno), an entry kept in
// memory (a desktop file, a special node) its own number above 2^62 + 2^61 +
// 2^60 (localIno); the root's
// .Trash-UID is the uid above 2^39 (trashMarkerIno); the control tree's
// nodes (package fs/ctl) have a hash of their path above 2^63.
const (
	inoRoot       = 1
	inoShared     = 2
	inoComputers  = 3
	inoRecordings = 4
	inoCtl        = 5
)

func fileIno(id int64) uint64 { return 1<<40 + uint64(id) }

// inoOf is the inode number of service file id: the number its predecessor
// had, when the mount itself uploaded it as a new version (a file keeps its
// number across its own upload: make, rsync and git compare them), else its
// own.
func (f *FS) inoOf(id int64) uint64 {
	if ino, ok := f.inos.Get(id); ok {
		return ino
	}
	return fileIno(id)
}
func machineIno(id int64) uint64 { return 1<<41 + uint64(id) }

// movedIno is the number of folder id once its own number went with it to
// its new id in a rename with content (rename_tree.go): should the old
// folder show again (another writer's file kept it), it is another inode.
// So is a file renamed away or removed that shows again (its deletion
// failed, the rename's upload was discarded: kernel.go).
func movedIno(id int64) uint64 { return 1<<42 + uint64(id) }

// stagedIno is the inode number of a file not yet on the service: the one
// its node had, when the staged copy is the next version of a file the
// kernel knows (an edit, a rename), else one of its own, unique for the
// mount's life. A number never stands for a name: a file renamed keeps
// its number, and a new file at the old name gets another.
func (f *FS) stagedIno(st *writeback.Staged) uint64 {
	if ino, ok := f.pendingInos.Get(st.Seq()); ok {
		return ino
	}
	return 1<<62 | 1<<61 | uint64(st.Seq())
}

// DirMode is a folder's permissions: 0777 less the umask.
func (f *FS) DirMode() uint32 { return 0o777 &^ f.opts.Umask }

// FileMode is a file's permissions: 0666 less the umask.
func (f *FS) FileMode() uint32 { return 0o666 &^ f.opts.Umask }

// ReadOnly reports whether the mount refuses every change.
func (f *FS) ReadOnly() bool { return f.opts.ReadOnly }

// SetAttr fills the attributes common to every node: mode, size, the
// mount's owner, and mtime as every time (the mount's start when zero).
func (f *FS) SetAttr(a *fuse.Attr, mode uint32, size int64, mtime time.Time) {
	if mtime.IsZero() {
		mtime = f.start
	}
	a.Mode = mode
	a.Size = uint64(size)
	a.Blocks = (uint64(size) + 511) / 512
	a.Blksize = 1 << 20
	a.SetTimes(&mtime, &mtime, &mtime) // access time: the modification time (age-based cleaners read it)
	a.Owner = fuse.Owner{Uid: f.opts.UID, Gid: f.opts.GID}
	if mode&syscall.S_IFMT == syscall.S_IFDIR {
		a.Nlink = 2
	} else {
		a.Nlink = 1
	}
}

// applyAttr shows what a user set on this desk (cache.Attr: mode, owner,
// times) over the defaults in a. The change time is never before the others.
func applyAttr(a *fuse.Attr, s cache.Attr) {
	if s.Mode != nil {
		a.Mode = a.Mode&syscall.S_IFMT | *s.Mode&0o7777
	}
	if s.UID != nil {
		a.Uid = *s.UID
	}
	if s.GID != nil {
		a.Gid = *s.GID
	}
	if s.MTime != nil {
		a.SetTimes(s.MTime, s.MTime, s.MTime)
	}
	if s.ATime != nil {
		a.SetTimes(s.ATime, nil, nil)
	}
	if s.CTime != nil && s.CTime.After(a.ChangeTime()) {
		a.SetTimes(nil, nil, s.CTime)
	}
}

// attrChange is what a setattr sets besides the size (chmod, chown, utimes),
// stamped with the change time; ok is false when it sets none of them.
func attrChange(in *fuse.SetAttrIn) (c cache.Attr, ok bool) {
	if m, ok := in.GetMode(); ok {
		m &= 0o7777
		c.Mode = &m
	}
	if u, ok := in.GetUID(); ok {
		c.UID = &u
	}
	if g, ok := in.GetGID(); ok {
		c.GID = &g
	}
	if t, ok := in.GetMTime(); ok {
		c.MTime = &t
	}
	if t, ok := in.GetATime(); ok {
		c.ATime = &t
	}
	if c.IsZero() {
		return c, false
	}
	now := time.Now()
	c.CTime = &now
	return c, true
}

// newAttr is what a file or folder made with mode by the caller of ctx
// keeps of its own: its mode and owner where they are not the mount's
// defaults (def is the default mode).
func (f *FS) newAttr(ctx context.Context, mode, def uint32) cache.Attr {
	var a cache.Attr
	if m := mode & 0o7777; m != def {
		a.Mode = &m
	}
	if c, ok := fuse.FromContext(ctx); ok && c != nil {
		if c.Uid != f.opts.UID {
			uid := c.Uid
			a.UID = &uid
		}
		if c.Gid != f.opts.GID {
			gid := c.Gid
			a.GID = &gid
		}
	}
	return a
}

// setDirAttr fills a folder's attributes (a zero mtime shows the mount's
// start).
func (f *FS) setDirAttr(a *fuse.Attr, mtime time.Time) {
	f.SetAttr(a, syscall.S_IFDIR|f.DirMode(), 0, mtime)
}

// EntryAttr fills a lookup's answer with the attributes of the inode found.
func EntryAttr(ctx context.Context, ch *gofs.Inode, out *fuse.EntryOut) {
	if fn, ok := ch.Operations().(*fileNode); ok {
		var a fuse.AttrOut
		fn.getattr(&a) // not a getattr the kernel asked for (kernel.go counts those)
		out.Attr = a.Attr
		return
	}
	if g, ok := ch.Operations().(gofs.NodeGetattrer); ok {
		var a fuse.AttrOut
		g.Getattr(ctx, nil, &a)
		out.Attr = a.Attr
	}
}
