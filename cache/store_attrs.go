package cache

// The Store's operations on what users set on this desk (modes, owners,
// times: the attribute store, attrs.go), as the mount asks for them.

import (
	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
	"github.com/orgfs/orgfs/writeback"
)

// FileAttr is what was set on service file f, while f is the version it was
// set on.
func (s *Store) FileAttr(f api.File) Attr { return s.Attrs.Shown(f) }

// StagedAttr is what was set on the pending file at t.
func (s *Store) StagedAttr(t place.Target) Attr { return s.Attrs.Pending(t) }

// DirAttr is what was set on folder k.
func (s *Store) DirAttr(k place.DirKey) Attr { return s.Attrs.Dir(k) }

// SetFileAttr keeps what a chmod, chown or utimes set on service file f.
func (s *Store) SetFileAttr(f api.File, c Attr) { s.Attrs.SetFile(f, c) }

// SetStagedAttr keeps what a chmod, chown or utimes set on the pending
// file st: a time on its staging copy itself (its upload keeps it), the
// rest in the attribute store; a mode or time goes up with it (in its
// content type), also when its upload began before.
func (s *Store) SetStagedAttr(st *writeback.Staged, c Attr) {
	if c.MTime != nil {
		st.SetModTime(*c.MTime)
	}
	s.Attrs.SetPending(st.Target(), c)
	if c.Mode != nil || c.MTime != nil {
		st.AttrsChanged() // they go up with it (rsync: write, close, utimes, chmod, rename)
	}
}

// SetDirAttr keeps what was set on folder k: a chmod, chown or utimes, or
// what a folder renamed takes along to its new id.
func (s *Store) SetDirAttr(k place.DirKey, c Attr) { s.Attrs.SetDir(k, c) }

// TouchDir moves folder k's times, for a change the mount keeps in memory
// only (its fifos, sockets and device nodes: fs/local.go); every change
// that reaches the service moves them itself.
func (s *Store) TouchDir(k place.DirKey) { s.Attrs.TouchDir(k) }

// uploadMode is the mode a pending file at t goes up with (set here, or
// inherited from the version it edits): nil when none.
func (s *Store) uploadMode(t place.Target) *uint32 { return s.Attrs.Pending(t).Mode }
