package fs

// A file of a storage area: attributes from the listing or the staging
// copy, open, truncate, times set, and the staging of a service file for
// writing.
//
// Locks: fileNode.stageMu, then fileNode.mu (docs/ARCHITECTURE.md).

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
	"github.com/orgfs/orgfs/writeback"
)

// fileNode is a file of a storage area: on the service, pending (a staging
// copy not uploaded yet), or both (a pending change of a service file).
type fileNode struct {
	node

	mu          sync.Mutex
	parent      place.DirKey      // guarded by mu; the folder it is listed in
	file        api.File          // guarded by mu; a placeholder (ID 0) until listed
	kernelCache cache.Meta        // guarded by mu; the version the kernel's page cache may hold
	listedAt    time.Time         // guarded by mu; when the listing that gave file was fetched (kernel.go)
	seq         uint64            // guarded by mu; the listing cache's edit number file is as of (update)
	staged      *writeback.Staged // guarded by mu; the pending local copy, while there is one
	unlinked    *writeback.Staged // guarded by mu; the pending copy unlinked while open: what the open descriptors see
	linkTarget  linkTarget        // guarded by mu; a link's target as last read (links.go)

	link    bool       // constant: a symbolic link, kept on the service as a link file (links.go)
	stageMu sync.Mutex // held while a staging copy of the file is made (the lock order: docs/ARCHITECTURE.md)

	ptMu sync.Mutex // a leaf, held across a backing file's registration (passthrough.go)
	pt   ptState    // guarded by ptMu; the file's opens as the kernel sees them
}

// newFileNode makes the node of a file listed in parent or staged; file.Name
// is its service name (a link file's shows as a symlink).
func (f *FS) newFileNode(parent place.DirKey, file api.File, staged *writeback.Staged) *fileNode {
	_, link := linkBase(file.Name)
	return &fileNode{node: node{fsys: f}, parent: parent, file: file, staged: staged, link: link && !f.opts.NoLinks}
}

var (
	_ = (gofs.NodeGetattrer)((*fileNode)(nil))
	_ = (gofs.NodeOpener)((*fileNode)(nil))
	_ = (gofs.NodeSetattrer)((*fileNode)(nil))
)

// update takes a newer listing record of the file, as of the listing
// cache's edit seq (cache.Listing.Seq), and reports whether it took it. A
// record older than the one held is refused: a listing made before this
// mount's own edit of the file (its upload ended) must not bring back the
// size from before, however late it is told (listingChanged). When the
// content changed, the kernel's cached pages of it are dropped, once.
func (n *fileNode) update(parent place.DirKey, f api.File, listedAt time.Time, seq uint64) bool {
	n.mu.Lock()
	if seq < n.seq && n.file.ID != 0 {
		n.mu.Unlock()
		return false
	}
	n.seq = seq
	changed := n.kernelCache != (cache.Meta{}) && !n.kernelCache.Same(cache.MetaOf(f))
	if changed {
		n.kernelCache = cache.Meta{}
	}
	n.file = f
	n.parent = parent
	n.listedAt = listedAt
	n.mu.Unlock()
	if changed {
		// Outside any lock, and not from within the kernel's request.
		go n.NotifyContent(0, 0)
	}
	return true
}

func (n *fileNode) parentKey() place.DirKey {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.parent
}

// target is where the node's file goes on the service.
func (n *fileNode) target() place.Target {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.staged != nil {
		return n.staged.Target()
	}
	return place.Target{Area: n.parent.Area, ParentID: n.parent.ID, Name: n.file.Name}
}

// refreshStaged returns the node's staging copy while the file is pending.
// When that copy was uploaded (or removed), it drops it and points the node
// at where the file went, so that the node follows its listing again: the
// record of the cached listing if there is one, else the file the upload
// made (the listing may not be cached: the node must not show a size of 0
// meanwhile, which the kernel would keep as the file's size).
func (n *fileNode) refreshStaged() *writeback.Staged {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.staged
	if st != nil && n.fsys.store.Staged(st.Target()) != st {
		// Uploaded (or removed): the listing now has the file.
		t := st.Target() // where it went, wherever the node was before
		n.parent = place.DirKey{Area: t.Area, ID: t.ParentID}
		n.file = api.File{Name: t.Name} // removed: a placeholder until the listing is read
		if f, ok := st.Uploaded(); ok && f.ID != 0 {
			n.file = f
			n.listedAt = time.Now()         // this mount's own version, as of its upload's end (kernel.go)
			n.seq = n.fsys.store.Dirs.Seq() // as of now: the upload's edit of the listing came before
			// The new version keeps the node's inode number (base.go).
			n.fsys.inos.Add(f.ID, n.StableAttr().Ino)
		}
		if l, ok := n.fsys.store.Dirs.Cached(n.parent); ok {
			for _, f := range l.Files {
				if f.Name == t.Name && !f.IsDir() {
					n.file = f
				}
			}
		}
		n.staged = nil
		st = nil
	}
	return st
}

