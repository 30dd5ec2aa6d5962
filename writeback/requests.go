package writeback

// What users ask of the upload queue (.ctl/sync, .ctl/uploads, .ctl/stats,
// SIGUSR1): its counters, flush everything or some paths, retry failed
// uploads, give up a failed one.
//
// Locks: Staging.mu, as in staging.go.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/orgfs/orgfs/place"
)

// StagingStats are the upload queue's counters.
type StagingStats struct {
	Pending     int   // staged files not uploaded yet: open, in the write-back delay, queued or waiting to retry
	Uploading   int   // uploads in flight
	Failed      int   // permanent failures, kept staged until retried
	Uploaded    int64 // files uploaded since the start
	Bytes       int64 // bytes of the files uploaded since the start
	StagedBytes int64 // local bytes of every staged file
	Conflicts   int64 // files that went up as conflict copies since the start (conflicts.go)
	Journaled   int   // changes made offline (deletions, folders), waiting for the service (journal.go)
}

// Stats returns the counters.
func (s *Staging) Stats() StagingStats {
	s.mu.Lock()
	out := StagingStats{Uploaded: s.uploaded, Bytes: s.bytesUp, Conflicts: s.nConflicts, Journaled: len(s.journal)}
	all := s.sortedLocked()
	for _, st := range all {
		switch st.state {
		case stUploading:
			out.Uploading++
		case stFailed:
			out.Failed++
		case stUploaded:
		default:
			out.Pending++
		}
	}
	s.mu.Unlock()
	for _, st := range all {
		out.StagedBytes += st.Size()
	}
	return out
}

// FlushAll flushes every file staged now whose path (as .ctl/uploads shows
// it) is one of paths or below one (all of them when paths is empty), at
// once, and waits for them all: nil once each is on the service, else the
// failures, by path. Files staged after it began are not waited for.
func (s *Staging) FlushAll(ctx context.Context, paths []string) (int, error) {
	s.mu.Lock()
	var sel []*Staged
	var names []string
	for _, st := range s.sortedLocked() {
		if st.state != stUploaded && underAny(st.nameLocked(), paths) {
			sel, names = append(sel, st), append(names, st.nameLocked())
		}
	}
	s.mu.Unlock()
	errs := make([]error, len(sel))
	var wg sync.WaitGroup
	for i, st := range sel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Flush(ctx, st); err != nil {
				errs[i] = fmt.Errorf("%s: %w", names[i], err)
			}
		}()
	}
	wg.Wait()
	if len(paths) == 0 {
		errs = append(errs, s.waitJournal(ctx)) // orgfs sync waits for what was deleted or made offline too
	}
	return len(sel), errors.Join(errs...)
}

// underAny reports whether path is one of paths or below one (true for no paths).
func underAny(path string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/")
		if path == p || strings.HasPrefix(path, p+"/") || p == "" {
			return true
		}
	}
	return false
}

// ErrNotFailed is the error of Discard for a path with no failed upload.
var ErrNotFailed = errors.New("no failed upload has this path")

// Discard gives up the failed upload of the file at path (as .ctl/uploads
// shows it): its staged copy is deleted and nothing is sent or deleted on
// the service. Only a failed upload can be discarded; any other state is
// ErrNotFailed (it is still on its way).
//
// The service files it was to delete once up stay (the original of a file
// renamed away shows again at its old name: OnKept).
func (s *Staging) Discard(path string) (place.Target, error) {
	s.mu.Lock()
	for _, st := range s.sortedLocked() {
		if st.state != stFailed || (st.path != path && st.target.String() != path) {
			continue
		}
		t, kept := st.target, slices.Clone(st.deleteAfter)
		s.log.WithField("file", st.nameLocked()).Warn("staging: failed upload discarded on request; its content is deleted")
		s.removeLocked(st, false)
		s.mu.Unlock()
		s.kept(kept)
		return t, nil
	}
	s.mu.Unlock()
	return place.Target{}, fmt.Errorf("%w: %q", ErrNotFailed, path)
}

// kept tells of service files the staging meant to delete and leaves
// (OnKept), but for those another staged file still deletes once up. No
// lock is held.
func (s *Staging) kept(ids []int64) {
	ids = slices.DeleteFunc(ids, func(id int64) bool { return s.Deleting(map[int64]bool{id: true}) })
	if len(ids) > 0 && s.onKept != nil {
		s.onKept(ids)
	}
}

// Retry queues again every upload that failed for good, and has an upload
// under way tried again should it fail for good.
func (s *Staging) Retry() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.sortedLocked() {
		switch st.state {
		case stFailed:
			st.attempts = 0
			st.retries = 0
			st.final = false
			s.enqueueLocked(st, false)
		case stUploading:
			// An attempt under way may have been sent before what made the
			// user retry (a quota raised): should it fail, it is retried.
			st.retryAsked = true
		}
	}
}

// Resume makes the changes journaled offline (journal.go), then sends at
// once every upload waiting to be tried again: the service answers again
// after an outage (or the mount starts), and what was changed offline goes
// up as soon as it is back, not after its backoff.
func (s *Staging) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.resumes++ // an attempt failing offline now goes again at once
	if len(s.journal) > 0 {
		s.startJournalLocked() // then the uploads
		return
	}
	s.resumeUploadsLocked()
}

// resumeUploadsLocked queues at once the uploads waiting to be tried again.
// Called with mu held.
func (s *Staging) resumeUploadsLocked() {
	for _, st := range s.sortedLocked() {
		// One still open waits for its close, unless an fsync waits for it
		// (Flush): its folder made offline may be made now.
		if st.state == stRetrying && (st.writers == 0 || st.flushers > 0) {
			s.enqueueLocked(st, false)
		}
	}
}

// Deleting reports whether a staged file is to delete one of ids once it is
// uploaded (a file it replaces, or supersedes at another name).
func (s *Staging) Deleting(ids map[int64]bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.byTarget {
		if ids[st.replaces] {
			return true
		}
		for _, id := range st.deleteAfter {
			if ids[id] {
				return true
			}
		}
	}
	return false
}
