package writeback

// Deletions the service could not make when they were asked (offline): a
// file or a folder the mount removed while the service could not be
// reached, journaled in the staging dir (deletesFile) and made when it
// answers again (Resume, and at the start), in the order they were asked,
// each only while the service still holds the version the mount removed: a
// file another desk changed meanwhile is kept (OnKept shows it again).
//
// Locks: Staging.mu guards the journal, held while it is written (a small
// file, written anew and renamed into place); never across a request.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// deletesFile is the journal of the deletions waiting for the service, in
// the staging dir.
const deletesFile = "deletes.json"

// Deletion is a removal the service has not made yet: the version of a
// file, or a folder, of folder Parent that the mount removed.
type Deletion struct {
	Parent       place.DirKey `json:"parent"`
	ID           int64        `json:"id"`
	Name         string       `json:"name"`
	Size         int64        `json:"size"`
	LastModified time.Time    `json:"last_modified"`
	Dir          bool         `json:"dir,omitempty"`
	Path         string       `json:"path,omitempty"` // in the mount, for the log and .ctl/uploads
	// ByID: a version the staging itself deletes (one a staged file
	// supersedes, or replaces), deleted by its id alone, whatever its
	// folder holds, as online.
	ByID bool `json:"by_id,omitempty"`
}

// DeletionOf is the deletion of f, of folder parent, at path in the mount.
func DeletionOf(parent place.DirKey, f api.File, path string) Deletion {
	return Deletion{Parent: parent, ID: f.ID, Name: f.Name, Size: f.Size, LastModified: f.LastModified, Dir: f.IsDir(), Path: path}
}

// DeleteLater journals d, to be made when the service answers again. It
// returns once the journal is on disk.
func (s *Staging) DeleteLater(d Deletion) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes = append(s.deletes, d)
	if err := s.saveDeletesLocked(); err != nil {
		s.deletes = s.deletes[:len(s.deletes)-1]
		return err
	}
	s.mine.Add(d.ID, struct{}{}) // this mount's to remove: an upload at its name is no conflict
	s.startDeletesLocked()       // the service may be back already (offline, it fails at once)
	return nil
}

// Deletions are the deletions waiting for the service, oldest first.
func (s *Staging) Deletions() []Deletion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Deletion(nil), s.deletes...)
}

// saveDeletesLocked writes the journal anew (removed when empty). Called
// with mu held.
func (s *Staging) saveDeletesLocked() error {
	path := filepath.Join(s.dir, deletesFile)
	if len(s.deletes) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("staging: %w", err)
		}
		return nil
	}
	b, err := json.Marshal(s.deletes)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write(b)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = s.SyncDir() // the rename itself, before the caller is told
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("staging: %w", err)
	}
	return nil
}

// loadDeletes reads the journal a previous run left. Called at the start,
// before anything else runs.
func (s *Staging) loadDeletes() error {
	b, err := os.ReadFile(filepath.Join(s.dir, deletesFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("staging: %w", err)
	}
	defer func() {
		for _, d := range s.deletes {
			s.mine.Add(d.ID, struct{}{})
		}
	}()
	if err := json.Unmarshal(b, &s.deletes); err != nil {
		// Kept aside for a person to look at; the files stay on the
		// service, which loses nothing.
		bad := filepath.Join(s.dir, deletesFile+".bad")
		os.Rename(filepath.Join(s.dir, deletesFile), bad)
		s.log.WithError(err).WithField("kept_as", bad).Warn("staging: the journal of deletions is unreadable; those files stay on the service")
		s.deletes = nil
	}
	return nil
}

// DeletedLater are the ids of the files and folders the journal will
// delete: no listing shows them meanwhile.
func (s *Staging) DeletedLater() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.deletes))
	for _, d := range s.deletes {
		ids = append(ids, d.ID)
	}
	return ids
}

// holdsAnything reports whether folder k holds an entry on the service.
func (s *Staging) holdsAnything(ctx context.Context, k place.DirKey) (bool, error) {
	for _, err := range s.list(ctx, k.Area, api.ListFilesRequest{ParentID: k.ID}).All() {
		return err == nil, err
	}
	return false, nil
}

// waitDeletes makes the journal's deletions now and waits for them: nil
// once none is left, else why (offline: they wait for the service).
func (s *Staging) waitDeletes(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.deletes) == 0 || s.closed {
		return nil
	}
	s.startDeletesLocked()
	for s.applying {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return ctx.Err()
		}
		s.mu.Lock()
	}
	if n := len(s.deletes); n > 0 {
		return fmt.Errorf("%d deletions made offline wait for the service (%s first)", n, s.deletes[0].Path)
	}
	return nil
}

