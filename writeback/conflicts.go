package writeback

// Many writers: before an upload replaces a service file, the staging checks
// that the name still holds the version the local change started from. When
// another writer (another desk, the computer itself, the web console, a
// script) changed it meanwhile, both versions survive: theirs stays under the
// name, ours goes up beside it as a conflict copy, and the conflict is
// recorded (Conflicts, .ctl/conflicts) and logged once, with both paths.
//
// The interface has no conditional write: between the check (a listing of
// the name) and the upload's complete there is a window in which another
// writer's version can still be replaced. The check is made right before the
// upload starts, so the window is one upload long.
//
// Locks: Staging.mu (a leaf, docs/ARCHITECTURE.md), held for memory only; the check's
// listing runs without it.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// maxConflicts is how many conflicts Conflicts keeps (the latest).
const maxConflicts = 1000

// Conflict is a change made through the mount that met another writer's
// change of the same file.
type Conflict struct {
	Time time.Time `json:"time"`
	Path string    `json:"path"` // the file's path in the mount: the other writer's version stays there
	Copy string    `json:"copy"` // the path of the conflict copy: this mount's version
	// Base is the service file the local change started from (0: a file
	// new here), Theirs the one found at the name instead, Ours the
	// conflict copy.
	Base   int64 `json:"base_id,omitempty"`
	Theirs int64 `json:"their_id"`
	Ours   int64 `json:"our_id"`
	Size   int64 `json:"size"`
}

// String is the line of .ctl/conflicts: "2026-11-25T14:32:07Z shared/a.txt
// kept as shared/a (conflict 2026-11-25 1432 desk-a).txt (12 bytes)".
func (c Conflict) String() string {
	return fmt.Sprintf("%s %s kept as %s (%d bytes)", c.Time.UTC().Format(time.RFC3339), c.Path, c.Copy, c.Size)
}

// ConflictName is the name of the conflict copy of name made by desk at
// when, as sync tools name theirs: "report (conflict 2026-11-25 1432
// desk-a).docx". A try above 1 (the name was taken too) adds " 2", " 3"...
// The result stays within 255 bytes: the stem is shortened.
func ConflictName(name string, when time.Time, desk string, try int) string {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" || len(ext) > 32 { // ".bashrc", or no real extension
		stem, ext = name, ""
	}
	tag := " (conflict " + when.Format("2006-01-02 1504")
	if desk != "" {
		tag += " " + desk
	}
	if try > 1 {
		tag += fmt.Sprintf(" %d", try)
	}
	tag += ")"
	for len(stem)+len(tag)+len(ext) > 255 && stem != "" {
		_, n := utf8.DecodeLastRuneInString(stem)
		stem = stem[:len(stem)-n]
	}
	return stem + tag + ext
}

// currentAt returns the service's file at t now (found false: none), from a
// listing of t's folder searched for its name (q), matched exactly. A search
// may reach below the folder (the emulator's does), so a match must name the
// folder as its parent; an area's root, whose id the mount does not know, is
// listed whole instead.
func (s *Staging) currentAt(ctx context.Context, t place.Target) (api.File, bool, error) {
	req := api.ListFilesRequest{ParentID: t.ParentID, Query: t.Name}
	if t.ParentID == 0 {
		req.Query = ""
	}
	for f, err := range s.list(ctx, t.Area, req).All() {
		if err != nil {
			return api.File{}, false, err
		}
		if f.Name == t.Name && (f.ParentID == t.ParentID || t.ParentID == 0) {
			return f, true, nil
		}
	}
	return api.File{}, false, nil
}

// list is the listing req asks for in area.
func (s *Staging) list(ctx context.Context, area place.Area, req api.ListFilesRequest) *api.FileList {
	if area.Kind == place.Machine {
		return s.client.MachineFiles(ctx, area.MachineID, req)
	}
	return s.client.SharedFiles(ctx, req)
}

