package fs

// The handles of an open file: readHandle (content through the fetcher and
// the content cache) and stagedHandle (the staging copy).
//
// Locks: readHandle.mu, a leaf held for memory only; the cache's, inside
// the cache calls; a file node's mu for its fields, never with
// readHandle.mu (docs/ARCHITECTURE.md).

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/writeback"
)

// An open file is one of two handles, chosen by fileNode.Open as rclone's
// vfs chooses between its ReadFileHandle and RWFileHandle: a readHandle
// reads the service's content through the content cache; a stagedHandle
// reads, and when opened for writing writes, the file's staging copy.

// readHandle is a file opened for reading while it is on the service and
// not pending: its content comes through the fetcher and the content cache.
//
// Many writers: the version it opened may be replaced or deleted on the
// service by another writer. Content already in the cache stays readable;
// once a read needs bytes of a version no longer on the service it answers
// ESTALE, never another version's bytes (fileNode.openReader makes sure a
// new open reads the current version). Another writer's version, once
// listed, is another inode (base.go): this handle's keeps the version it
// read.
//
// This mount's own changes of the file keep its inode, as on a disk: from
// then on the handle reads what every descriptor of the file reads, the
// staging copy while the change is pending, then the version uploaded (its
// content is in the cache). The kernel keeps what a read returns in the
// inode's page cache and sizes reads by the inode's size, so bytes of the
// version opened would show there as part of the changed file.
type readHandle struct {
	node *fileNode

	mu   sync.Mutex
	pt   bool            // constant: open in passthrough (passthrough.go), its reads never come here
	r    *cache.Reader   // guarded by mu; the version it reads
	done []*cache.Reader // guarded by mu; versions it read before (a read may still use one), closed at release
}

var (
	_ = (gofs.FileReader)((*readHandle)(nil))
	_ = (gofs.FileReleaser)((*readHandle)(nil))
	_ = (gofs.FileFlusher)((*readHandle)(nil))
	_ = (gofs.FileFsyncer)((*readHandle)(nil))
)

// Read waits until the bytes are in the cache file, then hands the kernel
// that file's range, which go-fuse splices without copying it through here.
// When the cache cannot hold them (its disk is full), they come straight from
// the object store into dest instead. It waits while content comes, and
// answers EIO once none came for the I/O timeout (a read past the cache: once
// the I/O timeout passed).
func (h *readHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.node.fsys.asked.reads.Add(1)
	if st := h.changedHere(); st != nil {
		defer st.CloseReader()
		n, err := st.File().ReadAt(dest, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, Errno(h.node.fsys.log, "reading "+h.node.Path(nil), err)
		}
		return fuse.ReadResultData(dest[:n]), 0
	}
	r := h.reader()
	n, err := r.Ready(ctx, off, int64(len(dest)))
	if err == io.EOF { // only Ready's own end of file, never a failed fetch
		return fuse.ReadResultData(nil), 0
	}
	if errors.Is(err, cache.ErrNotCached) || errors.Is(err, cache.ErrReadDirect) {
		dctx, cancel := h.node.fsys.bound(ctx)
		got, derr := r.ReadDirect(dctx, dest, off)
		if te := cache.AsTimeout(dctx, derr); te != nil {
			derr = te
		}
		cancel()
		if derr == nil || derr == io.EOF {
			return fuse.ReadResultData(dest[:got]), 0
		}
		err = derr
	}
	if err != nil && cache.Gone(err) {
		// The listing this file was opened from is out of date: forget it, so
		// the next open sees the service's version.
		h.node.fsys.store.Changed(h.node.parentKey(), r.Handle().Meta().ID)
		h.node.fsys.log.WithField("path", h.node.Path(nil)).WithError(err).
			Warn("fs: the version of the file open here was replaced or deleted by another writer (ESTALE); open it again for the current one")
		return nil, syscall.ESTALE
	}
	if err != nil {
		return nil, h.node.fsys.errno(ctx, "reading "+h.node.Path(nil), err)
	}
	if n <= smallRead {
		// A copy costs less than a splice's pipe (git status reads many
		// files of a few bytes).
		k, err := r.Handle().ReadAt(dest[:n], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, Errno(h.node.fsys.log, "reading "+h.node.Path(nil), err)
		}
		return fuse.ReadResultData(dest[:k]), 0
	}
	return fuse.ReadResultFd(r.File().Fd(), off, int(n)), 0
}

// smallRead is the largest read answered by a copy from the cache file
// rather than a splice of it.
const smallRead = 32 << 10

// changedHere returns the file's staging copy, held for reading, when this
// mount changed the file since the handle opened it (an edit, a truncate, a
// rename): the caller closes its reader. Nil while the file is as opened.
func (h *readHandle) changedHere() *writeback.Staged { return h.node.acquirePending() }

// reader returns the reader of the version to read: the one opened, or,
// once this mount uploaded a change of the file (a version that keeps the
// node's inode number), that version.
func (h *readHandle) reader() *cache.Reader {
	n := h.node
	n.mu.Lock()
	f := n.file
	n.mu.Unlock()
	h.mu.Lock()
	r := h.r
	h.mu.Unlock()
	if f.ID == 0 || f.ID == r.Handle().Meta().ID || n.fsys.inoOf(f.ID) != n.StableAttr().Ino {
		return r
	}
	next, err := n.fsys.store.Fetcher.Open(cache.MetaOf(f))
	if err != nil {
		return r // its reads fail as the version opened is gone (ESTALE)
	}
	h.mu.Lock()
	moved := h.r == r
	if moved {
		h.done = append(h.done, h.r)
		h.r = next
	}
	cur := h.r
	h.mu.Unlock()
	if !moved { // another read moved on first
		next.Close()
		return cur
	}
	n.fsys.open.open(f.ID)
	return next
}

