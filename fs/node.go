package fs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
)

// Lock order: a node's mu is a leaf; it is never held across a request or a
// call into go-fuse.

// Options shape the mounted tree.
type Options struct {
	UID, GID    uint32        // owner of every file; default: the daemon's
	Umask       uint32        // taken from 0777 (dirs) and 0666 (files); default 022
	ReadOnly    bool          // refuse every change (recordings/ always does)
	AttrTimeout time.Duration // how long the kernel keeps entries and attributes; default 1s
}

// Deps are the parts of the daemon a mount uses.
type Deps struct {
	Client  *api.Client
	Dirs    *cache.Dirs
	Fetcher *cache.Fetcher
	Bundler *cache.Bundler // optional
	Staging *cache.Staging // nil: the mount is read-only
	Log     logrus.FieldLogger
}

// FS is what every node of the mount shares.
type FS struct {
	Deps
	opts   Options
	start  time.Time
	mtimes *mtimes
}

// New makes the tree of a mount.
func New(deps Deps, opts Options) *FS {
	if opts.AttrTimeout <= 0 {
		opts.AttrTimeout = time.Second
	}
	return &FS{Deps: deps, opts: opts, start: time.Now(), mtimes: newMtimes()}
}

// Inode numbers: the fixed folders are small; a service object's is its id
// above 2^40 (ids are unique across the organization and its areas); a
// computer's folder is its id above 2^41.
const (
	inoRoot       = 1
	inoShared     = 2
	inoComputers  = 3
	inoRecordings = 4
)

func fileIno(id int64) uint64    { return 1<<40 + uint64(id) }
func machineIno(id int64) uint64 { return 1<<41 + uint64(id) }

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

// Root returns the root node of the mount.
func (f *FS) Root() gofs.InodeEmbedder { return &rootNode{fsys: f} }

// rootNode is the mount point: shared/, computers/, recordings/.
type rootNode struct {
	gofs.Inode
	fsys *FS
}

var (
	_ gofs.NodeOnAdder    = (*rootNode)(nil)
	_ gofs.NodeGetattrer  = (*rootNode)(nil)
	_ gofs.NodeStatfser   = (*rootNode)(nil)
	_ gofs.NodeLookuper   = (*rootNode)(nil)
	_ gofs.NodeReaddirer  = (*rootNode)(nil)
	_ gofs.NodeGetattrer  = (*dirNode)(nil)
	_ gofs.NodeLookuper   = (*dirNode)(nil)
	_ gofs.NodeReaddirer  = (*dirNode)(nil)
	_ gofs.NodeGetattrer  = (*computersNode)(nil)
	_ gofs.NodeLookuper   = (*computersNode)(nil)
	_ gofs.NodeReaddirer  = (*computersNode)(nil)
	_ gofs.NodeGetattrer  = (*fileNode)(nil)
	_ gofs.NodeOpener     = (*fileNode)(nil)
	_ gofs.NodeSetattrer  = (*fileNode)(nil)
	_ gofs.FileReader     = (*fileHandle)(nil)
	_ gofs.FileReleaser   = (*fileHandle)(nil)
	_ gofs.NodeCreater    = (*dirNode)(nil)
	_ gofs.NodeMkdirer    = (*dirNode)(nil)
	_ gofs.NodeUnlinker   = (*dirNode)(nil)
	_ gofs.NodeRmdirer    = (*dirNode)(nil)
	_ gofs.NodeRenamer    = (*dirNode)(nil)
	_ gofs.NodeMkdirer    = (*computersNode)(nil)
	_ gofs.NodeCreater    = (*rootNode)(nil)
	_ gofs.NodeMkdirer    = (*rootNode)(nil)
	_ gofs.NodeGetxattrer = (*fileNode)(nil)
	_ gofs.NodeStatfser   = (*dirNode)(nil)
	_ gofs.NodeStatfser   = (*computersNode)(nil)
	_ gofs.NodeStatfser   = (*fileNode)(nil)
)