// current is the service's record of the node's file: after its staging copy
// was uploaded, the node holds only a placeholder until the listing is read.
func (n *fileNode) current(ctx context.Context) (api.File, syscall.Errno) {
	n.refreshStaged()
	n.mu.Lock()
	f, parent := n.file, n.parent
	n.mu.Unlock()
	if f.ID > 0 {
		return f, 0
	}
	l, err := n.fsys.store.Dirs.List(ctx, parent)
	if err != nil {
		return api.File{}, n.fsys.errno(ctx, "listing for "+n.Path(nil), err)
	}
	for _, x := range l.Files {
		if x.Name == f.Name && !x.IsDir() {
			n.mu.Lock()
			n.file, n.seq = x, max(n.seq, l.Seq)
			n.mu.Unlock()
			return x, 0
		}
	}
	return api.File{}, syscall.ENOENT
}

// fillAttr fills a file's attributes: a pending file's from its staging copy.
// A link shows as one, its size its target's length.
// It returns the time they are as fresh as (kernel.go): the listing's
// fetch, or now for a pending file (its changes are this mount's); zero
// for an unlinked one.
func (n *fileNode) fillAttr(a *fuse.Attr) (asOf time.Time) {
	if n.link {
		defer linkMode(a)
	}
	n.mu.Lock()
	gone := n.unlinked
	n.mu.Unlock()
	if gone != nil {
		n.fsys.stagedAttr(a, gone)
		a.Nlink = 0 // unlinked, still open
		return time.Time{}
	}
	if st := n.refreshStaged(); st != nil {
		n.fsys.stagedAttr(a, st)
		set := n.fsys.store.StagedAttr(st.Target())
		set.MTime = nil // the staging copy's
		applyAttr(a, set)
		return time.Now()
	}
	n.mu.Lock()
	f, listedAt := n.file, n.listedAt
	n.mu.Unlock()
	n.fsys.SetAttr(a, syscall.S_IFREG|n.fsys.FileMode(), f.Size, f.LastModified)
	applyAttr(a, n.fsys.store.FileAttr(f))
	if f.ID != 0 && n.fsys.open.isUnlinked(f.ID) {
		a.Nlink = 0
		return time.Time{}
	}
	return listedAt
}

// stagedAttr fills a staged file's attributes from one fstat of its
// staging copy: local size and time, and the blocks it holds on disk (a
// sparse file counts its holes for nothing, as du expects).
func (f *FS) stagedAttr(a *fuse.Attr, st *writeback.Staged) {
	size, mod, fi := st.Stat()
	f.SetAttr(a, syscall.S_IFREG|f.FileMode(), size, mod)
	if fi != nil {
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			a.Blocks = uint64(s.Blocks)
		}
	}
}

func (n *fileNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fsys.asked.getattrs.Add(1)
	n.getattr(out)
	return 0
}

// getattr is Getattr uncounted (a lookup's attributes, EntryAttr).
func (n *fileNode) getattr(out *fuse.AttrOut) {
	if t := n.fsys.listedTimeout(n.fillAttr(&out.Attr)); t > 0 {
		out.SetTimeout(t)
	}
}

