package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
)

// Lock order: Staging.mu only; a Staged has no lock of its own (its fields are
// guarded by its Staging's mu). mu is never held across a request; it is held
// for the small local disk operations of the queue (writing a record, creating
// or unlinking a staged file).
//
// States of a staged file:
//
//	waiting ──(last close + write-back delay; Flush; Drain)──► queued ──► uploading
//	uploading ──ok, unchanged──► clean (retired at once unless still open)
//	uploading ──ok, changed meanwhile──► waiting
//	uploading ──transient failure──► retrying ──(backoff)──► queued
//	uploading ──permanent failure──► failed ──(Retry, change, Flush, next start)──► queued
//
// Every upload reads the staged file as it is (no snapshot); a generation
// counter bumped by Touch and Rename tells whether the file changed while it
// was uploaded, in which case it stays dirty and is uploaded again.

// Defaults of StagingOptions.
const (
	DefaultStagingWriteBack  = 2 * time.Second
	DefaultStagingTransfers  = 4
	DefaultStagingParallel   = 4
	DefaultStagingMinBackoff = time.Second
	DefaultStagingMaxBackoff = time.Minute
)

// sizeMismatchAttempts is how many uploads answered 452 (size mismatch) in a
// row before the failure counts as permanent.
const sizeMismatchAttempts = 3

// deleteTimeout bounds the background deletion of one service file.
const deleteTimeout = 2 * time.Minute

// Target is where a staged file goes on the service.
type Target struct {
	Area     Area  // Shared or Machine (Recordings is never written)
	ParentID int64 // folder id; 0 = the area's root
	Name     string
}

// String names the target for logs and .ctl/uploads: "shared/12/report.pdf",
// "machine 7/0/notes.txt" (area, folder id, name).
func (t Target) String() string {
	return t.Area.String() + "/" + strconv.FormatInt(t.ParentID, 10) + "/" + t.Name
}

// StagingOptions configures a Staging. Zero values take the defaults (see
// withDefaults, the one place where they are set).
type StagingOptions struct {
	Dir       string        // staging dir of its own (not the content cache's; created 0700; files 0600); survives restarts
	Client    *api.Client   // required
	WriteBack time.Duration // wait after the last close before uploading; default 2s
	Transfers int           // files uploaded at once; default 4
	Parallel  int           // parts of one file in flight; default 4
	// MinBackoff and MaxBackoff shape the wait before an upload that failed
	// for a transient reason is tried again: MinBackoff doubling at each
	// failure up to MaxBackoff; defaults 1s and 1 min.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	Log        logrus.FieldLogger
	// OnUploaded, when set, is called after a file reached the service (the
	// mount updates its listings); OnFailed after a permanent failure. They
	// are called without any lock held, from the upload's goroutine.
	OnUploaded func(t Target, f api.File) // f: the new record (at least ID, Name, Size, LastModified, ParentID)
	OnFailed   func(t Target, err error)
}

func (o StagingOptions) withDefaults() StagingOptions {
	if o.WriteBack <= 0 {
		o.WriteBack = DefaultStagingWriteBack
	}
	if o.Transfers <= 0 {
		o.Transfers = DefaultStagingTransfers
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultStagingParallel
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultStagingMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultStagingMaxBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Log = l
	}
	return o
}

// StagingStats are the upload queue's counters.
type StagingStats struct {
	Pending     int   // staged files not uploaded yet: open, in the write-back delay, queued or waiting to retry
	Uploading   int   // uploads in flight
	Failed      int   // permanent failures, kept staged until retried
	Uploaded    int64 // files uploaded since the start
	Bytes       int64 // bytes of the files uploaded since the start
	StagedBytes int64 // local bytes of every staged file
}

