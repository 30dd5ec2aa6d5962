package fs

// FUSE passthrough (Linux 6.9+, root): a file open on this mount whose
// content is a local file is handed to the kernel as that file, so its reads
// and writes go straight to the local disk and never reach the daemon.
//
// Which opens: a file opened for reading whose content is whole in the
// content cache (its cache file is the backing file). The kernel allows one
// backing file per inode at a time, and no open of another mode beside it
// (an open of the kernel's page-cache mode beside a passthrough one fails
// with EIO), so every open of a file is counted here (ptState) and decides:
//   - while the file has passthrough opens, every new open is one too, on the
//     same backing file, checked to be the content the open would read (else
//     ESTALE, and the kernel looks the name up again). A writer's open, a
//     truncate or a rename stages the file, and a staging copy of a backing
//     file's content is that very file (Store.StageCopy asks liveFile;
//     Staging.Adopt): what the writer writes, the readers read at once, as
//     on a disk, and the upload sends it;
//   - while it has other opens, a new open is one of those too;
//   - else a reader of whole cached content starts passthrough.
//
// go-fuse's own passthrough (FilePassthroughFder) keeps one backing file per
// inode but releases it after the handle's Release returns, so an open in
// between would get the backing file of the content before; this mount
// registers its backing files itself (ptRaw) and releases them in the
// handle's Release, under the same lock as the choice.
//
// Where the kernel or the privileges do not allow it (not root, an older
// kernel, a cache on a stacked filesystem), the mount probes once at its
// start and runs without; .ctl/stats and orgfs status say which.

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/writeback"
)

// passthrough is the mount's passthrough state.
type passthrough struct {
	on     atomic.Bool  // the kernel accepts backing files (probed at mount)
	why    atomic.Value // string: why it is off
	opens  atomic.Int64 // opens served in passthrough
	srv    backingServer
	mu     sync.Mutex
	chosen map[<-chan struct{}]int32 // guarded by mu; backing id of each open in flight that chose passthrough, by its request
	live   map[fileKey]int           // guarded by mu; the backing files in use, with the files using each
	// writers: the handles open for writing in passthrough, whose writes
	// the daemon does not see (NotePassthroughWriters). Guarded by mu.
	writers map[*stagedHandle]struct{}
}

// NotePassthroughWriters notes a change of every file open for writing in
// passthrough, whose writes never reach the daemon: orgfs sync and the
// unmount's drain then send what they wrote so far, as they send the open
// files the daemon writes.
func (f *FS) NotePassthroughWriters() {
	f.pt.mu.Lock()
	hs := make([]*stagedHandle, 0, len(f.pt.writers))
	for h := range f.pt.writers {
		hs = append(hs, h)
	}
	f.pt.mu.Unlock()
	for _, h := range hs {
		h.staged.Touch()
	}
}

// backingServer registers backing files with the kernel (the FUSE server).
type backingServer interface {
	RegisterBackingFd(m *fuse.BackingMap) (int32, syscall.Errno)
	UnregisterBackingFd(id int32) syscall.Errno
}

// PassthroughMode is how a mount serves reads of cached content: "on"
// (passthrough), or "off: " and why.
func (f *FS) PassthroughMode() (mode string, opens int64) {
	if f.pt.on.Load() {
		return "on", f.pt.opens.Load()
	}
	why, _ := f.pt.why.Load().(string)
	if why == "" {
		why = "not probed"
	}
	return "off: " + why, f.pt.opens.Load()
}

// ptState is a file's opens as the kernel sees them (fileNode.pt).
type ptState struct {
	opens int      // handles open in passthrough
	other int      // handles open otherwise
	id    int32    // the backing id while opens > 0
	file  *os.File // the backing file while opens > 0 (its own descriptor)
	key   fileKey  // its identity
}

