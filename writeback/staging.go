package writeback

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sirupsen/logrus"
	"golang.org/x/sync/semaphore"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/logging"
	"github.com/orgfs/orgfs/place"
)

// Locks: Staging.mu only (a leaf of the package's lock order, docs/ARCHITECTURE.md); a
// Staged has no lock of its own. mu is held for small local disk operations
// (creating, unlinking or closing a staged file, writing its record), never
// across a request.

// mineRemembered is how many ids of its own uploads (and of the files they
// replaced) the staging remembers, to tell them from other writers'.
const mineRemembered = 4096

// Defaults of StagingOptions.
const (
	DefaultStagingWriteBack  = 2 * time.Second
	DefaultStagingTransfers  = 4
	DefaultStagingParallel   = 4
	DefaultStagingMinBackoff = time.Second
	DefaultStagingMaxBackoff = time.Minute
)

// StagingOptions configures a Staging. Zero values take the defaults (see
// withDefaults, the one place where they are set).
type StagingOptions struct {
	Dir       string        // staging dir of its own (not the content cache's; created 0700; files 0600); survives restarts
	Client    Client        // required
	WriteBack time.Duration // wait after the last close before uploading; default 2s
	Transfers int           // files uploaded at once; default 4
	Parallel  int           // parts of one file in flight; default 4
	// Parts is the parts in flight of all files together; default 4x
	// Transfers, and at least Parallel.
	Parts int
	// MinBackoff and MaxBackoff shape the wait before an upload that failed
	// for a transient reason is tried again: MinBackoff doubling at each
	// failure up to MaxBackoff; defaults 1s and 1 min.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	Log        logrus.FieldLogger
	// OnUploaded, when set, is called after a file reached the service (the
	// mount updates its listings); OnFailed after a permanent failure. They
	// are called without any lock held, from the upload's goroutine.
	// f: the uploaded file, as far as known (at least ID, Name, Size,
	// LastModified, ParentID); modTime: the staged copy's modification time
	// (its last write, or the time set on it), which the mount keeps showing.
	OnUploaded func(t place.Target, f api.File, modTime time.Time)
	OnFailed   func(t place.Target, err error)
	// OnConflict is called after a file went up as a conflict copy beside
	// another writer's version (conflicts.go), without any lock held.
	OnConflict func(t place.Target, c Conflict)
	// Desk names this desk in conflict copies' names; default: none.
	Desk string
	// OnLanded, when set, is called after a file uploaded as f left the
	// staging unchanged, with a path holding its content (a link to the
	// staged data, removed after the call): the mount's content cache takes
	// it, so a file just written is not downloaded to be read. No lock is
	// held.
	OnLanded func(f api.File, data string)
	// OnSuperseded, when set, is called after an upload to t made service
	// file id that the staging deletes later (the file was renamed while it
	// went up, or removed once OnUploaded had told of it): no listing may
	// show it meanwhile or after. No lock is held.
	OnSuperseded func(t place.Target, id int64)
	// OnKept, when set, is called with service files the staging meant to
	// delete and leaves on the service: the originals of a file renamed
	// away whose upload is discarded, a deletion that failed. What
	// OnSuperseded (or the mount, at a rename) hid must show again. No lock
	// is held.
	OnKept func(ids []int64)
	// OnRemade, when set, is called after the folders of a staged file's
	// path that another writer deleted were made again and the file moved
	// there (remake.go): from its old place to to; under is the folder in
	// which the first of them was made (or to's folder), whose listing is
	// out of date. No lock is held.
	OnRemade func(from, to place.Target, under place.DirKey)
	// OnMade, when set, is called after a folder made offline was made on
	// the service (folders.go): provisional stands for made from now on,
	// in parent; merged: the service held a folder of its name already
	// (made meanwhile by another writer), which is taken. No lock is held.
	OnMade func(parent, provisional place.DirKey, made api.File, merged bool)
	// UploadMode, when set, gives the permission bits a file at t goes up
	// with (nil: none set): they ride in its content type with its
	// modification time (api.WithTypeAttrs), for every desk to show.
	UploadMode func(t place.Target) *uint32
}

