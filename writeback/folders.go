package writeback

// Folders made offline: a mkdir the service could not take (offline), or
// one in a folder made so, gets a provisional id (below zero: never one of
// the service's) and a journal entry (journal.go), and stands at once:
// files are staged in it, folders made in it, it is renamed (MoveMade) or
// removed (Unmake) as any folder. When the service answers again the
// journal makes it, in order; from then on its provisional id stands for
// the service's (Resolve): the staged files in it and the journal's later
// changes are moved to the folder made (their records written anew), and
// the mount is told (OnMade). A file staged in a folder not made yet waits
// for it: the uploader leaves it until the journal made the folder.
//
// Locks: Staging.mu, as in journal.go; never held across a request.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// errFolderWaits is why a file staged in a folder made offline is not
// uploaded yet.
var errFolderWaits = errors.New("its folder, made offline, is not on the service yet")

// WaitsForService reports whether err, a flush's, says the file waits for
// the service: it cannot be reached, or the file's folder was made offline
// and is not on the service yet.
func WaitsForService(err error) bool {
	return api.IsOffline(err) || errors.Is(err, errFolderWaits)
}

// errFolderLost is why a file staged in a folder made offline that the
// service refused (logged) is not uploaded: it stays staged.
var errFolderLost = errors.New("its folder, made offline, could not be made on the service (see the log); the file stays staged")

// errNameTaken is why a file staged in a folder made offline is not
// uploaded once the folder is made: another file was staged at its name
// in the folder made meanwhile (the newer); it stays staged.
var errNameTaken = errors.New("another file was written at its name in its folder, made offline, meanwhile; this one stays staged")

// madeLaterLocked reports whether the journal has still to make folder id,
// made offline. Called with mu held.
func (s *Staging) madeLaterLocked(id int64) bool {
	return slices.ContainsFunc(s.journal, func(c Change) bool { return c.Op == OpMkdir && c.ID == id })
}

// MakeLater journals folder name of parent, made while the service cannot
// be reached (path: in the mount, for the log and .ctl/uploads), and
// returns its provisional id. It returns once the journal is on disk.
func (s *Staging) MakeLater(parent place.DirKey, name, path string) (int64, error) {
	if err := checkTarget(place.Target{Area: parent.Area, ParentID: parent.ID, Name: name}); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errors.New("staging: closed")
	}
	id := s.nextFolder
	s.nextFolder--
	c := Change{Op: OpMkdir, Parent: s.realLocked(parent), ID: id, Name: name, Dir: true, LastModified: time.Now(), Path: path}
	if err := s.journalLocked(c); err != nil {
		s.nextFolder++
		return 0, err
	}
	return id, nil
}

// Resolve is folder k, or the folder made on the service for it when k was
// made offline and the journal made it since.
func (s *Staging) Resolve(k place.DirKey) place.DirKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.realLocked(k)
}

// realLocked is Resolve, with mu held.
func (s *Staging) realLocked(k place.DirKey) place.DirKey {
	if k.ID < 0 {
		if id, ok := s.madeAs[k.ID]; ok {
			k.ID = id
		}
	}
	return k
}

// realTargetLocked is t in the folder Resolve gives for its folder.
func (s *Staging) realTargetLocked(t place.Target) place.Target {
	t.ParentID = s.realLocked(place.DirKey{Area: t.Area, ID: t.ParentID}).ID
	return t
}

// readyLocked reports whether st's folder is on the service, so that st
// can be uploaded: a file staged in a folder made offline is moved to the
// folder made for it, once it is (a create that raced the folder's making).
// Called with mu held.
func (s *Staging) readyLocked(st *Staged) bool {
	if st.target.ParentID >= 0 {
		return true
	}
	to := s.realTargetLocked(st.target)
	if to == st.target || s.byTarget[st.target] != st || s.byTarget[to] != nil {
		return false
	}
	delete(s.byTarget, st.target)
	st.target = to
	s.byTarget[to] = st
	s.saveLocked(st, true)
	return true
}

