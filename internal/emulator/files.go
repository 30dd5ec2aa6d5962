package emulator

// Files: the shared storage, each computer's storage and the session
// recordings, as trees of nodes. Here: finding nodes, names, adding a node,
// and deleting (DELETE /files/{id}); listing is in files_list.go, uploads in
// files_upload.go, the server-side helpers in files_direct.go.

import (
	"fmt"
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