func (o StagingOptions) withDefaults() StagingOptions {
	setDefault(&o.WriteBack, DefaultStagingWriteBack)
	setDefault(&o.Transfers, DefaultStagingTransfers)
	setDefault(&o.Parallel, DefaultStagingParallel)
	setDefault(&o.Parts, 4*o.Transfers)
	o.Parts = max(o.Parts, o.Parallel)
	setDefault(&o.MinBackoff, DefaultStagingMinBackoff)
	setDefault(&o.MaxBackoff, DefaultStagingMaxBackoff)
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	o.Log = logging.OrDiscard(o.Log)
	return o
}

// Staging holds the files written through the mount until they are on the
// service, and uploads them: a queue on disk (one data file and one record per
// staged file) worked by a pool of workers: Transfers files at once, and
// small files beside them (see smallFile).
type Staging struct {
	// dependencies
	client       Client
	log          logrus.FieldLogger
	onUploaded   func(place.Target, api.File, time.Time)
	onFailed     func(place.Target, error)
	onConflict   func(place.Target, Conflict)
	onLanded     func(api.File, string)
	onSuperseded func(place.Target, int64)
	onKept       func([]int64)
	onRemade     func(from, to place.Target, under place.DirKey)
	onMade       func(parent, provisional place.DirKey, made api.File, merged bool)
	uploadMode   func(t place.Target) *uint32
	// constants
	desk                   string
	dir                    string
	writeBack              time.Duration
	transfers, parallel    int
	parts                  *semaphore.Weighted // Parts: shared by the uploads at once
	minBackoff, maxBackoff time.Duration

	ctx    context.Context // cancelled by Close: every upload and deletion runs under it
	cancel context.CancelFunc
	wg     sync.WaitGroup // workers and background deletions

	mu           sync.Mutex
	cond         *sync.Cond               // on mu: wakes the workers when the queue grows, a target frees or at Close
	entries      map[int64]*Staged        // guarded by mu; every staged file, by number
	byTarget     map[place.Target]*Staged // guarded by mu
	orphans      map[*Staged]struct{}     // guarded by mu; removed or uploaded but still open (file kept open)
	queue        []*Staged                // guarded by mu; queued files, next first
	busy         map[place.Target]int     // guarded by mu; uploads in flight per target, removed files' included
	bigBusy      int                      // guarded by mu; uploads in flight of files that are not small
	next         int64                    // guarded by mu; number of the next staged file
	changed      chan struct{}            // guarded by mu; closed (and replaced) at every settled upload, removal and Close
	draining     int                      // guarded by mu; Drain calls running: files upload at once
	closed       bool                     // guarded by mu
	uploaded     int64                    // guarded by mu
	bytesUp      int64                    // guarded by mu
	resumes      int                      // guarded by mu; Resume calls (the service back after an outage)
	journal      []Change                 // guarded by mu; changes made offline, in order (journal.go)
	applying     bool                     // guarded by mu; applyJournal runs
	applyAgain   bool                     // guarded by mu; applyJournal runs once more when it ends (a Resume or a new entry meanwhile)
	nextFolder   int64                    // guarded by mu; the provisional id of the next folder made offline (folders.go)
	madeAs       map[int64]int64          // guarded by mu; folders made offline, then on the service: provisional id → the service's
	making       int64                    // guarded by mu; the provisional id of the folder applyJournal is making (0: none)
	journalTries int                      // guarded by mu; tries of the journal's first change that got no answer to go by in a row (retryJournal)
	// Many writers (conflicts.go).
	mine       *lru.Cache[int64, struct{}] // ids this mount uploaded, or deleted as replaced, lately; safe for concurrent use
	sent       stamp                       // when an upload last sent a byte (LastSent)
	conflicts  []Conflict                  // guarded by mu; the latest
	nConflicts int64                       // guarded by mu
}