// Open chooses the handle, as rclone's vfs does: opened for writing, a
// staged handle writing the file's staging copy (made first when there is
// none); opened for reading, a staged handle reading the staging copy of a
// pending file, or else a read handle of the service's content. A reader's
// close asks nothing of the daemon (FOPEN_NOFLUSH: its Flush has nothing to
// do), which spares a round trip per file to programs that open many, as git
// status does.
func (n *fileNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	n.fsys.asked.opens.Add(1)
	if n.link {
		return nil, 0, syscall.ELOOP // the kernel follows links; an open of the link itself
	}
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return n.openWriter(ctx, flags&syscall.O_TRUNC != 0)
	}
	if h, errno := n.openPendingReader(ctx); h != nil || errno != 0 {
		return h, fuse.FOPEN_NOFLUSH, errno
	}
	h, flags, errno := n.openReader(ctx)
	return h, flags | fuse.FOPEN_NOFLUSH, errno
}

// openWriter opens the file for writing: a staged handle holding a writer.
func (n *fileNode) openWriter(ctx context.Context, truncate bool) (gofs.FileHandle, uint32, syscall.Errno) {
	if !n.fsys.writable(n.parentKey().Area) {
		return nil, 0, syscall.EROFS
	}
	if !truncate && !n.ptActive() && n.refreshStaged() == nil {
		// A file of the service: staged at the first read or write (get).
		// (A file open in passthrough is staged now: its writes will not
		// come here.)
		pt, errno := n.beginOpen(ctx, nil, false)
		if errno != 0 {
			return nil, 0, errno
		}
		n.mu.Lock()
		n.kernelCache = cache.Meta{} // the kernel's pages of the old content must go
		n.mu.Unlock()
		return &stagedHandle{node: n, writer: true, pt: pt}, 0, 0
	}
	st, errno := n.stageForWriting(ctx, truncate)
	if errno != 0 {
		return nil, 0, errno
	}
	if truncate {
		if err := st.File().Truncate(0); err != nil {
			st.CloseWriter()
			return nil, 0, Errno(n.fsys.log, "truncating "+n.Path(nil), err)
		}
		st.Touch()
	}
	// The kernel's pages of the old content must go.
	n.mu.Lock()
	n.kernelCache = cache.Meta{}
	n.mu.Unlock()
	h, errno := n.stagedWriter(ctx, st)
	return h, 0, errno
}

// openPendingReader opens a pending file for reading: a staged handle holding
// a reader of its staging copy, in passthrough on it when the file has no
// other opens. Nil when the file is not pending.
func (n *fileNode) openPendingReader(ctx context.Context) (*stagedHandle, syscall.Errno) {
	st := n.acquirePending()
	if st == nil {
		return nil, 0
	}
	pt, errno := n.beginOpen(ctx, st.File(), true)
	if errno != 0 {
		st.CloseReader()
		return nil, errno
	}
	return &stagedHandle{node: n, staged: st, pt: pt}, 0
}

// acquirePending returns the file's staging copy held for reading (the
// caller closes its reader), kept open even if its upload ends meanwhile;
// nil when the file is not pending (or its upload ended just now).
func (n *fileNode) acquirePending() *writeback.Staged {
	if n.refreshStaged() == nil {
		return nil
	}
	return n.fsys.store.Acquire(n.target(), false)
}

