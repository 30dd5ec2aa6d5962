package fs

// Files unlinked while open: hidden at once, deleted from the service at
// their last close (or at unmount).
//
// Locks: openFiles.mu, a leaf.

import (
	"context"
	"sync"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// A service file unlinked while open for reading stays readable through the
// descriptors open on it, as POSIX has it: its name goes at once (hidden from
// the listing), the file goes from the service at the last close of those
// descriptors (or at unmount). A daemon killed in between leaves it on the
// service: the unlink is then lost, never the data.

// unlinkDeleteTimeout bounds the deletion at the last close.
const unlinkDeleteTimeout = time.Minute

// openFiles counts the read handles open on each service file and holds the
// files unlinked while open.
type openFiles struct {
	mu       sync.Mutex
	n        map[int64]int          // guarded by mu; read handles open per file id
	unlinked map[int64]unlinkedFile // guarded by mu; unlinked while open, by id
}

type unlinkedFile struct {
	parent place.DirKey
	file   api.File
	path   string // for the log
}

func (o *openFiles) open(id int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[int64]int{}
	}
	o.n[id]++
}

// isUnlinked reports whether service file id was unlinked while open.
func (o *openFiles) isUnlinked(id int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.unlinked[id]
	return ok
}

// close counts a read handle of id closed; at the last one of a file
// unlinked meanwhile it returns that file, to delete now.
func (o *openFiles) close(id int64) (unlinkedFile, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n[id]--; o.n[id] > 0 {
		return unlinkedFile{}, false
	}
	delete(o.n, id)
	u, ok := o.unlinked[id]
	delete(o.unlinked, id)
	return u, ok
}

// unlinkIfOpen holds the deletion of u until its last read handle closes,
// when it has one open, and reports whether it did.
func (o *openFiles) unlinkIfOpen(u unlinkedFile) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n[u.file.ID] == 0 {
		return false
	}
	if o.unlinked == nil {
		o.unlinked = map[int64]unlinkedFile{}
	}
	o.unlinked[u.file.ID] = u
	return true
}

// takeUnlinked returns the files still waiting for their last close, and
// forgets them.
func (o *openFiles) takeUnlinked() []unlinkedFile {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]unlinkedFile, 0, len(o.unlinked))
	for _, u := range o.unlinked {
		out = append(out, u)
	}
	o.unlinked = nil
	return out
}

// deleteUnlinked deletes a file unlinked while open, now that it is closed.
func (f *FS) deleteUnlinked(u unlinkedFile) {
	ctx, cancel := context.WithTimeout(context.Background(), unlinkDeleteTimeout)
	defer cancel()
	if err := f.store.DeleteNowOrLater(ctx, u.parent, u.file, u.path); err != nil {
		f.log.WithError(err).WithField("path", u.path).Warn("could not delete a file unlinked while open, at its last close; it stays on the service")
		return
	}
	f.log.WithField("path", u.path).Debug("deleted a file unlinked while open, at its last close")
}

// DeleteUnlinked deletes the files unlinked while open whose descriptors
// were never closed (the mount ended first). Called once the mount ended.
func (f *FS) DeleteUnlinked() {
	for _, u := range f.open.takeUnlinked() {
		f.deleteUnlinked(u)
	}
}
