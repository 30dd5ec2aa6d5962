package cache

// The listing cache's edits: the mount's own changes of a folder put in its
// cached listing (Put, Remove), the edit log that makes them again on the
// answers of listing fetches on their way, and the files hidden from every
// listing (renamed away, deleted later).
//
// Locks: Dirs.mu, as in dirs.go.

import (
	"slices"
	"weak"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// loggedEdit is an edit of a folder's listing (Put, Remove), numbered; f
// nil: the listing was dropped (Drop, Forget).
type loggedEdit struct {
	seq uint64
	f   func([]api.File) []api.File
}

// logLocked numbers an edit (or drop: f nil) of folder key, and keeps it
// while listing fetches are on their way, for their answers.
func (d *Dirs) logLocked(key place.DirKey, f func([]api.File) []api.File) {
	d.editSeq++
	if len(d.fetching) > 0 {
		if d.editLog == nil {
			d.editLog = map[place.DirKey][]loggedEdit{}
		}
		d.editLog[key] = append(d.editLog[key], loggedEdit{seq: d.editSeq, f: f})
	}
}

// beginFetchLocked counts a listing fetch on its way and returns the number
// of the last edit it may miss the edits after.
func (d *Dirs) beginFetchLocked() uint64 {
	if d.fetching == nil {
		d.fetching = map[uint64]int{}
	}
	d.fetching[d.editSeq]++
	return d.editSeq
}

// endFetchLocked counts the end of a fetch begun after edit since, and
// forgets the edits that no fetch on its way may miss.
func (d *Dirs) endFetchLocked(since uint64) {
	if d.fetching[since]--; d.fetching[since] <= 0 {
		delete(d.fetching, since)
	}
	if len(d.fetching) == 0 {
		d.editLog = nil
		return
	}
	oldest := d.editSeq
	for s := range d.fetching {
		oldest = min(oldest, s)
	}
	for key, log := range d.editLog {
		i := 0
		for i < len(log) && log[i].seq <= oldest {
			i++
		}
		if i == len(log) {
			delete(d.editLog, key)
		} else if i > 0 {
			d.editLog[key] = slices.Clone(log[i:])
		}
	}
}

// change is an edit of a folder's listing: files with some entries taken
// out (removed) and some put at the end.
type change func(files []api.File) (out, removed []api.File)

// Put adds a file the mount itself created or changed to its folder's
// cached listing (replacing an entry of the same id or name), so the change
// shows at once without a new listing. A folder not cached is left alone: its
// next listing will have the file.
func (d *Dirs) Put(key place.DirKey, f api.File) {
	f = listed(f)
	seq := d.edit(key, func(files []api.File) ([]api.File, []api.File) {
		if !slices.ContainsFunc(files, func(x api.File) bool { return x.ID == f.ID || x.Name == f.Name }) {
			// A new name (an upload of a new file): appended, in place where
			// the array has room. Whoever holds files holds its length and
			// sees nothing past it, and only the newest listing of a folder
			// is edited. A folder of 100,000 entries took a copy of 10 MB per
			// upload; the mount's view of it follows the same way (fs
			// dirView.derived).
			return append(files, f), nil
		}
		out, removed := without(files, func(x api.File) bool { return x.ID == f.ID || x.Name == f.Name })
		return append(out, f), removed
	}, 1)
	if w := d.watch.Load(); w != nil && w.Put != nil {
		w.Put(key, f, seq)
	}
}

// Remove takes a file the mount deleted out of its folder's cached listing.
func (d *Dirs) Remove(key place.DirKey, id int64) {
	d.edit(key, func(files []api.File) ([]api.File, []api.File) {
		return without(files, func(x api.File) bool { return x.ID == id })
	}, 0)
}

// without is files without those gone says, in a copy, and those. The
// entries between are copied in runs (a folder of 100,000 entries is 10 MB).
func without(files []api.File, gone func(api.File) bool) (out, removed []api.File) {
	out = make([]api.File, 0, len(files))
	from := 0
	for i, x := range files {
		if gone(x) {
			out = append(out, files[from:i]...)
			removed, from = append(removed, x), i+1
		}
	}
	return append(out, files[from:]...), removed
}

// edit replaces a cached listing by an edited copy (readers keep the old
// one), which says what the edit changed (Listing.Edited) where it is all
// in c's answer: c took out removed and put the last added entries at the
// end. While listing fetches are on their way, the edit is logged, to be
// made on their answers too (fetchListing). Hidden files stay out, as in a
// fetched listing: a Put of a file renamed away meanwhile (its upload
// ending as the rename happened) does not bring it back.
//
// It returns the edit's number (Listing.Seq).
func (d *Dirs) edit(key place.DirKey, c change, added int) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if key = d.realLocked(key); key.ID < 0 {
		d.provisionalLocked(key) // edited as any cached listing
	}
	d.logLocked(key, func(files []api.File) []api.File {
		out, _ := c(files)
		return out
	})
	if l, ok := d.dirs[key]; ok {
		files, removed := c(l.Files)
		told := true
		if len(d.hide) > 0 {
			if news, ok := appended(files, l.Files); ok {
				// The listing had no hidden file: the new entries are
				// checked alone, and the array kept.
				files = append(files[:len(l.Files)], d.visibleLocked(news)...)
			} else {
				n := len(files)
				files = d.visibleLocked(files)
				told = len(files) == n
			}
		}
		d.dirs[key] = newListing(files, l.Current, l.Fetched, d.editSeq)
		d.dirs[key].kept, d.dirs[key].behind = l.kept, l.behind
		if _, inPlace := appended(files, l.Files); told && !inPlace {
			d.dirs[key].edit = &listingEdit{from: weak.Make(l), removed: removed, added: files[len(files)-added:]}
		}
	}
	return d.editSeq
}

