package fs

// A folder of a storage area (shared/, a computer's, recordings/): its
// listing with the files staged in it, lookup, and the changes made in it
// (create, mkdir, unlink, rmdir, rename; a file's rename in rename_file.go,
// links in links.go).
//
// Locks: dirNode.mu (a node's mu, docs/ARCHITECTURE.md) guards the folder's view.

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
	"github.com/orgfs/orgfs/writeback"
)

// dirNode is a folder of a storage area (shared/, a computer's, recordings/),
// or an area's root (key.ID 0).
type dirNode struct {
	node
	keyv atomic.Pointer[place.DirKey] // the folder on the service; a rename of it (renameFolder) changes it

	mu    sync.Mutex
	view  *dirView  // guarded by mu
	mtime time.Time // guarded by mu
}

func (f *FS) newDirNode(key place.DirKey, mtime time.Time) *dirNode {
	n := &dirNode{node: node{fsys: f}, mtime: mtime}
	n.setKey(key)
	return n
}

// dirKey is the folder on the service.
func (n *dirNode) dirKey() place.DirKey { return *n.keyv.Load() }

var (
	_ = (gofs.NodeGetattrer)((*dirNode)(nil))
	_ = (gofs.NodeLookuper)((*dirNode)(nil))
	_ = (gofs.NodeReaddirer)((*dirNode)(nil))
	_ = (gofs.NodeCreater)((*dirNode)(nil))
	_ = (gofs.NodeMkdirer)((*dirNode)(nil))
	_ = (gofs.NodeUnlinker)((*dirNode)(nil))
	_ = (gofs.NodeRmdirer)((*dirNode)(nil))
	_ = (gofs.NodeRenamer)((*dirNode)(nil))
	_ = (gofs.NodeSetattrer)((*dirNode)(nil))
	_ = (gofs.NodeFsyncer)((*dirNode)(nil))
)

// Fsync of a folder (only folders have a node Fsync: go-fuse asks a node's
// before a file handle's) makes what was changed in it through this mount durable
// on local disk: the staging's records (creates, writes, renames of pending
// files) are synced. It does not wait for the service: fsync of a file, or
// orgfs sync, does.
func (n *dirNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if err := n.fsys.store.SyncStaging(); err != nil {
		return Errno(n.fsys.log, "syncing the staging for "+n.Path(nil), err)
	}
	return 0
}

// load returns the folder's view, from the cached listing while it is fresh.
// A pending file is not in it: callers that want those read the staging
// first (Staging.Lookup, Staging.Pending), then load. Read the other way
// round, a file whose upload ends in between would be in neither: an upload
// puts its file in the cached listing (Store.uploaded) before it leaves the
// staging, and a listing asked for after that has it.
func (n *dirNode) load(ctx context.Context) (*dirView, syscall.Errno) {
	l, err := n.fsys.store.Dirs.List(ctx, n.dirKey())
	if err != nil {
		return nil, n.fsys.errno(ctx, "listing "+n.Path(nil), err)
	}
	return n.setView(l), 0
}

// freshView is the folder's view when its listing is cached and fresh (no
// wait: a lookup answered from it needs no I/O timeout); nil otherwise.
func (n *dirNode) freshView() *dirView {
	if l, ok := n.fsys.store.Dirs.Fresh(n.dirKey()); ok {
		return n.setView(l)
	}
	return nil
}

// setView makes listing l the folder's view, unless it is already; a
// listing fetched anew has the kernel told what changed (kernel.go).
func (n *dirNode) setView(l *cache.Listing) *dirView {
	n.mu.Lock()
	old := n.view
	fresh := old == nil || old.listing != l
	if fresh {
		var ok bool
		if n.view, ok = old.derived(l, !n.fsys.opts.NoLinks); !ok {
			n.view = newDirView(l, !n.fsys.opts.NoLinks)
		}
	}
	v := n.view
	n.mu.Unlock()
	if fresh && len(v.shadowed) > 0 {
		n.warnShadowed(v.shadowed)
	}
	if fresh && (old == nil || l.Fetched.After(old.listing.Fetched)) {
		n.listingChanged(v) // fetched, not edited by this mount
	}
	return v
}

