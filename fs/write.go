package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io"
	"os"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
)

// Writes: create, write, truncate and rename work on staging files on local
// disk (package cache's Staging); a file is uploaded as a whole after its last
// close and the write-back delay, or at fsync. Folders are created and removed
// on the service at once.

var (
	_ gofs.FileWriter      = (*fileHandle)(nil)
	_ gofs.FileFsyncer     = (*fileHandle)(nil)
	_ gofs.FileFlusher     = (*fileHandle)(nil)
	_ gofs.FileGetattrer   = (*fileHandle)(nil)
	_ gofs.NodeSetattrer   = (*dirNode)(nil)
	_ gofs.NodeSetxattrer  = (*dirNode)(nil)
	_ gofs.NodeSetxattrer  = (*fileNode)(nil)
	_ gofs.NodeListxattrer = (*dirNode)(nil)
	_ gofs.NodeListxattrer = (*fileNode)(nil)
)

// writable reports whether changes may be made in an area.
func (f *FS) writable(a cache.Area) bool {
	return !f.opts.ReadOnly && f.Staging != nil && a.Kind != cache.Recordings
}

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

func (n *dirNode) target(name string) cache.Target {
	return cache.Target{Area: n.key.Area, ParentID: n.key.ID, Name: name}
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
	i, ok := v.byName[name]
	if !ok || v.files[i].ID <= 0 {
		return api.File{}, false, 0
	}
	return v.files[i], true, 0
}

// stagedNode returns the inode of a staged file of this folder.
func (n *dirNode) stagedNode(ctx context.Context, name string, st *cache.Staged) *gofs.Inode {
	ino := stagedIno(n.key, name)
	if ch := n.GetChild(name); ch != nil && ch.StableAttr().Ino == ino {
		if fn, ok := ch.Operations().(*fileNode); ok {
			fn.mu.Lock()
			fn.staged = st
			fn.mu.Unlock()
			return ch
		}
	}
	fn := &fileNode{fsys: n.fsys, parent: n.key, staged: st, file: api.File{Name: name}}
	return n.NewInode(ctx, fn, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: ino})
}

func (n *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if !n.fsys.writable(n.key.Area) {
		return nil, nil, 0, syscall.EROFS
	}
	if probeName(name) {
		// Desktop litter (.DS_Store, Thumbs.db...) is never uploaded.
		return nil, nil, 0, syscall.EACCES
	}
	t := n.target(name)
	// Acquire opens a pending file for writing under the queue's lock, so its
	// upload cannot retire it in between.
	st := n.fsys.Staging.Acquire(t, true)
	if st == nil {
		var replaces int64
		if f, ok := n.existing(ctx, name); ok {
			if f.IsDir() {
				return nil, nil, 0, syscall.EISDIR
			}
			replaces = f.ID
		}
		var err error
		if st, err = n.fsys.Staging.Create(t, replaces); err != nil {
			return nil, nil, 0, toErrno(n.fsys.Log, "creating "+n.Path(nil)+"/"+name, err)
		}
		st.OpenWriter()
	} else if err := st.File().Truncate(0); err != nil {
		st.CloseWriter()
		return nil, nil, 0, toErrno(n.fsys.Log, "truncating "+name, err)
	}
	st.Touch()
	ch := n.stagedNode(ctx, name, st)
	fn := ch.Operations().(*fileNode)
	fn.fillAttr(&out.Attr)
	return ch, &fileHandle{node: fn, staged: st, writer: true}, 0, 0
}

func (n *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !n.fsys.writable(n.key.Area) {
		return nil, syscall.EROFS
	}
	if _, ok, errno := n.existingErr(ctx, name); ok || errno != 0 {
		if errno != 0 {
			return nil, errno
		}
		return nil, syscall.EEXIST
	}
	if n.fsys.Staging.Lookup(n.target(name)) != nil {
		return nil, syscall.EEXIST
	}
	req := api.CreateDirectoryRequest{ParentID: n.key.ID, Name: name}
	if n.key.Area.Kind == cache.Machine {
		req.MachineID = n.key.Area.MachineID
	}
	d, err := n.fsys.Client.CreateDirectory(ctx, req)
	if err != nil {
		return nil, toErrno(n.fsys.Log, "creating folder "+n.Path(nil)+"/"+name, err)
	}
	now := time.Now()
	f := api.File{ID: d.ID, Name: name, ObjectType: api.ObjectDirectory, ContentType: "directory", ParentID: n.key.ID, LastModified: now}
	n.fsys.Dirs.Put(n.key, f)
	// The new folder is empty: no need to list it before its first use.
	n.fsys.Dirs.Seed(cache.DirKey{Area: n.key.Area, ID: d.ID}, nil)
	ch := n.child(ctx, name, f)
	n.fsys.setAttr(&out.Attr, syscall.S_IFDIR|n.fsys.dirMode(), 0, now)
	return ch, 0
}