// Hide takes a file out of its folder's listing, cached now or fetched from
// now on: the mount removed it (renamed away) and the service deletes it later.
func (d *Dirs) Hide(key place.DirKey, id int64) {
	d.mu.Lock()
	d.hide[id] = &key
	d.mu.Unlock()
	d.Remove(key, id)
}

// HideIDs hides files, wherever they are, in the listings cached and
// fetched from now on: at the start, the old names of files renamed away
// whose successors are still staged, and the deletions journaled.
func (d *Dirs) HideIDs(ids []int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		if _, ok := d.hide[id]; !ok {
			d.hide[id] = nil
		}
	}
	if len(ids) == 0 {
		return
	}
	for key, l := range d.dirs { // the listings kept on disk (dirs_disk.go), read before
		if files := d.visibleLocked(l.Files); len(files) != len(l.Files) {
			kept := newListing(files, l.Current, l.Fetched, d.editSeq)
			kept.kept, kept.behind = l.kept, l.behind
			d.dirs[key] = kept
		}
	}
}

// Unhide shows a file hidden again in the listings fetched from now on.
func (d *Dirs) Unhide(id int64) {
	d.mu.Lock()
	delete(d.hide, id)
	d.mu.Unlock()
}

// Show shows again files the mount hid and the service keeps (the original
// of a file renamed away whose upload was discarded, a deletion that
// failed): their folders are listed anew at the next read (every folder
// when one's is not known).
func (d *Dirs) Show(ids []int64) {
	d.mu.Lock()
	var keys []place.DirKey
	all := false
	for _, id := range ids {
		key, ok := d.hide[id]
		if !ok {
			continue
		}
		delete(d.hide, id)
		if key == nil {
			all = true
		} else if !slices.Contains(keys, *key) {
			keys = append(keys, *key)
		}
	}
	d.mu.Unlock()
	if w := d.watch.Load(); w != nil && w.Shown != nil && (all || len(keys) > 0) {
		w.Shown(ids)
	}
	if all {
		d.DropAll()
		return
	}
	for _, key := range keys {
		d.Drop(key)
	}
}

// visibleLocked is files without the hidden ones.
func (d *Dirs) visibleLocked(files []api.File) []api.File {
	if len(d.hide) == 0 {
		return files
	}
	out := files[:0:0]
	for _, f := range files {
		if _, hidden := d.hide[f.ID]; !hidden {
			out = append(out, f)
		}
	}
	return out
}
