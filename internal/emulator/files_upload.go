package emulator

// Uploads: POST /files creates a folder, or a file's upload with presigned
// part URLs; POST /files/{id}/complete checks the parts, concatenates them
// and lists the file. Lock order: upload.mu, then Emulator.mu (emulator.go).

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

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
	isDir, err := req.check()
	if err != nil {
		return nil, err
	}
	a, parent, err := e.createTarget(c, &req)
	if err != nil {
		return nil, err
	}
	if isDir {
		return e.createFolder(c, a, parent, *req.FileName)
	}
	return e.createUpload(c, &req, a, parent)
}

// check checks the fields of the request on their own (400): the object
// type, the name and, for a file, its content type and sizes. isDir tells a
// folder from a file.
func (req *createFileRequest) check() (isDir bool, err error) {
	if req.ObjectType == nil {
		return false, badRequest("object_type is required")
	}
	switch *req.ObjectType {
	case "file":
	case "directory":
		isDir = true
	default:
		return false, badRequest("invalid object_type %q: want file or directory", *req.ObjectType)
	}
	if req.FileName == nil {
		return false, badRequest("file_name is required")
	}
	if err := validName(*req.FileName); err != nil {
		return false, err
	}
	if !isDir {
		if req.ContentType == nil || *req.ContentType == "" {
			return false, badRequest("content_type is required for files")
		}
		if req.Size == nil {
			return false, badRequest("size is required for files")
		}
		if *req.Size < 0 {
			return false, badRequest("size must not be negative")
		}
		if req.ChunkSize != nil && *req.ChunkSize < 0 {
			return false, badRequest("chunk_size must not be negative")
		}
	}
	return isDir, nil
}

// createTarget resolves where the request creates its entry: the shared
// storage or the computer's (machine_id), and the folder in it (parent_id, 0
// or none for the root). Called with mu held.
func (e *Emulator) createTarget(c *call, req *createFileRequest) (*area, *node, error) {
	a := c.org.shared
	if req.MachineID != nil {
		s, err := e.lookupSeat(c.org, *req.MachineID)
		if err != nil {
			return nil, nil, err
		}
		a = s.area
	}
	if req.ParentID == nil && e.dialect.ParentIDRequired {
		return nil, nil, badRequest("parent_id is required (0 for the root)")
	}
	parent := a.root
	if req.ParentID != nil && *req.ParentID != 0 {
		if e.ownedElsewhere(c.org, *req.ParentID) {
			return nil, nil, notFound(fmt.Sprintf("parent folder %d", *req.ParentID))
		}
		p := e.lookupNode(c.org, *req.ParentID)
		switch {
		case p == nil || !p.completed():
			return nil, nil, badRequest("parent folder %d not found or deleted", *req.ParentID)
		case p.area != a:
			return nil, nil, badRequest("parent folder %d is not in the target storage", *req.ParentID)
		case p.kind == kindFile:
			return nil, nil, badRequest("parent %d is a file, not a folder", *req.ParentID)
		}
		parent = p
	}
	return a, parent, nil
}

// createFolder creates the folder name in parent, unless the name is taken
// (451), and logs it. Called with mu held.
func (e *Emulator) createFolder(c *call, a *area, parent *node, name string) (any, error) {
	if parent.children[name] != nil {
		return nil, errf(451, "%q already exists", name)
	}
	n := e.addNode(a, parent, name, kindDir, c.org.admin, c.now)
	e.appendLog(c.org, "folder_created", c.org.admin, a.machineID, map[string]any{"file_id": n.id, "file_name": name, "path": n.path()}, c.now)
	return map[string]any{"id": n.id, "uid": n.uid, "upload_urls": nil, "chunk_size": 0}, nil
}

