package writeback

// The journal: the changes the service could not take when they were made
// (offline), kept in order in the staging dir (journalFile) and made when it
// answers again (Resume, and at the start): deletions (deletes.go) and
// folders made (folders.go). They are made in the order they were asked: a
// folder deleted offline and made again under its name is deleted first.
//
// Locks: Staging.mu guards the journal, held while it is written (a small
// file, written anew and renamed into place); never across a request.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/safefile"
	"github.com/orgfs/orgfs/place"
)

// journalFile is the journal of the changes waiting for the service, in the
// staging dir; legacyDeletesFile is its name, as a list of deletions alone,
// before folders could be made offline (read once, then written anew as
// journalFile).
const (
	journalFile       = "journal.json"
	legacyDeletesFile = "deletes.json"
	journalFormat     = 1
)

// Op is what a journaled change does.
type Op string

const (
	OpDelete Op = ""      // delete a file or a folder (deletes.go)
	OpMkdir  Op = "mkdir" // make a folder made offline (folders.go)
)

// Change is a change the service has not taken yet: a deletion of the
// version of a file, or a folder, of folder Parent that the mount removed;
// or a folder the mount made (ID its provisional id, below zero).
type Change struct {
	Op           Op           `json:"op,omitempty"`
	Parent       place.DirKey `json:"parent"`
	ID           int64        `json:"id"`
	Name         string       `json:"name"`
	Size         int64        `json:"size"`
	LastModified time.Time    `json:"last_modified"`
	Dir          bool         `json:"dir,omitempty"`
	Path         string       `json:"path,omitempty"` // in the mount, for the log and .ctl/uploads
	// ByID: a version the staging itself deletes (one a staged file
	// supersedes, or replaces), deleted by its id alone, whatever its
	// folder holds, as online.
	ByID bool `json:"by_id,omitempty"`
}

// journalOnDisk is journalFile's content.
type journalOnDisk struct {
	Format  int      `json:"format"`
	Changes []Change `json:"changes"`
	// NextFolder is the provisional id the next folder made offline gets:
	// below every id given before, so that none is given twice while
	// anything may still name it (a mode set on it, kept on this desk).
	NextFolder int64 `json:"next_folder,omitempty"`
}

// Journal is the changes waiting for the service, oldest first.
func (s *Staging) Journal() []Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Change(nil), s.journal...)
}

// journalLocked appends c to the journal, on disk before it returns, and
// starts making it (the service may be back already: offline, it fails at
// once). Called with mu held.
func (s *Staging) journalLocked(c Change) error {
	s.journal = append(s.journal, c)
	if err := s.saveJournalLocked(); err != nil {
		s.journal = s.journal[:len(s.journal)-1]
		return err
	}
	s.startJournalLocked()
	return nil
}

// saveJournalLocked writes the journal anew (removed when empty and no
// provisional id was given). Called with mu held.
func (s *Staging) saveJournalLocked() error {
	path := filepath.Join(s.dir, journalFile)
	if len(s.journal) == 0 && s.nextFolder == -1 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("staging: %w", err)
		}
		return nil
	}
	b, err := json.Marshal(journalOnDisk{Format: journalFormat, Changes: s.journal, NextFolder: s.nextFolder})
	if err != nil {
		return err
	}
	err = safefile.Write(path, func(w io.Writer) error { _, err := w.Write(b); return err })
	if err == nil {
		err = s.SyncDir() // the rename itself, before the caller is told
	}
	if err != nil {
		return fmt.Errorf("staging: %w", err)
	}
	return nil
}

