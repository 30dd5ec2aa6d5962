package fs

// Special nodes: fifos, sockets and device nodes made with mknod, mkfifo or
// bind. The service holds files and folders only, and no other desk or
// computer could use one, so they are kept by this mount in memory for its
// life (local.go, beside the desktop files), never sent: a fifo carries bytes
// between processes of this machine, a socket connects them, as on a local
// disk (the kernel opens them; FUSE sends no I/O of theirs here). mknod of a
// regular file makes an empty file as create does.
//
// Locks: none of its own (the store's, local.go).

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var _ = (gofs.NodeMknoder)((*dirNode)(nil))

// desktopAttr is a new desktop file's attributes: the mount's file mode and
// owner.
func (f *FS) desktopAttr() localAttr { return newLocalAttr(f.FileMode(), f.opts.UID, f.opts.GID, 0) }

// caller is the owner of what the caller of ctx makes: its uid and gid, the
// mount's owner when FUSE did not say.
func (f *FS) caller(ctx context.Context) (uid, gid uint32) {
	if c, ok := fuse.FromContext(ctx); ok && c != nil {
		return c.Uid, c.Gid
	}
	return f.opts.UID, f.opts.GID
}

// Mknod makes a fifo, a socket or a device node in memory (the kernel has
// taken the umask from mode), owned by its maker; a regular file as Create
// makes one, empty. EEXIST when the name shows anything.
func (n *dirNode) Mknod(ctx context.Context, name string, mode uint32, rdev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !n.fsys.writable(n.dirKey().Area) {
		return nil, syscall.EROFS
	}
	if errno := n.checkNew(name); errno != 0 {
		return nil, errno
	}
	typ := mode & syscall.S_IFMT
	switch typ {
	case syscall.S_IFREG, syscall.S_IFIFO, syscall.S_IFSOCK, syscall.S_IFCHR, syscall.S_IFBLK:
	default:
		return nil, syscall.EINVAL
	}
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	if errno := n.free(ctx, name); errno != 0 {
		return nil, errno
	}
	if typ == syscall.S_IFREG && !probeName(name) {
		return n.mknodFile(ctx, name, mode, out)
	}
	uid, gid := n.fsys.caller(ctx)
	a := newLocalAttr(mode, uid, gid, rdev)
	if typ == syscall.S_IFREG {
		a = n.fsys.desktopAttr() // a desktop file, as Create makes one
	}
	lf := n.fsys.local.make(n.dirKey(), name, typ, a)
	if lf == nil {
		return nil, syscall.EEXIST
	}
	if typ != syscall.S_IFREG {
		n.fsys.store.TouchDir(n.dirKey())
	}
	ch := n.localChild(ctx, lf)
	EntryAttr(ctx, ch, out)
	return ch, 0
}

// free reports EEXIST when name of this folder shows anything: a local
// entry, a pending file or link, or a listed entry.
func (n *dirNode) free(ctx context.Context, name string) syscall.Errno {
	if n.fsys.local.get(n.dirKey(), name) != nil || n.staged(name) != nil {
		return syscall.EEXIST
	}
	if probeName(name) && !n.cachedHas(name) {
		return 0 // as Lookup: no request
	}
	if _, ok, errno := n.existingErr(ctx, name); ok || errno != 0 {
		if errno != 0 {
			return errno
		}
		return syscall.EEXIST
	}
	return 0
}

// mknodFile makes an empty regular file at a free name, as Create does,
// closed at once: it is uploaded after the write-back delay.
func (n *dirNode) mknodFile(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	st, errno := n.createStaged(ctx, name, n.fsys.newAttr(ctx, mode, n.fsys.FileMode()), true)
	if errno != 0 {
		return nil, errno
	}
	st.Touch()
	st.CloseWriter()
	ch := n.stagedChild(ctx, name, st)
	ch.Operations().(*fileNode).fillAttr(&out.Attr)
	return ch, 0
}

// renameLocal renames local entry lf of this folder, with its inode number.
// A desktop file moves among desktop names only (EXDEV otherwise: mv copies
// it into a real file). A special node moves anywhere in the storage areas,
// and what the new name shows goes, as on a disk: a local entry, a file, a
// pending file or a link (as unlink removes it); a folder there is EISDIR.
func (n *dirNode) renameLocal(ctx context.Context, lf *localFile, name string, dst *dirNode, newName string, noreplace bool) syscall.Errno {
	if !lf.special() && !probeName(newName) {
		return syscall.EXDEV // a desktop file becomes a real one by a copy (mv does it)
	}
	local := &n.fsys.local
	if local.get(dst.dirKey(), newName) != nil {
		if noreplace {
			return syscall.EEXIST
		}
	} else if lf.special() {
		if errno := dst.clearFor(ctx, newName, noreplace); errno != 0 {
			return errno
		}
	}
	local.rename(n.dirKey(), name, dst.dirKey(), newName)
	if lf.special() {
		n.fsys.store.Renamed(n.dirKey(), dst.dirKey())
	}
	return 0
}

// clearFor removes what name of this folder shows (a file, a pending file,
// a link), for a special node renamed over it, as unlink does: EEXIST with
// noreplace, EISDIR for a folder (the kernel answers both first for the
// names it knows).
func (n *dirNode) clearFor(ctx context.Context, name string, noreplace bool) syscall.Errno {
	bctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	staged := n.staged(name) != nil
	_, listed, errno := n.existingErr(bctx, name)
	switch {
	case errno != 0:
		return errno
	case !staged && !listed:
		return 0
	case noreplace:
		return syscall.EEXIST
	}
	if errno := n.Unlink(ctx, name); errno != syscall.ENOENT { // a folder: EISDIR
		return errno
	}
	return 0
}