func (h *readHandle) Release(ctx context.Context) syscall.Errno {
	defer h.node.endOpen(h.pt)
	h.mu.Lock()
	readers := append(h.done, h.r)
	h.mu.Unlock()
	for _, r := range readers {
		r.Close()
		if u, last := h.node.fsys.open.close(r.Handle().Meta().ID); last {
			h.node.fsys.deleteUnlinked(u)
		}
	}
	return 0
}

// Flush (each close) has nothing to report.
func (h *readHandle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Fsync has nothing to wait for.
func (h *readHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno { return 0 }

// stagedHandle is a file opened for writing, or a pending file opened for
// reading: it reads and writes the staging copy on local disk. It holds a
// writer of the copy (writer) or a reader; the copy is not uploaded while a
// writer has it open.
type stagedHandle struct {
	node   *fileNode
	writer bool // holds a writer: Write is allowed, Release closes a writer
	// pt: open in passthrough (passthrough.go) on the staging copy, whose
	// reads and writes never come here: a writer's close (or fsync) notes
	// a change (notePassthroughWrites).
	pt bool
	mu sync.Mutex
	// staged is the staging copy; nil until the first use of a handle opened
	// for writing on a file of the service (get): guarded by mu.
	staged *writeback.Staged
}

var (
	_ = (gofs.FileReader)((*stagedHandle)(nil))
	_ = (gofs.FileWriter)((*stagedHandle)(nil))
	_ = (gofs.FileReleaser)((*stagedHandle)(nil))
	_ = (gofs.FileFlusher)((*stagedHandle)(nil))
	_ = (gofs.FileFsyncer)((*stagedHandle)(nil))
)

// get returns the handle's staging copy, staged at the first read or write
// of a handle opened on a file of the service (openWriter): the kernel
// sends O_TRUNC as a truncate after the open (go-fuse asks for no atomic
// O_TRUNC), and staging at the open would fetch the content the truncate
// then drops. A `>` redirect or a cp over the file fetches nothing.
func (h *stagedHandle) get(ctx context.Context) (*writeback.Staged, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.staged == nil {
		st, errno := h.node.stageForWriting(ctx, false)
		if errno != 0 {
			return nil, errno
		}
		h.staged = st
	}
	return h.staged, 0
}

// truncate sets the size of the handle's staging copy, made empty (nothing
// fetched) when the handle has none yet and size is 0.
func (h *stagedHandle) truncate(ctx context.Context, size int64) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.staged == nil {
		st, errno := h.node.stageForWriting(ctx, size == 0)
		if errno != 0 {
			return errno
		}
		h.staged = st
	}
	if err := h.staged.File().Truncate(size); err != nil {
		return Errno(h.node.fsys.log, "truncating "+h.node.Path(nil), err)
	}
	h.staged.Touch()
	return 0
}

// current is the staging copy, nil while a lazy handle has none.
func (h *stagedHandle) current() *writeback.Staged {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.staged
}

func (h *stagedHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.node.fsys.asked.reads.Add(1)
	st, errno := h.get(ctx)
	if errno != 0 {
		return nil, errno
	}
	n, err := st.File().ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, Errno(h.node.fsys.log, "reading "+h.node.Path(nil), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *stagedHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.node.fsys.asked.writes.Add(1)
	if !h.writer {
		return 0, syscall.EBADF
	}
	st, errno := h.get(ctx)
	if errno != 0 {
		return 0, errno
	}
	n, err := st.File().WriteAt(data, off)
	st.Touch()
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return uint32(n), syscall.ENOSPC
		}
		return uint32(n), Errno(h.node.fsys.log, "writing "+h.node.Path(nil), err)
	}
	return uint32(n), 0
}

func (h *stagedHandle) Release(ctx context.Context) syscall.Errno {
	defer h.node.endOpen(h.pt)
	st := h.current()
	switch {
	case st == nil: // opened for writing, never written: nothing staged
	case h.writer:
		h.notePassthroughWrites()
		if h.pt {
			p := &h.node.fsys.pt
			p.mu.Lock()
			delete(p.writers, h)
			p.mu.Unlock()
		}
		st.CloseWriter()
	default:
		st.CloseReader()
	}
	return 0
}

// Flush (each close) reports nothing new: the upload happens after the last
// close; fsync waits for it and reports it. A writer in passthrough notes its
// changes here, before close(2) returns (Release comes later, and orgfs sync
// just after the close must find the file pending), and again at Release
// (writes through a mapping that outlived the descriptor).
func (h *stagedHandle) Flush(ctx context.Context) syscall.Errno {
	h.notePassthroughWrites()
	return 0
}

// notePassthroughWrites notes that a writer in passthrough may have changed
// the staging copy: its writes never came here, so every close, fsync and
// release of it counts as a change (an upload more, never one less).
func (h *stagedHandle) notePassthroughWrites() {
	if h.pt && h.writer {
		h.staged.Touch()
	}
}

// Fsync uploads the staging copy now and reports how that went.
func (h *stagedHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	st := h.current()
	if st == nil {
		return 0 // nothing written
	}
	h.notePassthroughWrites()
	if err := h.node.fsys.store.Flush(ctx, st); err != nil {
		return h.node.fsys.errno(ctx, "uploading "+h.node.Path(nil), err)
	}
	return 0
}