// loadJournal reads the journal a previous run left (or its list of
// deletions, legacyDeletesFile). Called at the start, before anything else
// runs. An unreadable journal is set aside (*.bad) with a warning: the
// deletions in it are not made (the files stay on the service, which loses
// nothing), and the folders it made stay unmade; the files staged in them
// stay in the staging.
func (s *Staging) loadJournal() error {
	s.nextFolder = -1
	for t := range s.byTarget { // files staged in folders made offline, whatever the journal holds
		s.nextFolder = min(s.nextFolder, t.ParentID-1)
	}
	name := journalFile
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		name = legacyDeletesFile
		b, err = os.ReadFile(filepath.Join(s.dir, name))
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("staging: %w", err)
	}
	var j journalOnDisk
	if name == legacyDeletesFile {
		err = json.Unmarshal(b, &j.Changes)
	} else if err = json.Unmarshal(b, &j); err == nil && j.Format != journalFormat {
		err = fmt.Errorf("format %d, this orgfs reads %d", j.Format, journalFormat)
	}
	if err != nil {
		bad := filepath.Join(s.dir, name+".bad")
		os.Rename(filepath.Join(s.dir, name), bad)
		s.log.WithError(err).WithField("kept_as", bad).Warn("staging: the journal of changes made offline is unreadable and set aside; its deletions are not made, its folders not made")
		return nil
	}
	s.journal = j.Changes
	s.nextFolder = min(s.nextFolder, j.NextFolder)
	for _, c := range s.journal {
		switch c.Op {
		case OpMkdir:
			s.nextFolder = min(s.nextFolder, c.ID-1)
		default:
			s.mine.Add(c.ID, struct{}{}) // this mount's to remove: an upload at its name is no conflict
		}
	}
	if name == legacyDeletesFile {
		s.mu.Lock()
		err := s.saveJournalLocked()
		s.mu.Unlock()
		if err != nil {
			return err
		}
		os.Remove(filepath.Join(s.dir, legacyDeletesFile))
	}
	return nil
}

// waitJournal makes the journal's changes now and waits for them: nil once
// none is left, else why (offline: they wait for the service).
func (s *Staging) waitJournal(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.journal) == 0 || s.closed {
		return nil
	}
	s.startJournalLocked()
	for s.applying {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return ctx.Err()
		}
		s.mu.Lock()
	}
	if n := len(s.journal); n > 0 {
		return fmt.Errorf("%d changes made offline wait for the service (%s first)", n, s.journal[0].Path)
	}
	return nil
}

// startJournalLocked starts applyJournal unless it runs, then (after it)
// the uploads waiting to be tried again: a file written at a name deleted
// offline goes up once the name is free, one in a folder made offline once
// the folder is. Called with mu held.
func (s *Staging) startJournalLocked() {
	if s.applying || s.closed {
		s.applyAgain = !s.closed // a Resume or a new entry while it runs: once more after
		return
	}
	s.applying = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			s.applyJournal()
			s.mu.Lock()
			if !s.applyAgain || s.closed {
				break
			}
			s.applyAgain = false
			s.mu.Unlock()
		}
		s.applying = false
		s.resumeUploadsLocked()
		s.notifyLocked()
		s.mu.Unlock()
	}()
}

// applyJournal makes the journal's changes, in order, until one finds the
// service offline (the rest wait for the next Resume). Run by one goroutine
// at a time (applying).
func (s *Staging) applyJournal() {
	for {
		s.mu.Lock()
		if s.closed || len(s.journal) == 0 {
			s.mu.Unlock()
			return
		}
		c := s.journal[0]
		if c.Op == OpMkdir {
			s.making = c.ID // from here: a rename or removal of it waits (settledLocked)
		}
		s.mu.Unlock()
		var err error
		if c.Op == OpMkdir {
			err = s.makeJournaled(c)
			s.mu.Lock()
			s.making = 0
			s.notifyLocked()
			s.mu.Unlock()
		} else {
			err = s.deleteJournaled(c)
		}
		if err != nil {
			// No answer to go by (offline, a 5xx, Close): kept for the next
			// try, at the service's return (Resume) or, when it answered,
			// after a backoff.
			s.retryJournal(err)
			return
		}
		s.mu.Lock()
		s.journalTries = 0
		s.mu.Unlock()
	}
}

// retryJournal has the journal tried again after err, which left a change
// of it waiting: at the service's return (Resume) when err says it cannot
// be reached, else after a backoff (a 5xx, a timeout: the service is
// there).
func (s *Staging) retryJournal(err error) {
	if api.IsOffline(err) || s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	d := min(s.minBackoff<<min(s.journalTries, 30), s.maxBackoff)
	s.journalTries++
	s.mu.Unlock()
	s.log.WithError(err).WithField("retry_in", d).Info("staging: a change made offline waits; trying again")
	time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.startJournalLocked()
	})
}

// doneLocked takes c, made (or given up), off the journal, unless it left
// it meanwhile. Called with mu held.
func (s *Staging) doneLocked(c Change) {
	if len(s.journal) > 0 && s.journal[0] == c {
		s.journal = s.journal[1:]
		if err := s.saveJournalLocked(); err != nil {
			s.log.WithError(err).Warn("staging: the journal of changes made offline could not be written")
		}
	}
	s.notifyLocked()
}