// staged is the pending file of this folder shown as name, if any: the file
// of that name, else the link (its link file, links.go). A link file's own
// name shows nothing.
func (n *dirNode) staged(name string) *writeback.Staged {
	if n.fsys.opts.NoLinks {
		return n.fsys.store.Staged(n.target(name))
	}
	if _, raw := linkBase(name); raw {
		return nil
	}
	if st := n.fsys.store.Staged(n.target(name)); st != nil {
		return st
	}
	return n.fsys.store.Staged(n.target(name + linkSuffix))
}

// cachedHas reports whether the folder's cached view, fresh or not, holds
// name; it makes no request. A folder never listed here does not know: it
// reports true, so that the caller lists it.
func (n *dirNode) cachedHas(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.view == nil {
		return true
	}
	return n.view.has(name)
}

func (n *dirNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.mu.Lock()
	mtime := n.mtime
	n.mu.Unlock()
	n.fsys.setDirAttr(&out.Attr, mtime)
	if l, ok := n.fsys.store.Dirs.Cached(n.dirKey()); ok {
		// As on a disk, where the listing is known (the mount's own mkdir,
		// rmdir and renames edit it at once).
		out.Attr.Nlink = 2 + uint32(l.Folders)
	}
	applyAttr(&out.Attr, n.fsys.store.DirAttr(n.dirKey()))
	return 0
}

func (n *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	n.fsys.asked.lookups.Add(1)
	if len(name) > maxName {
		return nil, syscall.ENAMETOOLONG
	}
	// A special node shows over anything of its name; a desktop file
	// where the service lists none of its name.
	if lf := n.fsys.local.get(n.dirKey(), name); lf != nil && (lf.special() || !n.cachedHas(name)) {
		ch := n.localChild(ctx, lf)
		EntryAttr(ctx, ch, out)
		return ch, 0
	}
	if probeName(name) && !n.cachedHas(name) {
		return nil, syscall.ENOENT // answered from memory: no request
	}
	if st := n.staged(name); st != nil {
		ch := n.stagedChild(ctx, name, st)
		EntryAttr(ctx, ch, out)
		n.fsys.keepEntry(out, time.Now()) // this mount's own file (kernel.go)
		return ch, 0
	}
	v := n.freshView()
	if v == nil {
		bctx, cancel := n.fsys.bound(ctx)
		var errno syscall.Errno
		v, errno = n.load(bctx)
		cancel()
		if errno != 0 {
			return nil, errno
		}
	}
	f, ok := v.lookup(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	ch := n.listedChild(ctx, name, f, v.listing.Fetched, v.listing.Seq)
	EntryAttr(ctx, ch, out)
	if _, ok := ch.Operations().(*fileNode); ok {
		n.fsys.keepEntry(out, v.listing.Fetched) // as long as the listing is fresh (kernel.go)
	}
	return ch, 0
}

// listedChild returns the inode of a listed entry of this folder. An inode
// the kernel already knows under that name is kept and brought up to date
// with the listing (go-fuse would otherwise drop a new node for the known
// one).
func (n *dirNode) listedChild(ctx context.Context, name string, f api.File, listedAt time.Time, seq uint64) *gofs.Inode {
	ch := n.GetChild(name)
	if op, ok := opsOf(ch).(*fileNode); ok {
		op.refreshStaged() // an upload that ended gives its inode number to the new version
	}
	if ch != nil && ch.StableAttr().Ino == n.fsys.inoOf(f.ID) {
		switch op := ch.Operations().(type) {
		case *fileNode:
			op.update(n.dirKey(), f, listedAt, seq)
			return ch
		case *dirNode:
			op.mu.Lock()
			op.mtime = f.LastModified
			op.mu.Unlock()
			return ch
		}
	}
	if f.IsDir() {
		return n.NewInode(ctx, n.fsys.newDirNode(place.DirKey{Area: n.dirKey().Area, ID: f.ID}, f.LastModified),
			gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: n.fsys.inoOf(f.ID)})
	}
	fn := n.fsys.newFileNode(n.dirKey(), f, nil)
	fn.listedAt, fn.seq = listedAt, seq
	return n.NewInode(ctx, fn, gofs.StableAttr{Mode: n.fsys.modeOf(f), Ino: n.fsys.inoOf(f.ID)})
}

