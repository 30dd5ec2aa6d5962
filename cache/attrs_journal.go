package cache

// The attribute store's journal: one JSON line per change, appended as it
// happens (a write, no fsync: it survives the daemon's death, not the
// machine's), replayed at start and rewritten whole when it has grown to
// several times what it holds. A torn or unreadable line is skipped.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/internal/logging"
	"github.com/orgfs/orgfs/place"
)

// AttrsFile is the attribute store's journal in the cache dir.
const AttrsFile = "attrs.jsonl"

// attrRecord is one line of the journal: what is set now on one service
// file, pending file or folder (Attr nil: nothing any more).
type attrRecord struct {
	File        int64         `json:"file,omitempty"`
	Pending     *place.Target `json:"pending,omitempty"`
	Dir         *place.DirKey `json:"dir,omitempty"`
	Attr        *Attr         `json:"attr,omitempty"`
	Seen        time.Time     `json:"seen,omitzero"`
	Provisional time.Time     `json:"prov,omitzero"`
}

// journal is the open journal file.
type journal struct {
	path   string
	f      *os.File
	lines  int  // appended since the last rewrite
	failed bool // a write failed (logged once)
}

// OpenAttrs opens the attribute store kept at path, made when missing. A
// read-only store reads it and never writes.
func OpenAttrs(path string, readOnly bool, log logrus.FieldLogger) (*Attrs, error) {
	m := NewAttrs()
	m.log = logging.OrDiscard(log)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cache: reading the attribute store: %w", err)
	}
	skipped := 0
	for line := range bytes.Lines(data) {
		var r attrRecord
		if json.Unmarshal(line, &r) != nil {
			skipped++
			continue
		}
		m.apply(r)
	}
	if skipped > 0 {
		m.log.WithField("lines", skipped).Warn("cache: unreadable lines of the attribute store skipped")
	}
	if readOnly {
		return m, nil
	}
	m.journal = &journal{path: path}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.rewriteLocked(); err != nil {
		return nil, fmt.Errorf("cache: writing the attribute store: %w", err)
	}
	return m, nil
}

// apply replays one record.
func (m *Attrs) apply(r attrRecord) {
	switch {
	case r.File != 0 && r.Attr == nil:
		delete(m.files, r.File)
	case r.File != 0:
		m.files[r.File] = &fileSet{Attr: *r.Attr, Seen: r.Seen, Provisional: r.Provisional}
	case r.Pending != nil && r.Attr == nil:
		delete(m.pending, *r.Pending)
	case r.Pending != nil:
		m.pending[*r.Pending] = *r.Attr
	case r.Dir != nil && r.Attr == nil:
		delete(m.dirs, *r.Dir)
	case r.Dir != nil:
		m.dirs[*r.Dir] = *r.Attr
	}
}

// record appends r to the journal; the caller holds mu.
func (m *Attrs) record(r attrRecord) {
	j := m.journal
	if j == nil || j.f == nil {
		return
	}
	line, err := json.Marshal(r)
	if err == nil {
		_, err = j.f.Write(append(line, '\n'))
	}
	if err != nil {
		if !j.failed {
			m.log.WithError(err).Warn("cache: the attribute store could not be written; modes and times set now last until unmount only")
		}
		j.failed = true
		return
	}
	j.lines++
	if j.lines > 4096+2*(len(m.files)+len(m.pending)+len(m.dirs)) {
		if err := m.rewriteLocked(); err != nil {
			m.log.WithError(err).Warn("cache: the attribute store could not be compacted")
		}
	}
}

// rewriteLocked writes what the store holds to a new journal, which replaces
// the old one; the caller holds mu.
func (m *Attrs) rewriteLocked() error {
	j := m.journal
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) // it names the organization's files
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for id, n := range m.files {
		a := n.Attr
		_ = enc.Encode(attrRecord{File: id, Attr: &a, Seen: n.Seen, Provisional: n.Provisional})
	}
	for t, a := range m.pending {
		_ = enc.Encode(attrRecord{Pending: &t, Attr: &a})
	}
	for k, a := range m.dirs {
		_ = enc.Encode(attrRecord{Dir: &k, Attr: &a})
	}
	err = errors.Join(w.Flush(), f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	nf, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, j.lines, j.failed = nf, 0, false
	return nil
}

// Close closes the journal.
func (m *Attrs) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.journal == nil || m.journal.f == nil {
		return nil
	}
	err := m.journal.f.Close()
	m.journal.f = nil
	return err
}