func (n *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if !n.fsys.writable(n.key.Area) {
		return syscall.EROFS
	}
	found := false
	if st := n.fsys.Staging.Lookup(n.target(name)); st != nil {
		if err := n.fsys.Staging.Remove(st); err != nil {
			return toErrno(n.fsys.Log, "removing "+name, err)
		}
		found = true
	}
	f, ok, errno := n.existingErr(ctx, name)
	if errno != 0 {
		return errno
	}
	if ok {
		if f.IsDir() {
			return syscall.EISDIR
		}
		if err := n.fsys.Client.DeleteFile(ctx, f.ID); err != nil && !api.IsNotFound(err) {
			return toErrno(n.fsys.Log, "deleting "+n.Path(nil)+"/"+name, err)
		}
		n.fsys.Dirs.Remove(n.key, f.ID)
		n.fsys.Fetcher.Forget(f.ID)
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
	if !n.fsys.writable(n.key.Area) {
		return syscall.EROFS
	}
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
	key := cache.DirKey{Area: n.key.Area, ID: f.ID}
	if len(n.fsys.Staging.Pending(key.Area, key.ID)) > 0 {
		return syscall.ENOTEMPTY
	}
	n.fsys.Dirs.Drop(key)
	l, err := n.fsys.Dirs.List(ctx, key)
	if err != nil {
		return toErrno(n.fsys.Log, "listing "+name, err)
	}
	if len(l.Files) > 0 {
		return syscall.ENOTEMPTY
	}
	if err := n.fsys.Client.DeleteFile(ctx, f.ID); err != nil && !api.IsNotFound(err) {
		return toErrno(n.fsys.Log, "deleting folder "+n.Path(nil)+"/"+name, err)
	}
	n.fsys.Dirs.Remove(n.key, f.ID)
	n.fsys.Dirs.Drop(key)
	return 0
}

// Rename moves a file. A pending file is renamed locally; a file already on
// the service is uploaded under the new name, and the old one deleted after
// that upload succeeded. Folders answer EXDEV, so mv copies them.
func (n *dirNode) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	dst, ok := newParent.(*dirNode)
	if !ok || !n.fsys.writable(n.key.Area) || !n.fsys.writable(dst.key.Area) {
		return syscall.EROFS
	}
	const renameNoreplace, renameExchange = 1, 2
	if flags&renameExchange != 0 {
		return syscall.EINVAL
	}
	to := dst.target(newName)
	old, onService := n.existing(ctx, name)
	if onService && old.IsDir() {
		return syscall.EXDEV
	}
	if flags&renameNoreplace != 0 {
		if _, ok := dst.existing(ctx, newName); ok || n.fsys.Staging.Lookup(to) != nil {
			return syscall.EEXIST
		}
	}
	if st := n.fsys.Staging.Lookup(n.target(name)); st != nil {
		var replaces int64
		if f, ok := dst.existing(ctx, newName); ok && !f.IsDir() {
			replaces = f.ID
		}
		if err := n.fsys.Staging.RenameReplacing(st, to, replaces); err != nil {
			return toErrno(n.fsys.Log, "renaming "+name, err)
		}
		n.fsys.mtimes.move(n.target(name), to)
		if onService {
			// The pending file replaced a service file of the old name: that
			// one goes when the new name is on the service.
			st.DeleteAfterUpload(old.ID)
			n.fsys.Dirs.Hide(n.key, old.ID)
		}
		n.moved(name, dst, newName, st)
		return 0
	}
	if !onService {
		return syscall.ENOENT
	}
	var replaces int64
	if f, ok := dst.existing(ctx, newName); ok {
		if f.IsDir() {
			return syscall.EISDIR
		}
		replaces = f.ID
	}
	// The content is fetched before anything at the new name is replaced:
	// a failed fetch leaves both names as they were.
	r, err := n.fsys.fetchAll(ctx, old)
	if err != nil {
		return toErrno(n.fsys.Log, "renaming "+n.Path(nil)+"/"+name, err)
	}
	defer r.Close()
	st, err := n.fsys.Staging.Create(to, replaces)
	if err != nil {
		return toErrno(n.fsys.Log, "renaming "+name, err)
	}
	st.OpenWriter()
	if err := copyFrom(r, old.Size, st.File()); err != nil {
		st.CloseWriter()
		n.fsys.Staging.Remove(st)
		return toErrno(n.fsys.Log, "renaming "+n.Path(nil)+"/"+name, err)
	}
	st.DeleteAfterUpload(old.ID)
	st.SetModTime(n.fsys.mtimes.shown(old))
	n.fsys.mtimes.setPending(to, n.fsys.mtimes.shown(old))
	st.Touch()
	n.moved(name, dst, newName, st)
	st.CloseWriter()
	n.fsys.Dirs.Hide(n.key, old.ID) // gone from here now; from the service once the new name is there
	return 0
}