// OpenStaging opens (or creates) the staging directory, loads the staged files
// a previous run left and resumes every upload not done: pending and failed
// files are queued at once (a file that was open for writing at a crash is
// uploaded as it is). Records of uploads that had completed are dropped with
// their data; unreadable records are kept aside (renamed *.bad) with their
// data, never deleted.
func OpenStaging(opts StagingOptions) (*Staging, error) {
	if opts.Dir == "" {
		return nil, errors.New("staging: no directory")
	}
	if missing(opts.Client) {
		return nil, errors.New("staging: no API client")
	}
	opts = opts.withDefaults()
	if err := privateDir(opts.Dir); err != nil {
		return nil, fmt.Errorf("staging: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Staging{
		client: opts.Client, log: opts.Log, onUploaded: opts.OnUploaded, onFailed: opts.OnFailed, onConflict: opts.OnConflict, onLanded: opts.OnLanded, onSuperseded: opts.OnSuperseded, onKept: opts.OnKept, onRemade: opts.OnRemade, onMade: opts.OnMade, uploadMode: opts.UploadMode, desk: opts.Desk,
		dir: opts.Dir, writeBack: opts.WriteBack, transfers: opts.Transfers, parallel: opts.Parallel,
		parts:      semaphore.NewWeighted(int64(opts.Parts)),
		minBackoff: opts.MinBackoff, maxBackoff: opts.MaxBackoff,
		ctx: ctx, cancel: cancel,
		entries: map[int64]*Staged{}, byTarget: map[place.Target]*Staged{}, orphans: map[*Staged]struct{}{},
		busy: map[place.Target]int{}, next: 1, changed: make(chan struct{}), madeAs: map[int64]int64{},
	}
	s.cond = sync.NewCond(&s.mu)
	var err error
	if s.mine, err = lru.New[int64, struct{}](mineRemembered); err != nil {
		cancel()
		return nil, err
	}
	if err := s.load(); err != nil {
		cancel()
		return nil, err
	}
	if err := s.loadJournal(); err != nil {
		cancel()
		return nil, err
	}
	for range s.transfers * smallLanes {
		s.wg.Add(1)
		go s.worker()
	}
	// The changes a run before journaled wait for Resume: the caller
	// hides the deletions from its listings first (DeletedLater).
	return s, nil
}

func checkTarget(t place.Target) error {
	switch {
	case t.Area.Kind == place.Recordings:
		return errors.New("staging: the recordings are read-only")
	case t.Area.Kind != place.Shared && t.Area.Kind != place.Machine:
		return fmt.Errorf("staging: unknown area %v", t.Area)
	case t.Name == "" || t.Name == "." || t.Name == ".." || strings.ContainsAny(t.Name, "/\x00"):
		return fmt.Errorf("staging: invalid name %q", t.Name)
	}
	return nil
}

// Create makes a new empty staged file for t. replaces is the id of the
// service file it overwrites (0: none); the upload then uses overwrite. A
// staged file already pending at t is replaced (its upload cancelled; the new
// one inherits what it replaced and what it was to delete).
//
// The staged file comes back with one writer open, the caller's handle
// (CloseWriter ends it): nothing, not even the empty file, is uploaded before
// that close. A writer counted after Create would race the write-back timer,
// which could upload and close the empty file first.
func (s *Staging) Create(t place.Target, replaces int64) (*Staged, error) {
	return s.CreateAt(t, replaces, "")
}

// CreateAt is Create with the file's path in the mount (SetPath) in its
// first record: one record written, not two (a record costs a file created
// and renamed, 0.2-0.3 ms on ext4, in the syscall's time).
func (s *Staging) CreateAt(t place.Target, replaces int64, path string) (*Staged, error) {
	if err := checkTarget(t); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("staging: closed")
	}
	seq := s.next
	s.next++
	f, err := os.OpenFile(s.dataPath(seq), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("staging: %w", err)
	}
	return s.publishLocked(seq, f, t, replaces, 1, path)
}

