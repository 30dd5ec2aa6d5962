package cache

// The Store's operations on folders made offline: a mkdir the service
// cannot take now is made later (writeback/folders.go) and the folder
// stands at once under a provisional id (below zero), in the listings
// (dirs_made.go), in what is set on it (Attrs) and in the mount's nodes,
// until the service made it (made).

import (
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// SetFolderMade tells the store whom to tell that a folder made offline is
// on the service now, under the service's id (made): the mount's node of
// the folder follows it. Set before the mount serves.
func (s *Store) SetFolderMade(f func(provisional, made place.DirKey)) { s.folderMade = f }

// makeLater makes folder name of parent later, when the service answers
// (path: in the mount), and shows it now.
func (s *Store) makeLater(parent place.DirKey, name, path string) (api.File, error) {
	id, err := s.Staging.MakeLater(parent, name, path)
	if err != nil {
		return api.File{}, err
	}
	f := api.File{ID: id, Name: name, ObjectType: api.ObjectDirectory, ParentID: parent.ID, LastModified: time.Now()}
	s.Dirs.Made(parent, f)
	s.log.WithField("path", path).Info("cache: the service cannot be reached; the folder is made when it answers again")
	return f, nil
}

// showMadeLater shows the folders a run before made offline, which the
// journal has still to make, in their folders. Called at the start.
func (s *Store) showMadeLater() {
	for _, c := range s.Staging.MadeLater() {
		s.Dirs.Made(c.Parent, api.File{ID: c.ID, Name: c.Name, ObjectType: api.ObjectDirectory, ParentID: c.Parent.ID, LastModified: c.LastModified})
	}
}

// unmake removes folder f of parent, made offline: done when the service
// did not have it yet (its journal entry went); else f is the folder made,
// for the caller to delete.
func (s *Store) unmake(parent place.DirKey, f api.File) (_ api.File, done bool, _ error) {
	k := place.DirKey{Area: parent.Area, ID: f.ID}
	made, err := s.Staging.Unmake(k)
	if err != nil {
		return f, false, err
	}
	if made.ID >= 0 {
		f.ID = made.ID
		return f, false, nil
	}
	s.Dirs.Unmade(parent, f.ID)
	s.Dirs.Forget(k)
	s.Attrs.ForgetDir(k)
	return f, true, nil
}

// MoveMade renames folder f of src, made offline, to name in dst (path: in
// the mount): moved when the service did not have it yet (what the journal
// makes changes); else f is the folder made, for the caller to rename as
// any folder. No folder's times move (Renamed).
func (s *Store) MoveMade(src place.DirKey, f api.File, dst place.DirKey, name, path string) (_ api.File, moved bool, _ error) {
	made, err := s.Staging.MoveMade(place.DirKey{Area: src.Area, ID: f.ID}, dst, name, path)
	if err != nil {
		return f, false, err
	}
	if made.ID >= 0 {
		f.ID = made.ID
		return f, false, nil
	}
	s.Dirs.Unmade(src, f.ID)
	f.Name, f.ParentID = name, s.Staging.Resolve(dst).ID
	s.Dirs.Made(dst, f)
	return f, true, nil
}

// made is the hook after the service made folder provisional of parent,
// made offline, as made (merged: another writer's folder of its name): it
// stands for made from now on, in the listings, in what was set on it and
// in the mount's nodes.
func (s *Store) made(parent, provisional place.DirKey, made api.File, merged bool) {
	real := place.DirKey{Area: provisional.Area, ID: made.ID}
	s.Attrs.MoveFolder(provisional, real)
	if s.folderMade != nil {
		s.folderMade(provisional, real) // the node's number first: a lookup of the folder made keeps it
	}
	s.Dirs.Resolved(parent, provisional, made, merged)
}
