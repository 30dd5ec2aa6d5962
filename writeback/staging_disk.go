package writeback

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/place"
)

// Locks: Staging.mu (a leaf, docs/ARCHITECTURE.md), held while records are read (at
// the start) or written and while staged files are opened or unlinked: small
// local disk operations, never a request.

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
	Path        string    `json:"path,omitempty"`  // the path in the mount, for people
	Final       bool      `json:"final,omitempty"` // failed for good: not retried at the next start
	Saved       time.Time `json:"saved"`           // when the record was written: of two records for one target, the later wins
	// The conflict copy it went up as (conflicts.go), when it did.
	ConflictName string `json:"conflict_name,omitempty"`
	ConflictID   int64  `json:"conflict_id,omitempty"`
	// Sent are the ids of this file's uploads begun since its last one that
	// ended (Staged.sent): this mount's own, should one have completed.
	Sent []int64 `json:"sent,omitempty"`
}

// Values of stagedRecord.State.
const (
	recPending  = "pending"  // to upload
	recFailed   = "failed"   // to upload; the last attempt failed for good
	recUploaded = "uploaded" // on the service; the files only wait to be removed
)

// SyncStaged makes st durable on local disk, its data and the staging's
// records: what an fsync offline can promise (it goes up at the return).
func (s *Staging) SyncStaged(st *Staged) error {
	if err := st.File().Sync(); err != nil {
		return fmt.Errorf("staging: %w", err)
	}
	return s.SyncDir()
}

// SyncDir makes the staging's records durable on local disk: the folder
// that holds them is synced (records are written by rename).
func (s *Staging) SyncDir() error {
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("staging: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("staging: %w", err)
	}
	return nil
}

func (s *Staging) dataPath(seq int64) string {
	return filepath.Join(s.dir, strconv.FormatInt(seq, 10)+".data")
}

func (s *Staging) recordPath(seq int64) string {
	return filepath.Join(s.dir, strconv.FormatInt(seq, 10)+".json")
}

// load reads the records of a previous run and queues what is to upload.
func (s *Staging) load() error {
	seqs, err := s.scan()
	if err != nil {
		return err
	}
	savedAt := map[*Staged]time.Time{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seq := range seqs {
		st, rec, err := s.loadEntry(seq, savedAt)
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
			s.log.WithField("path", st.nameLocked()).Warn("staging: two staged files for one target; keeping the one saved last")
			if savedAt[st].Before(savedAt[other]) {
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
		if rec.State == recFailed && rec.Final {
			st.state = stFailed
			st.final = true
			s.log.WithFields(logrus.Fields{"path": st.nameLocked(), "error": rec.LastError}).Warn(
				"staging: this upload failed for good in an earlier run; kept staged, not retried (SIGUSR1 retries it)")
			continue
		}
		s.log.WithFields(logrus.Fields{"path": st.nameLocked(), "size": st.lastSize, "was": rec.State}).Info("staging: resuming the upload of a staged file")
		s.enqueueLocked(st, false)
	}
	return nil
}

// scan lists the staging directory a previous run left: it sets the number
// of the next staged file past every number found, removes what is of no
// use (half-written records, data without a record) and returns the numbers
// of the records to load, in order.
func (s *Staging) scan() ([]int64, error) {
	names, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("staging: %w", err)
	}
	var seqs []int64
	records := map[int64]bool{}
	for _, d := range names {
		name := d.Name()
		if strings.HasSuffix(name, ".tmp") {
			os.Remove(filepath.Join(s.dir, name)) // a record being written at the crash; the old one stands
			continue
		}
		if strings.HasSuffix(name, ".kept") {
			os.Remove(filepath.Join(s.dir, name)) // uploaded data on its way to the content cache at the crash
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
	return seqs, nil
}

// loadEntry opens one staged file of a previous run. It returns nil (and no
// error) when the data file is missing.
func (s *Staging) loadEntry(seq int64, savedAt map[*Staged]time.Time) (*Staged, *stagedRecord, error) {
	b, err := os.ReadFile(s.recordPath(seq))
	if err != nil {
		return nil, nil, err
	}
	var rec stagedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, nil, err
	}
	var area place.Area
	switch rec.Area {
	case "shared":
		area = place.Area{Kind: place.Shared}
	case "machine":
		area = place.Area{Kind: place.Machine, MachineID: rec.MachineID}
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
	st := s.newStaged(seq, f, place.Target{Area: area, ParentID: rec.ParentID, Name: rec.Name}, rec.Replaces)
	st.deleteAfter = rec.DeleteAfter
	st.conflictName, st.conflictID = rec.ConflictName, rec.ConflictID
	st.sent = rec.Sent
	st.path = rec.Path
	st.savedState = rec.State
	if rec.LastError != "" {
		st.lastErr = errors.New(rec.LastError)
		if rec.State == recFailed {
			st.permErr = st.lastErr
		}
	}
	if fi, err := f.Stat(); err == nil {
		st.lastSize, st.lastMod = fi.Size(), fi.ModTime()
	}
	savedAt[st] = rec.Saved
	return st, &rec, nil
}

// saveLocked writes st's record (atomically: a temporary file renamed over
// the record) when it differs from what the disk holds or force is set.
func (s *Staging) saveLocked(st *Staged, force bool) {
	if st.unstagedLocked() || s.closed {
		return
	}
	state := recPending
	switch {
	case st.state == stUploaded && st.writers == 0:
		state = recUploaded
	case st.state == stFailed:
		state = recFailed
	}
	if !force && state == st.savedState {
		return
	}
	if err := s.writeRecord(st, state); err != nil {
		s.log.WithError(err).WithField("path", st.nameLocked()).Warn("staging: could not save the record of a staged file")
		return
	}
	st.savedState = state
}

// writeRecord writes st's record with the given state. Called with mu held.
func (s *Staging) writeRecord(st *Staged, state string) error {
	rec := stagedRecord{
		Area: "shared", ParentID: st.target.ParentID, Name: st.target.Name, Replaces: st.replaces,
		State: state, Attempts: st.attempts, DeleteAfter: st.deleteAfter, Saved: time.Now(),
		Path: st.path, Final: state == recFailed && st.final,
		ConflictName: st.conflictName, ConflictID: st.conflictID, Sent: st.sent,
	}
	if st.target.Area.Kind == place.Machine {
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

// Superseded lists the service files that staged files delete once they are
// uploaded (the old names of files renamed away): the mount shows none of
// them, after a restart too (Store hides them when it opens).
func (s *Staging) Superseded() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for _, st := range s.entries {
		if !st.unstagedLocked() {
			ids = append(ids, st.deleteAfter...)
		}
	}
	return ids
}
