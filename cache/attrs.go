package cache

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/logging"
	"github.com/orgfs/orgfs/place"
)

// The service keeps no modes, owners or modification times: a file's
// last_modified_date is when it was uploaded, and a folder's never moves. So
// that chmod, chown, touch, cp -p and rsync -a behave as on a disk (and a
// second rsync transfers nothing), this desk keeps what was set in its
// attribute store (attrs_journal.go: a journal in the cache dir, so that it
// survives remounts) and shows it while the service's record of the file is
// the one it was set on. Another desk sees the service's defaults.

// Attr is what a user set on a file or folder; a nil field shows the
// default (the mount's mode and owner, the service's time).
type Attr struct {
	Mode  *uint32    `json:"mode,omitempty"` // permission bits, 07777
	UID   *uint32    `json:"uid,omitempty"`
	GID   *uint32    `json:"gid,omitempty"`
	MTime *time.Time `json:"mtime,omitempty"`
	ATime *time.Time `json:"atime,omitempty"` // shown as set; default the modification time
	CTime *time.Time `json:"ctime,omitempty"` // the last change of the others
}

// With returns a with the fields set in c.
func (a Attr) With(c Attr) Attr {
	if c.Mode != nil {
		a.Mode = c.Mode
	}
	if c.UID != nil {
		a.UID = c.UID
	}
	if c.GID != nil {
		a.GID = c.GID
	}
	if c.MTime != nil {
		a.MTime = c.MTime
	}
	if c.ATime != nil {
		a.ATime = c.ATime
	}
	if c.CTime != nil {
		a.CTime = c.CTime
	}
	return a
}

// IsZero reports whether nothing is set.
func (a Attr) IsZero() bool {
	return a.Mode == nil && a.UID == nil && a.GID == nil && a.MTime == nil && a.ATime == nil && a.CTime == nil
}

// ModTime is the modification time set, else def.
func (a Attr) ModTime(def time.Time) time.Time {
	if a.MTime != nil {
		return *a.MTime
	}
	return def
}

// TimeAttr is an Attr setting the modification time only.
func TimeAttr(t time.Time) Attr { return Attr{MTime: &t} }

// Attrs holds what users set on files and folders of this desk.
type Attrs struct {
	mu      sync.Mutex
	pending map[place.Target]Attr // guarded by mu; set on files not uploaded yet
	files   map[int64]*fileSet    // guarded by mu; set on service files
	dirs    map[place.DirKey]Attr // guarded by mu; set on folders
	journal *journal              // guarded by mu; nil: kept in memory only
	// recent is the time of the mount's own record of each file uploaded
	// lately (provisional: not the service's), so that what is set on a file
	// just uploaded survives the first real listing; safe for concurrent use.
	recent *lru.Cache[int64, time.Time]
	// justUploaded is the service id each pending file lately uploaded got,
	// by its target; safe for concurrent use.
	justUploaded *lru.Cache[place.Target, int64]
	log          logrus.FieldLogger
}

// recentUploads is how many uploads' own record times Attrs keeps.
const recentUploads = 4096

// fileSet is what was set on one service file, and the record it holds for.
type fileSet struct {
	Attr        Attr
	Seen        time.Time // the service's last_modified_date it holds for; zero until listed
	Provisional time.Time // the local time of the upload's record, which is not the service's
}

// NewAttrs returns an empty Attrs kept in memory only.
func NewAttrs() *Attrs {
	recent, err := lru.New[int64, time.Time](recentUploads)
	if err != nil {
		panic(err) // only for a size below 1
	}
	just, err := lru.New[place.Target, int64](recentUploads)
	if err != nil {
		panic(err)
	}
	return &Attrs{pending: map[place.Target]Attr{}, files: map[int64]*fileSet{}, dirs: map[place.DirKey]Attr{},
		recent: recent, justUploaded: just, log: logging.OrDiscard(nil)}
}

