package emulator

// Files: the shared storage, each computer's storage and the session
// recordings, as trees of nodes.
//
// Listing choices (the contract is silent):
//   - parent_id omitted or 0 lists the area's root; the root's own id lists it
//     too. current is null for parent_id 0/omitted and the directory's record
//     otherwise (the root's record carries file_storage_size/usage).
//   - order: directories first, then by name (byte order), then by id.
//   - q: case-insensitive substring of the name, searched in the whole subtree
//     of the listed directory (not only its direct children); count is the
//     number of matches.
//   - count is the number of items matching (all pages), next_page null on
//     the last page.
//   - Incomplete uploads are never listed and never count against quotas.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// lookupNode finds a node of the organization (deleted ones are gone).
func (e *Emulator) lookupNode(o *org, id int64) *node {
	n := e.nodes[id]
	if n == nil || n.deleted || n.org != o {
		return nil
	}
	return n
}

// ownedElsewhere reports whether id names a resource of another organization.
func (e *Emulator) ownedElsewhere(o *org, id int64) bool {
	if n := e.nodes[id]; n != nil && !n.deleted && n.org != o {
		return true
	}
	if s := e.seats[id]; s != nil && s.org != o {
		return true
	}
	if im := e.images[id]; im != nil && !im.deleted && im.org != o {
		return true
	}
	if t := e.tasks[id]; t != nil && t.org != o {
		return true
	}
	if j := e.jobs[id]; j != nil && j.org != o {
		return true
	}
	if so := e.seatless[id]; so != nil && so != o {
		return true
	}
	return false
}

// lookupSeat finds a computer of the organization or answers 404.
func (e *Emulator) lookupSeat(o *org, id int64) (*seat, error) {
	s := e.seats[id]
	if s == nil || s.org != o {
		return nil, notFound(fmt.Sprintf("computer %d", id))
	}
	return s, nil
}

// GET /files
func (e *Emulator) getFiles(c *call) (any, error) {
	return e.listArea(c, c.org.shared, nil)
}

// GET /files/recordings (optional machine_id filter)
func (e *Emulator) getRecordings(c *call) (any, error) {
	mid, ok, err := c.queryInt("machine_id")
	if err != nil {
		return nil, err
	}
	var filter func(*node) bool
	if ok {
		if _, err := e.lookupSeat(c.org, mid); err != nil {
			return nil, err
		}
		filter = func(n *node) bool { return n.machineID == mid }
	}
	return e.listArea(c, c.org.recordings, filter)
}

// GET /machines/{id}/files and /seats/{id}/files (task_id on the machines path)
func (e *Emulator) getMachineFiles(c *call) (any, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	s, err := e.lookupSeat(c.org, id)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(c.route, "GET /machines/") {
		tid, ok, err := c.queryInt("task_id")
		if err != nil {
			return nil, err
		}
		if ok {
			return e.listTask(c, s, tid)
		}
	}
	return e.listArea(c, s.area, nil)
}

// listTask lists a task's folders: its output folder and the recording
// folders linked to it.
func (e *Emulator) listTask(c *call, s *seat, tid int64) (any, error) {
	t := e.tasks[tid]
	if t == nil || t.org != c.org || t.seat != s {
		return nil, notFound(fmt.Sprintf("task %d of computer %d", tid, s.id))
	}
	page, perPage, err := c.pageParams(20)
	if err != nil {
		return nil, err
	}
	q := c.r.URL.Query().Get("q")
	var items []*node
	for _, n := range t.folders() {
		if q == "" || containsFold(n.name, q) {
			items = append(items, n)
		}
	}
	pg, next := paginate(items, page, perPage)
	return map[string]any{"files": fileRecords(pg), "current": nil, "count": len(items), "page": page, "next_page": next}, nil
}

// folders are the task's folders that still exist.
func (t *task) folders() []*node {
	var out []*node
	if t.output != nil && !t.output.deleted {
		out = append(out, t.output)
	}
	for _, r := range t.recordings {
		if !r.deleted {
			out = append(out, r)
		}
	}
	return out
}

