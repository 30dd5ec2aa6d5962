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
	"regexp"
	"strings"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// remakeFolders makes again the folders of up's file that the service no
// longer has, and moves the file there (or only moves it, when another
// file of the folder had them made again). False when it stays: its path
// is unknown, its folder is there (the failure was about something else), a
// name on the way is a file, or a request failed.
func (s *Staging) remakeFolders(up *upload) (bool, error) {
	s.mu.Lock()
	path, unchanged := up.st.path, !up.st.removed && up.st.target == up.target && up.st.gen == up.gen
	s.mu.Unlock()
	folders, ok := folderNames(up.target.Area, path)
	if !ok || !unchanged || up.target.ParentID == 0 {
		return false, nil // removed, moved or changed meanwhile; or an area's root, never deleted
	}
	ctx, cancel := context.WithTimeout(up.ctx, deleteTimeout) // ends if the file is removed
	defer cancel()
	if _, err := s.holdsAnything(ctx, place.DirKey{Area: up.target.Area, ID: up.target.ParentID}); !api.IsNotFound(err) {
		return false, nil // its folder is there (or the service did not say): the failure was about something else
	}
	parent, remade := int64(0), false
	var under place.DirKey
	for _, name := range folders {
		cur, found, err := s.currentAt(ctx, place.Target{Area: up.target.Area, ParentID: parent, Name: name})
		if err != nil || found && !cur.IsDir() {
			return false, err
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
					return false, err
				}
			case err != nil:
				return false, err
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
		return false, nil // every folder is there: the failure was about something else
	}
	if !remade {
		// Made again already (for another file of the folder, meanwhile).
		under = place.DirKey{Area: to.Area, ID: to.ParentID}
	}
	s.mu.Lock()
	still := !up.st.removed && up.st.target == up.target && up.st.path == path
	other := s.byTarget[to]
	s.mu.Unlock()
	if !still || other != nil && other != up.st {
		// Moved or removed meanwhile, or a file written since at the
		// new place (newer than this one): left as it is.
		return false, nil
	}
	if err := s.RenameAt(up.st, to, 0, path); err != nil {
		return false, nil
	}
	s.log.WithField("path", path).Warn("staging: the folder of a file written here was deleted by another writer meanwhile; made again, and the file goes there")
	if s.onRemade != nil {
		s.onRemade(up.target, to, under)
	}
	return true, nil
}

// shownOnly matches a folder name the mount shows in place of the
// service's: a '/' shown as '／', a clash told apart by " (id)", an empty
// name shown as "_".
var shownOnly = regexp.MustCompile(`／| \(\d+\)$|^_$`)

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
	folders := parts[skip : len(parts)-1]
	for _, name := range folders {
		if shownOnly.MatchString(name) {
			return nil, false // a name the mount shows for another (fs/names.go): not the service's
		}
	}
	return folders, true
}
