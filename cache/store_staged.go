package cache

// The Store's operations on the files staged through the mount (package
// writeback): made, copied, moved, superseded, dropped, discarded, flushed;
// and what the mount reads of the write side. Each carries its own ordering
// rules (what a folder's times and the attribute store do with it), so that
// package fs never reaches past the Store.

import (
	"context"
	"io"
	"os"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
	"github.com/orgfs/orgfs/writeback"
)

// StagingDir is the staging's folder on local disk; "" on a read-only
// mount.
func (s *Store) StagingDir() string {
	if s.Staging == nil {
		return ""
	}
	return s.Staging.Dir()
}

// Drain uploads at once everything staged and waits until it is on the
// service, or ctx ends.
func (s *Store) Drain(ctx context.Context) error { return s.Staging.Drain(ctx) }

// Writable reports whether the mount stages writes (false: read-only, no
// staging).
func (s *Store) Writable() bool { return s.Staging != nil }

// Staged is the pending file at t, if any (nil on a read-only mount).
func (s *Store) Staged(t place.Target) *writeback.Staged {
	if s.Staging == nil {
		return nil
	}
	return s.Staging.Lookup(t)
}

// PendingIn are the pending files of folder k, by name (none on a
// read-only mount).
func (s *Store) PendingIn(k place.DirKey) []*writeback.Staged {
	if s.Staging == nil {
		return nil
	}
	return s.Staging.Pending(k.Area, k.ID)
}

// Acquire is the pending file at t with a reader (or, when write, a
// writer) opened on it under the staging's lock, so that its upload cannot
// hand it over meanwhile; nil when none is pending. The caller closes what
// it opened.
func (s *Store) Acquire(t place.Target, write bool) *writeback.Staged {
	if s.Staging == nil {
		return nil
	}
	return s.Staging.Acquire(t, write)
}

// Create stages a new empty file at t, replacing the service file replaces
// (0: none), with path, its path in the mount ("": unknown yet), in its
// first record; it shows what set holds (mode, owner, times). newName says
// the name was free in its folder: the folder's times move, as a disk's do
// when an entry is made in it. The caller owns a writer of it.
func (s *Store) Create(t place.Target, replaces int64, path string, set Attr, newName bool) (*writeback.Staged, error) {
	st, err := s.Staging.CreateAt(t, replaces, path)
	if err != nil {
		return nil, err
	}
	s.Attrs.ResetPending(t, set)
	if newName {
		s.Attrs.TouchDir(place.DirKey{Area: t.Area, ID: t.ParentID})
	}
	return st, nil
}

// CreateFilled stages a new file at t whose content fill writes (a link's
// target), complete and synced before anything sees it; it shows what set
// holds, and its folder's times move. The caller owns a writer of it.
func (s *Store) CreateFilled(t place.Target, set Attr, fill func(f *os.File) error) (*writeback.Staged, error) {
	st, err := s.Staging.CreateFrom(t, 0, fill)
	if err != nil {
		return nil, err
	}
	s.Attrs.ResetPending(t, set)
	s.Attrs.TouchDir(place.DirKey{Area: t.Area, ID: t.ParentID})
	return st, nil
}

// RemoveStaged is a user's unlink of the pending file st: it leaves the
// staging (nothing of it is uploaded), what was set on it is forgotten, and
// its folder's times move.
func (s *Store) RemoveStaged(st *writeback.Staged) error {
	if err := s.DropStaged(st); err != nil {
		return err
	}
	t := st.Target()
	s.Attrs.TouchDir(place.DirKey{Area: t.Area, ID: t.ParentID})
	return nil
}

// DropStaged takes the pending file st out of the staging as a step of a
// larger change (a rename displacing it, a failed rename's copies): nothing
// of it is uploaded, and what was set on it is forgotten; no folder's times
// move.
func (s *Store) DropStaged(st *writeback.Staged) error {
	if err := s.Staging.Remove(st); err != nil {
		return err
	}
	s.Attrs.ForgetPending(st.Target())
	return nil
}

// SyncStaging makes the staging's records durable on local disk (a
// folder's fsync); nothing to do on a read-only mount.
func (s *Store) SyncStaging() error {
	if s.Staging == nil {
		return nil
	}
	return s.Staging.SyncDir()
}

// Discard drops the failed upload of the file at path in the mount
// (.ctl/uploads "discard PATH") and the listing of its folder, which then
// shows what the service holds there; it returns where the file was to go.
func (s *Store) Discard(path string) (place.Target, error) {
	t, err := s.Staging.Discard(path)
	if err != nil {
		return t, err
	}
	s.Dirs.Drop(place.DirKey{Area: t.Area, ID: t.ParentID})
	return t, nil
}

// Renamed moves the times of src and dst (one folder or two) once a rename
// moved an entry from one to the other, as a disk's do.
func (s *Store) Renamed(src, dst place.DirKey) {
	s.Attrs.TouchDir(src)
	if dst != src {
		s.Attrs.TouchDir(dst)
	}
}

// Supersede makes st, staged at another name or place, the successor of old
// (a file of folder parent): old leaves the listing now, and the service once
// st is uploaded.
func (s *Store) Supersede(parent place.DirKey, old api.File, st *writeback.Staged) {
	st.DeleteAfterUpload(old.ID)
	s.Dirs.Hide(parent, old.ID)
}