// listArea answers a file listing of an area.
func (e *Emulator) listArea(c *call, a *area, filter func(*node) bool) (any, error) {
	pid, ok, err := c.queryInt("parent_id")
	if err != nil {
		return nil, err
	}
	page, perPage, err := c.pageParams(20)
	if err != nil {
		return nil, err
	}
	dir := a.root
	var current any
	if ok && pid != 0 {
		n := e.lookupNode(c.org, pid)
		if n == nil || n.area != a || !n.completed() {
			return nil, notFound(fmt.Sprintf("parent folder %d", pid))
		}
		if n.kind == kindFile {
			return nil, badRequest("parent_id %d is a file, not a folder", pid)
		}
		dir = n
		current = fileRecord(n)
	}
	var items []*node
	if q := c.r.URL.Query().Get("q"); q != "" {
		var walk func(d *node)
		walk = func(d *node) {
			for _, ch := range d.children {
				if containsFold(ch.name, q) {
					items = append(items, ch)
				}
				if ch.kind != kindFile {
					walk(ch)
				}
			}
		}
		walk(dir)
		sortNodes(items)
	} else {
		items = dir.sortedChildren()
	}
	if filter != nil {
		kept := items[:0:0]
		for _, n := range items {
			if filter(n) {
				kept = append(kept, n)
			}
		}
		items = kept
	}
	pg, next := paginate(items, page, perPage)
	return map[string]any{"files": fileRecords(pg), "current": current, "count": len(items), "page": page, "next_page": next}, nil
}

// validName checks a file or folder name.
func validName(name string) error {
	switch {
	case name == "":
		return badRequest("file_name is required")
	case name == "." || name == "..":
		return badRequest("file_name %q is not allowed", name)
	case strings.ContainsAny(name, "/\x00"):
		return badRequest("file_name must not contain '/' or NUL")
	case len(name) > 255:
		return badRequest("file_name longer than 255 bytes")
	}
	return nil
}

type createFileRequest struct {
	MachineID   *int64  `json:"machine_id"`
	FileName    *string `json:"file_name"`
	ObjectType  *string `json:"object_type"`
	ContentType *string `json:"content_type"`
	Size        *int64  `json:"size"`
	ChunkSize   *int64  `json:"chunk_size"`
	Overwrite   *bool   `json:"overwrite"`
	ParentID    *int64  `json:"parent_id"`
}

type uploadURL struct {
	PartNumber int    `json:"part_number"`
	URL        string `json:"url"`
}

// POST /files
func (e *Emulator) postFiles(c *call) (any, error) {
	var req createFileRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.ObjectType == nil {
		return nil, badRequest("object_type is required")
	}
	isDir := false
	switch *req.ObjectType {
	case "file":
	case "directory":
		isDir = true
	default:
		return nil, badRequest("invalid object_type %q: want file or directory", *req.ObjectType)
	}
	if req.FileName == nil {
		return nil, badRequest("file_name is required")
	}
	if err := validName(*req.FileName); err != nil {
		return nil, err
	}
	if !isDir {
		if req.ContentType == nil || *req.ContentType == "" {
			return nil, badRequest("content_type is required for files")
		}
		if req.Size == nil {
			return nil, badRequest("size is required for files")
		}
		if *req.Size < 0 {
			return nil, badRequest("size must not be negative")
		}
		if req.ChunkSize != nil && *req.ChunkSize < 0 {
			return nil, badRequest("chunk_size must not be negative")
		}
	}
	a := c.org.shared
	if req.MachineID != nil {
		s, err := e.lookupSeat(c.org, *req.MachineID)
		if err != nil {
			return nil, err
		}
		a = s.area
	}
	parent := a.root
	if req.ParentID != nil && *req.ParentID != 0 {
		if e.ownedElsewhere(c.org, *req.ParentID) {
			return nil, notFound(fmt.Sprintf("parent folder %d", *req.ParentID))
		}
		p := e.lookupNode(c.org, *req.ParentID)
		switch {
		case p == nil || !p.completed():
			return nil, badRequest("parent folder %d not found or deleted", *req.ParentID)
		case p.area != a:
			return nil, badRequest("parent folder %d is not in the target storage", *req.ParentID)
		case p.kind == kindFile:
			return nil, badRequest("parent %d is a file, not a folder", *req.ParentID)
		}
		parent = p
	}
	name := *req.FileName
	overwrite := req.Overwrite != nil && *req.Overwrite
	existing := parent.children[name]
	if isDir {
		if existing != nil {
			return nil, errf(451, "%q already exists", name)
		}
		n := e.addNode(a, parent, name, kindDir, c.org.admin, c.now)
		e.appendLog(c.org, "folder_created", c.org.admin, a.machineID, map[string]any{"file_id": n.id, "file_name": name, "path": n.path()}, c.now)
		return map[string]any{"id": n.id, "uid": n.uid, "upload_urls": nil, "chunk_size": 0}, nil
	}
	var replaced int64
	if existing != nil {
		if existing.kind != kindFile || !overwrite {
			return nil, errf(451, "%q already exists and overwrite is false", name)
		}
		replaced = existing.size
	}
	size := *req.Size
	if a.used-replaced+size > a.quota {
		return nil, errf(450, "storage full: %d bytes used of %d, %d more requested", a.used, a.quota, size)
	}
	chunkMiB := int64(250)
	if req.ChunkSize != nil && *req.ChunkSize > 0 {
		chunkMiB = *req.ChunkSize
	}
	chunkMiB = max(chunkMiB, partMinimum/mib)
	if need := (size + maxParts*mib - 1) / (maxParts * mib); chunkMiB < need {
		chunkMiB = need
	}
	chunk := chunkMiB * mib
	parts := int(max(1, (size+chunk-1)/chunk))

	n := &node{
		id: e.newID(), org: c.org, area: a, parent: parent, name: name, kind: kindFile,
		contentType: *req.ContentType, modified: c.now, user: c.org.admin, uid: newUUID(),
		machineID: a.machineID,
		up:        &upload{declared: size, chunk: chunk, parts: parts, overwrite: overwrite},
	}
	e.nodes[n.id] = n
	urls := make([]uploadURL, parts)
	for i := range urls {
		minSize := int64(partMinimum)
		if i == parts-1 {
			minSize = 0
		}
		urls[i] = uploadURL{PartNumber: i + 1, URL: e.store.PresignPut(partKey(n.id, i+1), uploadURLTTL, minSize)}
	}
	return map[string]any{"id": n.id, "uid": n.uid, "upload_urls": urls, "chunk_size": chunkMiB}, nil
}