func (n *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return statfs(out)
}

func (n *computersNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return statfs(out)
}

func (n *fileNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return statfs(out)
}

func (n *rootNode) OnAdd(ctx context.Context) {
	add := func(name string, node gofs.InodeEmbedder, ino uint64) {
		n.AddChild(name, n.NewPersistentInode(ctx, node, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino}), false)
	}
	add("shared", &dirNode{fsys: n.fsys, key: cache.DirKey{Area: cache.Area{Kind: cache.Shared}}}, inoShared)
	add("computers", &computersNode{fsys: n.fsys}, inoComputers)
	add("recordings", &dirNode{fsys: n.fsys, key: cache.DirKey{Area: cache.Area{Kind: cache.Recordings}}}, inoRecordings)
}

func (n *rootNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fsys.setAttr(&out.Attr, syscall.S_IFDIR|n.fsys.dirMode(), 0, time.Time{})
	return 0
}

// Lookup answers the fixed children (kept by go-fuse) and probes; anything
// else does not exist.
func (n *rootNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if ch := n.GetChild(name); ch != nil {
		if g, ok := ch.Operations().(gofs.NodeGetattrer); ok {
			var a fuse.AttrOut
			g.Getattr(ctx, nil, &a)
			out.Attr = a.Attr
		}
		return ch, 0
	}
	return nil, syscall.ENOENT
}

func (n *rootNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	return gofs.NewListDirStream([]fuse.DirEntry{
		{Name: "shared", Mode: syscall.S_IFDIR, Ino: inoShared},
		{Name: "computers", Mode: syscall.S_IFDIR, Ino: inoComputers},
		{Name: "recordings", Mode: syscall.S_IFDIR, Ino: inoRecordings},
	}), 0
}

func (n *rootNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return statfs(out)
}

// statfs reports a large, mostly free disk, so that file managers do not
// refuse a copy for want of space; the service's quota answers for real.
// Every folder answers the same (go-fuse asks the node statfs names).
func statfs(out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 32 // 4 TiB in 1 KiB blocks
	out.Bsize = 1024
	out.Frsize = 1024
	out.Blocks = blocks
	out.Bfree = blocks
	out.Bavail = blocks
	out.Files = 1 << 30
	out.Ffree = 1 << 30
	out.NameLen = 255
	return 0
}