// createUpload starts the upload of a file in parent, unless the name is
// taken and not to be overwritten (451) or the quota would not hold (450),
// and answers its presigned part URLs. The file is listed on complete.
// Called with mu held.
func (e *Emulator) createUpload(c *call, req *createFileRequest, a *area, parent *node) (any, error) {
	name := *req.FileName
	overwrite := req.Overwrite != nil && *req.Overwrite
	var replaced int64
	if existing := parent.children[name]; existing != nil {
		if existing.kind != kindFile || !overwrite {
			return nil, errf(451, "%q already exists and overwrite is false", name)
		}
		replaced = existing.size
	}
	size := *req.Size
	if a.used-replaced+size > a.quota {
		return nil, errf(450, "storage full: %d bytes used of %d, %d more requested", a.used, a.quota, size)
	}
	chunkUnits, chunk, parts := e.chunking(size, req.ChunkSize)
	contentType := *req.ContentType
	if e.dialect.TypeNoParams {
		contentType, _, _ = strings.Cut(contentType, ";")
		contentType = strings.TrimSpace(contentType)
	}
	n := &node{
		id: e.newID(), org: c.org, area: a, parent: parent, name: name, kind: kindFile,
		contentType: contentType, modified: c.now, user: c.org.admin, uid: newUUID(),
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
	return map[string]any{"id": n.id, "uid": n.uid, "upload_urls": urls, "chunk_size": chunkUnits}, nil
}

// chunking sizes the parts of an upload of size bytes from the chunk_size
// asked for (nil or 0: 250): chunk_size counts MiB (decimal MB in the
// dialect chunk-mb), at least the part minimum, and enough for the parts to
// be at most maxParts. It returns the chunk size in units and in bytes, and
// the number of parts.
func (e *Emulator) chunking(size int64, asked *int64) (chunkUnits, chunk int64, parts int) {
	unit := e.dialect.chunkUnit()
	chunkUnits = int64(250)
	if asked != nil && *asked > 0 {
		chunkUnits = *asked
	}
	chunkUnits = max(chunkUnits, (partMinimum+unit-1)/unit)
	if need := (size + maxParts*unit - 1) / (maxParts * unit); chunkUnits < need {
		chunkUnits = need
	}
	chunk = chunkUnits * unit
	parts = int(max(1, (size+chunk-1)/chunk))
	return chunkUnits, chunk, parts
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
	etags, err := req.etags()
	if err != nil {
		return nil, err
	}
	n, up, err := e.lookupUpload(c, id)
	if err != nil {
		return nil, err
	}

	up.mu.Lock()
	defer up.mu.Unlock()

	again, err := e.checkCompletable(n, id, etags)
	if err != nil {
		return nil, err
	}
	if again != nil {
		return again, nil
	}
	keys, total, err := e.statParts(id, etags)
	if err != nil {
		return nil, err
	}
	if err := e.checkUploaded(n, id, total); err != nil {
		return nil, err
	}
	size, err := e.store.Concat(fileKey(id), keys)
	if err != nil {
		return nil, fmt.Errorf("concatenating the parts: %w", err)
	}
	return e.finishUpload(c, n, etags, size)
}

// etags returns the parts' ETags, checking that the parts are given, each
// with its number and ETag, in order 1, 2, 3... (400).
func (req *completeRequest) etags() ([]string, error) {
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
	return etags, nil
}

// lookupUpload finds the upload id of the organization: its node and its
// upload. Takes mu.
func (e *Emulator) lookupUpload(c *call, id int64) (*node, *upload, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.lookupNode(c.org, id)
	if n == nil {
		return nil, nil, notFound(fmt.Sprintf("file %d", id))
	}
	if n.kind != kindFile || n.up == nil {
		return nil, nil, badRequest("%d is not an upload", id)
	}
	return n, n.up, nil
}

// checkCompletable checks that the upload n (id) may be completed with
// etags: it is not deleted (404) and has as many parts (400). When it has
// completed already, again is the answer of a retry with the same parts
// (400 with others). Called with the upload's mu held; takes mu.
func (e *Emulator) checkCompletable(n *node, id int64, etags []string) (again map[string]any, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	up := n.up
	if n.deleted {
		return nil, notFound(fmt.Sprintf("file %d", id))
	}
	if up.done {
		if equalStrings(up.etags, etags) {
			return map[string]any{"uid": n.uid, "download_url": e.store.PresignGet(n.objKey, downloadURLTTL, n.name)}, nil
		}
		return nil, badRequest("upload %d is already completed", id)
	}
	if len(etags) != up.parts {
		return nil, badRequest("invalid parts format: %d parts given, the upload has %d", len(etags), up.parts)
	}
	return nil, nil
}

// statParts checks that every part of the upload id was uploaded with its
// ETag (400), and returns the parts' keys and their total size. Object-store
// I/O: called without mu.
func (e *Emulator) statParts(id int64, etags []string) (keys []string, total int64, err error) {
	keys = make([]string, len(etags))
	for i := range etags {
		keys[i] = partKey(id, i+1)
		size, etag, err := e.store.Stat(keys[i])
		if errors.Is(err, os.ErrNotExist) {
			return nil, 0, badRequest("part %d was not uploaded", i+1)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("stat part %d: %w", i+1, err)
		}
		if etag != etags[i] {
			return nil, 0, badRequest("etag of part %d does not match the uploaded part", i+1)
		}
		total += size
	}
	return keys, total, nil
}

// checkUploaded checks, before the parts of the upload n (id) are
// concatenated, that it is not deleted (404), that the parts hold its
// declared size (452) and that it can take its place (checkCompletion); the
// upload is dropped when not. Called with the upload's mu held; takes mu.
func (e *Emulator) checkUploaded(n *node, id int64, total int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n.deleted {
		return notFound(fmt.Sprintf("file %d", id))
	}
	if total != n.up.declared {
		e.dropUpload(n)
		return errf(452, "uploaded size %d differs from the declared size %d; the file is deleted", total, n.up.declared)
	}
	if err := e.checkCompletion(n, total); err != nil {
		e.dropUpload(n)
		return err
	}
	return nil
}

// finishUpload lists the concatenated file n of size bytes in place of any
// older one, removes its parts and logs it; unless it was deleted meanwhile
// (404) or can no longer take its place (checkCompletion), when its content
// is removed. Called with the upload's mu held; takes mu.
func (e *Emulator) finishUpload(c *call, n *node, etags []string, size int64) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id, up := n.id, n.up
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
