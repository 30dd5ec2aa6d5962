package fs

// Rename of a folder. The service has no rename: a folder empty on the
// service and here ("New Folder", then typing its name) is made anew under
// the new name and the old one deleted, and the node the kernel moves
// becomes the new folder. A folder with content is moved by rename_tree.go.
//
// Locks: the folder node's mu, for its view, as in dir.go.

import (
	"context"
	"slices"
	"syscall"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// folder renames r.old, a folder: one empty here and on the service is made
// anew; one with content moves with it (rename_tree.go).
func (r *renaming) folder(copyCtx, ctx context.Context) syscall.Errno {
	fsys := r.src.fsys
	src, dst := r.src.dirKey(), r.dst.dirKey()
	if src.Area != dst.Area {
		return syscall.EXDEV
	}
	if r.old.ID < 0 {
		if done, errno := r.madeFolder(ctx); done || errno != 0 {
			return errno
		}
	}
	key := place.DirKey{Area: src.Area, ID: r.old.ID}
	var plan *treePlan
	if errno := r.src.emptyForRename(ctx, key); errno == syscall.EXDEV {
		if plan, errno = r.planTree(ctx, key); errno != 0 {
			return errno
		}
		defer plan.release()
	} else if errno != 0 {
		return errno
	}
	if errno := r.replaceFolder(ctx); errno != 0 {
		return errno
	}
	made, err := fsys.store.MakeFolder(ctx, dst, r.newName, r.dst.Path(nil)+"/"+r.newName)
	if err != nil {
		return fsys.errno(ctx, "making folder "+r.dst.Path(nil)+"/"+r.newName, err)
	}
	if plan != nil {
		return r.tree(copyCtx, ctx, plan, made)
	}
	set := fsys.store.DirAttr(key) // forgotten with the old folder
	// Offline, its deletion is journaled (the new one made later).
	if err := fsys.store.DeleteNowOrLater(ctx, src, r.old, r.src.Path(nil)+"/"+r.name); err != nil {
		uctx, cancel := fsys.bound(context.WithoutCancel(ctx)) // ctx may be what ended it
		defer cancel()
		if !r.oldGone(uctx) {
			r.undoFolder(uctx, made, map[int64]bool{made.ID: true})
			return fsys.errno(ctx, "deleting folder "+r.src.Path(nil)+"/"+r.name, err)
		}
		// The service deleted it, and its answer was lost: the rename is done.
		fsys.log.WithError(err).WithField("path", r.src.Path(nil)+"/"+r.name).Info("fs: the old folder of a folder rename is gone though its delete failed; the rename stands")
	}
	newKey := place.DirKey{Area: dst.Area, ID: made.ID}
	fsys.local.moveDir(key, newKey) // its desktop files and special nodes go with it
	if !set.IsZero() {
		// Its mode, owner and times go with it.
		fsys.store.SetDirAttr(newKey, set)
	}
	// The node the kernel moves now stands for the new folder, with its
	// inode number (the old id is gone).
	if ch := r.src.GetChild(r.name); ch != nil {
		if dn, ok := ch.Operations().(*dirNode); ok {
			dn.setKey(newKey)
			dn.mu.Lock()
			dn.view, dn.mtime = nil, made.LastModified
			dn.mu.Unlock()
			fsys.inos.Add(made.ID, ch.StableAttr().Ino)
		}
	}
	return 0
}

// madeFolder renames r.old, a folder made offline (cache/store_made.go):
// done when the service does not have it yet, and what it will make is
// renamed; its node keeps its key. Else r.old becomes the folder the
// service made meanwhile, renamed as any.
func (r *renaming) madeFolder(ctx context.Context) (done bool, _ syscall.Errno) {
	fsys := r.src.fsys
	if errno := r.replaceFolder(ctx); errno != 0 {
		return false, errno
	}
	f, moved, err := fsys.store.MoveMade(r.src.dirKey(), r.old, r.dst.dirKey(), r.newName, r.dst.Path(nil)+"/"+r.newName)
	if err != nil {
		return false, fsys.errno(ctx, "renaming folder "+r.src.Path(nil)+"/"+r.name, err)
	}
	r.old = f
	return moved, 0
}

// oldGone reports whether the service no longer lists r.old, whose delete
// failed: past --io-timeout the service may have deleted it all the same,
// and undoing the new folder then would leave the folder under neither name.
// The folder is listed anew; not knowing is "not gone". When gone, the
// caches are told.
func (r *renaming) oldGone(ctx context.Context) bool {
	fsys, src := r.src.fsys, r.src.dirKey()
	fsys.store.Dirs.Drop(src)
	l, err := fsys.store.Dirs.List(ctx, src)
	if err != nil || slices.ContainsFunc(l.Files, func(f api.File) bool { return f.ID == r.old.ID }) {
		return false
	}
	fsys.store.Deleted(src, r.old)
	return true
}

// undoFolder deletes made, the folder a failed folder rename made for its new
// name (left beside the old one, it would show the folder under both names),
// when the service holds nothing in it but ours, the folders the rename made
// (by id; made among them). Anything else another writer put there meanwhile:
// the folder then stays, with a warning, rather than take it along. ctx is
// not the rename's, which may be what ended it.
func (r *renaming) undoFolder(ctx context.Context, made api.File, ours map[int64]bool) {
	fsys, dst := r.src.fsys, r.dst.dirKey()
	log := fsys.log.WithField("path", r.dst.Path(nil)+"/"+r.newName)
	for id := range ours {
		key := place.DirKey{Area: dst.Area, ID: id}
		fsys.store.Dirs.Drop(key)
		l, err := fsys.store.Dirs.List(ctx, key)
		if err != nil {
			log.WithError(err).Warn("fs: could not list the new folder of a failed folder rename; it stays on the service")
			return
		}
		for _, f := range l.Files {
			if !f.IsDir() || !ours[f.ID] {
				log.WithField("theirs", f.Name).Warn("fs: another writer put something in the new folder of a failed folder rename; it stays on the service beside the old one")
				return
			}
		}
	}
	if err := fsys.store.Delete(ctx, dst, made); err != nil {
		log.WithError(err).Warn("fs: could not undo the new folder of a failed folder rename")
	}
}

// replaceFolder deletes what the new name holds, which a folder may replace
// when it is an empty folder (POSIX), and nothing else: one holding a
// special node is not empty (its desktop files are dropped with it).
func (r *renaming) replaceFolder(ctx context.Context) syscall.Errno {
	fsys, dst := r.src.fsys, r.dst.dirKey()
	f, ok := r.dst.existing(ctx, r.newName)
	if !ok {
		if r.dst.staged(r.newName) != nil {
			return syscall.ENOTDIR
		}
		return 0
	}
	if !f.IsDir() {
		return syscall.ENOTDIR
	}
	key := place.DirKey{Area: dst.Area, ID: f.ID}
	if fsys.local.hasSpecial(key) {
		return syscall.ENOTEMPTY
	}
	if errno := r.dst.emptyForRename(ctx, key); errno == syscall.EXDEV {
		return syscall.ENOTEMPTY
	} else if errno != 0 {
		return errno
	}
	if err := fsys.store.DeleteNowOrLater(ctx, dst, f, r.dst.Path(nil)+"/"+r.newName); err != nil { // offline: journaled
		return fsys.errno(ctx, "deleting folder "+r.dst.Path(nil)+"/"+r.newName, err)
	}
	fsys.local.dropDir(key)
	return 0
}

// emptyForRename checks, with a fresh listing, that folder key holds
// nothing on the service nor pending here (the local entries aside: a
// folder renamed takes them along): EXDEV when it holds something.
func (n *dirNode) emptyForRename(ctx context.Context, key place.DirKey) syscall.Errno {
	if len(n.fsys.store.PendingIn(key)) > 0 {
		return syscall.EXDEV
	}
	l, err := n.fsys.store.Dirs.ListAnew(ctx, key) // offline: as last seen
	if err != nil {
		return n.fsys.errno(ctx, "listing a folder to rename in "+n.Path(nil), err)
	}
	if len(l.Files) > 0 {
		return syscall.EXDEV
	}
	return 0
}