func (n *rootNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

func (n *rootNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// dirView is a folder listing with the names the mount shows for it, and the
// files written here that are not on the service yet.
type dirView struct {
	listing *cache.Listing
	files   []api.File // the listing's, then pending files of new names (ID 0)
	names   []string
	byName  map[string]int
	staged  map[string]*cache.Staged // pending files by name (new or replacing a listed one)
}

func newDirView(l *cache.Listing, pending []*cache.Staged) *dirView {
	files := l.Files
	staged := map[string]*cache.Staged{}
	if len(pending) > 0 {
		listed := make(map[string]bool, len(files))
		for _, f := range files {
			listed[f.Name] = true
		}
		files = append([]api.File(nil), files...)
		for _, st := range pending {
			name := st.Target().Name
			staged[name] = st
			if !listed[name] {
				files = append(files, api.File{Name: name, ObjectType: api.ObjectFile})
			}
		}
	}
	items := make([]named, len(files))
	for i, f := range files {
		items[i] = named{f.Name, f.ID}
	}
	v := &dirView{listing: l, files: files, names: uniqueNames(items), byName: make(map[string]int, len(items)), staged: staged}
	for i, name := range v.names {
		v.byName[name] = i
	}
	return v
}

// dirNode is a folder of a storage area (shared/, a computer's, recordings/),
// or an area's root (key.ID 0).
type dirNode struct {
	gofs.Inode
	fsys *FS
	key  cache.DirKey

	mu    sync.Mutex
	view  *dirView  // guarded by mu
	mtime time.Time // guarded by mu
}

// load returns the folder's listing, from the cache while it is fresh.
func (n *dirNode) load(ctx context.Context) (*dirView, syscall.Errno) {
	l, err := n.fsys.Dirs.List(ctx, n.key)
	if err != nil {
		return nil, toErrno(n.fsys.Log, "listing "+n.Path(nil), err)
	}
	var pending []*cache.Staged
	if n.fsys.Staging != nil {
		pending = n.fsys.Staging.Pending(n.key.Area, n.key.ID)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.view == nil || n.view.listing != l || len(pending) > 0 || len(n.view.staged) > 0 {
		n.view = newDirView(l, pending)
	}
	return n.view, 0
}

func (n *dirNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.mu.Lock()
	mtime := n.mtime
	n.mu.Unlock()
	n.fsys.setAttr(&out.Attr, syscall.S_IFDIR|n.fsys.dirMode(), 0, mtime)
	return 0
}

func (n *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if probeName(name) && !n.cachedHas(name) {
		return nil, syscall.ENOENT // answered from memory: no request
	}
	v, errno := n.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	i, ok := v.byName[name]
	if !ok {
		return nil, syscall.ENOENT
	}
	var ch *gofs.Inode
	if st := v.staged[name]; st != nil {
		ch = n.stagedNode(ctx, name, st)
	} else {
		ch = n.child(ctx, name, v.files[i])
	}
	if g, ok := ch.Operations().(gofs.NodeGetattrer); ok {
		var a fuse.AttrOut
		g.Getattr(ctx, nil, &a)
		out.Attr = a.Attr
	}
	return ch, 0
}

// cachedHas reports whether the folder's cached listing, fresh or not, holds
// name; it makes no request.
func (n *dirNode) cachedHas(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.view == nil {
		return false
	}
	_, ok := n.view.byName[name]
	return ok
}

// child returns the inode of an entry of this folder. An inode the kernel
// already knows under that name is kept and brought up to date with the
// listing (go-fuse would otherwise drop a new node for the known one).
func (n *dirNode) child(ctx context.Context, name string, f api.File) *gofs.Inode {
	if ch := n.GetChild(name); ch != nil && ch.StableAttr().Ino == fileIno(f.ID) {
		switch op := ch.Operations().(type) {
		case *fileNode:
			op.update(n.key, f)
			return ch
		case *dirNode:
			op.mu.Lock()
			op.mtime = f.LastModified
			op.mu.Unlock()
			return ch
		}
	}
	if f.IsDir() {
		return n.NewInode(ctx, &dirNode{fsys: n.fsys, key: cache.DirKey{Area: n.key.Area, ID: f.ID}, mtime: f.LastModified},
			gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: fileIno(f.ID)})
	}
	return n.NewInode(ctx, &fileNode{fsys: n.fsys, parent: n.key, file: f},
		gofs.StableAttr{Mode: syscall.S_IFREG, Ino: fileIno(f.ID)})
}

func (n *dirNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	v, errno := n.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	entries := make([]fuse.DirEntry, len(v.names))
	for i, f := range v.files {
		mode, ino := uint32(syscall.S_IFREG), fileIno(f.ID)
		if f.IsDir() {
			mode = syscall.S_IFDIR
		}
		if v.staged[v.names[i]] != nil {
			ino = stagedIno(n.key, v.names[i])
		}
		entries[i] = fuse.DirEntry{Name: v.names[i], Mode: mode, Ino: ino}
	}
	return gofs.NewListDirStream(entries), 0
}

// computersNode is computers/: one folder per computer, its storage area.
type computersNode struct {
	gofs.Inode
	fsys *FS

	mu    sync.Mutex
	seats []api.Seat // guarded by mu; the list names was made from
	names []string   // guarded by mu
}

func (n *computersNode) load(ctx context.Context) ([]api.Seat, []string, syscall.Errno) {
	seats, err := n.fsys.Dirs.Seats(ctx)
	if err != nil {
		return nil, nil, toErrno(n.fsys.Log, "listing computers", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.names == nil || len(seats) != len(n.seats) || (len(seats) > 0 && &seats[0] != &n.seats[0]) {
		items := make([]named, len(seats))
		for i, s := range seats {
			items[i] = named{s.Name, s.ID}
		}
		n.seats, n.names = seats, uniqueNames(items)
	}
	return n.seats, n.names, 0
}

func (n *computersNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fsys.setAttr(&out.Attr, syscall.S_IFDIR|n.fsys.dirMode(), 0, time.Time{})
	return 0
}

func (n *computersNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if probeName(name) {
		return nil, syscall.ENOENT
	}
	seats, names, errno := n.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	for i, nm := range names {
		if nm == name {
			id := seats[i].ID
			ch := n.NewInode(ctx, &dirNode{fsys: n.fsys, key: cache.DirKey{Area: cache.Area{Kind: cache.Machine, MachineID: id}}},
				gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: machineIno(id)})
			n.fsys.setAttr(&out.Attr, syscall.S_IFDIR|n.fsys.dirMode(), 0, time.Time{})
			return ch, 0
		}
	}
	return nil, syscall.ENOENT
}

func (n *computersNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	seats, names, errno := n.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	entries := make([]fuse.DirEntry, len(seats))
	for i, s := range seats {
		entries[i] = fuse.DirEntry{Name: names[i], Mode: syscall.S_IFDIR, Ino: machineIno(s.ID)}
	}
	return gofs.NewListDirStream(entries), 0
}

func (n *computersNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EROFS // computers are created through .ctl/seats
}

// fileNode is a file of a storage area.
type fileNode struct {
	gofs.Inode
	fsys *FS

	mu     sync.Mutex
	parent cache.DirKey  // guarded by mu; the folder it is listed in
	file   api.File      // guarded by mu
	kernel cache.Meta    // guarded by mu; the version the kernel's page cache may hold
	staged *cache.Staged // guarded by mu; the pending local copy, while there is one

	stageMu sync.Mutex // held while a staging copy of the file is made
}

func metaOf(f api.File) cache.Meta {
	return cache.Meta{ID: f.ID, Size: f.Size, ModTime: f.LastModified}
}

// update takes a newer listing record of the file. When its content changed,
// the kernel's cached pages of it are dropped, once.
func (n *fileNode) update(parent cache.DirKey, f api.File) {
	n.mu.Lock()
	changed := n.kernel != (cache.Meta{}) && !n.kernel.Same(metaOf(f))
	if changed {
		n.kernel = cache.Meta{}
	}
	n.file = f
	n.parent = parent
	n.mu.Unlock()
	if changed {
		// Outside any lock, and not from within the kernel's request.
		go n.NotifyContent(0, 0)
	}
}

func (n *fileNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fillAttr(&out.Attr)
	return 0
}

// Getxattr exposes nothing; answering ENODATA at once spares a request per
// file to tools that ask for security labels and ACLs.
func (n *fileNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENODATA
}

func (n *fileNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		if !n.fsys.writable(n.parentKey().Area) {
			return nil, 0, syscall.EROFS
		}
		truncate := flags&syscall.O_TRUNC != 0
		st, errno := n.stage(ctx, truncate)
		if errno != 0 {
			return nil, 0, errno
		}
		if truncate {
			if err := st.File().Truncate(0); err != nil {
				st.CloseWriter()
				return nil, 0, toErrno(n.fsys.Log, "truncating "+n.Path(nil), err)
			}
			st.Touch()
		}
		// The kernel's pages of the old content must go.
		n.mu.Lock()
		n.kernel = cache.Meta{}
		n.mu.Unlock()
		return &fileHandle{node: n, staged: st, writer: true}, 0, 0
	}
	if n.stagedOf() != nil {
		// Acquire keeps the staging copy open for this reader, even if its
		// upload ends meanwhile.
		if st := n.fsys.Staging.Acquire(n.targetOf(), false); st != nil {
			return &fileHandle{node: n, staged: st}, 0, 0
		}
	}
	if _, errno := n.current(ctx); errno != 0 {
		return nil, 0, errno
	}
	n.mu.Lock()
	f := n.file
	m := metaOf(f)
	keep := n.kernel.Same(m)
	n.kernel = m
	n.mu.Unlock()
	if b := n.fsys.Bundler; b != nil {
		parent := n.parentKey()
		if l, err := n.fsys.Dirs.List(ctx, parent); err == nil {
			b.Opened(parent, l.Files, f)
		}
	}
	r, err := n.fsys.Fetcher.Open(m)
	if err != nil {
		return nil, 0, toErrno(n.fsys.Log, "opening "+n.Path(nil), err)
	}
	var fuseFlags uint32
	if keep {
		fuseFlags |= fuse.FOPEN_KEEP_CACHE
	}
	return &fileHandle{node: n, r: r}, fuseFlags, 0
}

// fileHandle is an open file: read through the content cache, or a pending
// file's staging copy, read and written.
type fileHandle struct {
	node   *fileNode
	r      *cache.Reader // service content
	staged *cache.Staged // or the staging copy
	writer bool          // opened for writing (staged)
}

// Read waits until the bytes are in the cache file, then hands the kernel
// that file's range, which go-fuse splices without copying it through here.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h.staged != nil {
		n, err := h.staged.File().ReadAt(dest, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, toErrno(h.node.fsys.Log, "reading "+h.node.Path(nil), err)
		}
		return fuse.ReadResultData(dest[:n]), 0
	}
	n, err := h.r.Ready(ctx, off, int64(len(dest)))
	if err == io.EOF { // only Ready's own end of file, never a failed fetch
		return fuse.ReadResultData(nil), 0
	}
	if errors.Is(err, cache.ErrChanged) {
		// The listing this file was opened from is out of date: forget it, so
		// the next open sees the service's version.
		h.node.fsys.Dirs.Drop(h.node.parentKey())
		h.node.fsys.Fetcher.Forget(h.r.Handle().Meta().ID)
	}
	if err != nil {
		return nil, toErrno(h.node.fsys.Log, "reading "+h.node.Path(nil), err)
	}
	return fuse.ReadResultFd(h.r.File().Fd(), off, int(n)), 0
}