// modeOf is the file type a listed entry shows as.
func (f *FS) modeOf(file api.File) uint32 {
	switch {
	case file.IsDir():
		return syscall.S_IFDIR
	case f.isLink(file):
		return syscall.S_IFLNK
	}
	return syscall.S_IFREG
}

// stagedMode is the file type a pending file shows as.
func (f *FS) stagedMode(st *writeback.Staged) uint32 {
	if f.isLinkStaged(st) {
		return syscall.S_IFLNK
	}
	return syscall.S_IFREG
}

// opsOf is the node of an inode, nil for none.
func opsOf(ch *gofs.Inode) gofs.InodeEmbedder {
	if ch == nil {
		return nil
	}
	return ch.Operations()
}

// stagedChild returns the inode of a pending file of this folder: the one
// the kernel knows at the name when st is its next version (succeeds), else
// one of st's own (stagedIno).
func (n *dirNode) stagedChild(ctx context.Context, name string, st *writeback.Staged) *gofs.Inode {
	ino := n.fsys.stagedIno(st)
	ch := n.GetChild(name)
	switch {
	case ch != nil && ch.StableAttr().Ino == ino:
	case ch != nil && succeeds(ch, st):
		n.fsys.pendingInos.Add(st.Seq(), ch.StableAttr().Ino) // the next version keeps the number
	default:
		ch = n.NewInode(ctx, n.fsys.newFileNode(n.dirKey(), api.File{Name: st.Target().Name}, st),
			gofs.StableAttr{Mode: n.fsys.stagedMode(st), Ino: ino})
	}
	if fn, ok := ch.Operations().(*fileNode); ok {
		fn.mu.Lock()
		fn.staged, fn.unlinked = st, nil
		fn.mu.Unlock()
	}
	return ch
}

// succeeds reports whether st is the next version of the file node ch shows:
// ch shows st already, or the service file st replaces (an edit of a listed
// file). The node, and its inode number, stay.
func succeeds(ch *gofs.Inode, st *writeback.Staged) bool {
	fn, ok := ch.Operations().(*fileNode)
	if !ok {
		return false
	}
	replaces := st.Replaces()
	if fn.link != fn.fsys.isLinkStaged(st) {
		return false // a file and a link are two inodes
	}
	fn.mu.Lock()
	defer fn.mu.Unlock()
	return fn.unlinked == nil && (fn.staged == st || replaces != 0 && fn.staged == nil && fn.file.ID == replaces)
}

// Readdir lists the folder: the listing, where a pending file of a listed
// name stands for the listed one, then the pending files of new names, then
// the local entries (withLocal). Links show under their names (links.go).
func (n *dirNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	var names []string // by name (Store.PendingIn's order)
	pending := map[string]*writeback.Staged{}
	for _, st := range n.fsys.store.PendingIn(n.dirKey()) {
		name := st.Target().Name
		if base, ok := linkBase(name); ok && !n.fsys.opts.NoLinks {
			if pending[base] != nil {
				continue // the file of that name shows (Lookup)
			}
			name = base
		}
		if pending[name] == nil {
			names = append(names, name)
		}
		pending[name] = st
	}
	v, errno := n.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	// A program listing folders is likely to walk into the subfolders
	// (find, du, ls -R, rsync, a file manager): their listings are fetched
	// ahead, in the background.
	n.fsys.store.Dirs.Ahead(n.dirKey(), v.listing)
	entries := make([]fuse.DirEntry, 0, v.size()+len(pending))
	for name, f := range v.all() {
		mode, ino := n.fsys.modeOf(f), n.fsys.inoOf(f.ID)
		if st := pending[name]; st != nil {
			mode, ino = n.fsys.stagedMode(st), n.fsys.stagedIno(st)
		}
		entries = append(entries, fuse.DirEntry{Name: name, Mode: mode, Ino: ino})
	}
	for _, name := range names {
		if !v.has(name) {
			st := pending[name]
			entries = append(entries, fuse.DirEntry{Name: name, Mode: n.fsys.stagedMode(st), Ino: n.fsys.stagedIno(st)})
		}
	}
	return gofs.NewListDirStream(withLocal(entries, n.fsys.local.entries(n.dirKey()))), 0
}