// SetPending records what was set on a pending file. One whose upload
// ended just before (a chmod racing the upload's end) gives it to the
// version uploaded.
func (m *Attrs) SetPending(t place.Target, c Attr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pending[t]; !ok {
		if id, ok := m.justUploaded.Get(t); ok {
			n := m.files[id]
			if n == nil {
				n = &fileSet{}
				n.Provisional, _ = m.recent.Get(id)
			}
			n = &fileSet{Attr: n.Attr.With(c), Seen: n.Seen, Provisional: n.Provisional}
			m.files[id] = n
			m.recordFile(id, n)
			return
		}
	}
	a := m.pending[t].With(c)
	m.pending[t] = a
	m.record(attrRecord{Pending: &t, Attr: &a})
}

// ResetPending makes a what is set on pending file t: a new file's mode and
// owner, or what was set on the service file it replaces.
func (m *Attrs) ResetPending(t place.Target, a Attr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.justUploaded.Remove(t) // a new file there
	_, had := m.pending[t]
	switch {
	case !a.IsZero():
		m.pending[t] = a
		m.record(attrRecord{Pending: &t, Attr: &a})
	case had:
		delete(m.pending, t)
		m.record(attrRecord{Pending: &t})
	}
}

// KeepPending forgets what was set on pending files that are not pending any
// more (keep reports those that are), as found at start.
func (m *Attrs) KeepPending(keep func(place.Target) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for t := range m.pending {
		if !keep(t) {
			delete(m.pending, t)
			m.record(attrRecord{Pending: &t})
		}
	}
}

// Pending is what was set on a pending file: also while its upload ends
// (the version uploaded has it, the staging holds the file still).
func (m *Attrs) Pending(t place.Target) Attr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.pending[t]; ok {
		return a
	}
	if id, ok := m.justUploaded.Get(t); ok {
		if n := m.files[id]; n != nil {
			return n.Attr
		}
	}
	return Attr{}
}

// ForgetPending drops what was set on a pending file removed.
func (m *Attrs) ForgetPending(t place.Target) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pending[t]; ok {
		delete(m.pending, t)
		m.record(attrRecord{Pending: &t})
	}
}

// Move follows a pending file renamed; its change time is now, as a disk's.
func (m *Attrs) Move(from, to place.Target) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.pending[from]
	if ok {
		delete(m.pending, from)
		m.record(attrRecord{Pending: &from})
	} else if id, ok := m.justUploaded.Get(from); ok && m.files[id] != nil {
		a = m.files[id].Attr // its upload ended just before the rename
	}
	now := time.Now()
	a.CTime = &now
	m.pending[to] = a
	m.record(attrRecord{Pending: &to, Attr: &a})
}

// SetFile records what was set on a service file, as listed now: by the
// service, or by the mount's own record of its upload (then the service's
// time is learnt from the first real listing, as in Uploaded).
func (m *Attrs) SetFile(f api.File, c Attr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.currentLocked(f)
	if n == nil {
		n = &fileSet{Seen: f.LastModified}
		if p, ok := m.recent.Get(f.ID); ok && p.Equal(f.LastModified) {
			n = &fileSet{Provisional: p}
		}
	}
	n = &fileSet{Attr: n.Attr.With(c), Seen: n.Seen, Provisional: n.Provisional}
	m.files[f.ID] = n
	m.recordFile(f.ID, n)
}

// Uploaded gives a file just uploaded what was set on it while pending, and
// the time its writer left: modTime, the staged copy's (its last write, or a
// time set on it), shown instead of the upload's end while the service's
// record of it is unchanged, so that a file's time does not jump when its
// upload ends (make, rsync and git compare them). provisional is the time of
// the record the mount made itself; the service's own time is learnt from
// the first real listing.
func (m *Attrs) Uploaded(t place.Target, id int64, provisional, modTime time.Time) {
	m.recent.Add(id, provisional)
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, again := m.justUploaded.Get(t)
	m.justUploaded.Add(t, id)
	var a Attr
	if n := m.files[prev]; again && prev != id && n != nil {
		// Uploaded again while staged (written, or a mode or time set,
		// since): what was set on the version before goes on (an owner
		// travels with no upload).
		a = n.Attr
	}
	if p, ok := m.pending[t]; ok {
		a = a.With(p)
		delete(m.pending, t)
		m.record(attrRecord{Pending: &t})
	}
	if !modTime.IsZero() {
		a.MTime = &modTime
	}
	if !a.IsZero() {
		n := &fileSet{Attr: a, Provisional: provisional}
		m.files[id] = n
		m.recordFile(id, n)
	}
}

