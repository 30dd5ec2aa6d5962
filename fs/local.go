package fs

// Local entries: what this mount keeps in memory for its life and never
// sends to the service. Two kinds share the store:
//
//   - desktop files: what desktops write beside every file and folder
//     (AppleDouble ._* files, .DS_Store, Thumbs.db, desktop.ini...), regular
//     files with content, so that a Finder or Explorer copy succeeds without
//     litter on the service;
//   - special nodes: fifos, sockets and device nodes made with mknod, mkfifo
//     or bind (special.go), which the service, holding files and folders
//     only, could not keep; they have no content.
//
// An entry has its own type, mode, owner, device number and times, and an
// inode number of its own for its life (a rename keeps it).
//
// Locks: localFiles.mu guards the store's maps; localFile.mu an entry's
// content and attributes. An entry's mu is taken without the store's (never
// both).

import (
	"context"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
)

const (
	maxLocalFile  = 8 << 20  // one desktop file; larger is EFBIG
	maxLocalBytes = 64 << 20 // all of them; more is ENOSPC
)

// localFiles are the local entries of a mount, by folder and name.
type localFiles struct {
	mu    sync.Mutex
	dirs  map[place.DirKey]map[string]*localFile // guarded by mu
	bytes int64                                  // guarded by mu; of every file
	seq   uint64                                 // guarded by mu; the last entry's number (localIno)
}

// localFile is one local entry: a desktop file or a special node.
type localFile struct {
	ino  uint64 // fixed when filed
	typ  uint32 // its type (S_IFREG, S_IFIFO...), fixed when made
	mu   sync.Mutex
	data []byte    // guarded by mu; a desktop file's content
	attr localAttr // guarded by mu
}

// localAttr is what a local entry shows besides its size.
type localAttr struct {
	mode                uint32 // permission bits
	uid, gid            uint32
	rdev                uint32 // a device node's number
	atime, mtime, ctime time.Time
	unlinked            bool // removed: its link count shows 0 to descriptors still open
}

// newLocalAttr is the attributes of an entry made now (mode: its
// permission bits).
func newLocalAttr(mode, uid, gid, rdev uint32) localAttr {
	now := time.Now()
	return localAttr{mode: mode & 0o7777, uid: uid, gid: gid, rdev: rdev, atime: now, mtime: now, ctime: now}
}

// special reports whether the entry is a special node (not a regular file).
func (f *localFile) special() bool { return f.typ != syscall.S_IFREG }

func (l *localFiles) get(dir place.DirKey, name string) *localFile {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dirs[dir][name]
}

// special is the special node of folder dir named name, nil for none.
func (l *localFiles) special(dir place.DirKey, name string) *localFile {
	if f := l.get(dir, name); f != nil && f.special() {
		return f
	}
	return nil
}

// putLocked files f under dir and name, numbering it.
func (l *localFiles) putLocked(dir place.DirKey, name string, f *localFile) {
	if l.dirs == nil {
		l.dirs = map[place.DirKey]map[string]*localFile{}
	}
	if l.dirs[dir] == nil {
		l.dirs[dir] = map[string]*localFile{}
	}
	l.seq++
	f.ino = localIno(l.seq)
	l.dirs[dir][name] = f
}

// create returns the desktop file, made empty when it exists (a with a new
// one's attributes).
func (l *localFiles) create(dir place.DirKey, name string, a localAttr) *localFile {
	l.mu.Lock()
	f := l.dirs[dir][name]
	if f == nil {
		f = &localFile{typ: syscall.S_IFREG, attr: a}
		l.putLocked(dir, name, f)
		l.mu.Unlock()
		return f
	}
	l.mu.Unlock()
	f.resize(l, 0)
	return f
}

// make files a new entry of type typ and attributes a; nil when the name
// holds one.
func (l *localFiles) make(dir place.DirKey, name string, typ uint32, a localAttr) *localFile {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirs[dir][name] != nil {
		return nil
	}
	f := &localFile{typ: typ, attr: a}
	l.putLocked(dir, name, f)
	return f
}

