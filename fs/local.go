package fs

// Local-only files: what desktops write beside every file and folder
// (AppleDouble ._* files, .DS_Store, Thumbs.db, desktop.ini...) lives in
// memory for the life of the mount and is never uploaded, so that a Finder
// or Explorer copy succeeds without litter on the service.
//
// Locks: localFiles.mu guards the store's maps; localFile.mu a file's
// content. A file's mu is taken without the store's (never both).

import (
	"context"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/cache"
)

const (
	maxLocalFile  = 8 << 20  // one local-only file; larger is EFBIG
	maxLocalBytes = 64 << 20 // all of them; more is ENOSPC
)

// localFiles are the local-only files of a mount, by folder and name.
type localFiles struct {
	mu    sync.Mutex
	dirs  map[cache.DirKey]map[string]*localFile // guarded by mu
	bytes int64                                  // guarded by mu; of every file
}

// localFile is one local-only file.
type localFile struct {
	mu    sync.Mutex
	data  []byte    // guarded by mu
	mtime time.Time // guarded by mu
}

func (l *localFiles) get(dir cache.DirKey, name string) *localFile {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dirs[dir][name]
}

// create returns the file, made empty when it exists.
func (l *localFiles) create(dir cache.DirKey, name string) *localFile {
	l.mu.Lock()
	if l.dirs == nil {
		l.dirs = map[cache.DirKey]map[string]*localFile{}
	}
	if l.dirs[dir] == nil {
		l.dirs[dir] = map[string]*localFile{}
	}
	f := l.dirs[dir][name]
	if f == nil {
		f = &localFile{mtime: time.Now()}
		l.dirs[dir][name] = f
		l.mu.Unlock()
		return f
	}
	l.mu.Unlock()
	f.resize(l, 0)
	return f
}

func (l *localFiles) remove(dir cache.DirKey, name string) bool {
	l.mu.Lock()
	f := l.dirs[dir][name]
	delete(l.dirs[dir], name)
	l.mu.Unlock()
	if f != nil {
		f.resize(l, 0)
	}
	return f != nil
}

func (l *localFiles) rename(dir cache.DirKey, name string, to cache.DirKey, newName string) {
	l.mu.Lock()
	f := l.dirs[dir][name]
	delete(l.dirs[dir], name)
	if l.dirs[to] == nil {
		l.dirs[to] = map[string]*localFile{}
	}
	old := l.dirs[to][newName]
	l.dirs[to][newName] = f
	l.mu.Unlock()
	if old != nil {
		old.resize(l, 0)
	}
}

// names are the local-only files of a folder.
func (l *localFiles) names(dir cache.DirKey) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.dirs[dir]))
	for n := range l.dirs[dir] {
		out = append(out, n)
	}
	return out
}

// dropDir forgets a removed folder's local-only files.
func (l *localFiles) dropDir(dir cache.DirKey) {
	for _, n := range l.names(dir) {
		l.remove(dir, n)
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
	f.mtime = time.Now()
	return 0
}

// localIno is the inode number of a local-only file.
func localIno(dir cache.DirKey, name string) uint64 { return nameIno(dir, "\x00local\x00"+name) }

// localNode is a local-only file in the tree.
type localNode struct {
	node
	dir  cache.DirKey
	name string
	file *localFile
}

var (
	_ = (gofs.NodeGetattrer)((*localNode)(nil))
	_ = (gofs.NodeSetattrer)((*localNode)(nil))
	_ = (gofs.NodeOpener)((*localNode)(nil))
	_ = (gofs.FileReader)((*localNode)(nil))
	_ = (gofs.FileWriter)((*localNode)(nil))
)

// localChild returns the inode of a local-only file of folder n.
func (n *dirNode) localChild(ctx context.Context, name string, f *localFile) *gofs.Inode {
	return n.NewInode(ctx, &localNode{node: node{fsys: n.fsys}, dir: n.dirKey(), name: name, file: f},
		gofs.StableAttr{Mode: syscall.S_IFREG, Ino: localIno(n.dirKey(), name)})
}

func (n *localNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.file.mu.Lock()
	size, mtime := int64(len(n.file.data)), n.file.mtime
	n.file.mu.Unlock()
	n.fsys.SetAttr(&out.Attr, syscall.S_IFREG|n.fsys.FileMode(), size, mtime)
	return 0
}

func (n *localNode) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		if errno := n.file.resize(&n.fsys.local, int64(sz)); errno != 0 {
			return errno
		}
	}
	if mt, ok := in.GetMTime(); ok {
		n.file.mu.Lock()
		n.file.mtime = mt
		n.file.mu.Unlock()
	}
	return n.Getattr(ctx, fh, out)
}

// Open answers with the node itself as the handle: the content is in memory.
func (n *localNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY && n.fsys.opts.ReadOnly {
		return nil, 0, syscall.EROFS
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
	n.file.mtime = time.Now()
	return uint32(len(data)), 0
}
