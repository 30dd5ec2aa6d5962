package emulator

// Server-side helpers (no HTTP) for tests and seeding: storage roots, folders
// and files written straight to the object store, deletion, quotas.

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// areaOf finds the storage area of an organization: machineID 0 is the shared
// storage, otherwise the computer's storage. Called with mu held.
func (e *Emulator) areaOf(orgName string, machineID int64) (*org, *area, error) {
	o, err := e.orgByName(orgName)
	if err != nil {
		return nil, nil, err
	}
	if machineID == 0 {
		return o, o.shared, nil
	}
	s := e.seats[machineID]
	if s == nil || s.org != o {
		return nil, nil, fmt.Errorf("emulator: %s has no computer %d", orgName, machineID)
	}
	return o, s.area, nil
}

// RootID returns the id of the root folder of an organization's shared
// storage (machineID 0) or of a computer's storage.
func (e *Emulator) RootID(org string, machineID int64) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, a, err := e.areaOf(org, machineID)
	if err != nil {
		return 0, err
	}
	return a.root.id, nil
}

// RecordingsRootID returns the id of the root of an organization's session
// recordings.
func (e *Emulator) RecordingsRootID(org string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	o, err := e.orgByName(org)
	if err != nil {
		return 0, err
	}
	return o.recordings.root.id, nil
}

// parentIn resolves parentID (0 = root) in an area. Called with mu held.
func (e *Emulator) parentIn(a *area, parentID int64) (*node, error) {
	if parentID == 0 {
		return a.root, nil
	}
	p := e.lookupNode(a.org, parentID)
	if p == nil || p.area != a || p.kind == kindFile || !p.completed() {
		return nil, fmt.Errorf("emulator: no folder %d in that storage", parentID)
	}
	return p, nil
}

// CreateDir creates a folder in an organization's shared storage (machineID
// 0) or a computer's storage; parentID 0 is the root. It returns the existing
// folder's id when one of that name exists.
func (e *Emulator) CreateDir(org string, machineID, parentID int64, name string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, a, err := e.areaOf(org, machineID)
	if err != nil {
		return 0, err
	}
	e.changed()
	return e.createDirIn(a, parentID, name, e.now())
}

func (e *Emulator) createDirIn(a *area, parentID int64, name string, now time.Time) (int64, error) {
	p, err := e.parentIn(a, parentID)
	if err != nil {
		return 0, err
	}
	if err := validName(name); err != nil {
		return 0, fmt.Errorf("emulator: %s", err.(*apiError).msg)
	}
	if old := p.children[name]; old != nil {
		if old.kind == kindFile {
			return 0, fmt.Errorf("emulator: %q is a file", name)
		}
		return old.id, nil
	}
	return e.addNode(a, p, name, kindDir, a.org.admin, now).id, nil
}

// CreateFile creates a completed file from r in an organization's shared
// storage (machineID 0) or a computer's storage, replacing a file of that
// name. Quotas are not enforced. The content goes straight to the object
// store on disk.
func (e *Emulator) CreateFile(org string, machineID, parentID int64, name string, r io.Reader) (int64, error) {
	e.mu.Lock()
	_, a, err := e.areaOf(org, machineID)
	e.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return e.createFileIn(a, parentID, name, "", r, nil, time.Time{})
}

// createFileIn writes r as a new file in an area. contentType "" is guessed
// from the name; u nil is the organization's admin; mod zero is now.
func (e *Emulator) createFileIn(a *area, parentID int64, name, contentType string, r io.Reader, u *user, mod time.Time) (int64, error) {
	f, err := e.reserveFile(a, parentID, name, contentType, u, mod)
	if err != nil {
		return 0, err
	}
	return f.id, e.writeFile(f, r)
}

// pendingFile is a file whose id is reserved and whose content is not yet
// written.
type pendingFile struct {
	a           *area
	parent      *node
	id          int64
	name        string
	contentType string
	user        *user
	mod         time.Time
}