// Unmake removes folder k, made offline, before the service has it: its
// journal entry goes (nothing is made). When the journal made it already,
// it returns the folder made (made), for the caller to delete as any. It
// waits while the journal is making it.
func (s *Staging) Unmake(k place.DirKey) (made place.DirKey, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.settledLocked(k); r != k {
		return r, nil
	}
	i := slices.IndexFunc(s.journal, func(c Change) bool { return c.Op == OpMkdir && c.ID == k.ID })
	if i < 0 {
		return k, nil // given up already (logged): nothing on the service
	}
	was := s.journal
	s.journal = slices.Delete(slices.Clone(s.journal), i, i+1)
	if err := s.saveJournalLocked(); err != nil {
		s.journal = was
		return k, err
	}
	s.notifyLocked()
	return k, nil
}

// MoveMade renames folder k, made offline, before the service has it:
// name in parent (path: in the mount) is what the journal makes. When the
// journal made it already, it returns the folder made (made), for the
// caller to rename as any. It waits while the journal is making it.
func (s *Staging) MoveMade(k place.DirKey, parent place.DirKey, name, path string) (made place.DirKey, err error) {
	if err := checkTarget(place.Target{Area: parent.Area, ParentID: parent.ID, Name: name}); err != nil {
		return k, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.settledLocked(k); r != k {
		return r, nil
	}
	i := slices.IndexFunc(s.journal, func(c Change) bool { return c.Op == OpMkdir && c.ID == k.ID })
	if i < 0 {
		return k, errors.New("staging: the folder made offline could not be made on the service; see the log")
	}
	// Made after what was journaled before the rename (a folder of the new
	// name deleted offline goes first); what was made in it follows it.
	was := s.journal
	c := s.journal[i]
	old := c.Path
	c.Parent, c.Name, c.Path = s.realLocked(parent), name, path
	s.journal = append(slices.Delete(slices.Clone(s.journal), i, i+1), c)
	if err := s.saveJournalLocked(); err != nil {
		s.journal = was
		return k, err
	}
	s.repathLocked(old, path)
	return k, nil
}

// repathLocked gives what is staged and journaled below path old in the
// mount its path below new: a folder made offline was renamed. Called with
// mu held.
func (s *Staging) repathLocked(old, new string) {
	if old == "" || new == "" || old == new {
		return
	}
	below := func(p string) (string, bool) {
		if rest, ok := strings.CutPrefix(p, old+"/"); ok {
			return new + "/" + rest, true
		}
		return p, false
	}
	for _, st := range s.entries {
		if p, ok := below(st.path); ok {
			st.path = p
			s.saveLocked(st, true)
		}
	}
	changed := false
	for i := range s.journal {
		if p, ok := below(s.journal[i].Path); ok {
			s.journal[i].Path, changed = p, true
		}
	}
	if changed {
		if err := s.saveJournalLocked(); err != nil {
			s.log.WithError(err).Warn("staging: the journal of changes made offline could not be written")
		}
	}
}

// settledLocked waits while the journal makes folder k (mu is let go
// meanwhile), then returns Resolve's answer. Called with mu held.
func (s *Staging) settledLocked(k place.DirKey) place.DirKey {
	for s.making == k.ID && k.ID != 0 && !s.closed {
		ch := s.changed
		s.mu.Unlock()
		<-ch
		s.mu.Lock()
	}
	return s.realLocked(k)
}

// Made reports whether folder k was made offline and the service does not
// have it yet.
func (s *Staging) Made(k place.DirKey) bool {
	return k.ID < 0 && s.Resolve(k).ID < 0
}

// MadeLater are the folders made offline that the journal has still to
// make, with their folders (a restart shows them: the Store puts them in
// their folders' listings).
func (s *Staging) MadeLater() []Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Change
	for _, c := range s.journal {
		if c.Op == OpMkdir {
			out = append(out, c)
		}
	}
	return out
}

