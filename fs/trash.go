package fs

// The mount has no trash, and says so where GLib looks.
//
// On a mount that is not the home's, GLib (gio, the GTK file chooser,
// Nautilus and the other GIO file managers) trashes into
// MOUNTPOINT/.Trash-UID. It takes that name holding anything but a folder of
// the user's as "no trash on this mount": access::can-trash reads FALSE, so
// file managers offer "Delete Permanently" from the start, and g_file_trash
// fails at once with G_IO_ERROR_NOT_SUPPORTED, making nothing (glib
// gio/glocalfile.c, _g_local_file_has_trash_dir and g_local_file_trash, alike
// from 2.74 to 2.89). The root answers every .Trash-UID with the read-only
// file below, which says why; it is not listed, and cannot be removed (the
// root's EPERM).
//
// The lever GLib documents for this, the x-gvfs-notrash mount option, cannot
// be put on the mount by orgfs: the kernel refuses it as a FUSE option
// ("fuse: Unknown parameter"), fusermount3 too ("unknown option"), and GLib
// reads it only from /run/mount/utab, which mount(8) writes (an fstab entry
// carrying it), or from fstab. A real trash is no choice either: the service
// has no rename, so every move into it would download and upload the file
// (folders with content cannot move at all), and what is trashed would keep
// using the organization's quota where every desk sees it.
//
// Locks: none (the file is fixed).

import (
	"context"
	"strconv"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// trashMarkerText is what MOUNTPOINT/.Trash-UID reads.
const trashMarkerText = `This orgfs mount has no trash.

File managers look for one here; this file tells them there is none, so they
offer to delete permanently instead of moving to the trash. Deleting a file
or folder on this mount deletes it on the service at once, for every desk.
`

// trashMarker is MOUNTPOINT/.Trash-UID: a read-only file.
type trashMarker struct{ node }

var (
	_ = (gofs.NodeGetattrer)((*trashMarker)(nil))
	_ = (gofs.NodeSetattrer)((*trashMarker)(nil))
	_ = (gofs.NodeOpener)((*trashMarker)(nil))
	_ = (gofs.NodeReader)((*trashMarker)(nil))
)

// trashUID reports whether name is a user's trash folder name at a mount's
// top as GLib spells it: .Trash- and the uid in decimal (%lu: no sign, no
// leading zero).
func trashUID(name string) (uint32, bool) {
	s, ok := strings.CutPrefix(name, ".Trash-")
	if !ok {
		return 0, false
	}
	uid, err := strconv.ParseUint(s, 10, 32)
	if err != nil || strconv.FormatUint(uid, 10) != s {
		return 0, false
	}
	return uint32(uid), true
}

// trashMarkerIno is the inode number of .Trash-UID in the root.
func trashMarkerIno(uid uint32) uint64 { return 1<<39 + uint64(uid) }

// trashMarkerChild returns the inode of the root's .Trash-UID.
func (n *rootNode) trashMarkerChild(ctx context.Context, uid uint32, out *fuse.EntryOut) *gofs.Inode {
	ch := n.NewInode(ctx, &trashMarker{node: node{fsys: n.fsys}},
		gofs.StableAttr{Mode: syscall.S_IFREG, Ino: trashMarkerIno(uid)})
	EntryAttr(ctx, ch, out)
	return ch
}

func (n *trashMarker) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fsys.SetAttr(&out.Attr, syscall.S_IFREG|0o444, int64(len(trashMarkerText)), n.fsys.start)
	return 0
}

// Setattr refuses every change, as the root refuses new entries.
func (n *trashMarker) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

// Open opens for reading only (root passes the modes).
func (n *trashMarker) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

func (n *trashMarker) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(trashMarkerText)) {
		return fuse.ReadResultData(nil), 0
	}
	k := copy(dest, trashMarkerText[off:])
	return fuse.ReadResultData(dest[:k]), 0
}
