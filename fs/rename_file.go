package fs

// Rename of a file or a link: a pending file takes the new name in the
// staging; a file on the service is copied under the new name (from its
// content, fetched whole first), and the old one deleted once the copy is
// uploaded. Folders: rename_folder.go and rename_tree.go. dirNode.Rename
// (dir.go) vets the names and flags and starts a renaming.
//
// Locks: a file node's mu for its fields (retargetChild), as in dir.go.

import (
	"context"
	"syscall"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
	"github.com/orgfs/orgfs/writeback"
)

// move renames what r names: a folder, a pending file (st) or a file on the
// service. bctx bounds the waits for answers; ctx the copies of content,
// bounded block by block.
func (r *renaming) move(ctx, bctx context.Context, st *writeback.Staged) syscall.Errno {
	if r.onService && r.old.IsDir() {
		return r.folder(ctx, bctx)
	}
	if st != nil {
		return r.pending(bctx, st)
	}
	if !r.onService {
		return syscall.ENOENT
	}
	return r.uploaded(ctx)
}

// renaming is a Rename under way: the file name of src goes to dst as
// newName.
type renaming struct {
	src, dst      *dirNode
	name, newName string
	old           api.File // the service file listed at name, when onService
	onService     bool
	link          bool // a symbolic link: its link file moves (links.go)
}

// from and to are the service names moved: a link's are its link file's.
func (r *renaming) from() place.Target { return r.src.target(r.name + r.suffix()) }
func (r *renaming) to() place.Target   { return r.dst.target(r.newName + r.suffix()) }

func (r *renaming) suffix() string {
	if r.link {
		return linkSuffix
	}
	return ""
}

// acquire holds the pending file shown at the name renamed, if any: the file
// of that name, else the link (r.link set).
func (r *renaming) acquire() *writeback.Staged {
	if st := r.src.staged(r.name); st != nil {
		r.link = r.src.fsys.isLinkStaged(st)
		if h := r.src.fsys.store.Acquire(r.from(), false); h != nil {
			return h
		}
	}
	r.link = false
	return nil
}

// pending renames a pending file: its staging copy takes the new name.
func (r *renaming) pending(ctx context.Context, st *writeback.Staged) syscall.Errno {
	fsys := r.src.fsys
	replaces := r.dst.replacedBy(ctx, r.newName, r.link)
	if err := fsys.store.Move(st, r.to(), replaces, r.dst.Path(nil)+"/"+r.newName); err != nil {
		return Errno(fsys.log, "renaming "+r.name, err)
	}
	r.dst.displace(ctx, r.newName, st)
	if r.onService && fsys.isLink(r.old) == r.link {
		// The pending file replaced a service file of the old name: that one
		// goes when the new name is on the service. One of the other kind
		// (a file beside a link of its name, or the reverse) is another
		// entry, never shown for this one: it stays.
		fsys.store.Supersede(r.src.dirKey(), r.old, st)
	}
	r.src.retargetChild(r.name, r.dst, r.newName, st)
	return 0
}

// uploaded renames a file on the service: a staging copy of it is made under
// the new name, and the old name deleted once that copy is uploaded. The
// content is fetched before anything at the new name is replaced: a failed
// fetch leaves both names as they were.
func (r *renaming) uploaded(ctx context.Context) syscall.Errno {
	fsys := r.src.fsys
	bctx, cancel := fsys.bound(ctx)
	f, ok := r.dst.existing(bctx, r.newName)
	replaces := r.dst.replacedBy(bctx, r.newName, r.link)
	cancel()
	if ok && f.IsDir() {
		return syscall.EISDIR
	}
	st, err := fsys.store.StageCopy(ctx, r.to(), r.old, replaces, r.old)
	if err != nil {
		return fsys.errno(ctx, "renaming "+r.src.Path(nil)+"/"+r.name, err)
	}
	// Its time stays (the copy's is the old one's); its ctime moves.
	mtime, now := fsys.store.FileAttr(r.old).ModTime(r.old.LastModified), time.Now()
	fsys.store.SetStagedAttr(st, cache.Attr{MTime: &mtime, CTime: &now})
	st.SetPath(r.dst.Path(nil) + "/" + r.newName)
	st.Touch()
	// Gone from here now; from the service once the new name is there.
	fsys.store.Supersede(r.src.dirKey(), r.old, st)
	bctx, cancel = fsys.bound(ctx)
	r.dst.displace(bctx, r.newName, st)
	cancel()
	r.src.retargetChild(r.name, r.dst, r.newName, st)
	st.CloseWriter()
	return 0
}

// retargetChild points the inode the kernel is moving (go-fuse moves it after
// Rename returns) at its new folder, name and staging copy, so an open right
// after the rename writes to the new name.
func (n *dirNode) retargetChild(name string, dst *dirNode, newName string, st *writeback.Staged) {
	ch := n.GetChild(name)
	if ch == nil {
		return
	}
	if fn, ok := ch.Operations().(*fileNode); ok {
		fn.mu.Lock()
		fn.parent = dst.dirKey()
		fn.file.Name = st.Target().Name // a link's is its link file's
		fn.staged = st
		fn.mu.Unlock()
	}
}