// CreateFrom is Create for a copy of existing content: fill writes it into
// the new file before anything can see it (the queue, readers, the next
// start). The data is synced and the record written last, so a crash during
// the copy leaves data without a record, which the next start removes:
// nothing half-copied is ever uploaded. The staged file comes back with one
// writer open (the caller's; CloseWriter ends it).
func (s *Staging) CreateFrom(t place.Target, replaces int64, fill func(f *os.File) error) (*Staged, error) {
	return s.stageNew(t, replaces, func(p string) (*os.File, error) {
		return os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	}, fill)
}

// Adopt is CreateFrom for content that already is a local file, the cache
// file the kernel reads in passthrough: link names that very file at the
// path given, which makes it the staging copy, so that what is written to it
// from now on is what the upload sends. The caller has the content cache
// forget it (Store.StageCopy). The staged file comes back with one writer
// open (the caller's).
func (s *Staging) Adopt(t place.Target, replaces int64, link func(path string) error) (*Staged, error) {
	return s.stageNew(t, replaces, func(p string) (*os.File, error) {
		if err := link(p); err != nil {
			return nil, fmt.Errorf("taking the cache file: %w", err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			os.Remove(p)
		}
		return f, err
	}, nil)
}

// stageNew is CreateFrom and Adopt: open makes the data file at the path
// given (and leaves nothing there when it fails), fill (if any) writes the
// content, and the file is synced before its record names it.
func (s *Staging) stageNew(t place.Target, replaces int64, open func(path string) (*os.File, error), fill func(f *os.File) error) (*Staged, error) {
	if err := checkTarget(t); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("staging: closed")
	}
	seq := s.next
	s.next++
	s.mu.Unlock()
	p := s.dataPath(seq)
	f, err := open(p)
	if err != nil {
		return nil, fmt.Errorf("staging: %w", err)
	}
	if fill != nil {
		err = fill(f)
	}
	if err == nil {
		err = f.Sync()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.closed {
		err = errors.New("staging: closed")
	}
	if err != nil {
		f.Close()
		os.Remove(p)
		return nil, err
	}
	return s.publishLocked(seq, f, t, replaces, 1, "")
}

// publishLocked makes a new staged file, whose data is in f, the one at t:
// its record is written, it replaces what was staged there, and it waits
// for its writers (the caller's one) to close. Called with mu held.
func (s *Staging) publishLocked(seq int64, f *os.File, t place.Target, replaces int64, writers int, path string) (*Staged, error) {
	t = s.realTargetLocked(t)
	st := s.newStaged(seq, f, t, replaces)
	st.writers, st.path = writers, path
	if other := s.byTarget[t]; other != nil {
		if replaces == 0 {
			st.replaces = other.replaces
		}
		st.inheritLocked(other)
	}
	if err := s.writeRecord(st, recPending); err != nil {
		f.Close()
		os.Remove(s.dataPath(seq))
		return nil, err
	}
	st.savedState = recPending
	if other := s.byTarget[t]; other != nil {
		s.removeLocked(other, false)
	}
	s.entries[seq] = st
	s.byTarget[t] = st
	s.waitLocked(st)
	return st, nil
}

// Lookup returns the staged file at t, if any: not uploaded yet, failed, or
// uploaded but still open (its later changes are uploaded again).
func (s *Staging) Lookup(t place.Target) *Staged {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byTarget[s.realTargetLocked(t)]
}

// Acquire is Lookup followed by OpenWriter (write) or OpenReader, under one
// lock: the file cannot land (leave the staging) between the two. The mount opens a staged
// file with it; nil when nothing is staged at t.
func (s *Staging) Acquire(t place.Target, write bool) *Staged {
	s.mu.Lock()
	st := s.byTarget[s.realTargetLocked(t)]
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	if write {
		if st.openWriter(true) {
			return st
		}
	} else if st.openReader(true) {
		return st
	}
	return s.Acquire(t, write) // landed or replaced meanwhile: look again
}

// Pending returns the staged files of one folder, by name. Listings show them
// with their local size and modification time.
func (s *Staging) Pending(area place.Area, parentID int64) []*Staged {
	s.mu.Lock()
	defer s.mu.Unlock()
	parentID = s.realLocked(place.DirKey{Area: area, ID: parentID}).ID
	var out []*Staged
	for t, st := range s.byTarget {
		if t.Area == area && t.ParentID == parentID {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b *Staged) int { return strings.Compare(a.target.Name, b.target.Name) })
	return out
}

// Rename gives a staged file a new target (rsync's temp-file-then-rename, an
// editor's save-then-rename). A staged file pending at to is replaced. The
// service file st was to overwrite (at the old name) is deleted once st is
// uploaded under the new name. See RenameReplacing.
func (s *Staging) Rename(st *Staged, to place.Target) error {
	return s.RenameReplacing(st, to, 0)
}

// RenameReplacing is Rename when the mount knows the service file already at
// to (replaces, its id; 0: none): the upload overwrites it without first
// meeting a 451.
func (s *Staging) RenameReplacing(st *Staged, to place.Target, replaces int64) error {
	return s.RenameAt(st, to, replaces, "")
}

// RenameAt is RenameReplacing that also sets the file's path in the mount
// (SetPath; "": as it was), in the same record.
func (s *Staging) RenameAt(st *Staged, to place.Target, replaces int64, path string) error {
	if err := checkTarget(to); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	to = s.realTargetLocked(to)
	if s.closed {
		return errors.New("staging: closed")
	}
	if st.unstagedLocked() {
		return fmt.Errorf("staging: %s: %w", st.target, os.ErrNotExist)
	}
	moved := path != "" && path != st.path
	if moved {
		st.path = path
	}
	if to == st.target {
		if moved {
			s.saveLocked(st, true)
		}
		return nil
	}
	if st.replaces != 0 && st.replaces != replaces && !slices.Contains(st.deleteAfter, st.replaces) {
		st.deleteAfter = append(st.deleteAfter, st.replaces)
	}
	st.replaces = replaces
	st.overwrite = false
	other := s.byTarget[to]
	if other != nil {
		if st.replaces == 0 {
			st.replaces = other.replaces
		}
		st.inheritLocked(other)
	}
	st.deleteAfter = slices.DeleteFunc(st.deleteAfter, func(id int64) bool { return id == st.replaces })
	delete(s.byTarget, st.target)
	st.target = to
	st.gen++
	// The new record first, then the replaced file's removal: a crash in
	// between leaves two records for to, and the later one wins.
	s.saveLocked(st, true)
	if other != nil {
		s.removeLocked(other, false)
	}
	s.byTarget[to] = st
	s.changedLocked(st)
	return nil
}

// Remove drops a staged file (unlink): its upload is cancelled and its data
// deleted. An open file stays readable and writable through File until its
// last close, but nothing of it is uploaded. The service files it was to
// delete after its upload (DeleteAfterUpload) are deleted now, in the
// background: the user renamed them away. The service file it was to
// overwrite is the mount's to delete.
func (s *Staging) Remove(st *Staged) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.unstagedLocked() {
		return nil
	}
	s.removeLocked(st, true)
	return nil
}

