package cache

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/orgfs/orgfs/api"
)

// The service keeps no modification times: a file's last_modified_date is
// when it was uploaded. So that rsync -a and cp -p see the times they set
// (and a second rsync transfers nothing), the mount remembers a time set on a
// file and shows it while the service's record of that file is the one it
// first saw after setting it.

// Times holds the times users set on files (touch, cp -p, rsync -a).
type Times struct {
	mu      sync.Mutex
	pending map[Target]time.Time // guarded by mu; set on files not uploaded yet
	byID    map[int64]*mtimeNote // guarded by mu; set on service files
	// recent is the time of the mount's own record of each file uploaded
	// lately (provisional: not the service's), so that a time set on a file
	// just uploaded survives the first real listing; safe for concurrent use.
	recent *lru.Cache[int64, time.Time]
}

// recentUploads is how many uploads' own record times Times keeps.
const recentUploads = 4096

type mtimeNote struct {
	shown       time.Time // what the user set
	seen        time.Time // the service's last_modified_date it holds for; zero until listed
	provisional time.Time // the local time of the upload's record, which is not the service's
}

// NewTimes returns an empty Times.
func NewTimes() *Times {
	recent, err := lru.New[int64, time.Time](recentUploads)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &Times{pending: map[Target]time.Time{}, byID: map[int64]*mtimeNote{}, recent: recent}
}

// SetPending records a time set on a pending file.
func (m *Times) SetPending(t Target, when time.Time) {
	m.mu.Lock()
	m.pending[t] = when
	m.mu.Unlock()
}

// Move follows a pending file renamed.
func (m *Times) Move(from, to Target) {
	m.mu.Lock()
	if when, ok := m.pending[from]; ok {
		delete(m.pending, from)
		m.pending[to] = when
	}
	m.mu.Unlock()
}

// SetFile records a time set on a service file, as listed now: by the
// service, or by the mount's own record of its upload (then the service's
// time is learnt from the first real listing, as in Uploaded).
func (m *Times) SetFile(f api.File, when time.Time) {
	note := &mtimeNote{shown: when, seen: f.LastModified}
	if p, ok := m.recent.Get(f.ID); ok && p.Equal(f.LastModified) {
		note = &mtimeNote{shown: when, provisional: p}
	}
	m.mu.Lock()
	m.byID[f.ID] = note
	m.mu.Unlock()
}

// Uploaded gives a file just uploaded the time its writer left: modTime, the
// staged copy's (its last write, or a time set on it), shown instead of the
// upload's end while the service's record of it is unchanged, so that a
// file's time does not jump when its upload ends (make, rsync and git
// compare them). provisional is the time of the record the mount made
// itself; the service's own time is learnt from the first real listing.
func (m *Times) Uploaded(t Target, id int64, provisional, modTime time.Time) {
	m.recent.Add(id, provisional)
	m.mu.Lock()
	if when, ok := m.pending[t]; ok {
		delete(m.pending, t)
		modTime = when
	}
	if !modTime.IsZero() {
		m.byID[id] = &mtimeNote{shown: modTime, provisional: provisional}
	}
	m.mu.Unlock()
}

// Shown is the time to show for a service file: the one a user set while the
// service's record is unchanged, else the service's.
func (m *Times) Shown(f api.File) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.byID[f.ID]
	if !ok {
		return f.LastModified
	}
	if n.seen.IsZero() {
		if f.LastModified.Equal(n.provisional) {
			return n.shown // still the mount's own record of the upload
		}
		n.seen = f.LastModified // the first listing after the upload
	}
	if !n.seen.Equal(f.LastModified) {
		delete(m.byID, f.ID) // changed on the service since
		return f.LastModified
	}
	return n.shown
}
