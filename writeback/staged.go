package writeback

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// Locks: Staging.mu (a leaf, docs/ARCHITECTURE.md): a Staged's fields are guarded by its
// Staging's mu. Held for small local disk operations (a record, a chtimes),
// never across a request.

// Staged is one staged file: the local copy of what a file of the service is
// to become. It is safe for concurrent use.
type Staged struct {
	s   *Staging
	seq int64    // constant: the number of its files, <seq>.data and <seq>.json
	f   *os.File // constant; closed once landed or removed and no longer open, or at Close

	// guarded by s.mu
	target      place.Target
	replaces    int64   // the service file the upload overwrites
	deleteAfter []int64 // service files to delete once the upload succeeded
	// sent are the ids the service gave this file's uploads begun since the
	// last one that ended (api.UploadRequest.Created), kept in the record:
	// an upload that completed as the daemon was killed, its answer never
	// read, is this mount's own after the restart, not another writer's
	// version to go up beside as a conflict copy.
	sent        []int64
	overwrite   bool // upload with overwrite even when replaces is 0 (after a 451)
	state       stagedState
	savedState  string // State of the record on disk (recPending, recFailed or recUploaded)
	writers     int    // OpenWriter calls not yet closed
	readers     int    // OpenReader calls not yet closed
	flushers    int    // Flush calls waiting: the file uploads even while open
	gen         uint64 // bumped by every change (Touch, Rename)
	timer       *time.Timer
	upCancel    context.CancelFunc // cancels the upload in flight
	retries     int                // transient failures in a row (backoff)
	attempts    int                // failed attempts of the current content
	lastErr     error              // last failure
	permErr     error              // last permanent failure; cleared by a successful upload
	final       bool               // permErr would come again: not retried at the next start
	path        string             // the path the user knows it by ("shared/docs/a.txt"); "" until told
	done, total int64              // progress of the upload in flight or the last one
	settled     chan struct{}      // closed (and replaced) when an upload ends, and at Remove and Close
	removed     bool               // removed (unlinked, or replaced by another staged file)
	landed      bool               // uploaded and no longer staged
	uploadedAs  api.File           // the service's file the last upload made, while uploaded (and once landed)
	closedFile  bool               // f is closed
	lastSize    int64              // size and mtime as last seen, for after the file is closed
	small       bool               // small (smallFile) when last queued
	retryAsked  bool               // Retry came while an attempt was under way: a permanent failure of it is retried once
	lastMod     time.Time
	// Many writers (conflicts.go).
	recheck      bool   // a 451 met: the next upload checks whose version holds the name
	copyTry      int    // the conflict copy's name was taken this many times
	conflictName string // went up as a conflict copy of this name: later changes go there
	conflictID   int64  // the conflict copy's id
}

func (s *Staging) newStaged(seq int64, f *os.File, t place.Target, replaces int64) *Staged {
	return &Staged{s: s, seq: seq, f: f, target: t, replaces: replaces, gen: 1, settled: make(chan struct{}), lastMod: time.Now()}
}

// StagedInfo describes one staged file, for .ctl/uploads.
type StagedInfo struct {
	Target   place.Target
	Path     string // the path in the mount, when known
	Replaces int64  // id of the service file it overwrites; 0: none
	Size     int64  // local size
	ModTime  time.Time
	State    string // "open", "waiting", "queued", "uploading", "retrying", "failed", "uploaded"
	Done     int64  // bytes sent by the upload in flight (or the last one)
	Total    int64  // bytes of that upload
	Attempts int    // failed attempts of the current content
	Err      string // last error, if any
}

// String is the line of .ctl/uploads:
// "uploading shared/0/big.bin 12582912 bytes 50% (6291456/12582912)", with the
// last error at the end when there is one.
func (i StagedInfo) String() string {
	var b strings.Builder
	name := i.Path
	if name == "" {
		name = i.Target.String()
	}
	fmt.Fprintf(&b, "%s %s %d bytes", i.State, name, i.Size)
	if i.Total > 0 && (i.State == "uploading" || i.Done > 0) {
		fmt.Fprintf(&b, " %d%% (%d/%d)", i.Done*100/i.Total, i.Done, i.Total)
	}
	if i.Attempts > 0 {
		fmt.Fprintf(&b, " attempts %d", i.Attempts)
	}
	if i.Err != "" {
		fmt.Fprintf(&b, " error: %s", i.Err)
	}
	return b.String()
}

// stagedState is where a staged file is on its way to the service:
//
//	waiting ──(last close + write-back delay; Flush; Drain)──► queued ──► uploading
//	uploading ──ok, unchanged──► uploaded (landed at once unless still open)
//	uploading ──ok, changed meanwhile──► waiting
//	uploading ──transient failure──► retrying ──(backoff)──► queued
//	uploading ──permanent failure──► failed ──(Retry, change, Flush, next start)──► queued
//
// Every upload reads the staged file as it is (no snapshot); a generation
// counter bumped by Touch and Rename tells whether the file changed while it
// was uploaded, in which case it goes back to waiting and is uploaded again.
type stagedState int