// reserveFile checks a new file's place and reserves its id.
func (e *Emulator) reserveFile(a *area, parentID int64, name, contentType string, u *user, mod time.Time) (*pendingFile, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("emulator: %s", err.(*apiError).msg)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := e.parentIn(a, parentID)
	if err != nil {
		return nil, err
	}
	if old := p.children[name]; old != nil && old.kind != kindFile {
		return nil, fmt.Errorf("emulator: %q is a folder", name)
	}
	if contentType == "" {
		contentType = contentTypeOf(name)
	}
	if u == nil {
		u = a.org.admin
	}
	return &pendingFile{a: a, parent: p, id: e.newID(), name: name, contentType: contentType, user: u, mod: mod}, nil
}

// writeFile writes a reserved file's content to the object store (no lock
// held) and then lists it, replacing a file of that name.
func (e *Emulator) writeFile(f *pendingFile, r io.Reader) error {
	size, _, err := e.store.Write(fileKey(f.id), r)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p, a := f.parent, f.a
	if p.deleted {
		e.removeObjectsLater([]string{fileKey(f.id)}, nil)
		return fmt.Errorf("emulator: the folder of %q was deleted", f.name)
	}
	if old := p.children[f.name]; old != nil {
		if old.kind != kindFile {
			e.removeObjectsLater([]string{fileKey(f.id)}, nil)
			return fmt.Errorf("emulator: %q is a folder", f.name)
		}
		e.removeSubtree(old)
	}
	mod := f.mod
	if mod.IsZero() {
		mod = e.now()
	}
	n := &node{
		id: f.id, org: a.org, area: a, parent: p, name: f.name, kind: kindFile, size: size,
		contentType: f.contentType, modified: mod, user: f.user, uid: newUUID(), objKey: fileKey(f.id),
		machineID: a.machineID,
	}
	if p.machineID != 0 {
		n.machineID = p.machineID
	}
	e.nodes[f.id] = n
	p.children[f.name] = n
	a.used += size
	e.changed()
	return nil
}

// DeleteFile deletes a file or a folder (with its content) of an organization.
func (e *Emulator) DeleteFile(org string, id int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	o, err := e.orgByName(org)
	if err != nil {
		return err
	}
	n := e.lookupNode(o, id)
	if n == nil {
		return fmt.Errorf("emulator: %s has no file %d", org, id)
	}
	if n.kind == kindRoot {
		return fmt.Errorf("emulator: %d is a root folder", id)
	}
	if n.completed() {
		e.removeSubtree(n)
	} else {
		e.dropUpload(n)
	}
	e.changed()
	return nil
}

// SetStorageQuota sets the quota in bytes of an organization's shared storage
// (machineID 0) or of a computer's storage.
func (e *Emulator) SetStorageQuota(org string, machineID int64, bytes int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, a, err := e.areaOf(org, machineID)
	if err != nil {
		return err
	}
	if bytes < 0 {
		return fmt.Errorf("emulator: negative quota")
	}
	a.quota = bytes
	e.changed()
	return nil
}

// contentTypeOf guesses a MIME type from a file name.
func contentTypeOf(name string) string {
	ext := strings.ToLower(name)
	if i := strings.LastIndexByte(ext, '.'); i >= 0 {
		ext = ext[i:]
	} else {
		ext = ""
	}
	switch ext {
	case ".txt", ".log":
		return "text/plain"
	case ".md":
		return "text/markdown"
	case ".csv":
		return "text/csv"
	case ".json":
		return "application/json"
	case ".pdf":
		return "application/pdf"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".mp4":
		return "video/mp4"
	case ".webm":
		return "video/webm"
	case ".zip":
		return "application/zip"
	case ".docx":
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	case ".xlsx":
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	case ".html":
		return "text/html"
	case ".css":
		return "text/css"
	case ".js":
		return "text/javascript"
	}
	return "application/octet-stream"
}
