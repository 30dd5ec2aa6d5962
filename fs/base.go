package fs

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/cache"
)

// node is embedded in every node of the tree: its go-fuse inode, the mount it
// belongs to, and the answers every node gives alike (statfs, extended
// attributes).
type node struct {
	gofs.Inode
	fsys *FS
}

var (
	_ = (gofs.NodeStatfser)((*node)(nil))
	_ = (gofs.NodeGetxattrer)((*node)(nil))
	_ = (gofs.NodeSetxattrer)((*node)(nil))
	_ = (gofs.NodeListxattrer)((*node)(nil))
	_ = (gofs.NodeUnlinker)((*node)(nil))
	_ = (gofs.NodeRmdirer)((*node)(nil))
	_ = (gofs.NodeRenamer)((*node)(nil))
)

// Statfs reports the quota and use of the storage the node is in (see
// statfs.go). Every node answers (go-fuse asks the node statfs names).
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fsys.fillStatfs(ctx, n.areaOf(), out)
}

// Getxattr exposes nothing; answering ENODATA at once spares a request per
// file to tools that ask for security labels and ACLs.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENODATA
}

// Setxattr: extended attributes are not kept. ENOTSUP is what copy tools
// take as "not supported here" rather than as a failure.
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOTSUP
}

// Unlink, Rmdir and Rename refuse, in the folders whose entries are fixed
// (the root, computers/, .ctl): go-fuse would answer success for a node
// without them, and the entry would vanish from the kernel's view while
// nothing happened. Folders of the storage (dirNode) have their own.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EPERM }

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EPERM }

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EPERM
}

// Listxattr lists none.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) { return 0, 0 }

// Inode numbers: the fixed folders are small; a service object's is its id
// above 2^40 (ids are unique across the organization and its areas); a
// computer's folder is its id above 2^41; a file not yet on the service has a
// hash of its folder and name above 2^62 (stagedIno).
const (
	inoRoot       = 1
	inoShared     = 2
	inoComputers  = 3
	inoRecordings = 4
	inoCtl        = 5
)

func fileIno(id int64) uint64    { return 1<<40 + uint64(id) }
func machineIno(id int64) uint64 { return 1<<41 + uint64(id) }

// stagedIno is the inode number of a file not yet on the service: stable for
// its folder and name.
func stagedIno(parent cache.DirKey, name string) uint64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(parent.Area.Kind))
	binary.LittleEndian.PutUint64(b[8:], uint64(parent.Area.MachineID))
	binary.LittleEndian.PutUint64(b[16:], uint64(parent.ID))
	h.Write(b[:])
	h.Write([]byte(name))
	return 1<<62 | h.Sum64()>>2
}

func (f *FS) dirMode() uint32  { return 0o777 &^ f.opts.Umask }
func (f *FS) fileMode() uint32 { return 0o666 &^ f.opts.Umask }

// setAttr fills the attributes common to every node.
func (f *FS) setAttr(a *fuse.Attr, mode uint32, size int64, mtime time.Time) {
	if mtime.IsZero() {
		mtime = f.start
	}
	a.Mode = mode
	a.Size = uint64(size)
	a.Blocks = (uint64(size) + 511) / 512
	a.Blksize = 1 << 20
	a.SetTimes(nil, &mtime, &mtime)
	a.Owner = fuse.Owner{Uid: f.opts.UID, Gid: f.opts.GID}
	if mode&syscall.S_IFDIR != 0 {
		a.Nlink = 2
	} else {
		a.Nlink = 1
	}
}

// setDirAttr fills a folder's attributes (a zero mtime shows the mount's
// start).
func (f *FS) setDirAttr(a *fuse.Attr, mtime time.Time) {
	f.setAttr(a, syscall.S_IFDIR|f.dirMode(), 0, mtime)
}

// entryAttr fills a lookup's answer with the attributes of the inode found.
func entryAttr(ctx context.Context, ch *gofs.Inode, out *fuse.EntryOut) {
	if g, ok := ch.Operations().(gofs.NodeGetattrer); ok {
		var a fuse.AttrOut
		g.Getattr(ctx, nil, &a)
		out.Attr = a.Attr
	}
}