// remove takes the entry away, nil for none.
func (l *localFiles) remove(dir place.DirKey, name string) *localFile {
	l.mu.Lock()
	f := l.dirs[dir][name]
	delete(l.dirs[dir], name)
	l.mu.Unlock()
	if f != nil {
		f.gone(l)
	}
	return f
}

// gone marks f removed (its change time moves) and frees its content.
func (f *localFile) gone(l *localFiles) {
	f.resize(l, 0)
	f.mu.Lock()
	f.attr.unlinked, f.attr.ctime = true, time.Now()
	f.mu.Unlock()
}

// rename moves an entry, with its inode number; one at the new name goes.
func (l *localFiles) rename(dir place.DirKey, name string, to place.DirKey, newName string) {
	l.mu.Lock()
	f := l.dirs[dir][name]
	if f == nil {
		l.mu.Unlock()
		return
	}
	delete(l.dirs[dir], name)
	if l.dirs[to] == nil {
		l.dirs[to] = map[string]*localFile{}
	}
	old := l.dirs[to][newName]
	l.dirs[to][newName] = f
	l.mu.Unlock()
	if old != nil && old != f {
		old.gone(l)
	}
	f.mu.Lock()
	f.attr.ctime = time.Now()
	f.mu.Unlock()
}

// entries are the local entries of a folder, as readdir lists them.
func (l *localFiles) entries(dir place.DirKey) []fuse.DirEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]fuse.DirEntry, 0, len(l.dirs[dir]))
	for n, f := range l.dirs[dir] {
		out = append(out, fuse.DirEntry{Name: n, Mode: f.typ, Ino: f.ino})
	}
	return out
}

// hasSpecial reports whether folder dir holds a special node (rmdir's
// ENOTEMPTY; desktop files do not count).
func (l *localFiles) hasSpecial(dir place.DirKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.dirs[dir] {
		if f.special() {
			return true
		}
	}
	return false
}

// dropDir forgets a removed folder's local entries.
func (l *localFiles) dropDir(dir place.DirKey) {
	l.mu.Lock()
	files := l.dirs[dir]
	delete(l.dirs, dir)
	l.mu.Unlock()
	for _, f := range files {
		f.gone(l)
	}
}

// moveDir gives folder from's local entries to folder to, a folder made for
// it by a rename (rename_folder.go, rename_tree.go).
func (l *localFiles) moveDir(from, to place.DirKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	files := l.dirs[from]
	if len(files) == 0 || from == to {
		return
	}
	delete(l.dirs, from)
	if l.dirs[to] == nil {
		l.dirs[to] = map[string]*localFile{}
	}
	for n, f := range files {
		l.dirs[to][n] = f
	}
}

// reserve accounts for n more bytes (n < 0 frees), refusing past the budget.
func (l *localFiles) reserve(n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > 0 && l.bytes+n > maxLocalBytes {
		return false
	}
	l.bytes += n
	return true
}

// resize sets the file's size (zeros added), within the budgets.
func (f *localFile) resize(l *localFiles, size int64) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resizeLocked(l, size)
}

func (f *localFile) resizeLocked(l *localFiles, size int64) syscall.Errno {
	if size > maxLocalFile {
		return syscall.EFBIG
	}
	if !l.reserve(size - int64(len(f.data))) {
		return syscall.ENOSPC
	}
	if size <= int64(len(f.data)) {
		f.data = f.data[:size]
	} else {
		f.data = append(f.data, make([]byte, size-int64(len(f.data)))...)
	}
	now := time.Now()
	f.attr.mtime, f.attr.ctime = now, now
	return 0
}