// withLocal adds a folder's local entries (local.go) to its listing: a
// special node in place of an entry of its name (as Lookup shows it), a
// desktop file where none has its name.
func withLocal(entries, locals []fuse.DirEntry) []fuse.DirEntry {
	if len(locals) == 0 {
		return entries
	}
	at := make(map[string]int, len(entries))
	for i, e := range entries {
		at[e.Name] = i
	}
	for _, l := range locals {
		i, ok := at[l.Name]
		switch {
		case !ok:
			entries = append(entries, l)
		case l.Mode != syscall.S_IFREG:
			entries[i] = l
		}
	}
	return entries
}

// target is where a file of this folder named name goes on the service.
func (n *dirNode) target(name string) place.Target {
	return place.Target{Area: n.dirKey().Area, ParentID: n.dirKey().ID, Name: name}
}

// existing is the service file of this folder listed under name, if any. A
// folder that cannot be listed is logged and reported as empty; the callers
// that must not guess use existingErr.
func (n *dirNode) existing(ctx context.Context, name string) (api.File, bool) {
	f, ok, _ := n.existingErr(ctx, name)
	return f, ok
}

func (n *dirNode) existingErr(ctx context.Context, name string) (api.File, bool, syscall.Errno) {
	v, errno := n.load(ctx)
	if errno != 0 {
		return api.File{}, false, errno
	}
	f, ok := v.lookup(name)
	return f, ok, 0
}

// Changes. Files are created, written, truncated and renamed as staging
// copies on local disk (package cache's Staging), each uploaded as a whole
// after its last close and the write-back delay, or at fsync. Folders are
// created and removed on the service at once. Every change goes through
// cache.Store (Mkdir, Delete, StageCopy, Move, Supersede, Changed) or the
// staging area, which keep the caches in step: fs never edits a cache by
// hand.

// Create makes a file, or empties the pending one of that name, for writing.
func (n *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if !n.fsys.writable(n.dirKey().Area) {
		return nil, nil, 0, syscall.EROFS
	}
	if errno := n.checkNew(name); errno != 0 {
		return nil, nil, 0, errno
	}
	if n.fsys.local.special(n.dirKey(), name) != nil {
		return nil, nil, 0, syscall.EEXIST // a special node (special.go)
	}
	if n.childInPassthrough(name) {
		return nil, nil, 0, syscall.ESTALE // the kernel looks it up again and opens it (passthrough.go)
	}
	req := ctx // the request, for passthrough
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	if probeName(name) {
		// Desktop litter (._*, .DS_Store, Thumbs.db...) is kept in memory,
		// never uploaded (local.go).
		ch := n.localChild(ctx, n.fsys.local.create(n.dirKey(), name, n.fsys.desktopAttr()))
		ln := ch.Operations().(*localNode)
		var a fuse.AttrOut
		ln.Getattr(ctx, nil, &a)
		out.Attr = a.Attr
		return ch, ln, fuse.FOPEN_DIRECT_IO, 0
	}
	isNew := n.staged(name) == nil && !n.cachedHas(name)
	st, errno := n.createStaged(ctx, name, n.fsys.newAttr(ctx, mode, n.fsys.FileMode()), isNew)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	st.Touch()
	ch := n.stagedChild(ctx, name, st)
	fn := ch.Operations().(*fileNode)
	fn.fillAttr(&out.Attr)
	n.fsys.keepEntry(out, time.Now()) // this mount's own file (kernel.go)
	h, errno := fn.stagedWriter(req, st)
	return ch, h, 0, errno
}

