// Package place names where a thing is on the service: a storage area, a
// folder of one, a name in a folder. The read side (cache), the write side
// (writeback) and the tree (fs) all name places, so they live below all
// three.
package place

import (
	"fmt"
	"strconv"
)

// Locks: none (values only).

// AreaKind is one of the service's storage areas.
type AreaKind int

const (
	// Shared is the organization's shared storage (GET /files).
	Shared AreaKind = iota
	// Machine is one computer's storage (GET /machines/{id}/files).
	Machine
	// Recordings are the session recordings (GET /files/recordings).
	Recordings
)

// Area names a storage area: a kind and, for Machine, the computer.
type Area struct {
	Kind      AreaKind
	MachineID int64
}

func (a Area) String() string {
	switch a.Kind {
	case Shared:
		return "shared"
	case Recordings:
		return "recordings"
	}
	return fmt.Sprintf("machine %d", a.MachineID)
}

// DirKey names one folder: its area and its id (0: the area's root).
type DirKey struct {
	Area Area
	ID   int64
}

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