// set applies a chmod, chown or utimes (c, from attrChange).
func (f *localFile) set(c cache.Attr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := &f.attr
	if c.Mode != nil {
		a.mode = *c.Mode & 0o7777
	}
	if c.UID != nil {
		a.uid = *c.UID
	}
	if c.GID != nil {
		a.gid = *c.GID
	}
	if c.ATime != nil {
		a.atime = *c.ATime
	}
	if c.MTime != nil {
		a.mtime = *c.MTime
	}
	if c.CTime != nil {
		a.ctime = *c.CTime
	}
}

// localIno is the inode number of the local entry numbered seq: above
// 2^62 + 2^61 + 2^60, past the numbers of staged copies (stagedIno).
func localIno(seq uint64) uint64 { return 1<<62 | 1<<61 | 1<<60 | seq }

// localNode is a local entry in the tree. It follows its entry, not a name:
// a rename moves the entry and the kernel moves the node.
type localNode struct {
	node
	file *localFile
}

var (
	_ = (gofs.NodeGetattrer)((*localNode)(nil))
	_ = (gofs.NodeSetattrer)((*localNode)(nil))
	_ = (gofs.NodeOpener)((*localNode)(nil))
	_ = (gofs.FileReader)((*localNode)(nil))
	_ = (gofs.FileWriter)((*localNode)(nil))
)

// localChild returns the inode of local entry f of folder n.
func (n *dirNode) localChild(ctx context.Context, f *localFile) *gofs.Inode {
	return n.NewInode(ctx, &localNode{node: node{fsys: n.fsys}, file: f}, gofs.StableAttr{Mode: f.typ, Ino: f.ino})
}

func (n *localNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.file.mu.Lock()
	size, a := int64(len(n.file.data)), n.file.attr
	n.file.mu.Unlock()
	n.fsys.SetAttr(&out.Attr, n.file.typ|a.mode, size, a.mtime)
	out.Attr.Owner = fuse.Owner{Uid: a.uid, Gid: a.gid}
	out.Attr.Rdev = a.rdev
	out.Attr.SetTimes(&a.atime, &a.mtime, &a.ctime)
	if a.unlinked {
		out.Attr.Nlink = 0
	}
	return 0
}

// Setattr: chmod, chown and utimes of any entry; a truncate of a desktop
// file (a special node has no size: EINVAL, which the kernel answers first).
func (n *localNode) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		if n.file.special() {
			return syscall.EINVAL
		}
		if errno := n.file.resize(&n.fsys.local, int64(sz)); errno != 0 {
			return errno
		}
	}
	if c, ok := attrChange(in); ok {
		n.file.set(c)
	}
	return n.Getattr(ctx, fh, out)
}

// Open answers with the node itself as the handle: the content is in memory.
// Only desktop files get here: the kernel opens special nodes itself.
func (n *localNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY && n.fsys.opts.ReadOnly {
		return nil, 0, syscall.EROFS
	}
	if flags&syscall.O_TRUNC != 0 && !n.file.special() { // atomic O_TRUNC (fs.go)
		if errno := n.file.resize(&n.fsys.local, 0); errno != 0 {
			return nil, 0, errno
		}
	}
	return n, fuse.FOPEN_DIRECT_IO, 0
}

func (n *localNode) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n.file.mu.Lock()
	defer n.file.mu.Unlock()
	if off >= int64(len(n.file.data)) {
		return fuse.ReadResultData(nil), 0
	}
	k := copy(dest, n.file.data[off:])
	return fuse.ReadResultData(dest[:k]), 0
}

func (n *localNode) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n.file.mu.Lock()
	defer n.file.mu.Unlock()
	if end := off + int64(len(data)); end > int64(len(n.file.data)) {
		if errno := n.file.resizeLocked(&n.fsys.local, end); errno != 0 {
			return 0, errno
		}
	}
	copy(n.file.data[off:], data)
	now := time.Now()
	n.file.attr.mtime, n.file.attr.ctime = now, now
	return uint32(len(data)), 0
}