// moved points the inode the kernel moved (go-fuse moves it after Rename
// returns) at its new folder, name and staging copy, so an open right after
// the rename writes to the new name.
func (n *dirNode) moved(name string, dst *dirNode, newName string, st *cache.Staged) {
	ch := n.GetChild(name)
	if ch == nil {
		return
	}
	if fn, ok := ch.Operations().(*fileNode); ok {
		fn.mu.Lock()
		fn.parent = dst.key
		fn.file.Name = newName
		fn.staged = st
		fn.mu.Unlock()
	}
}

// fetchAll makes the whole content of a service file present in the content
// cache and returns the reader holding it (the caller closes it).
func (f *FS) fetchAll(ctx context.Context, file api.File) (*cache.Reader, error) {
	r, err := f.Fetcher.Open(metaOf(file))
	if err != nil {
		return nil, err
	}
	if file.Size > 0 {
		if _, err := r.Ready(ctx, 0, file.Size); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// copyFrom writes the size bytes a fetchAll reader holds into w.
func copyFrom(r *cache.Reader, size int64, w *os.File) error {
	if err := w.Truncate(0); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	_, err := io.Copy(io.NewOffsetWriter(w, 0), io.NewSectionReader(r.File(), 0, size))
	return err
}

// stagedOf is the node's staged file while it is pending. Once uploaded, the
// node follows its listing again.
func (n *fileNode) stagedOf() *cache.Staged {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.staged
	if st != nil && (n.fsys.Staging == nil || n.fsys.Staging.Lookup(st.Target()) != st) {
		// Uploaded (or removed): the listing now has the file.
		t := st.Target() // where it went, wherever the node was before
		n.parent = cache.DirKey{Area: t.Area, ID: t.ParentID}
		n.file = api.File{Name: t.Name} // a placeholder until the listing is read
		if l, ok := n.fsys.Dirs.Cached(n.parent); ok {
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
	n.stagedOf()
	n.mu.Lock()
	f, parent := n.file, n.parent
	n.mu.Unlock()
	if f.ID > 0 {
		return f, 0
	}
	l, err := n.fsys.Dirs.List(ctx, parent)
	if err != nil {
		return api.File{}, toErrno(n.fsys.Log, "listing for "+n.Path(nil), err)
	}
	for _, x := range l.Files {
		if x.Name == f.Name && !x.IsDir() {
			n.mu.Lock()
			n.file = x
			n.mu.Unlock()
			return x, 0
		}
	}
	return api.File{}, syscall.ENOENT
}

// fillAttr fills a file's attributes: a pending file's from its staging copy.
func (n *fileNode) fillAttr(a *fuse.Attr) {
	if st := n.stagedOf(); st != nil {
		n.fsys.setAttr(a, syscall.S_IFREG|n.fsys.fileMode(), st.Size(), st.ModTime())
		return
	}
	n.mu.Lock()
	f := n.file
	n.mu.Unlock()
	n.fsys.setAttr(a, syscall.S_IFREG|n.fsys.fileMode(), f.Size, n.fsys.mtimes.shown(f))
}

// targetOf is where the node's file goes on the service.
func (n *fileNode) targetOf() cache.Target {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.staged != nil {
		return n.staged.Target()
	}
	return cache.Target{Area: n.parent.Area, ParentID: n.parent.ID, Name: n.file.Name}
}

// stage opens the node's content for writing: its pending staging copy, or a
// new one holding the service's content (none when truncating). The caller
// owns a writer of the result and closes it (CloseWriter).
func (n *fileNode) stage(ctx context.Context, truncate bool) (*cache.Staged, syscall.Errno) {
	// One staging at a time per file: a second writer waits and then opens
	// the copy the first made, filled.
	n.stageMu.Lock()
	defer n.stageMu.Unlock()
	if st := n.fsys.Staging.Acquire(n.targetOf(), true); st != nil {
		n.mu.Lock()
		n.staged = st
		n.mu.Unlock()
		return st, 0
	}
	f, errno := n.current(ctx)
	if errno != 0 {
		return nil, errno
	}
	var r *cache.Reader
	if !truncate {
		// Fetched before the copy exists, so nobody sees it half filled.
		var err error
		if r, err = n.fsys.fetchAll(ctx, f); err != nil {
			return nil, toErrno(n.fsys.Log, "staging "+n.Path(nil), err)
		}
		defer r.Close()
	}
	st, err := n.fsys.Staging.Create(n.targetOf(), f.ID)
	if err != nil {
		return nil, toErrno(n.fsys.Log, "staging "+n.Path(nil), err)
	}
	st.OpenWriter()
	if r != nil {
		if err := copyFrom(r, f.Size, st.File()); err != nil {
			st.CloseWriter()
			n.fsys.Staging.Remove(st)
			return nil, toErrno(n.fsys.Log, "staging "+n.Path(nil), err)
		}
		st.SetModTime(n.fsys.mtimes.shown(f))
	}
	n.mu.Lock()
	n.staged = st
	n.mu.Unlock()
	return st, 0
}

func (n *fileNode) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if !n.fsys.writable(n.parentKey().Area) {
		return syscall.EROFS
	}
	if size, ok := in.GetSize(); ok {
		st, errno := n.stage(ctx, size == 0)
		if errno != 0 {
			return errno
		}
		err := st.File().Truncate(int64(size))
		st.Touch()
		st.CloseWriter()
		if err != nil {
			return toErrno(n.fsys.Log, "truncating "+n.Path(nil), err)
		}
	}
	if mtime, ok := in.GetMTime(); ok {
		if st := n.stagedOf(); st != nil {
			st.SetModTime(mtime)
			n.fsys.mtimes.setPending(st.Target(), mtime)
		} else {
			n.mu.Lock()
			f := n.file
			n.mu.Unlock()
			n.fsys.mtimes.setFile(f, mtime)
		}
	}
	// chmod and chown succeed without effect (cp -a and rsync -a expect it).
	n.fillAttr(&out.Attr)
	return 0
}

func (h *fileHandle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	h.node.fillAttr(&out.Attr)
	return 0
}

func (h *fileHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if h.staged == nil || !h.writer {
		return 0, syscall.EBADF
	}
	n, err := h.staged.File().WriteAt(data, off)
	h.staged.Touch()
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return uint32(n), syscall.ENOSPC
		}
		return uint32(n), toErrno(h.node.fsys.Log, "writing "+h.node.Path(nil), err)
	}
	return uint32(n), 0
}

// Flush (each close) reports nothing new: the upload happens after the last
// close; fsync waits for it and reports it.
func (h *fileHandle) Flush(ctx context.Context) syscall.Errno { return 0 }

func (h *fileHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if h.staged == nil {
		return 0
	}
	if err := h.node.fsys.Staging.Flush(ctx, h.staged); err != nil {
		return toErrno(h.node.fsys.Log, "uploading "+h.node.Path(nil), err)
	}
	return 0
}

// Folders take chmod, chown and utimes without effect on the service (it
// keeps no modes, owners or folder times); a time set shows until the next
// listing. cp -a, rsync -a and mv expect them to succeed.
func (n *dirNode) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if !n.fsys.writable(n.key.Area) {
		return syscall.EROFS
	}
	if mtime, ok := in.GetMTime(); ok {
		n.mu.Lock()
		n.mtime = mtime
		n.mu.Unlock()
	}
	return n.Getattr(ctx, fh, out)
}

// Extended attributes are not kept: setting one answers ENOTSUP, which copy
// tools take as "not supported here" rather than as a failure.
func (n *dirNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOTSUP
}

func (n *fileNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOTSUP
}

func (n *dirNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENODATA
}

func (n *dirNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) { return 0, 0 }

func (n *fileNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) { return 0, 0 }