// removeLocked takes st out of the staging: cancels its upload, deletes its
// files, and (when deleteRest) the service files it was to delete after
// its upload.
func (s *Staging) removeLocked(st *Staged, deleteRest bool) {
	if deleteRest && len(st.deleteAfter) > 0 {
		s.deleteLater(slices.Clone(st.deleteAfter), st.nameLocked(), "renamed away, then removed")
	}
	s.dropLocked(st)
}

// dropLocked forgets st and deletes its files, without touching the service.
func (s *Staging) dropLocked(st *Staged) {
	st.removed = true
	s.dequeueLocked(st)
	s.stopTimerLocked(st)
	if st.upCancel != nil {
		st.upCancel()
	}
	s.unstageLocked(st)
}

// unstageLocked takes a removed or landed st out of the staging's indexes,
// deletes its files and wakes its waiters; its file is closed once unused.
func (s *Staging) unstageLocked(st *Staged) {
	if s.byTarget[st.target] == st {
		delete(s.byTarget, st.target)
	}
	delete(s.entries, st.seq)
	s.removeFiles(st.seq)
	s.settleLocked(st)
	s.closeIfUnusedLocked(st)
}

// closeIfUnusedLocked closes the file of a removed or landed staged file
// once nobody uses it, or keeps it among the orphans until then.
func (s *Staging) closeIfUnusedLocked(st *Staged) {
	if !st.unstagedLocked() || st.closedFile {
		return
	}
	if st.writers > 0 || st.readers > 0 || st.state == stUploading {
		s.orphans[st] = struct{}{}
		return
	}
	delete(s.orphans, st)
	if fi, err := st.f.Stat(); err == nil {
		st.lastSize, st.lastMod = fi.Size(), fi.ModTime()
	}
	st.f.Close()
	st.closedFile = true
}

