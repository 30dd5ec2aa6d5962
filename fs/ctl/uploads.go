package ctl

// The upload queue's control files: .ctl/uploads (one line a staged file;
// write retry, or discard PATH), .ctl/uploads.json (the same for programs),
// .ctl/sync (write paths: returns once they are on the service), and
// .ctl/conflicts and conflicts.json (the changes that met another writer's
// and went up as conflict copies).
//
// Locks: none of its own (the staging's, inside the cache calls).

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"

	"github.com/orgfs/orgfs/writeback"
)

// The states .ctl/uploads gives the changes made offline that wait for
// the service: a deletion, a folder made.
const (
	DeleteState = "delete"
	MkdirState  = "mkdir"
)

// Journaled reports whether state is one of a change made offline
// (DeleteState, MkdirState): no bytes to upload.
func Journaled(state string) bool { return state == DeleteState || state == MkdirState }

// journalState is the state .ctl/uploads gives c.
func journalState(c writeback.Change) string {
	if c.Op == writeback.OpMkdir {
		return MkdirState
	}
	return DeleteState
}

// uploadsRead is .ctl/uploads: one line per staged file, then one per
// change made offline that waits for the service.
func (t *Tree) uploadsRead(context.Context) ([]byte, error) {
	var b bytes.Buffer
	for _, e := range t.store.Uploads() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	for _, c := range t.store.Journal() {
		fmt.Fprintf(&b, "%s %s (made offline; waits for the service)\n", journalState(c), c.Path)
	}
	return b.Bytes(), nil
}

// uploadsJSON is .ctl/uploads.json: the queue for programs (orgfs status).
func (t *Tree) uploadsJSON(context.Context) ([]Upload, error) {
	out := []Upload{}
	for _, e := range t.store.Uploads() {
		p := e.Path
		if p == "" {
			p = e.Target.String()
		}
		out = append(out, Upload{Path: p, State: e.State, Size: e.Size, Done: e.Done, Total: e.Total, Attempts: e.Attempts, Error: e.Err})
	}
	for _, c := range t.store.Journal() {
		out = append(out, Upload{Path: c.Path, State: journalState(c), Size: c.Size})
	}
	return out, nil
}

// conflictsRead is .ctl/conflicts: one line per conflict, oldest first.
func (t *Tree) conflictsRead(context.Context) ([]byte, error) {
	var b bytes.Buffer
	for _, c := range t.store.Conflicts() {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// conflictsJSON is .ctl/conflicts.json: the conflicts for programs.
func (t *Tree) conflictsJSON(context.Context) ([]writeback.Conflict, error) {
	return append([]writeback.Conflict{}, t.store.Conflicts()...), nil
}

// syncAction is a write to .ctl/sync: paths (one a line, or none for all);
// it returns once everything written under them before is on the service,
// or with EIO and the failures in result (orgfs sync).
func (t *Tree) syncAction() *action {
	return &action{name: "sync", anything: true, waits: true, parse: func(in string) (step, error) {
		var paths []string
		for _, l := range strings.Split(in, "\n") {
			if l = strings.Trim(strings.TrimSpace(l), "/"); l != "" {
				paths = append(paths, l)
			}
		}
		what := "everything"
		if len(paths) > 0 {
			what = strings.Join(paths, ", ")
		}
		return step{what: what, run: func(ctx context.Context) (any, error) {
			if !t.store.Writable() {
				return map[string]int{"files": 0}, nil
			}
			if t.mount != nil {
				t.mount.NotePassthroughWriters() // their writes so far, unseen by the daemon
			}
			n, err := t.store.FlushAll(ctx, paths)
			if err != nil {
				return nil, refuse(syscall.EIO, "not on the service: %v", err)
			}
			return map[string]int{"files": n}, nil
		}}, nil
	}}
}

// uploadsAction is a write to .ctl/uploads: "retry", or "discard PATH" for
// a failed upload.
func (t *Tree) uploadsAction() *action {
	return &action{name: "uploads", parse: func(in string) (step, error) {
		word, rest, _ := strings.Cut(in, " ")
		switch {
		case !t.store.Writable():
			return step{}, refuse(syscall.EROFS, "the mount is read-only: nothing is uploaded")
		case in == "retry":
			return step{what: "retry", run: func(context.Context) (any, error) {
				t.store.Retry()
				return nil, nil
			}}, nil
		case word == "discard" && strings.TrimSpace(rest) != "":
			path := strings.TrimSpace(rest)
			return step{what: "discard " + path, run: func(context.Context) (any, error) {
				if _, err := t.store.Discard(path); err != nil {
					return nil, refuse(syscall.ENOENT, "%v (only a failed upload can be discarded; see .ctl/uploads)", err)
				}
				t.forgetPath(path)
				return nil, nil
			}}, nil
		}
		return step{}, refuse(syscall.EINVAL, "write retry, or discard PATH (a failed upload, as listed)")
	}}
}

// forgetPath tells the kernel to drop its entry of the mount's path p (as
// "shared/a/b.txt"), when the kernel has one. It is sent at once, from inside the request that
// removed the file (one on another folder, whose lock that request does not hold).
func (t *Tree) forgetPath(p string) {
	_, dir := t.root.Parent() // the mount's root; nil before it is mounted
	if dir == nil {
		return
	}
	parts := strings.Split(p, "/")
	for _, name := range parts[:len(parts)-1] {
		if dir = dir.GetChild(name); dir == nil {
			return
		}
	}
	dir.NotifyEntry(parts[len(parts)-1])
}
