package fs

// The control tree .ctl/: the organization's management interface as files.
// This file holds the machinery every control file and folder shares; the
// tree itself is in ctl_tree.go, ctl_machines.go, ctl_images.go,
// ctl_logs.go and ctl_local.go.
//
// Locks: ctlFile.mu, ctlHandle.mu, ctlFolder.mu and ctlState.mu each guard
// their own fields, are held for memory only and are never nested, except
// ctlHandle.mu, which is held across the action a write runs (it serializes
// the writes of one open file) and takes ctlFolder.mu and ctlState.mu inside.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sync/singleflight"

	"github.com/orgfs/orgfs/api"
)

// ctlState is what the control tree keeps for the life of the mount.
type ctlState struct {
	gen  atomic.Uint64 // bumped by .ctl/refresh: every value is read again
	memo *memo

	mu      sync.Mutex
	folders map[string]*ctlFolder // guarded by mu; by path, so results outlive the kernel's inodes
	links   map[int64]string      // guarded by mu; the last access link per computer
	jobs    map[int64]time.Time   // guarded by mu; download jobs this mount started
}

func newCtlState(ttl time.Duration) *ctlState {
	return &ctlState{
		memo:    &memo{ttl: ttl, m: map[string]memoEntry{}},
		folders: map[string]*ctlFolder{},
		links:   map[int64]string{},
		jobs:    map[int64]time.Time{},
	}
}

// folder returns the state of the control folder at path.
func (s *ctlState) folder(path string) *ctlFolder {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folders[path]
	if f == nil {
		f = &ctlFolder{path: path}
		s.folders[path] = f
	}
	return f
}

// refresh drops every value read: the next read of any file asks the service.
func (s *ctlState) refresh() {
	s.gen.Add(1)
	s.memo.drop()
}

// ctlFolder is a control folder's state: the outcome of its last write,
// and a generation that each write bumps so its files are read again.
type ctlFolder struct {
	path string
	mu   sync.Mutex
	gen  uint64 // guarded by mu
	last []byte // guarded by mu; the result file's content
}

func (f *ctlFolder) generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// record keeps an outcome as the folder's result and bumps its generation.
func (f *ctlFolder) record(r Result) {
	b, _ := jsonOut(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = b
	f.gen++
}

func (f *ctlFolder) result() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		return []byte("{}\n")
	}
	return f.last
}

