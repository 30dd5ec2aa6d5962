package ctl

// The nodes of the control tree: folders (dirNode), files (fileNode) and
// their open handles (fileHandle), links (linkNode), and the entries that
// make them; every folder and file of .ctl is one of these, given what to
// list, read and do. The streamed task ZIPs are in live.go.
//
// Locks: see docs/ARCHITECTURE.md.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs"
	"github.com/orgfs/orgfs/place"
)

// node is embedded in every node of the control tree: its go-fuse inode,
// the tree, and the answers every node of the mount gives alike.
type node struct {
	gofs.Inode
	fs.Common
	t *Tree
}

var _ = (gofs.NodeStatfser)((*node)(nil))

// Statfs answers as the mount's root does: with the shared storage's quota
// and use.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.t.mount.Statfs(ctx, place.Area{Kind: place.Shared}, out)
}

// fileEntry is a file of the control folder dir.
func (t *Tree) fileEntry(dir, name string, perm uint32, read func(ctx context.Context) ([]byte, error), act *action) entry {
	return entry{name: name, mode: syscall.S_IFREG, make: func() gofs.InodeEmbedder {
		return &fileNode{node: node{t: t}, path: dir + "/" + name, folder: t.folder(dir), perm: perm, read: read, act: act}
	}}
}

// volatileEntry is a file of dir read anew at every open.
func (t *Tree) volatileEntry(dir, name string, perm uint32, read func(ctx context.Context) ([]byte, error), act *action) entry {
	e := t.fileEntry(dir, name, perm, read, act)
	mk := e.make
	e.make = func() gofs.InodeEmbedder {
		n := mk().(*fileNode)
		n.always = true
		return n
	}
	return e
}

// resultEntry is the result file of dir.
func (t *Tree) resultEntry(dir string) entry {
	folder := t.folder(dir)
	return t.volatileEntry(dir, "result", 0o444, func(context.Context) ([]byte, error) { return folder.result(), nil }, nil)
}

// dirEntry is a folder of dir.
func (t *Tree) dirEntry(dir, name string, list func(ctx context.Context) ([]entry, error), find func(ctx context.Context, name string) (*entry, error)) entry {
	path := dir + "/" + name
	return entry{name: name, mode: syscall.S_IFDIR, make: func() gofs.InodeEmbedder {
		return &dirNode{node: node{t: t}, path: path, list: list, find: find}
	}}
}

// ino is the inode number of the control node at path: above 2^63, apart
// from every other node's.
func ino(path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return 1<<63 | h.Sum64()>>1
}

// An entry is a child of a control folder: its name, its type and how to
// make its node.
type entry struct {
	name string
	mode uint32 // syscall.S_IFDIR, S_IFREG or S_IFLNK
	make func() gofs.InodeEmbedder
}

// dirNode is a control folder. list gives its children; find, when set,
// answers names the listing does not show (a task's ZIP, any day's log).
type dirNode struct {
	node
	path string
	list func(ctx context.Context) ([]entry, error)
	find func(ctx context.Context, name string) (*entry, error)
}

var (
	_ = (gofs.NodeGetattrer)((*dirNode)(nil))
	_ = (gofs.NodeLookuper)((*dirNode)(nil))
	_ = (gofs.NodeReaddirer)((*dirNode)(nil))
)

func (n *dirNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.t.mount.SetAttr(&out.Attr, syscall.S_IFDIR|0o555&n.t.mount.DirMode(), 0, time.Time{})
	return 0
}

func (n *dirNode) entries(ctx context.Context) ([]entry, syscall.Errno) {
	es, err := n.list(ctx)
	if err != nil {
		return nil, n.t.readErrno(n.path, err)
	}
	return es, 0
}

func (n *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	es, errno := n.entries(ctx)
	if errno != 0 {
		return nil, errno
	}
	var found *entry
	for i := range es {
		if es[i].name == name {
			found = &es[i]
			break
		}
	}
	if found == nil && n.find != nil {
		e, err := n.find(ctx, name)
		if err != nil {
			return nil, n.t.readErrno(n.path+"/"+name, err)
		}
		found = e
	}
	if found == nil {
		return nil, syscall.ENOENT
	}
	ch := n.NewInode(ctx, found.make(), gofs.StableAttr{Mode: found.mode, Ino: ino(n.path + "/" + name)})
	fs.EntryAttr(ctx, ch, out)
	// The kernel keeps no control entry: an image deleted or a computer
	// created shows at once, and every stat asks (answered from memory).
	// (Zero would mean go-fuse's default; a nanosecond is expired at once.)
	out.SetEntryTimeout(time.Nanosecond)
	out.SetAttrTimeout(time.Nanosecond)
	return ch, 0
}

