package writeback

// A folder another writer deleted while this desk wrote into it is made
// again for what this desk wrote: an upload that finds its folder gone
// walks the file's path from its area's root, makes the folders the service
// lacks, and moves the staged file there; nothing written here is lost with
// the folder.
//
// Locks: none held across the requests; RenameAt takes Staging.mu.

import (
	"context"
	"strings"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// remakeFolders makes again the folders of up's file that the service no
// longer has, and moves the file there (or only moves it, when another
// file of the folder had them made again). False when it stays: its path
// is unknown, its folder is there (the failure was about something else), a
// name on the way is a file, or a request failed.
func (s *Staging) remakeFolders(up *upload) bool {
	s.mu.Lock()
	path := up.st.path
	s.mu.Unlock()
	folders, ok := folderNames(up.target.Area, path)
	if !ok || up.target.ParentID == 0 {
		return false // an area's root is never deleted
	}
	ctx, cancel := context.WithTimeout(s.ctx, deleteTimeout)
	defer cancel()
	if _, err := s.holdsAnything(ctx, place.DirKey{Area: up.target.Area, ID: up.target.ParentID}); !api.IsNotFound(err) {
		return false // its folder is there (or the service did not say): the failure was about something else
	}
	parent, remade := int64(0), false
	var under place.DirKey
	for _, name := range folders {
		cur, found, err := s.currentAt(ctx, place.Target{Area: up.target.Area, ParentID: parent, Name: name})
		if err != nil || found && !cur.IsDir() {
			return false
		}
		if !found {
			req := api.CreateDirectoryRequest{ParentID: parent, Name: name}
			if up.target.Area.Kind == place.Machine {
				req.MachineID = up.target.Area.MachineID
			}
			d, err := s.client.CreateDirectory(ctx, req)
			switch {
			case api.IsExists(err):
				// Made meanwhile (for another file of the folder): taken.
				if cur, found, err = s.currentAt(ctx, place.Target{Area: up.target.Area, ParentID: parent, Name: name}); err != nil || !found || !cur.IsDir() {
					return false
				}
			case err != nil:
				return false
			default:
				if !remade {
					under, remade = place.DirKey{Area: up.target.Area, ID: parent}, true
				}
				cur.ID = d.ID
			}
		}
		parent = cur.ID
	}
	to := place.Target{Area: up.target.Area, ParentID: parent, Name: up.target.Name}
	if to == up.target {
		return false // every folder is there: the failure was about something else
	}
	if !remade {
		// Made again already (for another file of the folder, meanwhile).
		under = place.DirKey{Area: to.Area, ID: to.ParentID}
	}
	if err := s.RenameAt(up.st, to, 0, path); err != nil {
		return false
	}
	s.log.WithField("path", path).Warn("staging: the folder of a file written here was deleted by another writer meanwhile; made again, and the file goes there")
	if s.onRemade != nil {
		s.onRemade(up.target, to, under)
	}
	return true
}

// folderNames are the folders of path, a file's path in the mount
// ("shared/a/b/f.txt": a, b; "computers/NAME/a/f.txt": a), below its area's
// root; ok is false for a path of another area or form.
func folderNames(area place.Area, path string) ([]string, bool) {
	parts := strings.Split(path, "/")
	skip := 1 // shared/
	if area.Kind == place.Machine {
		skip = 2 // computers/NAME/
	}
	if len(parts) <= skip || area.Kind == place.Recordings {
		return nil, false
	}
	return parts[skip : len(parts)-1], true
}