func (n *fileNode) parentKey() cache.DirKey {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.parent
}

func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	switch {
	case h.writer:
		h.staged.CloseWriter()
	case h.staged != nil:
		h.staged.CloseReader()
	default:
		h.r.Close()
	}
	return 0
}

// MountOptions are how the tree is mounted.
type MountOptions struct {
	AllowOther bool
	Debug      bool   // log every FUSE request
	FsName     string // shown by mount(8) and df; default "orgfs"
}

// Mount mounts the tree at dir. As root it mounts directly; otherwise through
// fusermount3.
func Mount(dir string, f *FS, mo MountOptions) (*fuse.Server, error) {
	if mo.FsName == "" {
		mo.FsName = "orgfs"
	}
	t := f.opts.AttrTimeout
	opts := &gofs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:    mo.AllowOther,
			FsName:        mo.FsName,
			Name:          "orgfs",
			DirectMount:   os.Geteuid() == 0,
			MaxReadAhead:  1 << 20,
			MaxWrite:      1 << 20,
			MaxBackground: 64,
			Debug:         mo.Debug,
		},
		EntryTimeout:    &t,
		AttrTimeout:     &t,
		NegativeTimeout: &t,
		UID:             f.opts.UID,
		GID:             f.opts.GID,
		RootStableAttr:  &gofs.StableAttr{Ino: inoRoot},
	}
	// The kernel checks permissions against the modes and owners shown, so
	// --allow-other does not open every file to every user.
	opts.MountOptions.Options = append(opts.MountOptions.Options, "default_permissions")
	if f.opts.ReadOnly {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "ro")
	}
	return gofs.Mount(dir, f.Root(), opts)
}
