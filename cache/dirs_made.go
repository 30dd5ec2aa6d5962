package cache

// Folders made offline in the listing cache (writeback/folders.go): such a
// folder has a provisional id (below zero) until the service has it. It
// shows in its folder's listing, cached or fetched, from Made until the
// service made it (Resolved) or it was removed (Unmade); its own listing is
// never fetched: it holds what the mount put in it (folders made in it; the
// files staged in it are the staging's). Once made, its provisional id
// stands for the service's, so that a node or a caller still holding it
// finds the folder made.
//
// Locks: Dirs.mu, as in dirs.go.

import (
	"slices"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// Made shows folder f, made offline (f.ID provisional), in folder parent.
func (d *Dirs) Made(parent place.DirKey, f api.File) {
	f = listed(f)
	d.mu.Lock()
	parent = d.realLocked(parent)
	d.made[parent] = append(slices.DeleteFunc(d.made[parent], func(x api.File) bool { return x.ID == f.ID }), f)
	d.mu.Unlock()
	d.Put(parent, f)
}

// Unmade takes folder id, made offline, out of folder parent: removed, or
// moved elsewhere (Made there); its own listing stays.
func (d *Dirs) Unmade(parent place.DirKey, id int64) {
	d.mu.Lock()
	parent = d.realLocked(parent)
	d.unmadeLocked(parent, id)
	d.mu.Unlock()
	d.Remove(parent, id)
}

func (d *Dirs) unmadeLocked(parent place.DirKey, id int64) {
	if l := slices.DeleteFunc(d.made[parent], func(x api.File) bool { return x.ID == id }); len(l) > 0 {
		d.made[parent] = l
	} else {
		delete(d.made, parent)
	}
}

// Resolved is told that the service made folder provisional, of folder
// parent, as made: it shows as made from now on, with what the mount put in
// it; merged, the folder of its name another writer made, is listed anew.
func (d *Dirs) Resolved(parent, provisional place.DirKey, made api.File, merged bool) {
	real := place.DirKey{Area: provisional.Area, ID: made.ID}
	d.mu.Lock()
	parent = d.realLocked(parent)
	d.madeAs[provisional.ID] = made.ID
	d.unmadeLocked(parent, provisional.ID)
	if inside, ok := d.made[provisional]; ok {
		d.made[real] = append(d.made[real], inside...)
		delete(d.made, provisional)
	}
	l, had := d.dirs[provisional]
	delete(d.dirs, provisional)
	if had && !merged {
		d.dirs[real] = newListing(l.Files, nil, d.now(), d.editSeq)
	}
	d.mu.Unlock()
	d.Remove(parent, provisional.ID)
	d.Put(parent, made)
	if merged {
		d.Drop(real)
	}
}

// realLocked is folder key, or the folder the service made for it when
// key was made offline (Resolved).
func (d *Dirs) realLocked(key place.DirKey) place.DirKey {
	if key.ID < 0 {
		if id, ok := d.madeAs[key.ID]; ok {
			key.ID = id
		}
	}
	return key
}

// provisionalLocked is the listing of folder key, made offline and not on
// the service yet: as cached, else what is known to be in it.
func (d *Dirs) provisionalLocked(key place.DirKey) *Listing {
	if l, ok := d.dirs[key]; ok {
		return l
	}
	l := newListing(slices.Clone(d.made[key]), nil, d.now(), d.editSeq)
	d.dirs[key] = l
	return l
}

// withMadeLocked is files, a listing of folder key fetched, with the
// folders made offline in it that the service does not list yet.
func (d *Dirs) withMadeLocked(key place.DirKey, files []api.File) []api.File {
	for _, f := range d.made[key] {
		if !slices.ContainsFunc(files, func(x api.File) bool { return x.ID == f.ID }) {
			files = append(files, f)
		}
	}
	return files
}