// openReader opens the service's content of the file: a read handle. The
// kernel keeps its cached pages when they are of the same version.
//
// Many writers: a version whose content is not all in the cache is looked
// up on the service first (the request its first read would make). When
// another writer replaced it since the listing, the folder is listed again
// and the current version opened instead, for direct I/O: the kernel still
// holds the old version's size, which must not cut or pad what is read.
func (n *fileNode) openReader(ctx context.Context) (gofs.FileHandle, uint32, syscall.Errno) {
	if f, ok := n.cachedVersion(); ok {
		return n.openVersion(ctx, f, false) // nothing to ask the service
	}
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	f, errno := n.current(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	bundled := false
	if b := n.fsys.store.Bundler; b != nil {
		parent := n.parentKey()
		if l, err := n.fsys.store.Dirs.List(ctx, parent); err == nil {
			b.Opened(parent, l.Files, f)
		}
		bundled = b.Covers(f.ID) // its content comes with the folder's bundle: no request of its own
	}
	replaced := false
	if err := n.check(ctx, f, bundled); cache.AsTimeout(ctx, err) != nil {
		// No answer: its first read would wait for the same request.
		return nil, 0, n.fsys.errno(ctx, "opening "+n.Path(nil), err)
	} else if err != nil && cache.Gone(err) {
		if f, errno = n.relist(ctx, f); errno != 0 {
			return nil, 0, errno
		}
		replaced = true
		n.fsys.log.WithFields(logrus.Fields{"path": n.Path(nil), "id": f.ID}).
			Info("fs: the file was replaced on the service since it was listed; reading the current version")
	}
	return n.openVersion(ctx, f, replaced)
}

// cachedVersion is the node's service version when its content is all in
// the cache: opening it asks the service nothing (git status opens every
// file it finds racily clean).
func (n *fileNode) cachedVersion() (api.File, bool) {
	n.refreshStaged()
	n.mu.Lock()
	f := n.file
	n.mu.Unlock()
	return f, f.ID > 0 && n.fsys.store.Content.Complete(cache.MetaOf(f))
}

// directColdMin is the size from which a file opened before its content is
// all in the cache is read with direct I/O, with --cold-direct-io: each read
// is answered straight into the reader's buffer from the cache file,
// instead of into pages of the kernel's cache that the reader then copies.
// A cold read of 1 GiB with cat takes 1.6 s instead of 2.2-3.2 s and half
// the CPU in cat, and the first read of a run no longer pays to allocate a
// GiB of the kernel's pages (docs/BENCHMARKS.md). But every read(2) is then
// a request to the daemon: dd bs=10k of the same file (and a copy of 1 GiB
// after it) takes 3.9-5.2 s instead of 2.5-2.8 s, so the option is off by
// default. The content is in the cache file all the same: the next open
// finds it complete and reads it through passthrough or the page cache.
// Smaller files keep the page cache, whose read-ahead answers a program's
// small reads without a request each.
const directColdMin = 16 << 20

// openVersion opens version f for reading (replaced: another writer's,
// found at the open, read with direct I/O).
func (n *fileNode) openVersion(ctx context.Context, f api.File, replaced bool) (gofs.FileHandle, uint32, syscall.Errno) {
	n.mu.Lock()
	m := cache.MetaOf(f)
	keep := n.kernelCache.Same(m) && !replaced
	n.kernelCache = m
	n.mu.Unlock()
	r, err := n.fsys.store.Fetcher.Open(m)
	if err != nil {
		return nil, 0, n.fsys.errno(ctx, "opening "+n.Path(nil), err)
	}
	var fuseFlags uint32
	if keep {
		fuseFlags |= fuse.FOPEN_KEEP_CACHE
	}
	if replaced {
		fuseFlags |= fuse.FOPEN_DIRECT_IO
		go n.NotifyContent(0, 0) // the old version's size and pages, outside the request
	}
	var content *os.File // the cache file, when it holds the whole version: passthrough
	if m.Size > 0 && n.fsys.store.Content.Complete(m) {
		content = r.File()
	} else if m.Size >= directColdMin && n.fsys.directCold.Load() {
		fuseFlags |= fuse.FOPEN_DIRECT_IO
	}
	pt, errno := n.beginOpen(ctx, content, !replaced)
	if errno != 0 {
		r.Close()
		return nil, 0, errno
	}
	n.fsys.open.open(f.ID)
	return &readHandle{node: n, r: r, pt: pt}, fuseFlags, 0
}

// Setattr truncates (through the staging copy) and sets mode, owner and
// times, kept on this desk (cache.Attrs).
func (n *fileNode) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if !n.fsys.writable(n.parentKey().Area) {
		return syscall.EROFS
	}
	if size, ok := in.GetSize(); ok {
		errno := syscall.Errno(0)
		if h, ok := fh.(*stagedHandle); ok && h.writer {
			errno = h.truncate(ctx, int64(size)) // ftruncate (O_TRUNC comes with the open: fs.go)
		} else {
			errno = n.truncate(ctx, int64(size))
		}
		if errno != 0 {
			return errno
		}
	}
	if c, ok := attrChange(in); ok {
		n.setAttr(c)
	}
	n.fillAttr(&out.Attr)
	return 0
}

// truncate sets the size of the file's staging copy (made first when there is
// none).
func (n *fileNode) truncate(ctx context.Context, size int64) syscall.Errno {
	st, errno := n.stageForWriting(ctx, size == 0)
	if errno != 0 {
		return errno
	}
	err := st.File().Truncate(size)
	st.Touch()
	st.CloseWriter()
	if err != nil {
		return Errno(n.fsys.log, "truncating "+n.Path(nil), err)
	}
	return 0
}