// createStaged returns the empty staging copy of a file made at name: the
// pending file there, truncated, or a new one, which replaces the service
// file of that name when it is uploaded; newName: the name was free, so a
// new file moves the folder's times (Store.Create). The caller owns a
// writer of it.
func (n *dirNode) createStaged(ctx context.Context, name string, set cache.Attr, newName bool) (*writeback.Staged, syscall.Errno) {
	t := n.target(name)
	// Acquire opens a pending file for writing under the queue's lock, so its
	// upload cannot retire it in between.
	if st := n.fsys.store.Acquire(t, true); st != nil {
		if err := st.File().Truncate(0); err != nil {
			st.CloseWriter()
			return nil, Errno(n.fsys.log, "truncating "+name, err)
		}
		return st, 0
	}
	if n.pendingLink(name) != nil {
		return nil, syscall.EEXIST // the kernel follows a link it knows; this one it did not
	}
	var replaces int64
	if f, ok := n.existing(ctx, name); ok {
		if f.IsDir() {
			return nil, syscall.EISDIR
		}
		if n.fsys.isLink(f) {
			return nil, syscall.EEXIST // the kernel follows a link it knows; this one it did not
		}
		replaces = f.ID
		set = n.fsys.store.FileAttr(f) // an existing file keeps its mode and owner
	}
	st, err := n.fsys.store.Create(t, replaces, n.Path(nil)+"/"+name, set, newName)
	if err != nil {
		return nil, Errno(n.fsys.log, "creating "+n.Path(nil)+"/"+name, err)
	}
	return st, 0
}

// Mkdir creates a folder on the service at once; offline, it is made when
// the service answers again, and stands meanwhile (cache/store_made.go).
func (n *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !n.fsys.writable(n.dirKey().Area) {
		return nil, syscall.EROFS
	}
	if errno := n.checkNew(name); errno != 0 {
		return nil, errno
	}
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	if n.staged(name) != nil || n.fsys.local.special(n.dirKey(), name) != nil { // the staging first (load)
		return nil, syscall.EEXIST
	}
	if _, ok, errno := n.existingErr(ctx, name); ok || errno != 0 {
		if errno != 0 {
			return nil, errno
		}
		return nil, syscall.EEXIST
	}
	f, err := n.fsys.store.Mkdir(ctx, n.dirKey(), name, n.Path(nil)+"/"+name, n.fsys.newAttr(ctx, mode, n.fsys.DirMode()))
	if err != nil {
		return nil, n.fsys.errno(ctx, "creating folder "+n.Path(nil)+"/"+name, err)
	}
	ch := n.listedChild(ctx, name, f, time.Time{}, 0) // a folder
	n.fsys.setDirAttr(&out.Attr, f.LastModified)
	applyAttr(&out.Attr, n.fsys.store.DirAttr(place.DirKey{Area: n.dirKey().Area, ID: f.ID}))
	return ch, 0
}

// Unlink removes a file: its pending copy, and the service file of that
// name, at once.
func (n *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if !n.fsys.writable(n.dirKey().Area) {
		return syscall.EROFS
	}
	if lf := n.fsys.local.remove(n.dirKey(), name); lf != nil {
		if lf.special() {
			n.fsys.store.TouchDir(n.dirKey())
		}
		return 0
	}
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	found, pendingLink := false, false
	if st := n.staged(name); st != nil {
		pendingLink = n.fsys.isLinkStaged(st)
		if err := n.fsys.store.RemoveStaged(st); err != nil {
			return Errno(n.fsys.log, "removing "+name, err)
		}
		if ch := n.GetChild(name); ch != nil {
			if fn, ok := ch.Operations().(*fileNode); ok {
				// Descriptors still open on it read and write the removed
				// copy, and see its size (never uploaded).
				fn.mu.Lock()
				fn.unlinked = st
				fn.mu.Unlock()
			}
		}
		found = true
	}
	f, ok, errno := n.existingErr(ctx, name)
	if errno != 0 {
		return errno
	}
	if ok && found && n.fsys.isLink(f) != pendingLink {
		// A link made here and a file of the same name on the service (or
		// the reverse) are two entries (X.rclonelink, X): the unlink removed
		// the one this mount showed; the other, which it never showed, shows
		// now.
		ok = false
	}
	if ok {
		if f.IsDir() {
			return syscall.EISDIR
		}
		if u := (unlinkedFile{parent: n.dirKey(), file: f, path: n.Path(nil) + "/" + name}); n.fsys.open.unlinkIfOpen(u) {
			n.fsys.store.Unlinked(n.dirKey(), f) // deleted at the last close (unlinked.go)
			return 0
		}
		if err := n.fsys.store.Remove(ctx, n.dirKey(), f, n.Path(nil)+"/"+name); err != nil {
			return n.fsys.errno(ctx, "deleting "+n.Path(nil)+"/"+name, err)
		}
		found = true
	}
	if !found {
		return syscall.ENOENT
	}
	return 0
}