// landLocked ends the staging of an uploaded, unchanged file nobody has
// open for writing.
func (s *Staging) landLocked(st *Staged) {
	st.landed = true
	s.stopTimerLocked(st)
	s.unstageLocked(st)
}

// Flush uploads st now (not waiting for the write-back delay, even while it
// is open) and waits for the outcome: nil once the content it had is on the
// service, or the error of a permanent failure (the mount maps it to an
// errno; the staged copy is kept). An upload of it already in flight is waited
// for, and followed by another when the file changed meanwhile. A transient
// failure is retried (with backoff) until ctx ends; offline
// (api.IsOffline), the attempt's error is the answer at once.
func (s *Staging) Flush(ctx context.Context, st *Staged) error {
	s.mu.Lock()
	st.flushers++
	defer func() {
		s.mu.Lock()
		st.flushers--
		if st.flushers == 0 && st.state == stQueued && st.writers > 0 && s.draining == 0 {
			s.dequeueLocked(st)
			st.state = stWaiting
		}
		s.mu.Unlock()
	}()
	tried := false // an upload attempt ended since Flush began
	for {
		if s.closed {
			s.mu.Unlock()
			return errors.New("staging: closed")
		}
		if st.unstagedLocked() || st.state == stUploaded {
			s.mu.Unlock()
			return nil
		}
		switch st.state {
		case stFailed:
			if tried {
				err := st.lastErr
				s.mu.Unlock()
				return err
			}
			s.enqueueLocked(st, true)
		case stRetrying:
			if tried && s.waitsForServiceLocked(st) {
				// The service cannot be reached: nothing to wait for.
				err := st.lastErr
				s.mu.Unlock()
				return err
			}
			if !tried {
				s.enqueueLocked(st, true)
			}
		case stWaiting:
			s.enqueueLocked(st, true)
		case stQueued:
			s.moveFrontLocked(st)
		}
		ch := st.settled
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			err := st.lastErr
			s.mu.Unlock()
			if err != nil {
				return fmt.Errorf("staging: %s: %w (last error: %v)", st.Target(), ctx.Err(), err)
			}
			return fmt.Errorf("staging: %s: %w", st.Target(), ctx.Err())
		}
		tried = true
		s.mu.Lock()
	}
}

// waitsForServiceLocked reports whether st was tried and waits for the
// service to answer again (offline), or for its folder made offline: a
// drain does not wait for it; it stays staged for the next start.
func (s *Staging) waitsForServiceLocked(st *Staged) bool {
	return st.state == stRetrying && st.lastErr != nil && (api.IsOffline(st.lastErr) || errors.Is(st.lastErr, errFolderWaits) && !s.applying)
}