func (n *dirNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	es, errno := n.entries(ctx)
	if errno != 0 {
		return nil, errno
	}
	out := make([]fuse.DirEntry, len(es))
	for i, e := range es {
		out[i] = fuse.DirEntry{Name: e.name, Mode: e.mode, Ino: ino(n.path + "/" + e.name)}
	}
	return gofs.NewListDirStream(out), 0
}

// linkNode is a symbolic link of the control tree.
type linkNode struct {
	node
	target func(ctx context.Context) (string, error)
}

var (
	_ = (gofs.NodeReadlinker)((*linkNode)(nil))
	_ = (gofs.NodeGetattrer)((*linkNode)(nil))
)

func (n *linkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	target, err := n.target(ctx)
	if err != nil {
		return nil, n.t.readErrno("link", err)
	}
	return []byte(target), 0
}

func (n *linkNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	target, _ := n.target(ctx)
	n.t.mount.SetAttr(&out.Attr, syscall.S_IFLNK|0o777, int64(len(target)), time.Time{})
	return 0
}

// readErrno maps the error of a read or a listing in .ctl (never logging a
// missing entry as a failure).
func (t *Tree) readErrno(path string, err error) syscall.Errno {
	var ce *refusal
	if errors.As(err, &ce) {
		if ce.errno != syscall.ENOENT {
			t.log.WithField("path", path).Warn("ctl: " + ce.msg)
		}
		return ce.errno
	}
	if api.IsNotFound(err) {
		return syscall.ENOENT
	}
	return fs.Errno(t.log, "ctl: reading "+path, err)
}

// fileNode is a control file: read gives its content (nil: it reads empty);
// act, when set, is what writing it does.
type fileNode struct {
	node
	path   string
	folder *folderState
	perm   uint32
	read   func(ctx context.Context) ([]byte, error)
	act    *action
	always bool // read at every open, never kept (results, the queue, stats)

	mu      sync.Mutex
	snap    []byte    // guarded by mu; the content last read
	snapAt  time.Time // guarded by mu
	snapGen [2]uint64 // guarded by mu; the folder's and the tree's generation it was read at
}

var (
	_ = (gofs.NodeGetattrer)((*fileNode)(nil))
	_ = (gofs.NodeSetattrer)((*fileNode)(nil))
	_ = (gofs.NodeOpener)((*fileNode)(nil))
)

// content returns the file's content: the last one read while it is fresh
// (the listing cache time, no write in its folder, no refresh since), else
// read now.
func (n *fileNode) content(ctx context.Context) ([]byte, error) {
	if n.read == nil {
		return nil, nil
	}
	gen := [2]uint64{n.folder.generation(), n.t.gen.Load()}
	if !n.always {
		n.mu.Lock()
		if n.snap != nil && n.snapGen == gen && time.Since(n.snapAt) < n.t.opts.DirCacheTime {
			b := n.snap
			n.mu.Unlock()
			return b, nil
		}
		n.mu.Unlock()
	}
	b, err := n.read(ctx)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.snap, n.snapAt, n.snapGen = b, time.Now(), gen
	n.mu.Unlock()
	return b, nil
}

// Getattr shows the size of the content as it would read now, so that
// programs trusting st_size read all of it (reads are direct I/O anyway).
func (n *fileNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var size int64
	if h, ok := fh.(*fileHandle); ok && h.data != nil {
		size = int64(len(h.data))
	} else if b, err := n.content(ctx); err == nil {
		size = int64(len(b))
	}
	n.t.mount.SetAttr(&out.Attr, syscall.S_IFREG|n.perm&n.t.mount.FileMode(), size, time.Time{})
	if n.t.mount.ReadOnly() {
		out.Attr.Mode &^= 0o222
	}
	return 0
}

// Setattr accepts the truncation of an open for writing (echo x > file) and
// nothing else.
func (n *fileNode) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		if n.act == nil || n.t.mount.ReadOnly() {
			return syscall.EROFS
		}
		if sz != 0 {
			return syscall.EINVAL
		}
	} else if in.Valid&(fuse.FATTR_MODE|fuse.FATTR_UID|fuse.FATTR_GID) != 0 {
		return syscall.EPERM
	}
	return n.Getattr(ctx, fh, out)
}

