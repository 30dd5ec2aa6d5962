package writeback

// Deletions the service could not make when they were asked (offline): a
// file or a folder the mount removed while the service could not be
// reached, journaled (journal.go) and made when it answers again, each only
// while the service still holds the version the mount removed: a file
// another desk changed meanwhile is kept (OnKept shows it again).
//
// Locks: Staging.mu, as in journal.go; never held across a request.

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// DeletionOf is the deletion of f, of folder parent, at path in the mount.
func DeletionOf(parent place.DirKey, f api.File, path string) Change {
	return Change{Parent: parent, ID: f.ID, Name: f.Name, Size: f.Size, LastModified: f.LastModified, Dir: f.IsDir(), Path: path}
}

// DeleteLater journals deletion d, to be made when the service answers
// again. It returns once the journal is on disk.
func (s *Staging) DeleteLater(d Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.Op, d.Parent = OpDelete, s.realLocked(d.Parent)
	if err := s.journalLocked(d); err != nil {
		return err
	}
	s.mine.Add(d.ID, struct{}{}) // this mount's to remove: an upload at its name is no conflict
	return nil
}

// DeletedLater are the ids of the files and folders the journal will
// delete: no listing shows them meanwhile.
func (s *Staging) DeletedLater() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.journal))
	for _, d := range s.journal {
		if d.Op == OpDelete {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// holdsOthers reports whether folder k holds an entry on the service that
// the staging does not delete itself once a staged copy is up: a file
// renamed out of it offline, whose copy is staged, goes with the folder.
func (s *Staging) holdsOthers(ctx context.Context, k place.DirKey) (bool, error) {
	for f, err := range s.list(ctx, k.Area, api.ListFilesRequest{ParentID: k.ID}).All() {
		if err != nil {
			return false, err
		}
		if !s.Deleting(map[int64]bool{f.ID: true}) {
			return true, nil
		}
	}
	return false, nil
}

// holdsAnything reports whether folder k holds an entry on the service.
func (s *Staging) holdsAnything(ctx context.Context, k place.DirKey) (bool, error) {
	for _, err := range s.list(ctx, k.Area, api.ListFilesRequest{ParentID: k.ID}).All() {
		return err == nil, err
	}
	return false, nil
}

// deleteJournaled makes journaled deletion d; an error says it waits for
// another try (no answer to go by: offline, a 5xx, Close).
func (s *Staging) deleteJournaled(d Change) error {
	outcome, err := s.deleteIfUnchanged(d)
	if waitsForAnotherTry(s.ctx, err) {
		return err
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
	s.doneLocked(d)
	s.mu.Unlock()
	return nil
}

// waitsForAnotherTry reports whether err, a journaled change's, leaves it
// for another try: no answer to go by (offline, a 5xx, a timeout, Close).
func waitsForAnotherTry(ctx context.Context, err error) bool {
	return err != nil && (api.Temporary(err) || ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded))
}

// What deleteIfUnchanged did.
const (
	deleteDone = iota // deleted
	deleteKept        // the service holds another version there: kept
	deleteGone        // not there any more (deleted, replaced or moved elsewhere)
)

// deleteIfUnchanged deletes d's file or folder when the service still holds
// the version the mount removed; a folder only while it holds nothing.
func (s *Staging) deleteIfUnchanged(d Change) (outcome int, err error) {
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
		if full, err := s.holdsOthers(ctx, place.DirKey{Area: d.Parent.Area, ID: cur.ID}); err != nil {
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
