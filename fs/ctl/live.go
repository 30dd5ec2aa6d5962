package ctl

// .ctl/machines/<id>/live/ (a running computer's file system, read-only) and
// .ctl/machines/<id>/tasks/<task-id>.zip (a task's bundle, streamed).
//
// Locks: streamHandle.mu guards the stream's state; it is held across a read
// of the ZIP (reads of one open file are sequential anyway).

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
)

// liveEntry is machines/<id>/live/: its drives (C: is listed; any other
// drive letter answers when named).
func (t *Tree) liveEntry(dir string, id int64) entry {
	live := dir + "/live"
	return t.dirEntry(dir, "live", func(ctx context.Context) ([]entry, error) {
		if _, err := t.liveList(ctx, dir, id, `C:\`); err != nil {
			return nil, err
		}
		return []entry{t.liveDir(live, dir, id, "C:", `C:\`)}, nil
	}, func(ctx context.Context, name string) (*entry, error) {
		if len(name) != 2 || name[1] != ':' || !('A' <= name[0] && name[0] <= 'Z') {
			return nil, nil
		}
		if _, err := t.liveList(ctx, dir, id, name+`\`); err != nil {
			return nil, err
		}
		e := t.liveDir(live, dir, id, name, name+`\`)
		return &e, nil
	})
}

// liveDir is a folder of a running computer at winPath.
func (t *Tree) liveDir(parent, machineDir string, id int64, name, winPath string) entry {
	here := parent + "/" + name
	return t.dirEntry(parent, name, func(ctx context.Context) ([]entry, error) {
		entries, err := t.liveList(ctx, machineDir, id, winPath)
		if err != nil {
			return nil, err
		}
		es := make([]entry, 0, len(entries))
		for _, e := range entries {
			if e.Name == "" || strings.ContainsAny(e.Name, "/\x00") || e.Name == "." || e.Name == ".." {
				continue
			}
			child := strings.TrimSuffix(winPath, `\`) + `\` + e.Name
			if e.IsDirectory {
				es = append(es, t.liveDir(here, machineDir, id, e.Name, child))
				continue
			}
			es = append(es, t.fileEntry(here, e.Name, 0o444, func(context.Context) ([]byte, error) {
				return nil, refuse(syscall.EACCES, "%s: the service lists a running computer's files but does not serve their content", child)
			}, nil))
		}
		return es, nil
	}, nil)
}

// liveList lists winPath on computer id (list-content), kept like listings.
// A computer that is not running is EBUSY, said in the machine's result.
func (t *Tree) liveList(ctx context.Context, machineDir string, id int64, winPath string) ([]api.ContentEntry, error) {
	key := "live/" + strconv.FormatInt(id, 10) + "/" + strings.ToLower(winPath)
	es, err := memoGet(ctx, t.memo, key, func(ctx context.Context) ([]api.ContentEntry, error) {
		return t.admin.ListContent(ctx, id, winPath)
	})
	if err == nil || !api.IsCode(err, api.CodeBadRequest) {
		return es, err
	}
	// 400: the computer is not running, or the path does not exist.
	if serr := t.wantState(ctx, id, api.SeatReady, "live/"); serr != nil {
		res, _ := t.outcome("live "+winPath, serr)
		t.folder(machineDir).record(res)
		return nil, serr
	}
	return nil, refuse(syscall.ENOENT, "%s: not on computer %d", winPath, id)
}

// taskFind answers tasks/<task-id>.zip: a task of the computer (404 is
// ENOENT), read as the ZIP of its bundle.
func (t *Tree) taskFind(ctx context.Context, dir string, id int64, name string) (*entry, error) {
	num, ok := strings.CutSuffix(name, ".zip")
	task, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || task <= 0 || strconv.FormatInt(task, 10) != num {
		return nil, nil
	}
	// Listing the task's folders is how the service says the task is the
	// computer's (404 otherwise); it changes nothing.
	for _, err := range t.admin.MachineFiles(ctx, id, api.ListFilesRequest{TaskID: task}).All() {
		if err != nil {
			return nil, err
		}
		break
	}
	return &entry{name: name, mode: syscall.S_IFREG, make: func() gofs.InodeEmbedder {
		return &streamNode{node: node{t: t}, path: dir + "/" + name, task: task}
	}}, nil
}

// streamNode is a task's ZIP: each open runs the bundle job and streams it.
type streamNode struct {
	node
	path string
	task int64
}

var (
	_ = (gofs.NodeGetattrer)((*streamNode)(nil))
	_ = (gofs.NodeOpener)((*streamNode)(nil))
)

// Getattr shows size 0: the ZIP's size is known only once it is made; reads
// are direct I/O, so every reader gets all of it.
func (n *streamNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.t.mount.SetAttr(&out.Attr, syscall.S_IFREG|0o444&n.t.mount.FileMode(), 0, time.Time{})
	return 0
}

func (n *streamNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EACCES
	}
	jctx, cancel := context.WithCancel(context.Background())
	h := &streamHandle{n: n, cancel: cancel, ready: make(chan struct{})}
	go h.start(jctx)
	return h, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NONSEEKABLE, 0
}

// streamHandle is an open task ZIP. The job runs from open; closing the
// file before it is done aborts it.
type streamHandle struct {
	n      *streamNode
	cancel context.CancelFunc
	ready  chan struct{} // closed when body or err is set

	body io.ReadCloser // set before ready is closed
	err  error         // set before ready is closed

	mu  sync.Mutex
	off int64 // guarded by mu; bytes read so far
}

var (
	_ = (gofs.FileReader)((*streamHandle)(nil))
	_ = (gofs.FileReleaser)((*streamHandle)(nil))
)

func (h *streamHandle) start(ctx context.Context) {
	t := h.n.t
	h.body, _, h.err = t.admin.Bundle(ctx, api.BundleRequest{TaskID: h.n.task, OnJob: t.noteJob})
	if h.err != nil && ctx.Err() == nil {
		t.log.WithError(h.err).WithField("task", h.n.task).Warn("ctl: task bundle failed")
	}
	close(h.ready)
}

func (h *streamHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, syscall.EINTR
	}
	if h.err != nil {
		return nil, h.n.t.readErrno(h.n.path, h.err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if off != h.off {
		return nil, syscall.ESPIPE // a stream: read it from the start, in order
	}
	k, err := io.ReadFull(h.body, dest)
	h.off += int64(k)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, h.n.t.readErrno(h.n.path, err)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

// Release aborts a job still running and closes the stream.
func (h *streamHandle) Release(ctx context.Context) syscall.Errno {
	h.cancel()
	go func() {
		<-h.ready
		if h.body != nil {
			h.body.Close()
		}
	}()
	return 0
}