// startDeletesLocked starts applyDeletes unless it runs, then (after it)
// the uploads waiting to be tried again: a file written at a name deleted
// offline goes up once the name is free. Called with mu held.
func (s *Staging) startDeletesLocked() {
	if s.applying || s.closed {
		s.applyAgain = !s.closed // a Resume or a new entry while it runs: once more after
		return
	}
	s.applying = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			s.applyDeletes()
			s.mu.Lock()
			if !s.applyAgain || s.closed {
				break
			}
			s.applyAgain = false
			s.mu.Unlock()
		}
		s.applying = false
		s.resumeUploadsLocked()
		s.notifyLocked()
		s.mu.Unlock()
	}()
}

// applyDeletes makes the journal's deletions, in order, until one finds the
// service offline (the rest wait for the next Resume). Run by one goroutine
// at a time (applying).
func (s *Staging) applyDeletes() {
	for {
		s.mu.Lock()
		if s.closed || len(s.deletes) == 0 {
			s.mu.Unlock()
			return
		}
		d := s.deletes[0]
		s.mu.Unlock()
		outcome, err := s.deleteIfUnchanged(d)
		if err != nil && (api.Temporary(err) || s.ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
			return // no answer to go by (offline, a 5xx, Close): kept for the next try
		}
		log := s.log.WithFields(logrus.Fields{"path": d.Path, "file_id": d.ID})
		switch {
		case err != nil:
			log.WithError(err).Warn("staging: the service refused a deletion made offline; the file stays there")
		case outcome == deleteKept:
			log.Warn("staging: a file deleted offline was changed meanwhile by another writer; it is kept")
		case outcome == deleteGone:
			log.Info("staging: a file deleted offline was deleted, replaced or moved elsewhere meanwhile; nothing to delete")
		default:
			log.Info("staging: a deletion made offline is done")
		}
		if (err != nil || outcome != deleteDone) && s.onKept != nil {
			s.onKept([]int64{d.ID}) // shown again where it is (a no-op for an id gone)
		}
		s.mu.Lock()
		if len(s.deletes) > 0 && s.deletes[0] == d {
			s.deletes = s.deletes[1:]
			if err := s.saveDeletesLocked(); err != nil {
				s.log.WithError(err).Warn("staging: the journal of deletions could not be written")
			}
		}
		s.notifyLocked()
		s.mu.Unlock()
	}
}

// What deleteIfUnchanged did.
const (
	deleteDone = iota // deleted
	deleteKept        // the service holds another version there: kept
	deleteGone        // not there any more (deleted, replaced or moved elsewhere)
)

// deleteIfUnchanged deletes d's file or folder when the service still holds
// the version the mount removed; a folder only while it holds nothing.
func (s *Staging) deleteIfUnchanged(d Deletion) (outcome int, err error) {
	if d.ByID {
		return deleteDone, s.deleteFile(d.ID)
	}
	ctx, cancel := context.WithTimeout(s.ctx, deleteTimeout)
	defer cancel()
	cur, ok, err := s.currentAt(ctx, place.Target{Area: d.Parent.Area, ParentID: d.Parent.ID, Name: d.Name})
	switch {
	case err != nil:
		return deleteDone, err
	case !ok || cur.ID != d.ID:
		// Gone, or the name holds another file or folder: this one was
		// deleted or replaced elsewhere; nothing of it to delete.
		return deleteGone, nil
	case !d.Dir && cur.Size != d.Size:
		// The service makes a new file (a new id) for every upload; the
		// same id of another size is another version all the same. (Times
		// are not compared: the mount's record of its own upload carries
		// its own time until the folder is listed again.)
		return deleteKept, nil
	case d.Dir:
		// The service deletes a folder with its content: one that holds
		// anything now (another writer's) is kept.
		if full, err := s.holdsAnything(ctx, place.DirKey{Area: d.Parent.Area, ID: cur.ID}); err != nil {
			return deleteDone, err
		} else if full {
			return deleteKept, nil
		}
	}
	if err := s.client.DeleteFile(ctx, cur.ID); err != nil && !api.IsNotFound(err) {
		return deleteDone, err
	}
	return deleteDone, nil
}