func (n *fileNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	acc := flags & syscall.O_ACCMODE
	if acc != syscall.O_RDONLY {
		if n.t.mount.ReadOnly() {
			return nil, 0, syscall.EROFS
		}
		if n.act == nil {
			return nil, 0, syscall.EACCES
		}
	}
	h := &fileHandle{f: n}
	if acc != syscall.O_WRONLY {
		b, err := n.content(ctx)
		if err != nil {
			return nil, 0, n.t.readErrno(n.path, err)
		}
		h.data = b
		if h.data == nil {
			h.data = []byte{}
		}
	}
	return h, fuse.FOPEN_DIRECT_IO, 0
}

// perform parses and runs one input written to the file, keeps the outcome
// in the folder's result, and returns the errno for the write.
func (n *fileNode) perform(ctx context.Context, in []byte) syscall.Errno {
	a := n.act
	text := string(bytes.TrimSpace(in))
	r, err := a.parse(text)
	name := a.name
	if err == nil {
		name = a.name + " " + r.what
	}
	var record any
	if err == nil {
		// An action that changes the service runs to its end once asked, as
		// the mount's changes do (cache.settled): canceled by a signal after
		// the service acted, the write answered EINTR and a Go program wrote
		// it again, a second action. A wait (sync) stops at a signal.
		if !a.waits {
			ctx = context.WithoutCancel(ctx)
		}
		record, err = r.run(ctx)
	}
	res, errno := n.t.outcome(name, err)
	if errno == 0 {
		res.Record = record
		n.t.log.WithField("action", name).Info("ctl: done")
		if a.ends {
			n.forgetFolder()
		}
	}
	n.folder.record(res)
	if a.also != "" {
		n.t.folder(a.also).record(res)
	}
	return errno
}

// forgetFolder tells the kernel that the file's folder is gone, so that no
// cached entry shows it (sent at once: the request that removed it holds no
// lock of that folder).
func (n *fileNode) forgetFolder() {
	_, dir := n.Parent()
	if dir == nil {
		return
	}
	if folder, parent := dir.Parent(); parent != nil {
		parent.NotifyEntry(folder)
	}
}

// fileHandle is an open control file: the content read at open, and the
// input written so far.
type fileHandle struct {
	f    *fileNode
	data []byte // the content read at open (nil when opened write-only)

	mu     sync.Mutex
	buf    []byte // guarded by mu; input not acted on yet
	tooBig bool   // guarded by mu; the input passed maxInput: the rest is refused too
}

var (
	_ = (gofs.FileReader)((*fileHandle)(nil))
	_ = (gofs.FileWriter)((*fileHandle)(nil))
	_ = (gofs.FileFlusher)((*fileHandle)(nil))
)

// maxInput bounds what one action may be given.
const maxInput = 1 << 20

func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h.data[off:min(off+int64(len(dest)), int64(len(h.data)))]), 0
}

// Write acts on the input as soon as it is complete: a JSON value that
// parses, or a line (ended by a newline, or one that parses on its own as
// printf sends it). Until then it is kept, and acted on at flush.
func (h *fileHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tooBig {
		// The kernel cut one write(2) into requests and answered the one
		// refused with a short count; the program writes the rest, which
		// is refused as the input it belongs to (never taken as new input).
		return 0, syscall.EFBIG
	}
	h.buf = append(h.buf, data...)
	if len(h.buf) > maxInput {
		h.buf, h.tooBig = nil, true
		res, errno := h.f.t.outcome(h.f.act.name, refuse(syscall.EFBIG, "input larger than %d bytes", maxInput))
		h.f.folder.record(res)
		return 0, errno
	}
	if !h.complete() {
		return uint32(len(data)), 0
	}
	in := h.buf
	h.buf = nil
	if errno := h.f.perform(ctx, in); errno != 0 {
		return 0, errno
	}
	return uint32(len(data)), 0
}

func (h *fileHandle) complete() bool {
	a := h.f.act
	t := bytes.TrimSpace(h.buf)
	switch {
	case a.anything:
		return len(h.buf) > 0
	case a.json && len(t) == 0:
		return false
	case a.json:
		// Complete when it parses, or when it is already wrong whatever
		// follows (a syntax error before the end): refused now.
		var v any
		err := json.Unmarshal(t, &v)
		var se *json.SyntaxError
		return err == nil || (errors.As(err, &se) && se.Offset < int64(len(t)))
	case bytes.HasSuffix(h.buf, []byte("\n")):
		return true // a line, even an empty one (refused: no word)
	case len(t) == 0:
		return false
	}
	_, err := a.parse(string(t))
	return err == nil
}

// Flush acts on input left incomplete (a JSON body that does not parse is
// refused here) and returns its errno to close(2).
func (h *fileHandle) Flush(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buf) == 0 {
		return 0
	}
	in := h.buf
	h.buf = nil
	return h.f.perform(ctx, in)
}