// Shown is what to show of a service file: the mode and time its writer
// gave it (in its content type), under what a user of this desk set while
// the service's record is unchanged.
func (m *Attrs) Shown(f api.File) Attr {
	riding := ridingAttr(f)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.currentLocked(f); n != nil {
		return riding.With(n.Attr)
	}
	return riding
}

// ridingAttr is what f's content type carries of the mode and time its
// writer gave it (api.File.Written): shown on every desk, under what this
// desk set on that version.
func ridingAttr(f api.File) Attr {
	if f.Written.IsZero() {
		return Attr{}
	}
	t := f.Written.Attrs()
	return Attr{Mode: t.Mode, MTime: t.MTime}
}

// currentLocked returns what was set on f while it holds for f's record,
// forgetting it once the service's record changed.
func (m *Attrs) currentLocked(f api.File) *fileSet {
	n, ok := m.files[f.ID]
	if !ok {
		return nil
	}
	if n.Seen.IsZero() {
		if f.LastModified.Equal(n.Provisional) {
			return n // still the mount's own record of the upload
		}
		n.Seen = f.LastModified // the first listing after the upload
		m.recordFile(f.ID, n)
	}
	if !n.Seen.Equal(f.LastModified) {
		m.forgetLocked(f.ID) // changed on the service since
		return nil
	}
	return n
}

// Forget drops what was set on a service file deleted.
func (m *Attrs) Forget(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(id)
}

func (m *Attrs) forgetLocked(id int64) {
	if _, ok := m.files[id]; ok {
		delete(m.files, id)
		m.record(attrRecord{File: id})
	}
}

// SetDir records what was set on a folder (its id never changes).
func (m *Attrs) SetDir(k place.DirKey, c Attr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.dirs[k].With(c)
	m.dirs[k] = a
	m.record(attrRecord{Dir: &k, Attr: &a})
}

// Dir is what was set on a folder.
func (m *Attrs) Dir(k place.DirKey) Attr {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dirs[k]
}

// TouchDir moves a folder's times to now, as a disk does when an entry is
// made, removed or renamed in it.
func (m *Attrs) TouchDir(k place.DirKey) {
	now := time.Now()
	m.SetDir(k, Attr{MTime: &now, CTime: &now})
}

// ForgetDir drops what was set on a folder deleted.
func (m *Attrs) ForgetDir(k place.DirKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.dirs[k]; ok {
		delete(m.dirs, k)
		m.record(attrRecord{Dir: &k})
	}
}

func (m *Attrs) recordFile(id int64, n *fileSet) {
	a := n.Attr
	m.record(attrRecord{File: id, Attr: &a, Seen: n.Seen, Provisional: n.Provisional})
}

// MoveFolder follows a folder made offline to the folder the service made
// for it (writeback/folders.go): what was set on it, and on the files
// pending in it, is kept under the service's id.
func (m *Attrs) MoveFolder(from, to place.DirKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.dirs[from]; ok {
		delete(m.dirs, from)
		m.record(attrRecord{Dir: &from})
		m.dirs[to] = a
		m.record(attrRecord{Dir: &to, Attr: &a})
	}
	for t, a := range m.pending {
		if t.Area == from.Area && t.ParentID == from.ID {
			delete(m.pending, t)
			m.record(attrRecord{Pending: &t})
			moved := place.Target{Area: to.Area, ParentID: to.ID, Name: t.Name}
			m.pending[moved] = a
			m.record(attrRecord{Pending: &moved, Attr: &a})
		}
	}
}
