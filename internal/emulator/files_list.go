package emulator

// File listings: the shared storage, the recordings, a computer's storage
// and a task's folders, paginated.
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
	"fmt"
	"strings"
)

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

// GET /machines/{id}/files and /seats/{id}/files (task_id on the machines
// path, or on the seats path where it is the only one: dialect seats-only)
func (e *Emulator) getMachineFiles(c *call) (any, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	s, err := e.lookupSeat(c.org, id)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(c.route, "GET /machines/") || e.dialect.ComputerPaths == "seats" {
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