// knownLocked reports whether service file id is a version this mount wrote
// or is replacing: one it uploaded, or one a staged file overwrites or
// deletes after its upload (a rename away, an editor's backup), or deleted
// so lately.
func (s *Staging) knownLocked(id int64) bool {
	if s.mine.Contains(id) {
		return true
	}
	for _, st := range s.entries {
		if st.replaces == id || st.conflictID == id || slices.Contains(st.sent, id) {
			return true
		}
		for _, d := range st.deleteAfter {
			if d == id {
				return true
			}
		}
	}
	return false
}

// checkVersion decides, right before an upload that would replace a file
// (or after a 451), what the upload does: overwrite the version the change
// started from, or one this mount wrote; create the file again when another
// writer deleted it; or, when another writer's version holds the name, go up
// as a conflict copy beside it.
func (s *Staging) checkVersion(up *upload) error {
	cur, found, err := s.currentAt(up.ctx, up.target)
	if err != nil {
		return err
	}
	s.mu.Lock()
	known := found && (cur.ID == up.replaces || s.knownLocked(cur.ID))
	s.mu.Unlock()
	if found && !known && s.sameContent(up.ctx, cur, up.st) {
		// This file's own content, uploaded by an attempt whose end this
		// mount did not learn (a crash after the service completed it).
		known = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !found:
		up.overwrite = false
	case known:
		up.overwrite = true
	default:
		up.overwrite = false
		up.theirs = cur.ID
		up.copyName = ConflictName(up.target.Name, time.Now(), s.desk, up.st.copyTry)
	}
	return nil
}

// sameContent reports whether service file f holds exactly st's content
// now: same size, then the same bytes, compared as they stream (a download,
// made only where a conflict would be declared otherwise).
func (s *Staging) sameContent(ctx context.Context, f api.File, st *Staged) bool {
	fi, err := st.f.Stat()
	if err != nil || fi.Size() != f.Size {
		return false
	}
	if f.Size == 0 {
		return true
	}
	link, err := s.client.FileURL(ctx, f.ID)
	if err != nil {
		return false
	}
	r, err := s.client.ReadRange(ctx, link.URL, 0, f.Size)
	if err != nil {
		return false
	}
	defer r.Close()
	theirs, ours := make([]byte, 64<<10), make([]byte, 64<<10)
	for off := int64(0); off < f.Size; {
		n, err := io.ReadFull(r, theirs[:min(int64(len(theirs)), f.Size-off)])
		if err != nil {
			return false
		}
		if _, err := st.f.ReadAt(ours[:n], off); err != nil || !bytes.Equal(theirs[:n], ours[:n]) {
			return false
		}
		off += int64(n)
	}
	return true
}

// conflictedLocked settles an upload that went up as a conflict copy: it is
// recorded and logged, and the staged file's later changes (an open file
// written again) go to the same copy.
func (s *Staging) conflictedLocked(up *upload, res *api.UploadResult, size int64) Conflict {
	st := up.st
	st.conflictName, st.conflictID, st.copyTry = up.copyName, res.ID, 0
	dir := path.Dir(up.name)
	c := Conflict{Time: time.Now(), Path: up.name, Copy: path.Join(dir, up.copyName),
		Base: up.replaces, Theirs: up.theirs, Ours: res.ID, Size: size}
	if dir == "." || !strings.Contains(up.name, "/") {
		c.Copy = up.copyName
	}
	s.conflicts = append(s.conflicts, c)
	if len(s.conflicts) > maxConflicts {
		s.conflicts = s.conflicts[len(s.conflicts)-maxConflicts:]
	}
	s.nConflicts++
	s.log.WithFields(logrus.Fields{"path": c.Path, "copy": c.Copy, "their_id": c.Theirs, "our_id": c.Ours}).
		Warn("staging: another writer changed the file meanwhile; theirs stays under the name, ours is uploaded beside it as a conflict copy")
	return c
}

// Conflicts returns the latest conflicts (up to 1,000), oldest first, and
// how many there were since the start.
func (s *Staging) Conflicts() ([]Conflict, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Conflict(nil), s.conflicts...), s.nConflicts
}