// StagedInfo describes one staged file, for .ctl/uploads.
type StagedInfo struct {
	Target   Target
	Replaces int64 // id of the service file it overwrites; 0: none
	Size     int64 // local size
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
	fmt.Fprintf(&b, "%s %s %d bytes", i.State, i.Target, i.Size)
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

// stagedState is where a staged file is in its way to the service.
type stagedState int

const (
	stWaiting   stagedState = iota // changed; open for writing, or in the write-back delay
	stQueued                       // waiting for a transfer slot
	stUploading                    // an upload is in flight
	stRetrying                     // a transient failure; the backoff timer queues it again
	stFailed                       // a permanent failure; kept until retried or changed
	stClean                        // uploaded and unchanged since, kept while open
)

func (s stagedState) String() string {
	return [...]string{"waiting", "queued", "uploading", "retrying", "failed", "uploaded"}[s]
}

// stagedRecord is a staged file's record, <n>.json beside <n>.data.
type stagedRecord struct {
	Area        string    `json:"area"` // "shared" or "machine"
	MachineID   int64     `json:"machine_id,omitempty"`
	ParentID    int64     `json:"parent_id"`
	Name        string    `json:"name"`
	Replaces    int64     `json:"replaces,omitempty"`
	State       string    `json:"state"` // recPending, recFailed or recUploaded
	Attempts    int       `json:"attempts,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	DeleteAfter []int64   `json:"delete_after,omitempty"`
	Saved       time.Time `json:"saved"` // when the record was written: of two records for one target, the later wins
}

// Values of stagedRecord.State.
const (
	recPending  = "pending"  // to upload
	recFailed   = "failed"   // to upload; the last attempt failed for good
	recUploaded = "uploaded" // on the service; the files only wait to be removed
)

// Staging holds the files written through the mount until they are on the
// service, and uploads them: a queue on disk (one data file and one record per
// staged file) worked by a pool of Transfers workers.
type Staging struct {
	// dependencies
	client     *api.Client
	log        logrus.FieldLogger
	onUploaded func(Target, api.File)
	onFailed   func(Target, error)
	// constants
	dir                    string
	writeBack              time.Duration
	transfers, parallel    int
	minBackoff, maxBackoff time.Duration

	ctx    context.Context // cancelled by Close: every upload and deletion runs under it
	cancel context.CancelFunc
	wg     sync.WaitGroup // workers and background deletions

	mu       sync.Mutex
	cond     *sync.Cond           // on mu: wakes the workers when the queue grows, a target frees or at Close
	entries  map[int64]*Staged    // guarded by mu; every staged file, by number
	byTarget map[Target]*Staged   // guarded by mu
	orphans  map[*Staged]struct{} // guarded by mu; removed or uploaded but still open (file kept open)
	queue    []*Staged            // guarded by mu; queued files, next first
	busy     map[Target]int       // guarded by mu; uploads in flight per target, removed files' included
	next     int64                // guarded by mu; number of the next staged file
	changed  chan struct{}        // guarded by mu; closed (and replaced) at every settled upload, removal and Close
	draining int                  // guarded by mu; Drain calls running: files upload at once
	closed   bool                 // guarded by mu
	uploaded int64                // guarded by mu
	bytesUp  int64                // guarded by mu
}

// Staged is one staged file: the local copy of what a file of the service is
// to become. It is safe for concurrent use.
type Staged struct {
	s   *Staging
	seq int64    // constant: the number of its files, <seq>.data and <seq>.json
	f   *os.File // constant; closed once retired or removed and no longer open, or at Close

	// guarded by s.mu
	target      Target
	replaces    int64   // the service file the upload overwrites
	deleteAfter []int64 // service files to delete once the upload succeeded
	overwrite   bool    // upload with overwrite even when replaces is 0 (after a 451)
	state       stagedState
	saved       string // state of the record on disk
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
	done, total int64              // progress of the upload in flight or the last one
	settled     chan struct{}      // closed (and replaced) when an upload ends, and at Remove and Close
	removed     bool               // removed (unlinked, or replaced by another staged file)
	retired     bool               // uploaded and no longer staged
	closedFile  bool               // f is closed
	lastSize    int64              // size and mtime as last seen, for after the file is closed
	lastMod     time.Time
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
	if opts.Client == nil {
		return nil, errors.New("staging: no API client")
	}
	opts = opts.withDefaults()
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("staging: %w", err)
	}
	if err := os.Chmod(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("staging: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Staging{
		client: opts.Client, log: opts.Log, onUploaded: opts.OnUploaded, onFailed: opts.OnFailed,
		dir: opts.Dir, writeBack: opts.WriteBack, transfers: opts.Transfers, parallel: opts.Parallel,
		minBackoff: opts.MinBackoff, maxBackoff: opts.MaxBackoff,
		ctx: ctx, cancel: cancel,
		entries: map[int64]*Staged{}, byTarget: map[Target]*Staged{}, orphans: map[*Staged]struct{}{},
		busy: map[Target]int{}, next: 1, changed: make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	if err := s.load(); err != nil {
		cancel()
		return nil, err
	}
	for range s.transfers {
		s.wg.Add(1)
		go s.worker()
	}
	return s, nil
}

func (s *Staging) dataPath(seq int64) string {
	return filepath.Join(s.dir, strconv.FormatInt(seq, 10)+".data")
}

func (s *Staging) recordPath(seq int64) string {
	return filepath.Join(s.dir, strconv.FormatInt(seq, 10)+".json")
}

// load reads the records of a previous run and queues what is to upload.
func (s *Staging) load() error {
	names, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("staging: %w", err)
	}
	var seqs []int64
	records := map[int64]bool{}
	for _, d := range names {
		name := d.Name()
		if strings.HasSuffix(name, ".tmp") {
			os.Remove(filepath.Join(s.dir, name)) // a record being written at the crash; the old one stands
			continue
		}
		if base, ok := strings.CutSuffix(name, ".json.bad"); ok {
			if seq, err := strconv.ParseInt(base, 10, 64); err == nil {
				records[seq] = true // kept aside, with its data, for a person to look at
				s.next = max(s.next, seq+1)
			}
			continue
		}
		base, ext := strings.TrimSuffix(name, path.Ext(name)), path.Ext(name)
		seq, err := strconv.ParseInt(base, 10, 64)
		if err != nil || seq <= 0 {
			continue
		}
		s.next = max(s.next, seq+1)
		switch ext {
		case ".json":
			records[seq] = true
			seqs = append(seqs, seq)
		case ".data":
		default:
			continue
		}
	}
	// Data without a record: Create failed between the two files, before
	// anything could be written into it.
	for _, d := range names {
		if base, ok := strings.CutSuffix(d.Name(), ".data"); ok {
			if seq, err := strconv.ParseInt(base, 10, 64); err == nil && !records[seq] {
				os.Remove(filepath.Join(s.dir, d.Name()))
			}
		}
	}
	slices.Sort(seqs)
	saved := map[*Staged]time.Time{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seq := range seqs {
		st, rec, err := s.loadEntry(seq, saved)
		if err != nil {
			s.log.WithError(err).WithField("record", s.recordPath(seq)).Warn("staging: unreadable record of a staged file; kept aside as .bad")
			os.Rename(s.recordPath(seq), s.recordPath(seq)+".bad")
			continue
		}
		if st == nil { // data gone: nothing to upload
			os.Remove(s.recordPath(seq))
			continue
		}
		if rec.State == recUploaded {
			s.removeFiles(seq)
			st.f.Close()
			continue
		}
		if other := s.byTarget[st.target]; other != nil {
			// Two records for one target (a crash in the middle of a
			// rename or create over a staged file): the one saved last
			// wins, and takes over what the other was to delete.
			s.log.WithField("path", st.target.String()).Warn("staging: two staged files for one target; keeping the one saved last")
			if saved[st].Before(saved[other]) {
				st, other = other, st
			}
			if st.replaces == 0 {
				st.replaces = other.replaces
			}
			st.inheritLocked(other)
			s.dropLocked(other)
			if st.state == stQueued { // the one loaded before: in place already
				continue
			}
		}
		s.entries[seq] = st
		s.byTarget[st.target] = st
		s.log.WithFields(logrus.Fields{"path": st.target.String(), "size": st.lastSize, "was": rec.State}).Info("staging: resuming the upload of a staged file")
		s.enqueueLocked(st, false)
	}
	return nil
}

// loadEntry opens one staged file of a previous run. It returns nil (and no
// error) when the data file is missing.
func (s *Staging) loadEntry(seq int64, saved map[*Staged]time.Time) (*Staged, *stagedRecord, error) {
	b, err := os.ReadFile(s.recordPath(seq))
	if err != nil {
		return nil, nil, err
	}
	var rec stagedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, nil, err
	}
	var area Area
	switch rec.Area {
	case "shared":
		area = Area{Kind: Shared}
	case "machine":
		area = Area{Kind: Machine, MachineID: rec.MachineID}
	default:
		return nil, nil, fmt.Errorf("unknown area %q", rec.Area)
	}
	if rec.Name == "" {
		return nil, nil, errors.New("no name")
	}
	f, err := os.OpenFile(s.dataPath(seq), os.O_RDWR, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &rec, nil
	}
	if err != nil {
		return nil, nil, err
	}
	st := s.newStaged(seq, f, Target{Area: area, ParentID: rec.ParentID, Name: rec.Name}, rec.Replaces)
	st.deleteAfter = rec.DeleteAfter
	st.saved = rec.State
	if rec.LastError != "" {
		st.lastErr = errors.New(rec.LastError)
		if rec.State == recFailed {
			st.permErr = st.lastErr
		}
	}
	if fi, err := f.Stat(); err == nil {
		st.lastSize, st.lastMod = fi.Size(), fi.ModTime()
	}
	saved[st] = rec.Saved
	return st, &rec, nil
}

func (s *Staging) newStaged(seq int64, f *os.File, t Target, replaces int64) *Staged {
	return &Staged{s: s, seq: seq, f: f, target: t, replaces: replaces, gen: 1, settled: make(chan struct{}), lastMod: time.Now()}
}

// saveLocked writes st's record (atomically: a temporary file renamed over
// the record) when it differs from what the disk holds or force is set.
func (s *Staging) saveLocked(st *Staged, force bool) {
	if st.removed || st.retired || s.closed {
		return
	}
	state := recPending
	switch {
	case st.state == stClean && st.writers == 0:
		state = recUploaded
	case st.state == stFailed:
		state = recFailed
	}
	if !force && state == st.saved {
		return
	}
	if err := s.writeRecord(st, state); err != nil {
		s.log.WithError(err).WithField("path", st.target.String()).Warn("staging: could not save the record of a staged file")
		return
	}
	st.saved = state
}

// writeRecord writes st's record with the given state. Called with mu held.
func (s *Staging) writeRecord(st *Staged, state string) error {
	rec := stagedRecord{
		Area: "shared", ParentID: st.target.ParentID, Name: st.target.Name, Replaces: st.replaces,
		State: state, Attempts: st.attempts, DeleteAfter: st.deleteAfter, Saved: time.Now(),
	}
	if st.target.Area.Kind == Machine {
		rec.Area, rec.MachineID = "machine", st.target.Area.MachineID
	}
	if st.lastErr != nil {
		rec.LastError = st.lastErr.Error()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := s.recordPath(st.seq) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("staging: %w", err)
	}
	if err := os.Rename(tmp, s.recordPath(st.seq)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("staging: %w", err)
	}
	return nil
}

// removeFiles deletes a staged file's record, then its data.
func (s *Staging) removeFiles(seq int64) {
	os.Remove(s.recordPath(seq))
	os.Remove(s.dataPath(seq))
}

func checkTarget(t Target) error {
	switch {
	case t.Area.Kind == Recordings:
		return errors.New("staging: the recordings are read-only")
	case t.Area.Kind != Shared && t.Area.Kind != Machine:
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
// Create does not open the file for writing: the mount calls OpenWriter for
// the handle it opens. A file nobody opens is uploaded (empty) after the
// write-back delay.
func (s *Staging) Create(t Target, replaces int64) (*Staged, error) {
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
	st := s.newStaged(seq, f, t, replaces)
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
	st.saved = recPending
	if other := s.byTarget[t]; other != nil {
		s.removeLocked(other, false)
	}
	s.entries[seq] = st
	s.byTarget[t] = st
	s.waitLocked(st)
	return st, nil
}

// inheritLocked takes over what other, a staged file st replaces at the same
// target, was to delete after its upload.
func (st *Staged) inheritLocked(other *Staged) {
	for _, id := range other.deleteAfter {
		if !slices.Contains(st.deleteAfter, id) {
			st.deleteAfter = append(st.deleteAfter, id)
		}
	}
}

// Lookup returns the staged file at t, if any: not uploaded yet, failed, or
// uploaded but still open (its later changes are uploaded again).
func (s *Staging) Lookup(t Target) *Staged {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byTarget[t]
}

// Acquire is Lookup followed by OpenWriter (write) or OpenReader, under one
// lock: the file cannot be retired between the two. The mount opens a staged
// file with it; nil when nothing is staged at t.
func (s *Staging) Acquire(t Target, write bool) *Staged {
	s.mu.Lock()
	st := s.byTarget[t]
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
	return s.Acquire(t, write) // retired or replaced meanwhile: look again
}

// Pending returns the staged files of one folder, by name. Listings show them
// with their local size and modification time.
func (s *Staging) Pending(area Area, parentID int64) []*Staged {
	s.mu.Lock()
	defer s.mu.Unlock()
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
func (s *Staging) Rename(st *Staged, to Target) error {
	return s.RenameReplacing(st, to, 0)
}

// RenameReplacing is Rename when the mount knows the service file already at
// to (replaces, its id; 0: none): the upload overwrites it without first
// meeting a 451.
func (s *Staging) RenameReplacing(st *Staged, to Target, replaces int64) error {
	if err := checkTarget(to); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("staging: closed")
	}
	if st.removed || st.retired {
		return fmt.Errorf("staging: %s: %w", st.target, os.ErrNotExist)
	}
	if to == st.target {
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
	if st.removed || st.retired {
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
		s.deleteLater(slices.Clone(st.deleteAfter), st.target, "renamed away, then removed")
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
	if s.byTarget[st.target] == st {
		delete(s.byTarget, st.target)
	}
	delete(s.entries, st.seq)
	s.removeFiles(st.seq)
	s.settleLocked(st)
	s.closeIfUnusedLocked(st)
}

// closeIfUnusedLocked closes the file of a removed or retired staged file
// once nobody uses it, or keeps it among the orphans until then.
func (s *Staging) closeIfUnusedLocked(st *Staged) {
	if !(st.removed || st.retired) || st.closedFile {
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

// retireLocked ends the staging of an uploaded, unchanged file nobody has
// open for writing.
func (s *Staging) retireLocked(st *Staged) {
	st.retired = true
	s.stopTimerLocked(st)
	if s.byTarget[st.target] == st {
		delete(s.byTarget, st.target)
	}
	delete(s.entries, st.seq)
	s.removeFiles(st.seq)
	s.settleLocked(st)
	s.closeIfUnusedLocked(st)
}

// Flush uploads st now (not waiting for the write-back delay, even while it
// is open) and waits for the outcome: nil once the content it had is on the
// service, or the error of a permanent failure (the mount maps it to an
// errno; the staged copy is kept). An upload of it already in flight is waited
// for, and followed by another when the file changed meanwhile. A transient
// failure is retried (with backoff) until ctx ends.
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
		if st.removed || st.retired || st.state == stClean {
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

// Drain starts every waiting upload now (skipping the write-back delay, and
// uploading files still open as they are) and waits until no upload is
// pending or ctx ends. What is left (failed, or still pending when ctx ended)
// stays staged for the next start and is logged. It returns nil when nothing
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
			if st.state != stFailed && st.state != stClean {
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
		if st.state != stClean {
			left = append(left, st)
		}
	}
	for _, st := range left {
		f := logrus.Fields{"path": st.target.String(), "state": st.state.String()}
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

// Stats returns the counters.
func (s *Staging) Stats() StagingStats {
	s.mu.Lock()
	out := StagingStats{Uploaded: s.uploaded, Bytes: s.bytesUp}
	all := s.sortedLocked()
	for _, st := range all {
		switch st.state {
		case stUploading:
			out.Uploading++
		case stFailed:
			out.Failed++
		case stClean:
		default:
			out.Pending++
		}
	}
	s.mu.Unlock()
	for _, st := range all {
		out.StagedBytes += st.Size()
	}
	return out
}

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
			Target: st.target, Replaces: st.replaces, State: state,
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

// Retry queues again every upload that failed for good.
func (s *Staging) Retry() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.sortedLocked() {
		if st.state == stFailed {
			st.attempts = 0
			st.retries = 0
			s.enqueueLocked(st, false)
		}
	}
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

// Target is where the file goes.
func (st *Staged) Target() Target {
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
	fi, err := st.f.Stat()
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	if err != nil {
		return st.lastSize, st.lastMod
	}
	st.lastSize, st.lastMod = fi.Size(), fi.ModTime()
	return st.lastSize, st.lastMod
}

// SetModTime sets the local modification time (utimes). The service keeps
// its own: the time set shows until the next listing after the upload.
func (st *Staged) SetModTime(t time.Time) {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st.lastMod = t
	if !st.closedFile && !st.removed && !st.retired {
		if err := os.Chtimes(s.dataPath(st.seq), t, t); err != nil {
			s.log.WithError(err).WithField("path", st.target.String()).Debug("staging: could not set the modification time")
		}
	}
}

// OpenWriter records that a writer opened the file: nothing is uploaded
// while one has it open, and a running write-back delay is cancelled.
func (st *Staged) OpenWriter() { st.openWriter(false) }

// openWriter is OpenWriter. For Acquire (acquire set) it counts nothing and
// reports false when the file is no longer staged.
func (st *Staged) openWriter(acquire bool) bool {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if acquire && (st.removed || st.retired) {
		return false
	}
	st.writers++
	if st.removed || st.retired || s.closed {
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
	case stClean:
		s.saveLocked(st, false) // a writer may change it: a crash must upload it again
	}
	return true
}

// CloseWriter records the close of a writer. The last close starts the
// write-back delay of a changed file.
func (st *Staged) CloseWriter() {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.writers > 0 {
		st.writers--
	}
	if st.writers > 0 || s.closed {
		return
	}
	if st.removed || st.retired {
		s.closeIfUnusedLocked(st)
		return
	}
	switch st.state {
	case stWaiting:
		s.waitLocked(st)
	case stClean:
		if st.readers == 0 {
			s.retireLocked(st)
		} else {
			s.saveLocked(st, false)
		}
	}
}

// OpenReader records that a reader uses the file through File: an uploaded
// file stays open (and staged) until CloseReader. Readers do not delay
// uploads.
func (st *Staged) OpenReader() { st.openReader(false) }

func (st *Staged) openReader(acquire bool) bool {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	if acquire && (st.removed || st.retired) {
		return false
	}
	st.readers++
	return true
}

// CloseReader ends a use recorded by OpenReader.
func (st *Staged) CloseReader() {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.readers > 0 {
		st.readers--
	}
	if st.readers > 0 || st.writers > 0 || s.closed {
		return
	}
	if st.removed || st.retired {
		s.closeIfUnusedLocked(st)
		return
	}
	if st.state == stClean {
		s.retireLocked(st)
	}
}

// Touch records a change of the content; call it after the change is written
// to File, while holding the file open as a writer (OpenWriter or Acquire):
// an upload that starts before Touch may not see the change, and one that
// began before the change is followed by another. The file will be uploaded
// (again), also when it had been uploaded or had failed.
func (st *Staged) Touch() {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st.gen++
	if st.removed || st.retired || s.closed {
		return
	}
	s.changedLocked(st)
}

// changedLocked moves a staged file that just changed toward an upload.
func (s *Staging) changedLocked(st *Staged) {
	switch st.state {
	case stClean, stFailed:
		st.state = stWaiting
		st.attempts = 0
		s.saveLocked(st, false)
		s.waitLocked(st)
	case stWaiting:
		s.waitLocked(st)
	}
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
	if id == 0 || st.removed || st.retired || slices.Contains(st.deleteAfter, id) {
		return
	}
	st.deleteAfter = append(st.deleteAfter, id)
	if st.state == stClean {
		// Already uploaded: upload again so that the deletion happens
		// after content known to be on the service under this name.
		st.gen++
		s.changedLocked(st)
	}
	s.saveLocked(st, true)
}

// --- queue ---

// waitLocked puts a changed file in the waiting state: queued at once when
// draining or flushed, after the write-back delay when nobody has it open.
func (s *Staging) waitLocked(st *Staged) {
	st.state = stWaiting
	switch {
	case s.closed:
	case s.draining > 0 || st.flushers > 0:
		s.enqueueLocked(st, st.flushers > 0)
	case st.writers == 0:
		s.armLocked(st, s.writeBack)
	default:
		s.stopTimerLocked(st)
	}
}

// armLocked (re)starts st's timer: when it fires, st is queued, unless a
// writer opened it meanwhile (then it waits for the last close).
func (s *Staging) armLocked(st *Staged, d time.Duration) {
	s.stopTimerLocked(st)
	var tm *time.Timer
	tm = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if st.timer != tm || s.closed || st.removed || st.retired {
			return
		}
		st.timer = nil
		if st.state != stWaiting && st.state != stRetrying {
			return
		}
		if st.writers > 0 && st.flushers == 0 && s.draining == 0 {
			st.state = stWaiting
			return
		}
		s.enqueueLocked(st, false)
	})
	st.timer = tm
}

func (s *Staging) stopTimerLocked(st *Staged) {
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
}

// enqueueLocked queues st (first when front) and wakes the workers.
func (s *Staging) enqueueLocked(st *Staged, front bool) {
	s.stopTimerLocked(st)
	if st.state == stUploading || st.removed || st.retired || s.closed {
		return
	}
	if st.state == stQueued {
		if front {
			s.moveFrontLocked(st)
		}
		return
	}
	st.state = stQueued
	if front {
		s.queue = slices.Insert(s.queue, 0, st)
	} else {
		s.queue = append(s.queue, st)
	}
	s.cond.Broadcast()
}

func (s *Staging) moveFrontLocked(st *Staged) {
	if i := slices.Index(s.queue, st); i > 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
		s.queue = slices.Insert(s.queue, 0, st)
	}
}

func (s *Staging) dequeueLocked(st *Staged) {
	if i := slices.Index(s.queue, st); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// settleLocked wakes the Flush calls waiting on st, and Drain.
func (s *Staging) settleLocked(st *Staged) {
	close(st.settled)
	st.settled = make(chan struct{})
	s.notifyLocked()
}

func (s *Staging) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// takeLocked removes from the queue the first file whose target has no
// upload in flight (uploads to one name never overlap), or returns nil.
func (s *Staging) takeLocked() *Staged {
	for i, st := range s.queue {
		if s.busy[st.target] == 0 {
			s.queue = slices.Delete(s.queue, i, i+1)
			return st
		}
	}
	return nil
}

// upload is one upload attempt of a staged file, as it started.
type upload struct {
	st        *Staged
	target    Target
	gen       uint64
	overwrite bool
	ctx       context.Context
}

func (s *Staging) worker() {
	defer s.wg.Done()
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return
		}
		st := s.takeLocked()
		if st == nil {
			s.cond.Wait()
			continue
		}
		ctx, cancel := context.WithCancel(s.ctx)
		up := &upload{st: st, target: st.target, gen: st.gen, overwrite: st.replaces != 0 || st.overwrite, ctx: ctx}
		st.state = stUploading
		st.upCancel = cancel
		st.done, st.total = 0, 0
		s.busy[up.target]++
		s.mu.Unlock()
		s.run(up)
		cancel()
		s.mu.Lock()
	}
}

// run makes one upload attempt and settles its outcome.
func (s *Staging) run(up *upload) {
	res, size, err := s.send(up)
	if err == nil {
		s.succeeded(up, res, size)
		return
	}
	if fi, serr := up.st.f.Stat(); serr == nil && size >= 0 && fi.Size() != size {
		// The file changed under the upload (a truncation read short),
		// its Touch not yet made: not the content's failure.
		s.mu.Lock()
		up.st.gen++
		s.mu.Unlock()
	}
	s.mu.Lock()
	if s.failedLocked(up, err) && s.onFailed != nil {
		// Called before the attempt ends, so that a Flush learns the
		// failure after the mount did.
		s.mu.Unlock()
		s.onFailed(up.target, err)
		s.mu.Lock()
	}
	s.endLocked(up)
	s.mu.Unlock()
}

// failedLocked settles a failed upload attempt: retried at once after a 451
// (with overwrite), after a backoff when transient, else marked failed. It
// reports whether the failure is permanent.
func (s *Staging) failedLocked(up *upload, err error) bool {
	st := up.st
	switch {
	case s.closed || st.removed:
		// Close: the file stays queued on disk. Remove: dropped.
		return false
	case st.gen != up.gen || st.target != up.target:
		// Changed while uploading (a short read of a truncated file, a
		// rename): not the content's failure; upload the new content.
		s.waitLocked(st)
		return false
	}
	log := s.log.WithFields(logrus.Fields{"path": up.target.String(), "error": err.Error()})
	if api.IsExists(err) && !up.overwrite {
		// Someone created the name meanwhile: last writer wins.
		log.Warn("staging: the name was taken on the service meanwhile; overwriting it (last writer wins)")
		st.overwrite = true
		st.state = stWaiting
		s.enqueueLocked(st, true)
		return false
	}
	st.lastErr = err
	st.attempts++
	if api.Temporary(err) || (api.IsSizeMismatch(err) && st.attempts < sizeMismatchAttempts) {
		d := s.minBackoff << min(st.retries, 30)
		if d > s.maxBackoff || d <= 0 {
			d = s.maxBackoff
		}
		st.retries++
		if st.retries > 3 {
			log.WithFields(logrus.Fields{"retry_in": d, "attempts": st.attempts}).Warn("staging: upload failed again; retrying")
		} else {
			log.WithField("retry_in", d).Info("staging: upload failed; retrying")
		}
		st.state = stRetrying
		s.armLocked(st, d)
		return false
	}
	st.state = stFailed
	st.permErr = err
	st.retries = 0
	s.saveLocked(st, true)
	log.Warn("staging: upload failed; the staged copy is kept (listed as failed in .ctl/uploads, retried at the next start or on demand)")
	return true
}

// endLocked ends an upload attempt: frees its target and wakes the waiters.
func (s *Staging) endLocked(up *upload) {
	st := up.st
	st.upCancel = nil
	if st.state == stUploading { // not settled otherwise (Close, Remove)
		st.state = stWaiting
		if !s.closed && !st.removed {
			s.waitLocked(st)
		}
	}
	if s.busy[up.target]--; s.busy[up.target] <= 0 {
		delete(s.busy, up.target)
	}
	s.cond.Broadcast()
	s.settleLocked(st)
	s.closeIfUnusedLocked(st)
}

// send uploads st's file as it is now.
func (s *Staging) send(up *upload) (*api.UploadResult, int64, error) {
	st := up.st
	fi, err := st.f.Stat()
	if err != nil {
		return nil, -1, fmt.Errorf("staging: %w", err)
	}
	size := fi.Size()
	req := api.UploadRequest{
		ParentID: up.target.ParentID, Name: up.target.Name, ContentType: contentType(up.target.Name),
		Size: size, Overwrite: up.overwrite, Body: st.f, Parallel: s.parallel,
		Progress: func(done, total int64) {
			s.mu.Lock()
			st.done, st.total = done, total
			s.mu.Unlock()
		},
	}
	if up.target.Area.Kind == Machine {
		req.MachineID = up.target.Area.MachineID
	}
	s.mu.Lock()
	st.total = size
	s.mu.Unlock()
	res, err := s.client.Upload(up.ctx, req)
	return res, size, err
}

// succeeded settles an upload that reached the service.
func (s *Staging) succeeded(up *upload, res *api.UploadResult, size int64) {
	st := up.st
	s.mu.Lock()
	switch {
	case st.removed:
		s.mu.Unlock()
		s.dropUploaded(up, res)
		return
	case st.target != up.target:
		// Renamed while uploading: what went up under the old name goes
		// once the file is up under the new one.
		if !slices.Contains(st.deleteAfter, res.ID) {
			st.deleteAfter = append(st.deleteAfter, res.ID)
		}
		s.saveLocked(st, true)
		s.countLocked(res)
		s.endLocked(up)
		s.mu.Unlock()
		return
	}
	st.replaces = res.ID // a later upload overwrites this one
	st.overwrite = false
	st.lastErr, st.permErr, st.attempts, st.retries = nil, nil, 0, 0
	st.deleteAfter = slices.DeleteFunc(st.deleteAfter, func(id int64) bool { return id == res.ID })
	toDelete := slices.Clone(st.deleteAfter)
	s.saveLocked(st, true)
	s.mu.Unlock()

	s.log.WithFields(logrus.Fields{"path": up.target.String(), "id": res.ID, "size": res.Size}).Debug("staging: uploaded")
	if s.onUploaded != nil {
		s.onUploaded(up.target, s.record(up.target, res, size))
	}
	var deleted []int64 // done, or failed for good (logged); the others stay for the next upload
	for _, id := range toDelete {
		if err := s.deleteFile(id); err != nil {
			if s.ctx.Err() != nil {
				continue // Close: deleted after the upload at the next start
			}
			s.log.WithError(err).WithFields(logrus.Fields{"path": up.target.String(), "id": id}).Warn("staging: could not delete the file replaced by a rename")
		}
		deleted = append(deleted, id)
	}

	s.mu.Lock()
	if st.removed {
		s.mu.Unlock()
		s.dropUploaded(up, res)
		return
	}
	defer s.mu.Unlock()
	st.deleteAfter = slices.DeleteFunc(st.deleteAfter, func(id int64) bool { return slices.Contains(deleted, id) })
	if st.gen == up.gen && st.target == up.target && len(st.deleteAfter) == 0 {
		st.state = stClean
		if st.writers == 0 && st.readers == 0 {
			s.retireLocked(st)
		} else {
			s.saveLocked(st, true)
		}
	} else {
		s.saveLocked(st, true)
	}
	s.countLocked(res)
	s.endLocked(up)
}

// countLocked counts a successful upload (when it is settled, so that a
// caller seeing the count sees the staging as the upload left it).
func (s *Staging) countLocked(res *api.UploadResult) {
	s.uploaded++
	s.bytesUp += res.Size
}

// dropUploaded deletes what the upload of a file removed meanwhile (too late
// to cancel) put on the service: the user unlinked it. The target stays busy
// until then, so that a new file at the same name is uploaded after.
func (s *Staging) dropUploaded(up *upload, res *api.UploadResult) {
	if err := s.deleteFile(res.ID); err != nil && s.ctx.Err() == nil {
		s.log.WithError(err).WithFields(logrus.Fields{"path": up.target.String(), "id": res.ID}).Warn("staging: could not delete the upload of a file removed meanwhile")
	}
	s.mu.Lock()
	s.countLocked(res)
	s.endLocked(up)
	s.mu.Unlock()
}

// record is the service's new record of an uploaded file, as far as known.
func (s *Staging) record(t Target, res *api.UploadResult, size int64) api.File {
	f := api.File{
		ID: res.ID, Type: "file", Name: t.Name, Size: size, ContentType: contentType(t.Name),
		Status: api.FileStatusUploadCompleted, ObjectType: api.ObjectFile, ParentID: t.ParentID,
		LastModified: time.Now(),
	}
	if t.Area.Kind == Machine {
		f.MachineID = api.Int64(t.Area.MachineID)
	}
	return f
}

// deleteFile deletes a service file; one already gone is fine.
func (s *Staging) deleteFile(id int64) error {
	ctx, cancel := context.WithTimeout(s.ctx, deleteTimeout)
	defer cancel()
	if err := s.client.DeleteFile(ctx, id); err != nil && !api.IsNotFound(err) {
		return err
	}
	return nil
}

// deleteLater deletes service files in the background (best effort, logged).
// Called with mu held.
func (s *Staging) deleteLater(ids []int64, t Target, why string) {
	if s.closed || len(ids) == 0 {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, id := range ids {
			if s.ctx.Err() != nil {
				return
			}
			if err := s.deleteFile(id); err != nil && s.ctx.Err() == nil {
				s.log.WithError(err).WithFields(logrus.Fields{"path": t.String(), "id": id}).Warn("staging: could not delete a service file (" + why + ")")
			}
		}
	}()
}

// contentType is the MIME type of a file name's extension, by default
// application/octet-stream.
func contentType(name string) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}