// setAttr keeps what a setattr set: a pending file's time on its staging
// copy, the rest (and a service file's time) in the attribute store.
func (n *fileNode) setAttr(c cache.Attr) {
	if st := n.refreshStaged(); st != nil {
		n.fsys.store.SetStagedAttr(st, c)
		return
	}
	n.mu.Lock()
	f := n.file
	n.mu.Unlock()
	n.fsys.store.SetFileAttr(f, c)
}

// stageForWriting opens the node's content for writing: its pending staging
// copy, or a new one holding the service's content (none when truncating).
// The caller owns a writer of the result and closes it (CloseWriter).
func (n *fileNode) stageForWriting(ctx context.Context, truncate bool) (*writeback.Staged, syscall.Errno) {
	// One staging at a time per file: a second writer waits and then opens
	// the copy the first made, filled. Held across the fetch (fs.go).
	n.stageMu.Lock()
	defer n.stageMu.Unlock()
	if st := n.fsys.store.Acquire(n.target(), true); st != nil {
		n.setStaged(st)
		return st, 0
	}
	// The listing waits under the I/O timeout; the copy waits while content
	// comes (Store.StageCopy).
	bctx, cancel := n.fsys.bound(ctx)
	f, errno := n.current(bctx)
	cancel()
	if errno != 0 {
		return nil, errno
	}
	var st *writeback.Staged
	var err error
	// A file open in passthrough is staged whole even when truncating: the
	// kernel's file becomes the staging copy (StageCopy), truncated after.
	// A mode lasts across a write: the staging copy shows what was set on f.
	if truncate && !n.ptActive() {
		st, err = n.fsys.store.Create(n.target(), f.ID, n.Path(nil), n.fsys.store.FileAttr(f), false)
	} else {
		// Complete before anybody sees it (Store.StageCopy).
		st, err = n.fsys.store.StageCopy(ctx, n.target(), f, f.ID, f)
		if err != nil && cache.Gone(err) {
			st, err = n.stageReplaced(ctx, f)
		}
	}
	if err != nil {
		return nil, n.fsys.errno(ctx, "staging "+n.Path(nil), err)
	}
	st.SetPath(n.Path(nil))
	n.setStaged(st)
	return st, 0
}

// check looks f up on the service before it is read (Store.Check), unless
// a bundle job brings its content with its folder's.
func (n *fileNode) check(ctx context.Context, f api.File, bundled bool) error {
	if bundled {
		return nil
	}
	return n.fsys.store.Check(ctx, cache.MetaOf(f))
}

// relist finds the version the node's name holds now, f (the listed one)
// being gone from the service: the folder's listing and f's content are
// forgotten and the folder listed again. ENOENT when the name is gone too.
func (n *fileNode) relist(ctx context.Context, f api.File) (api.File, syscall.Errno) {
	n.fsys.store.Changed(n.parentKey(), f.ID)
	n.mu.Lock()
	if n.file.ID == f.ID {
		n.file = api.File{Name: f.Name} // a placeholder: current lists the folder
	}
	n.mu.Unlock()
	return n.current(ctx)
}

// stageReplaced stages the file for writing when the version f, the one its
// listing gave, is gone from the service (another writer replaced or deleted
// it): a copy of the version the name holds now (one listing), or an empty
// file when there is none. The change still starts from f, so its upload
// checks the name and goes up beside the other writer's version as a
// conflict copy (writeback/conflicts.go) instead of replacing it. A listing that
// fails (an outage) fails the staging: it says nothing of the name.
func (n *fileNode) stageReplaced(ctx context.Context, f api.File) (*writeback.Staged, error) {
	bctx, cancel := n.fsys.bound(ctx)
	cur, errno := n.relist(bctx, f)
	cancel()
	if errno != 0 && errno != syscall.ENOENT {
		return nil, errno
	}
	if errno == syscall.ENOENT {
		return n.fsys.store.Create(n.target(), f.ID, "", n.fsys.store.FileAttr(f), false)
	}
	return n.fsys.store.StageCopy(ctx, n.target(), cur, f.ID, f)
}

func (n *fileNode) setStaged(st *writeback.Staged) {
	n.mu.Lock()
	n.staged = st
	n.mu.Unlock()
}
