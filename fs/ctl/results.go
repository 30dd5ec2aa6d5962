package ctl

// Actions and their results: what a write to a control file does (action,
// step), refusals made before any request, the outcome of an action as its
// result and errno, and each folder's result file.
//
// Locks: folderState.mu guards a folder's result and generation, for memory
// only (docs/ARCHITECTURE.md).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs"
)

// action is what a write to a control file does. parse checks the input
// before any request and returns the step to run; run returns what is kept
// in the result (a record, or nil) and a message.
type action struct {
	name  string // as results and the log show it: "power", "images new"
	json  bool   // the input is one JSON value (complete when it parses), else one line
	parse func(in string) (step, error)
	also  string // another folder whose result shows the outcome too (images/ for an image's actions)
	ends  bool   // success removes the file's folder (an image deleted): the kernel forgets it at once
	// anything: any input, even an empty line, is the action (refresh)
	anything bool
	// waits: the action waits and changes nothing on the service (sync): a
	// signal to the writer ends its wait. Any other runs to its end once
	// its input is complete (perform).
	waits bool
}

// step performs a parsed action. what describes it for the result and the
// log (never a secret).
type step struct {
	what string
	run  func(ctx context.Context) (record any, err error)
}

// refusal is an action or a read refused before any request, or a state
// the service would not report as an error (starting a running computer).
type refusal struct {
	errno syscall.Errno
	msg   string
}

func (e *refusal) Error() string { return e.msg }

func refuse(errno syscall.Errno, format string, args ...any) error {
	return &refusal{errno: errno, msg: fmt.Sprintf(format, args...)}
}

// outcome turns the error of the action name into its result and errno.
func (t *Tree) outcome(name string, err error) (Result, syscall.Errno) {
	r := Result{OK: err == nil, Code: api.CodeOK, Message: "OK", Time: time.Now().UTC(), Action: name}
	if err == nil {
		return r, 0
	}
	var ce *refusal
	var ae *api.Error
	var errno syscall.Errno
	switch {
	case errors.As(err, &ce):
		r.Code, r.Message, errno = 0, ce.msg, ce.errno
		t.log.WithField("action", name).Warn("ctl: refused: " + ce.msg)
	case errors.As(err, &ae):
		r.Code, r.Message = ae.Code, ae.Message
		if r.Message == "" {
			r.Message = ae.Error()
		}
		errno = fs.Errno(t.log, "ctl: "+name, err)
	default:
		r.Code, r.Message = 0, err.Error()
		errno = fs.Errno(t.log, "ctl: "+name, err)
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

// folderState is a control folder's state: the outcome of its last write,
// and a generation that each write bumps so its files are read again.
type folderState struct {
	path string
	mu   sync.Mutex
	gen  uint64 // guarded by mu
	last []byte // guarded by mu; the result file's content
}

func (fo *folderState) generation() uint64 {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	return fo.gen
}

// record keeps an outcome as the folder's result and bumps its generation.
func (fo *folderState) record(r Result) {
	b, _ := jsonOut(r)
	fo.mu.Lock()
	defer fo.mu.Unlock()
	fo.last = b
	fo.gen++
}

func (fo *folderState) result() []byte {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	if fo.last == nil {
		return []byte("{}\n")
	}
	return fo.last
}