// Result is a folder's result file: the outcome of its last write.
type Result struct {
	OK      bool      `json:"ok"`
	Code    int       `json:"code"`            // the service's client_code; 0 when refused before any request
	Errno   string    `json:"errno,omitempty"` // what the write returned, e.g. EBUSY
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`
	Record  any       `json:"record,omitempty"` // what the service answered, when it is a record worth keeping
}

// ctlError is a refusal made before any request, or a state the service
// would not report as an error (starting a running computer).
type ctlError struct {
	errno syscall.Errno
	msg   string
}

func (e *ctlError) Error() string { return e.msg }

func refuse(errno syscall.Errno, format string, args ...any) error {
	return &ctlError{errno: errno, msg: fmt.Sprintf(format, args...)}
}

// outcome turns an action's error into its result and errno.
func (f *FS) outcome(action string, err error) (Result, syscall.Errno) {
	r := Result{OK: err == nil, Code: api.CodeOK, Message: "OK", Time: time.Now().UTC(), Action: action}
	if err == nil {
		return r, 0
	}
	var ce *ctlError
	var ae *api.Error
	var errno syscall.Errno
	switch {
	case errors.As(err, &ce):
		r.Code, r.Message, errno = 0, ce.msg, ce.errno
		f.Log.WithField("action", action).Warn("ctl: refused: " + ce.msg)
	case errors.As(err, &ae):
		r.Code, r.Message = ae.Code, ae.Message
		if r.Message == "" {
			r.Message = ae.Error()
		}
		errno = toErrno(f.Log, "ctl: "+action, err)
	default:
		r.Code, r.Message = 0, err.Error()
		errno = toErrno(f.Log, "ctl: "+action, err)
	}
	r.Errno = errnoName(errno)
	return r, errno
}

// errnoNames are the symbolic names results show for the errnos writes return.
var errnoNames = map[syscall.Errno]string{
	syscall.ENOENT: "ENOENT", syscall.EACCES: "EACCES", syscall.EINVAL: "EINVAL", syscall.EBUSY: "EBUSY",
	syscall.EDQUOT: "EDQUOT", syscall.EIO: "EIO", syscall.EFBIG: "EFBIG", syscall.EALREADY: "EALREADY",
	syscall.EAGAIN: "EAGAIN", syscall.ENOSPC: "ENOSPC", syscall.EEXIST: "EEXIST", syscall.EROFS: "EROFS",
	syscall.ETIMEDOUT: "ETIMEDOUT", syscall.EINTR: "EINTR", syscall.ENOTSUP: "ENOTSUP", syscall.EPERM: "EPERM",
}

// errnoName is the symbolic name of an errno (EBUSY), as a result shows it.
func errnoName(e syscall.Errno) string {
	if name, ok := errnoNames[e]; ok {
		return name
	}
	return fmt.Sprintf("errno %d", int(e))
}

// jsonOut is a record as control files show it: indented JSON and a newline.
func jsonOut(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// lineOut is a single value as control files show it: one line.
func lineOut(s string) []byte { return []byte(s + "\n") }

// memo keeps the service's answers the control files share (the image
// list, a computer's usage) for the listing cache time; a fetch is shared by
// every caller asking at once.
type memo struct {
	ttl time.Duration
	sf  singleflight.Group

	mu  sync.Mutex
	gen uint64 // guarded by mu; bumped by drop, so a fetch begun before it is not kept
	m   map[string]memoEntry
}

type memoEntry struct {
	v     any
	at    time.Time
	brief bool // a value in motion (a computer starting, an image building): kept a second only
}

// briefTTL is how long a value in motion is kept, so that scripts waiting
// for a state see it when it comes.
const briefTTL = time.Second

func (m *memo) get(ctx context.Context, key string, fetch func(ctx context.Context) (any, error)) (any, error) {
	m.mu.Lock()
	if e, ok := m.m[key]; ok && time.Since(e.at) < m.ttl && (!e.brief || time.Since(e.at) < briefTTL) {
		m.mu.Unlock()
		return e.v, nil
	}
	gen := m.gen
	m.mu.Unlock()
	v, err, _ := m.sf.Do(fmt.Sprint(key, "\x00", gen), func() (any, error) {
		v, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		if m.gen == gen {
			b, _ := v.(interface{ moving() bool })
			m.m[key] = memoEntry{v: v, at: time.Now(), brief: b != nil && b.moving()}
		}
		m.mu.Unlock()
		return v, nil
	})
	return v, err
}

func (m *memo) drop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.m = map[string]memoEntry{}
}

// memoGet is memo.get with the value's type.
func memoGet[T any](ctx context.Context, m *memo, key string, fetch func(ctx context.Context) (T, error)) (T, error) {
	v, err := m.get(ctx, key, func(ctx context.Context) (any, error) { return fetch(ctx) })
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// ctlFileEntry is a file of the control folder dir.
func (f *FS) ctlFileEntry(dir, name string, perm uint32, read func(ctx context.Context) ([]byte, error), act *ctlAction) ctlEntry {
	return ctlEntry{name: name, mode: syscall.S_IFREG, make: func() gofs.InodeEmbedder {
		return &ctlFile{node: node{fsys: f}, path: dir + "/" + name, folder: f.ctl.folder(dir), perm: perm, read: read, act: act}
	}}
}

// ctlLiveEntry is a file of dir read anew at every open.
func (f *FS) ctlLiveEntry(dir, name string, perm uint32, read func(ctx context.Context) ([]byte, error), act *ctlAction) ctlEntry {
	e := f.ctlFileEntry(dir, name, perm, read, act)
	mk := e.make
	e.make = func() gofs.InodeEmbedder {
		n := mk().(*ctlFile)
		n.always = true
		return n
	}
	return e
}

// ctlResultEntry is the result file of dir.
func (f *FS) ctlResultEntry(dir string) ctlEntry {
	folder := f.ctl.folder(dir)
	return f.ctlLiveEntry(dir, "result", 0o444, func(context.Context) ([]byte, error) { return folder.result(), nil }, nil)
}

// ctlDirEntry is a folder of dir.
func (f *FS) ctlDirEntry(dir, name string, list func(ctx context.Context) ([]ctlEntry, error), find func(ctx context.Context, name string) (*ctlEntry, error)) ctlEntry {
	path := dir + "/" + name
	return ctlEntry{name: name, mode: syscall.S_IFDIR, make: func() gofs.InodeEmbedder {
		return &ctlDir{node: node{fsys: f}, path: path, list: list, find: find}
	}}
}

// jsonRead reads a record with fetch and shows it as JSON.
func jsonRead[T any](fetch func(ctx context.Context) (T, error)) func(ctx context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		v, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		return jsonOut(v)
	}
}

// ctlIno is the inode number of the control node at path: above 2^63, apart
// from every other node's.
func ctlIno(path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return 1<<63 | h.Sum64()>>1
}

// A ctlEntry is a child of a control folder: its name, its type and how to
// make its node.
type ctlEntry struct {
	name string
	mode uint32 // syscall.S_IFDIR, S_IFREG or S_IFLNK
	make func() gofs.InodeEmbedder
}

// ctlDir is a control folder. list gives its children; find, when set,
// answers names the listing does not show (a task's ZIP, any day's log).
type ctlDir struct {
	node
	path string
	list func(ctx context.Context) ([]ctlEntry, error)
	find func(ctx context.Context, name string) (*ctlEntry, error)
}

var (
	_ = (gofs.NodeGetattrer)((*ctlDir)(nil))
	_ = (gofs.NodeLookuper)((*ctlDir)(nil))
	_ = (gofs.NodeReaddirer)((*ctlDir)(nil))
)

func (n *ctlDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fsys.setAttr(&out.Attr, syscall.S_IFDIR|0o555&n.fsys.dirMode(), 0, time.Time{})
	return 0
}

func (n *ctlDir) entries(ctx context.Context) ([]ctlEntry, syscall.Errno) {
	es, err := n.list(ctx)
	if err != nil {
		return nil, n.fsys.ctlErrno(n.path, err)
	}
	return es, 0
}

func (n *ctlDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	es, errno := n.entries(ctx)
	if errno != 0 {
		return nil, errno
	}
	var found *ctlEntry
	for i := range es {
		if es[i].name == name {
			found = &es[i]
			break
		}
	}
	if found == nil && n.find != nil {
		e, err := n.find(ctx, name)
		if err != nil {
			return nil, n.fsys.ctlErrno(n.path+"/"+name, err)
		}
		found = e
	}
	if found == nil {
		return nil, syscall.ENOENT
	}
	ch := n.NewInode(ctx, found.make(), gofs.StableAttr{Mode: found.mode, Ino: ctlIno(n.path + "/" + name)})
	entryAttr(ctx, ch, out)
	// The kernel keeps no control entry: an image deleted or a computer
	// created shows at once, and every stat asks (answered from memory).
	// (Zero would mean go-fuse's default; a nanosecond is expired at once.)
	out.SetEntryTimeout(time.Nanosecond)
	out.SetAttrTimeout(time.Nanosecond)
	return ch, 0
}

func (n *ctlDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	es, errno := n.entries(ctx)
	if errno != 0 {
		return nil, errno
	}
	out := make([]fuse.DirEntry, len(es))
	for i, e := range es {
		out[i] = fuse.DirEntry{Name: e.name, Mode: e.mode, Ino: ctlIno(n.path + "/" + e.name)}
	}
	return gofs.NewListDirStream(out), 0
}

// ctlErrno maps the error of a read or a listing in .ctl (never logging a
// missing entry as a failure).
func (f *FS) ctlErrno(path string, err error) syscall.Errno {
	var ce *ctlError
	if errors.As(err, &ce) {
		if ce.errno != syscall.ENOENT {
			f.Log.WithField("path", path).Warn("ctl: " + ce.msg)
		}
		return ce.errno
	}
	if api.IsNotFound(err) {
		return syscall.ENOENT
	}
	return toErrno(f.Log, "ctl: reading "+path, err)
}

// ctlAction is what a write to a control file does. parse checks the input
// before any request and returns the step to run; run returns what is kept
// in the result (a record, or nil) and a message.
type ctlAction struct {
	name  string // as results and the log show it: "power", "images new"
	json  bool   // the input is one JSON value (complete when it parses), else one line
	parse func(in string) (ctlRun, error)
	also  string // another folder whose result shows the outcome too (images/ for an image's actions)
	ends  bool   // success removes the file's folder (an image deleted): the kernel forgets it at once
	// anything: any input, even an empty line, is the action (refresh)
	anything bool
}

// ctlRun performs a parsed action. what describes it for the result and the
// log (never a secret).
type ctlRun struct {
	what string
	run  func(ctx context.Context) (record any, err error)
}

// ctlFile is a control file: read gives its content (nil: it reads empty);
// act, when set, is what writing it does.
type ctlFile struct {
	node
	path   string
	folder *ctlFolder
	perm   uint32
	read   func(ctx context.Context) ([]byte, error)
	act    *ctlAction
	always bool // read at every open, never kept (results, the queue, stats)

	mu      sync.Mutex
	snap    []byte    // guarded by mu; the content last read
	snapAt  time.Time // guarded by mu
	snapGen [2]uint64 // guarded by mu; the folder's and the tree's generation it was read at
}

var (
	_ = (gofs.NodeGetattrer)((*ctlFile)(nil))
	_ = (gofs.NodeSetattrer)((*ctlFile)(nil))
	_ = (gofs.NodeOpener)((*ctlFile)(nil))
)

// content returns the file's content: the last one read while it is fresh
// (the listing cache time, no write in its folder, no refresh since), else
// read now.
func (n *ctlFile) content(ctx context.Context) ([]byte, error) {
	if n.read == nil {
		return nil, nil
	}
	gen := [2]uint64{n.folder.generation(), n.fsys.ctl.gen.Load()}
	if !n.always {
		n.mu.Lock()
		if n.snap != nil && n.snapGen == gen && time.Since(n.snapAt) < n.fsys.opts.DirCacheTime {
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
func (n *ctlFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var size int64
	if h, ok := fh.(*ctlHandle); ok && h.data != nil {
		size = int64(len(h.data))
	} else if b, err := n.content(ctx); err == nil {
		size = int64(len(b))
	}
	n.fsys.setAttr(&out.Attr, syscall.S_IFREG|n.perm&n.fsys.fileMode(), size, time.Time{})
	if n.fsys.opts.ReadOnly {
		out.Attr.Mode &^= 0o222
	}
	return 0
}

// Setattr accepts the truncation of an open for writing (echo x > file) and
// nothing else.
func (n *ctlFile) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		if n.act == nil || n.fsys.opts.ReadOnly {
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

func (n *ctlFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	acc := flags & syscall.O_ACCMODE
	if acc != syscall.O_RDONLY {
		if n.fsys.opts.ReadOnly {
			return nil, 0, syscall.EROFS
		}
		if n.act == nil {
			return nil, 0, syscall.EACCES
		}
	}
	h := &ctlHandle{f: n}
	if acc != syscall.O_WRONLY {
		b, err := n.content(ctx)
		if err != nil {
			return nil, 0, n.fsys.ctlErrno(n.path, err)
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
func (n *ctlFile) perform(ctx context.Context, in []byte) syscall.Errno {
	a := n.act
	text := string(bytes.TrimSpace(in))
	r, err := a.parse(text)
	action := a.name
	if err == nil {
		action = a.name + " " + r.what
	}
	var record any
	if err == nil {
		record, err = r.run(ctx)
	}
	res, errno := n.fsys.outcome(action, err)
	if errno == 0 {
		res.Record = record
		n.fsys.Log.WithField("action", action).Info("ctl: done")
		if a.ends {
			n.forgetFolder()
		}
	}
	n.folder.record(res)
	if a.also != "" {
		n.fsys.ctl.folder(a.also).record(res)
	}
	return errno
}

// forgetFolder tells the kernel that the file's folder is gone, so that no
// cached entry shows it (sent at once: the request that removed it holds no
// lock of that folder).
func (n *ctlFile) forgetFolder() {
	_, dir := n.Parent()
	if dir == nil {
		return
	}
	if folder, parent := dir.Parent(); parent != nil {
		parent.NotifyEntry(folder)
	}
}

// ctlHandle is an open control file: the content read at open, and the
// input written so far.
type ctlHandle struct {
	f    *ctlFile
	data []byte // the content read at open (nil when opened write-only)

	mu  sync.Mutex
	buf []byte // guarded by mu; input not acted on yet
}

var (
	_ = (gofs.FileReader)((*ctlHandle)(nil))
	_ = (gofs.FileWriter)((*ctlHandle)(nil))
	_ = (gofs.FileFlusher)((*ctlHandle)(nil))
)

// maxCtlInput bounds what one action may be given.
const maxCtlInput = 1 << 20

func (h *ctlHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h.data[off:min(off+int64(len(dest)), int64(len(h.data)))]), 0
}

// Write acts on the input as soon as it is complete: a JSON value that
// parses, or a line (ended by a newline, or one that parses on its own as
// printf sends it). Until then it is kept, and acted on at flush.
func (h *ctlHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf = append(h.buf, data...)
	if len(h.buf) > maxCtlInput {
		h.buf = nil
		res, errno := h.f.fsys.outcome(h.f.act.name, refuse(syscall.EFBIG, "input larger than %d bytes", maxCtlInput))
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

func (h *ctlHandle) complete() bool {
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
func (h *ctlHandle) Flush(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buf) == 0 {
		return 0
	}
	in := h.buf
	h.buf = nil
	return h.f.perform(ctx, in)
}