// Drain starts every waiting upload now (skipping the write-back delay, and
// uploading files still open as they are) and waits until no upload is
// pending or ctx ends; one that waits for the service (offline), tried
// once, is not waited for. What is left (failed, offline, or still pending
// when ctx ended) stays staged for the next start and is logged. It returns nil when nothing
// is left.
func (s *Staging) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining++
	defer func() {
		s.mu.Lock()
		s.draining--
		s.mu.Unlock()
	}()
	for _, st := range s.sortedLocked() {
		if st.state == stWaiting || st.state == stRetrying {
			s.enqueueLocked(st, false)
		}
	}
	for {
		busy := 0
		for _, st := range s.entries {
			if st.state != stFailed && st.state != stUploaded && !s.waitsForServiceLocked(st) {
				busy++
			}
		}
		if busy == 0 || s.closed {
			break
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			break
		}
	}
	var left []*Staged
	for _, st := range s.sortedLocked() {
		if st.state != stUploaded {
			left = append(left, st)
		}
	}
	for _, st := range left {
		f := logrus.Fields{"path": st.nameLocked(), "state": st.state.String()}
		if st.lastErr != nil {
			f["error"] = st.lastErr.Error()
		}
		s.log.WithFields(f).Warn("staging: not uploaded; kept staged for the next start")
	}
	s.mu.Unlock()
	if len(left) == 0 {
		return nil
	}
	s.log.WithField("files", len(left)).Warn("staging: uploads left staged")
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("staging: %d files not uploaded, kept staged: %w", len(left), err)
	}
	return fmt.Errorf("staging: %d files not uploaded, kept staged", len(left))
}

// Dir is the staging dir.
func (s *Staging) Dir() string { return s.dir }

// LastSent is when an upload last sent a byte (the zero Unix time before
// any): a flush waits while bytes go (cache's Store.Flush).
func (s *Staging) LastSent() time.Time { return s.sent.time() }

// Mine reports whether id is one this mount uploaded, or deleted as
// replaced, lately: no other writer's.
func (s *Staging) Mine(id int64) bool { return s.mine.Contains(id) }

// Entries describes every staged file, oldest first (.ctl/uploads).
func (s *Staging) Entries() []StagedInfo {
	s.mu.Lock()
	all := s.sortedLocked()
	out := make([]StagedInfo, len(all))
	for i, st := range all {
		state := st.state.String()
		if st.state == stWaiting && st.writers > 0 {
			state = "open"
		}
		out[i] = StagedInfo{
			Target: st.target, Path: st.path, Replaces: st.replaces, State: state,
			Done: st.done, Total: st.total, Attempts: st.attempts,
		}
		if st.lastErr != nil {
			out[i].Err = st.lastErr.Error()
		}
	}
	s.mu.Unlock()
	for i, st := range all {
		out[i].Size, out[i].ModTime = st.stat()
	}
	return out
}

// sortedLocked returns the staged files by number (oldest first).
func (s *Staging) sortedLocked() []*Staged {
	out := make([]*Staged, 0, len(s.entries))
	for _, st := range s.entries {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b *Staged) int { return int(a.seq - b.seq) })
	return out
}

// Close stops the workers without draining: uploads in flight are cancelled
// and every staged file stays on disk, queued again at the next OpenStaging.
// The staged files are closed.
func (s *Staging) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, st := range s.entries {
		s.stopTimerLocked(st)
		s.settleLocked(st)
	}
	s.queue = nil
	s.cancel()
	s.cond.Broadcast()
	s.notifyLocked()
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.entries {
		if !st.closedFile {
			st.f.Close()
			st.closedFile = true
		}
	}
	for st := range s.orphans {
		if !st.closedFile {
			st.f.Close()
			st.closedFile = true
		}
	}
	return nil
}