const (
	stWaiting   stagedState = iota // changed; open for writing, or in the write-back delay
	stQueued                       // waiting for a transfer slot
	stUploading                    // an upload is in flight
	stRetrying                     // a transient failure; the backoff timer queues it again
	stFailed                       // a permanent failure; kept until retried or changed
	stUploaded                     // uploaded and unchanged since, kept while open
)

func (s stagedState) String() string {
	return [...]string{"waiting", "queued", "uploading", "retrying", "failed", "uploaded"}[s]
}

// unstagedLocked reports whether st is no longer staged: removed, or
// uploaded and landed.
func (st *Staged) unstagedLocked() bool { return st.removed || st.landed }

// inheritLocked takes over what other, a staged file st replaces at the same
// target, was to delete after its upload, and the ids of its uploads (sent:
// one may have completed at the name).
func (st *Staged) inheritLocked(other *Staged) {
	st.deleteAfter = withIDs(st.deleteAfter, other.deleteAfter...)
	st.sent = withIDs(st.sent, other.sent...)
}

// withIDs is ids with those of add it does not hold appended.
func withIDs(ids []int64, add ...int64) []int64 {
	for _, id := range add {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Seq is the staged copy's number, unique in its staging dir (it names its
// files there).
func (st *Staged) Seq() int64 { return st.seq }

// Replaces is the id of the service file the upload overwrites: the version
// the local change started from (0: a file new here).
func (st *Staged) Replaces() int64 {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	return st.replaces
}

// Target is where the file goes.
func (st *Staged) Target() place.Target {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	return st.target
}

// File is the staging file: the mount reads and writes it at offsets
// (ReadAt, WriteAt, Truncate). It stays open while the file is staged, and
// after it was uploaded or removed until its last CloseWriter/CloseReader.
func (st *Staged) File() *os.File { return st.f }

// Size is the local size.
func (st *Staged) Size() int64 {
	n, _ := st.stat()
	return n
}

// ModTime is the local modification time.
func (st *Staged) ModTime() time.Time {
	_, t := st.stat()
	return t
}

// stat reads the local size and modification time (the last ones seen once
// the file is closed).
func (st *Staged) stat() (int64, time.Time) {
	size, mod, _ := st.Stat()
	return size, mod
}

// Stat is the local size and modification time, and the staged copy's file
// information (nil once the file is closed: the size and time are then the
// last ones seen), in one fstat.
func (st *Staged) Stat() (int64, time.Time, os.FileInfo) {
	fi, err := st.f.Stat()
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	if err != nil {
		return st.lastSize, st.lastMod, nil
	}
	st.lastSize, st.lastMod = fi.Size(), fi.ModTime()
	return st.lastSize, st.lastMod, fi
}

// SetModTime sets the local modification time (utimes). The service keeps
// its own: the time set shows until the next listing after the upload.
func (st *Staged) SetModTime(t time.Time) {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st.lastMod = t
	if !st.closedFile && !st.removed && !st.landed {
		if err := os.Chtimes(s.dataPath(st.seq), t, t); err != nil {
			s.log.WithError(err).WithField("path", st.nameLocked()).Debug("staging: could not set the modification time")
		}
	}
}

// OpenWriter counts a writer that opened the file: nothing is uploaded
// while one has it open, and a running write-back delay is cancelled.
func (st *Staged) OpenWriter() { st.openWriter(false) }

// openWriter is OpenWriter. For Acquire (acquire set) it counts nothing and
// reports false when the file is no longer staged.
func (st *Staged) openWriter(acquire bool) bool {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if acquire && st.unstagedLocked() {
		return false
	}
	st.writers++
	if st.unstagedLocked() || s.closed {
		return true
	}
	switch st.state {
	case stWaiting:
		s.stopTimerLocked(st)
	case stQueued:
		if st.flushers == 0 && s.draining == 0 {
			s.dequeueLocked(st)
			st.state = stWaiting
		}
	case stUploaded:
		s.saveLocked(st, false) // a writer may change it: a crash must upload it again
	}
	return true
}

// CloseWriter counts the close of a writer. The last close starts the
// write-back delay of a changed file.
func (st *Staged) CloseWriter() {
	s := st.s
	s.mu.Lock()
	var kept string // an uploaded copy landed: its data, for the content cache
	var as api.File
	defer func() {
		s.mu.Unlock()
		s.handOver(as, kept, kept != "")
	}()
	if st.writers > 0 {
		st.writers--
	}
	if st.writers > 0 || s.closed {
		return
	}
	if st.unstagedLocked() {
		s.closeIfUnusedLocked(st)
		return
	}
	switch st.state {
	case stWaiting:
		s.waitLocked(st)
	case stUploaded:
		if st.readers == 0 {
			as, kept = s.landUploadedLocked(st)
		} else {
			s.saveLocked(st, false)
		}
	}
}

// OpenReader counts a reader that uses the file through File: an uploaded
// file stays open (and staged) until CloseReader. Readers do not delay
// uploads.
func (st *Staged) OpenReader() { st.openReader(false) }

func (st *Staged) openReader(acquire bool) bool {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	if acquire && st.unstagedLocked() {
		return false
	}
	st.readers++
	return true
}

// CloseReader ends a use counted by OpenReader.
func (st *Staged) CloseReader() {
	s := st.s
	s.mu.Lock()
	var kept string // an uploaded copy landed: its data, for the content cache
	var as api.File
	defer func() {
		s.mu.Unlock()
		s.handOver(as, kept, kept != "")
	}()
	if st.readers > 0 {
		st.readers--
	}
	if st.readers > 0 || st.writers > 0 || s.closed {
		return
	}
	if st.unstagedLocked() {
		s.closeIfUnusedLocked(st)
		return
	}
	if st.state == stUploaded {
		as, kept = s.landUploadedLocked(st)
	}
}

// landUploadedLocked lands st, uploaded and unchanged since, at its last
// close, and returns its data kept for the content cache (handOver, after
// the lock), as an upload's end does for a file nobody holds: a file written
// and closed after its upload (or read until then) is not downloaded again,
// and a file the kernel reads in passthrough keeps being the cache's file of
// its version.
func (s *Staging) landUploadedLocked(st *Staged) (api.File, string) {
	kept := s.keepData(st, st.uploadedAs)
	s.landLocked(st)
	return st.uploadedAs, kept
}

// Touch notes a change of the content; call it after the change is written
// to File, while holding the file open as a writer (OpenWriter or Acquire):
// an upload that starts before Touch may not see the change, and one that
// began before the change is followed by another. The file will be uploaded
// (again), also when it had been uploaded or had failed.
func (st *Staged) Touch() {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st.gen++
	if st.unstagedLocked() || s.closed {
		return
	}
	s.changedLocked(st)
}

// AttrsChanged notes a change of what goes up with the content (its mode
// or modification time: StagingOptions.UploadMode), no writer needed: as
// Touch, the file goes up (again) with them while it is staged (waiting,
// on its way, or up and still open); once it left the staging, they wait
// for its next upload.
func (st *Staged) AttrsChanged() { st.Touch() }

// changedLocked moves a staged file that just changed toward an upload.
func (s *Staging) changedLocked(st *Staged) {
	switch st.state {
	case stUploaded, stFailed:
		st.state = stWaiting
		st.attempts = 0
		s.saveLocked(st, false)
		s.waitLocked(st)
	case stWaiting:
		s.waitLocked(st)
	}
}

// Uploaded returns the service's file st became, once st is no longer staged
// because it was uploaded (landed): whoever showed st shows that file until
// its folder is listed again. False while st is staged, and once removed. A
// file that went up as a conflict copy (conflicts.go) became no file at its
// name: the zero File, with true.
func (st *Staged) Uploaded() (api.File, bool) {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	return st.uploadedAs, st.landed
}

// Err returns the last permanent failure of the file's upload, if any (it
// stays set until an upload succeeds, also while the file is retried).
func (st *Staged) Err() error {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	return st.permErr
}

// DeleteAfterUpload asks for the service file id to be deleted once this
// staged file is on the service (rename of an uploaded file: the content is
// uploaded under the new name, then the old one deleted). A 404 then is
// fine. The request is saved in the file's record.
func (st *Staged) DeleteAfterUpload(id int64) {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == 0 || st.unstagedLocked() || slices.Contains(st.deleteAfter, id) {
		return
	}
	st.deleteAfter = append(st.deleteAfter, id)
	if st.state == stUploaded {
		// Already uploaded: upload again so that the deletion happens
		// after content known to be on the service under this name.
		st.gen++
		s.changedLocked(st)
	}
	s.saveLocked(st, true)
}

// SetPath tells the path the user knows the file by, for the log and
// .ctl/uploads (the target names a folder by its id). It is kept in the
// record, so the next start names it too.
func (st *Staged) SetPath(p string) {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.path == p {
		return
	}
	st.path = p
	s.saveLocked(st, true)
}

// nameLocked is how logs name the file: its path, else its target. Called
// with s.mu held.
func (st *Staged) nameLocked() string {
	if st.path != "" {
		return st.path
	}
	return st.target.String()
}