// makeJournaled makes journaled folder c on the service; an error says it
// waits for another try (no answer to go by: offline, a 5xx, Close).
func (s *Staging) makeJournaled(c Change) error {
	log := s.log.WithFields(logrus.Fields{"path": c.Path})
	if c.Parent.ID < 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		// Moved (MoveMade) into a folder made offline after it: made once that one is.
		if j := slices.IndexFunc(s.journal, func(p Change) bool { return p.Op == OpMkdir && p.ID == c.Parent.ID }); j > 0 && s.journal[0] == c {
			moved := make([]Change, 0, len(s.journal))
			moved = append(append(append(moved, s.journal[1:j+1]...), c), s.journal[j+1:]...)
			s.journal = moved
			if err := s.saveJournalLocked(); err != nil {
				s.log.WithError(err).Warn("staging: the journal of changes made offline could not be written")
			}
			return nil
		}
		log.Warn("staging: a folder made offline is not made: the folder it was made in could not be; what was written in it stays in the staging (.ctl/uploads)")
		s.doneLocked(c)
		s.resumeUploadsLocked() // its files fail, and say why
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, deleteTimeout)
	defer cancel()
	made, merged, err := s.makeFolder(ctx, c)
	if waitsForAnotherTry(s.ctx, err) {
		return err
	}
	s.mu.Lock()
	if err != nil {
		log.WithError(err).Warn("staging: the service refused a folder made offline; what was written in it stays in the staging (.ctl/uploads)")
		s.doneLocked(c)
		s.resumeUploadsLocked() // its files fail, and say why
		s.mu.Unlock()
		return nil
	}
	provisional := place.DirKey{Area: c.Parent.Area, ID: c.ID}
	s.madeAs[c.ID] = made.ID
	s.rekeyLocked(provisional, made.ID)
	s.doneLocked(c)
	s.mu.Unlock()
	if merged {
		log.Info("staging: a folder made offline was made meanwhile by another writer; what was written in it goes there")
	} else {
		log.Info("staging: a folder made offline is made")
	}
	if s.onMade != nil {
		s.onMade(c.Parent, provisional, made, merged)
	}
	return nil
}

// makeFolder makes folder c on the service: made, or merged, the folder of
// its name another writer made meanwhile. Where a file holds its name, it
// is made beside it under a conflict copy's name (ConflictName).
func (s *Staging) makeFolder(ctx context.Context, c Change) (made api.File, merged bool, err error) {
	name := c.Name
	for try := 1; ; try++ {
		req := api.CreateDirectoryRequest{ParentID: c.Parent.ID, Name: name}
		if c.Parent.Area.Kind == place.Machine {
			req.MachineID = c.Parent.Area.MachineID
		}
		d, err := s.client.CreateDirectory(ctx, req)
		if err == nil {
			// Recovered: the client found a folder of its name after a lost
			// answer, ours or another writer's: listed anew, as merged.
			return api.File{ID: d.ID, Name: name, ObjectType: api.ObjectDirectory, ParentID: c.Parent.ID, LastModified: time.Now()}, d.Recovered, nil
		}
		if !api.IsExists(err) || try > 3 {
			return api.File{}, false, err
		}
		cur, found, err := s.currentAt(ctx, place.Target{Area: c.Parent.Area, ParentID: c.Parent.ID, Name: name})
		switch {
		case err != nil:
			return api.File{}, false, err
		case found && cur.IsDir():
			return cur, true, nil
		case found:
			name = ConflictName(c.Name, c.LastModified, s.desk, try)
		}
	}
}

// rekeyLocked moves what stands in folder from, made offline, to the
// folder made for it (id): the staged files in it (their records written
// anew) and the journal's later changes. Called with mu held.
func (s *Staging) rekeyLocked(from place.DirKey, id int64) {
	for t, st := range s.byTarget {
		if t.Area == from.Area && t.ParentID == from.ID {
			to := t
			to.ParentID = id
			delete(s.byTarget, t)
			st.target = to
			s.byTarget[to] = st
			s.saveLocked(st, true)
		}
	}
	for i := range s.journal {
		if s.journal[i].Parent == from {
			s.journal[i].Parent.ID = id
		}
	}
}