// ptRaw is the mount's FUSE file system: go-fuse's node bridge, with the
// backing id of an open that chose passthrough put in its answer.
type ptRaw struct {
	fuse.RawFileSystem
	pt *passthrough
}

func (r *ptRaw) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) (st fuse.Status) {
	defer r.pt.answer(cancel, &st, out) // also when the node's Open panics
	return r.RawFileSystem.Open(cancel, in, out)
}

func (r *ptRaw) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) (st fuse.Status) {
	defer r.pt.answer(cancel, &st, &out.OpenOut)
	return r.RawFileSystem.Create(cancel, in, name, out)
}

// answer puts the backing id of the open in flight that chose passthrough
// in its answer, and forgets the choice (the request's channel serves the
// next request).
func (p *passthrough) answer(cancel <-chan struct{}, st *fuse.Status, out *fuse.OpenOut) {
	p.mu.Lock()
	id, ok := p.chosen[cancel]
	delete(p.chosen, cancel)
	p.mu.Unlock()
	if ok && *st == fuse.OK {
		out.BackingID = id
		out.OpenFlags |= fuse.FOPEN_PASSTHROUGH
		out.OpenFlags &^= fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_DIRECT_IO
	}
}

// request is the key of the open in flight that ctx belongs to.
func request(ctx context.Context) (<-chan struct{}, bool) {
	c, ok := ctx.(*fuse.Context)
	if !ok || c.Cancel == nil {
		return nil, false
	}
	return c.Cancel, true
}

// ptActive reports whether the file has opens in passthrough: a new open
// must be one too, on the same backing file.
func (n *fileNode) ptActive() bool {
	n.ptMu.Lock()
	defer n.ptMu.Unlock()
	return n.pt.opens > 0
}

// childInPassthrough reports whether the file name of n is open in
// passthrough: a create of that name (the kernel forgot the entry) must be
// an open of that file instead, whose staging copy is the kernel's file.
func (n *dirNode) childInPassthrough(name string) bool {
	ch := n.GetChild(name)
	if ch == nil {
		return false
	}
	fn, ok := ch.Operations().(*fileNode)
	return ok && fn.ptActive()
}

// beginOpen counts an open of the file and chooses its mode: passthrough on
// content, the local file this open reads (nil: none), or the daemon. While
// the file has passthrough opens, the open must read the backing file:
// ESTALE when content is another file. Else passthrough starts when start
// allows it (a reader) and the file has no other opens. The caller's
// handle counts its release with endOpen, and so does the caller when its
// open fails after this.
func (n *fileNode) beginOpen(ctx context.Context, content *os.File, start bool) (pt bool, errno syscall.Errno) {
	pt, errno = n.chooseOpen(ctx, content, start)
	if errno != 0 {
		n.fsys.log.WithField("path", n.Path(nil)).
			Warn("fs: the file is open in passthrough on content it no longer has; open it again (ESTALE)")
	}
	return pt, errno
}

func (n *fileNode) chooseOpen(ctx context.Context, content *os.File, start bool) (pt bool, errno syscall.Errno) {
	req, inRequest := request(ctx)
	n.ptMu.Lock()
	defer n.ptMu.Unlock()
	p := &n.fsys.pt
	// The kernel sends a release after close(2) returns: `cat f; cat f`
	// opens again while the first release is on its way. A reader that
	// could start passthrough waits for it a little (2 ms at most), or the
	// open it releases would keep every next one from passthrough.
	for i := 0; i < 20 && content != nil && start && n.pt.opens == 0 && n.pt.other > 0 && p.on.Load(); i++ {
		n.ptMu.Unlock()
		time.Sleep(100 * time.Microsecond)
		n.ptMu.Lock()
	}
	switch {
	case n.pt.opens > 0:
		if content == nil || !inRequest || !sameFile(content, n.pt.file) {
			return false, syscall.ESTALE
		}
	case content != nil && start && n.pt.other == 0 && inRequest && p.on.Load():
		fd, err := syscall.Dup(int(content.Fd()))
		if err != nil {
			n.pt.other++
			return false, 0
		}
		file := os.NewFile(uintptr(fd), content.Name())
		key, ok := keyOf(file)
		id, errno := p.srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(fd)})
		if !ok || errno != 0 {
			file.Close()
			if errno != 0 {
				n.fsys.ptOff("registering a backing file: " + errno.Error())
			} else {
				p.srv.UnregisterBackingFd(id)
			}
			n.pt.other++
			return false, 0
		}
		n.pt.id, n.pt.file, n.pt.key = id, file, key
		p.mu.Lock()
		p.live[key]++
		p.mu.Unlock()
	default:
		n.pt.other++
		return false, 0
	}
	n.pt.opens++
	p.opens.Add(1)
	p.mu.Lock()
	p.chosen[req] = n.pt.id
	p.mu.Unlock()
	return true, 0
}