// Rmdir removes an empty folder. The service deletes folders recursively, so
// emptiness is checked against a fresh listing and anything pending here.
func (n *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if !n.fsys.writable(n.dirKey().Area) {
		return syscall.EROFS
	}
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	f, ok, errno := n.existingErr(ctx, name)
	if errno != 0 {
		return errno
	}
	if !ok {
		return syscall.ENOENT
	}
	if !f.IsDir() {
		return syscall.ENOTDIR
	}
	key := place.DirKey{Area: n.dirKey().Area, ID: f.ID}
	if len(n.fsys.store.PendingIn(key)) > 0 || n.fsys.local.hasSpecial(key) {
		return syscall.ENOTEMPTY
	}
	l, err := n.fsys.store.Dirs.ListAnew(ctx, key) // offline: as last seen, with nothing made here since
	if err != nil {
		return n.fsys.errno(ctx, "listing "+n.Path(nil)+"/"+name, err)
	}
	if len(l.Files) > 0 {
		return syscall.ENOTEMPTY
	}
	if err := n.fsys.store.Remove(ctx, n.dirKey(), f, n.Path(nil)+"/"+name); err != nil {
		return n.fsys.errno(ctx, "deleting folder "+n.Path(nil)+"/"+name, err)
	}
	n.fsys.local.dropDir(key)
	return 0
}

// Rename moves a file or a link (rename_file.go): a pending file is renamed
// locally; a file already on the service is uploaded under the new name, and
// the old one deleted after that upload succeeded; a link moves as its link
// file. A folder is renamed by rename_folder.go and rename_tree.go.
func (n *dirNode) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	dst, ok := newParent.(*dirNode)
	if !ok || !n.fsys.writable(n.dirKey().Area) || !n.fsys.writable(dst.dirKey().Area) {
		return syscall.EROFS
	}
	if errno := dst.checkNew(newName); errno != 0 {
		return errno
	}
	const renameNoreplace, renameExchange = 1, 2
	if flags&renameExchange != 0 {
		return syscall.EINVAL
	}
	if lf := n.fsys.local.get(n.dirKey(), name); lf != nil {
		return n.renameLocal(ctx, lf, name, dst, newName, flags&renameNoreplace != 0) // special.go
	}
	over := n.fsys.local.get(dst.dirKey(), newName) // goes once the move is done
	r := &renaming{src: n, dst: dst, name: name, newName: newName}
	// The staging first, then the listing (load): a file whose upload ends
	// in between is in one or the other, never in neither, nor listed in its
	// previous version. A staged copy found is held (as a reader) until the
	// rename is done, so that it does not land (leave the staging) before it is moved.
	st := r.acquire()
	if st != nil {
		defer st.CloseReader()
	}
	// Under the I/O timeout; the copy of an uploaded file, block by block.
	bctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	r.old, r.onService = n.existing(bctx, name)
	if st == nil && r.onService {
		r.link = n.fsys.isLink(r.old)
	}
	if flags&renameNoreplace != 0 {
		if dst.staged(newName) != nil || over != nil {
			return syscall.EEXIST
		}
		if _, ok := dst.existing(bctx, newName); ok {
			return syscall.EEXIST
		}
	}
	errno := r.move(ctx, bctx, st)
	if errno == 0 {
		if over != nil {
			n.fsys.local.remove(dst.dirKey(), newName)
		}
		n.fsys.store.Renamed(n.dirKey(), dst.dirKey()) // both folders' times move
	}
	return errno
}

// Setattr: a folder's chmod, chown and utimes are kept on this desk
// (cache.Attrs); the service keeps no modes, owners or folder times.
func (n *dirNode) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if !n.fsys.writable(n.dirKey().Area) {
		return syscall.EROFS
	}
	if c, ok := attrChange(in); ok {
		n.fsys.store.SetDirAttr(n.dirKey(), c)
	}
	return n.Getattr(ctx, fh, out)
}