// Move renames a pending file to to, replacing the service file replaces
// there (0: none), and gives it path, its path in the mount (SetPath; one
// record written for both); a time set on it follows. What the old name's listing
// holds leaves it: an upload of the file that ended just before the move
// put it there, and the staging deletes it once the new name is up.
func (s *Store) Move(st *writeback.Staged, to place.Target, replaces int64, path string) error {
	from, uploaded := st.Target(), st.Replaces()
	if err := s.Staging.RenameAt(st, to, replaces, path); err != nil {
		return err
	}
	s.Attrs.Move(from, to)
	if from != to {
		if uploaded != 0 && uploaded != replaces {
			// The version at the old name (an upload that ended just before
			// the move put it in the listing), deleted once the new name is
			// up: hidden by id, in any listing, cached now or fetched later.
			// Nothing else at the old name is hidden: a version of another
			// writer's, which the staging never deletes, stays shown.
			s.Dirs.Hide(place.DirKey{Area: from.Area, ID: from.ParentID}, uploaded)
		}
	}
	return nil
}

// StageCopy stages a copy of service file from at to, replacing the service
// file replaces (0: none), showing from's time, and what was set on like
// (its mode and owner: the file the copy stands for, from itself but for a
// change that starts from a version since replaced), read once the copy is
// made. The content is fetched
// whole before the copy exists, and the copy is visible only once complete
// (Staging.CreateFrom): a failure or a crash leaves both names as they were.
// The staged file comes back with the caller's writer open.
//
// A cache file the kernel reads in passthrough (SetLive) is not copied: it
// becomes the staging copy (Staging.Adopt), and the content cache forgets
// from, whose file it was.
func (s *Store) StageCopy(ctx context.Context, to place.Target, from api.File, replaces int64, like api.File) (*writeback.Staged, error) {
	st, err := s.stageCopy(ctx, to, from, replaces)
	if err != nil {
		return nil, err
	}
	s.Attrs.ResetPending(to, s.Attrs.Shown(like))
	return st, nil
}

// stageCopy is StageCopy but for what the copy shows.
func (s *Store) stageCopy(ctx context.Context, to place.Target, from api.File, replaces int64) (*writeback.Staged, error) {
	var r *Reader
	if from.Size > 0 {
		var err error
		if r, err = s.Fetcher.Open(MetaOf(from)); err != nil {
			return nil, err
		}
		defer r.Close()
		// Waits while the content comes; fails once none came for the
		// I/O timeout (Reader.Ready).
		if _, err := r.Ready(ctx, 0, from.Size); err != nil {
			return nil, err
		}
	}
	if r != nil && s.live != nil && s.Content.Complete(MetaOf(from)) {
		if link := s.live(r.File()); link != nil {
			st, err := s.Staging.Adopt(to, replaces, func(path string) error {
				if err := link(path); err != nil {
					return err
				}
				// Forgotten before the staging's record is written: after a
				// crash no cache record names the staging copy's data.
				s.Fetcher.Forget(from.ID)
				return nil
			})
			if err != nil {
				return nil, err
			}
			st.SetModTime(s.Attrs.Shown(from).ModTime(from.LastModified))
			return st, nil
		}
	}
	st, err := s.Staging.CreateFrom(to, replaces, func(f *os.File) error {
		if r == nil {
			return nil
		}
		_, err := io.Copy(io.NewOffsetWriter(f, 0), io.NewSectionReader(r.File(), 0, from.Size))
		return err
	})
	if err != nil {
		return nil, err
	}
	st.SetModTime(s.Attrs.Shown(from).ModTime(from.LastModified))
	return st, nil
}

// Uploads describes every staged file, oldest first (.ctl/uploads); none
// on a read-only mount.
func (s *Store) Uploads() []writeback.StagedInfo {
	if s.Staging == nil {
		return nil
	}
	return s.Staging.Entries()
}

// Journal is the changes made offline that wait for the service
// (deletions, folders made), oldest first (none on a read-only mount).
func (s *Store) Journal() []writeback.Change {
	if s.Staging == nil {
		return nil
	}
	return s.Staging.Journal()
}

// Conflicts are the latest conflict copies made (.ctl/conflicts); none on
// a read-only mount.
func (s *Store) Conflicts() []writeback.Conflict {
	if s.Staging == nil {
		return nil
	}
	cs, _ := s.Staging.Conflicts()
	return cs
}

// UploadStats are the upload queue's counters; ok is false on a read-only
// mount, which has none.
func (s *Store) UploadStats() (st writeback.StagingStats, ok bool) {
	if s.Staging == nil {
		return st, false
	}
	return s.Staging.Stats(), true
}

// FlushAll uploads at once what is staged under paths (all when none) and
// waits until it is on the service (orgfs sync); it returns how many files
// it waited for.
func (s *Store) FlushAll(ctx context.Context, paths []string) (int, error) {
	return s.Staging.FlushAll(ctx, paths)
}

// Retry tries every failed upload again now.
func (s *Store) Retry() { s.Staging.Retry() }
