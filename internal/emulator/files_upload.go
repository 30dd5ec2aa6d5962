package emulator

// Uploads: POST /files creates a folder, or a file's upload with presigned
// part URLs; POST /files/{id}/complete checks the parts, concatenates them
// and lists the file. Lock order: upload.mu, then Emulator.mu (emulator.go).

import (
	"errors"
	"fmt"
	"os"
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
	if req.ParentID == nil && e.dialect.ParentIDRequired {
		return nil, badRequest("parent_id is required (0 for the root)")
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
	// chunk_size counts MiB (decimal MB in the dialect chunk-mb), at least
	// the part minimum, and enough for the parts to be at most maxParts.
	unit := e.dialect.chunkUnit()
	chunkUnits := int64(250)
	if req.ChunkSize != nil && *req.ChunkSize > 0 {
		chunkUnits = *req.ChunkSize
	}
	chunkUnits = max(chunkUnits, (partMinimum+unit-1)/unit)
	if need := (size + maxParts*unit - 1) / (maxParts * unit); chunkUnits < need {
		chunkUnits = need
	}
	chunk := chunkUnits * unit
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
	return map[string]any{"id": n.id, "uid": n.uid, "upload_urls": urls, "chunk_size": chunkUnits}, nil
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