// endOpen counts a handle's release; the last passthrough one releases the
// backing file.
func (n *fileNode) endOpen(pt bool) {
	n.ptMu.Lock()
	defer n.ptMu.Unlock()
	if !pt {
		n.pt.other--
		return
	}
	n.pt.opens--
	if n.pt.opens > 0 {
		return
	}
	if errno := n.fsys.pt.srv.UnregisterBackingFd(n.pt.id); errno != 0 {
		n.fsys.log.WithError(errno).WithField("path", n.Path(nil)).Warn("fs: releasing a passthrough backing file")
	}
	n.pt.file.Close()
	p := &n.fsys.pt
	p.mu.Lock()
	if p.live[n.pt.key]--; p.live[n.pt.key] <= 0 {
		delete(p.live, n.pt.key)
	}
	p.mu.Unlock()
	n.pt = ptState{other: n.pt.other}
}

// ptOff turns passthrough off for the rest of the mount, saying why once.
func (f *FS) ptOff(why string) {
	if f.pt.on.Swap(false) {
		f.pt.why.Store(why)
		f.log.WithField("reason", why).Warn("fs: FUSE passthrough off: reads of cached files go through the daemon")
	}
}

// stagedWriter opens st, the file's staging copy held for writing, for a
// writer: in passthrough when the file is open so (st is then the kernel's
// file). A writer never starts passthrough: a mapping of a file open so
// holds the local file, not the mount's, so its writes after the close
// would reach the daemon never. On failure the writer is closed.
func (n *fileNode) stagedWriter(ctx context.Context, st *writeback.Staged) (gofs.FileHandle, syscall.Errno) {
	pt, errno := n.beginOpen(ctx, st.File(), false)
	if errno != 0 {
		st.CloseWriter()
		return nil, errno
	}
	h := &stagedHandle{node: n, staged: st, writer: true, pt: pt}
	if pt {
		p := &n.fsys.pt
		p.mu.Lock()
		p.writers[h] = struct{}{}
		p.mu.Unlock()
	}
	return h, 0
}

// liveFile is the store's hook (cache.Store.SetLive): when f is the
// backing file of an open in passthrough, the way to link it under another
// name, so a staging copy of its content is that file itself.
func (f *FS) liveFile(file *os.File) func(path string) error {
	k, ok := keyOf(file)
	if !ok {
		return nil
	}
	f.pt.mu.Lock()
	defer f.pt.mu.Unlock()
	if f.pt.live[k] == 0 {
		return nil
	}
	return func(path string) error { return linkFile(file, path) }
}

// fileKey is a local file's identity.
type fileKey struct{ dev, ino uint64 }

func keyOf(f *os.File) (fileKey, bool) {
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return fileKey{}, false
	}
	return fileKey{uint64(st.Dev), st.Ino}, true
}

// sameFile reports whether two descriptors are of one file.
func sameFile(a, b *os.File) bool {
	ka, okA := keyOf(a)
	kb, okB := keyOf(b)
	return okA && okB && ka == kb
}
