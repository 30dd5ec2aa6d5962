package cache

// What users ask of the upload queue (.ctl/sync, .ctl/uploads, SIGUSR1):
// flush everything or some paths, retry failed uploads, give up a failed one.
//
// Locks: Staging.mu, as in staging.go.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

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
func (s *Staging) Discard(path string) (Target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.sortedLocked() {
		if st.state != stFailed || (st.path != path && st.target.String() != path) {
			continue
		}
		t := st.target
		s.log.WithField("file", st.nameLocked()).Warn("staging: failed upload discarded on request; its content is deleted")
		s.removeLocked(st, false)
		return t, nil
	}
	return Target{}, fmt.Errorf("%w: %q", ErrNotFailed, path)
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