// addNode adds a completed directory (or an empty root-less entry) under parent.
// Called with mu held.
func (e *Emulator) addNode(a *area, parent *node, name string, kind objectKind, u *user, now time.Time) *node {
	n := &node{
		id: e.newID(), org: a.org, area: a, parent: parent, name: name, kind: kind,
		modified: now, user: u, uid: newUUID(), machineID: a.machineID,
	}
	if parent != nil && parent.machineID != 0 {
		n.machineID = parent.machineID
	}
	if kind != kindFile {
		n.children = map[string]*node{}
	}
	e.nodes[n.id] = n
	if parent != nil {
		parent.children[name] = n
	}
	return n
}

type completeRequest struct {
	Parts *[]struct {
		PartNumber *int    `json:"part_number"`
		ETag       *string `json:"etag"`
	} `json:"parts"`
}

// POST /files/{id}/complete. A repeated complete of an upload that already
// completed with the same parts answers the same success (uid and a fresh
// download_url), so a client may retry it after a lost answer.
func (e *Emulator) postComplete(c *call) (any, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	var req completeRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.Parts == nil {
		return nil, badRequest("parts is required")
	}
	etags := make([]string, len(*req.Parts))
	for i, p := range *req.Parts {
		if p.PartNumber == nil || p.ETag == nil || *p.ETag == "" {
			return nil, badRequest("invalid parts format: part %d needs part_number and etag", i+1)
		}
		if *p.PartNumber != i+1 {
			return nil, badRequest("invalid parts format: parts must be in order 1, 2, 3, ... (item %d has part_number %d)", i+1, *p.PartNumber)
		}
		etags[i] = *p.ETag
	}

	e.mu.Lock()
	n := e.lookupNode(c.org, id)
	if n == nil {
		e.mu.Unlock()
		return nil, notFound(fmt.Sprintf("file %d", id))
	}
	if n.kind != kindFile || n.up == nil {
		e.mu.Unlock()
		return nil, badRequest("%d is not an upload", id)
	}
	up := n.up
	e.mu.Unlock()

	up.mu.Lock()
	defer up.mu.Unlock()

	e.mu.Lock()
	if n.deleted {
		e.mu.Unlock()
		return nil, notFound(fmt.Sprintf("file %d", id))
	}
	if up.done {
		defer e.mu.Unlock()
		if equalStrings(up.etags, etags) {
			return map[string]any{"uid": n.uid, "download_url": e.store.PresignGet(n.objKey, downloadURLTTL, n.name)}, nil
		}
		return nil, badRequest("upload %d is already completed", id)
	}
	if len(etags) != up.parts {
		e.mu.Unlock()
		return nil, badRequest("invalid parts format: %d parts given, the upload has %d", len(etags), up.parts)
	}
	e.mu.Unlock()

	// Check the parts (object-store I/O, no lock).
	keys := make([]string, len(etags))
	var total int64
	for i := range etags {
		keys[i] = partKey(id, i+1)
		size, etag, err := e.store.Stat(keys[i])
		if errors.Is(err, os.ErrNotExist) {
			return nil, badRequest("part %d was not uploaded", i+1)
		}
		if err != nil {
			return nil, fmt.Errorf("stat part %d: %w", i+1, err)
		}
		if etag != etags[i] {
			return nil, badRequest("etag of part %d does not match the uploaded part", i+1)
		}
		total += size
	}

	e.mu.Lock()
	if n.deleted {
		e.mu.Unlock()
		return nil, notFound(fmt.Sprintf("file %d", id))
	}
	if total != up.declared {
		e.dropUpload(n)
		e.mu.Unlock()
		return nil, errf(452, "uploaded size %d differs from the declared size %d; the file is deleted", total, up.declared)
	}
	if err := e.checkCompletion(n, total); err != nil {
		e.dropUpload(n)
		e.mu.Unlock()
		return nil, err
	}
	e.mu.Unlock()

	size, err := e.store.Concat(fileKey(id), keys)
	if err != nil {
		return nil, fmt.Errorf("concatenating the parts: %w", err)
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if n.deleted {
		e.removeObjectsLater([]string{fileKey(id)}, []string{partPrefix(id)})
		return nil, notFound(fmt.Sprintf("file %d", id))
	}
	if err := e.checkCompletion(n, size); err != nil {
		e.dropUpload(n)
		e.removeObjectsLater([]string{fileKey(id)}, nil)
		return nil, err
	}
	if old := n.parent.children[n.name]; old != nil {
		e.removeSubtree(old)
	}
	n.size = size
	n.objKey = fileKey(id)
	n.modified = c.now
	up.done = true
	up.etags = etags
	n.parent.children[n.name] = n
	n.area.used += size
	e.removeObjectsLater(nil, []string{partPrefix(id)})
	e.appendLog(c.org, "file_uploaded", c.org.admin, n.area.machineID, map[string]any{"file_id": n.id, "file_name": n.name, "size": size, "path": n.path()}, c.now)
	return map[string]any{"uid": n.uid, "download_url": e.store.PresignGet(n.objKey, downloadURLTTL, n.name)}, nil
}

// checkCompletion checks that an upload of size bytes can take its place:
// its folders still exist (400), the name is free or replaceable (451), the
// quota holds (450). Called with mu held.
func (e *Emulator) checkCompletion(n *node, size int64) error {
	for p := n.parent; p != nil; p = p.parent {
		if p.deleted {
			return badRequest("parent folder of %d was deleted", n.id)
		}
	}
	var replaced int64
	if old := n.parent.children[n.name]; old != nil {
		if old.kind != kindFile || !n.up.overwrite {
			return errf(451, "%q already exists and overwrite is false; the upload is deleted", n.name)
		}
		replaced = old.size
	}
	a := n.area
	if a.used-replaced+size > a.quota {
		return errf(450, "storage limit exceeded: %d bytes used of %d, the upload needs %d; the file is deleted", a.used, a.quota, size)
	}
	return nil
}

// dropUpload forgets an incomplete upload and removes its parts. Called with
// mu held.
func (e *Emulator) dropUpload(n *node) {
	n.deleted = true
	delete(e.nodes, n.id)
	e.removeObjectsLater(nil, []string{partPrefix(n.id)})
}

// removeSubtree deletes a completed node and everything under it at once
// (records), its objects in the background. Called with mu held.
func (e *Emulator) removeSubtree(n *node) {
	var keys, prefixes []string
	var walk func(x *node)
	walk = func(x *node) {
		for _, ch := range x.children {
			walk(ch)
		}
		x.deleted = true
		delete(e.nodes, x.id)
		if x.kind == kindFile {
			x.area.used -= x.size
			if x.objKey != "" {
				keys = append(keys, x.objKey)
			}
		}
	}
	walk(n)
	if n.parent != nil && n.parent.children[n.name] == n {
		delete(n.parent.children, n.name)
	}
	// Incomplete uploads below a deleted folder.
	for _, x := range e.nodes {
		if x.up != nil && !x.up.done {
			for p := x.parent; p != nil; p = p.parent {
				if p.deleted {
					x.deleted = true
					delete(e.nodes, x.id)
					prefixes = append(prefixes, partPrefix(x.id))
					break
				}
			}
		}
	}
	e.removeObjectsLater(keys, prefixes)
}

// DELETE /files/{id}
func (e *Emulator) deleteFile(c *call) (any, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	n := e.lookupNode(c.org, id)
	if n == nil {
		return nil, notFound(fmt.Sprintf("file %d", id))
	}
	if n.kind == kindRoot {
		return nil, errf(450, "the root folder cannot be deleted")
	}
	meta := map[string]any{"file_id": n.id, "file_name": n.name, "object_type": n.kind.String(), "path": n.path()}
	if n.completed() {
		e.removeSubtree(n)
	} else {
		e.dropUpload(n)
	}
	e.appendLog(c.org, "file_deleted", c.org.admin, n.area.machineID, meta, c.now)
	return nil, nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Server-side helpers (no HTTP) for tests and seeding.

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
