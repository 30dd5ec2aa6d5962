package fs

// A folder's view: its listing with the name each entry shows under.

import (
	"iter"
	"maps"
	"slices"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
)

// dirView is a folder listing with the names the mount shows for it. Files
// written here and not on the service yet are not in it: Lookup asks the
// staging for a name, Readdir adds them, so a create costs no rebuild of the
// view (a copy of n files into a folder stays O(n), not O(n²)).
// With links on, a link file shows under its link's name (links.go).
//
// A view is made anew from a listing (newDirView: its base), then follows
// the mount's own edits of the listing (derived): the base entries taken out
// since (gone) and those put in since (extra, each under its own name) are
// kept beside it, until they are too many and the view is made anew. A view
// is never changed once made: readers hold it without a lock.
type dirView struct {
	listing  *cache.Listing
	base     *viewBase
	gone     map[int]bool // indexes of base entries taken out since
	extra    []api.File   // entries put in since, at the end
	extraBy  map[string]int
	shadowed []api.File // link files not shown: an entry of their name shows
	renamed  bool       // some name is not its file's own (uniqueNames)
}

// viewBase is the part of a view made from a listing at once: each entry
// and the name it shows under, and the index of each name.
type viewBase struct {
	files  []api.File
	names  []string
	byName map[string]int
}

// newDirView makes the view of listing l. In most folders every entry shows
// under its own name, once: one pass; where two entries would show under
// one name or a name is too long, uniqueNames gives them all.
func newDirView(l *cache.Listing, links bool) *dirView {
	files, shadowed := l.Files, []api.File(nil)
	if links {
		files, shadowed = linkFiles(l.Files)
	}
	b := &viewBase{files: files, names: make([]string, len(files)), byName: make(map[string]int, len(files))}
	v := &dirView{listing: l, base: b, shadowed: shadowed}
	for i, f := range files {
		name := safeName(shownName(f, links))
		if _, taken := b.byName[name]; taken || len(name) > maxName {
			v.uniqueNames(links)
			break
		}
		b.names[i] = name
		b.byName[name] = i
	}
	return v
}

// uniqueNames gives the view's entries their names where some would clash
// or are too long (uniqueNames in names.go).
func (v *dirView) uniqueNames(links bool) {
	b := v.base
	items := make([]named, len(b.files))
	for i, f := range b.files {
		items[i] = named{shownName(f, links), f.ID}
	}
	b.names, b.byName = uniqueNames(items), make(map[string]int, len(items))
	for i, name := range b.names {
		b.byName[name] = i
		v.renamed = v.renamed || name != safeName(items[i].name)
	}
}

// lookup is the entry that shows as name.
func (v *dirView) lookup(name string) (api.File, bool) {
	if i, ok := v.extraBy[name]; ok {
		return v.extra[i], true
	}
	if i, ok := v.base.byName[name]; ok && !v.gone[i] {
		return v.base.files[i], true
	}
	return api.File{}, false
}

// has reports whether an entry shows as name.
func (v *dirView) has(name string) bool {
	_, ok := v.lookup(name)
	return ok
}

// size is how many entries show.
func (v *dirView) size() int {
	return len(v.base.files) - len(v.gone) + len(v.extra)
}

// all yields each entry shown and its name, in the listing's order.
func (v *dirView) all() iter.Seq2[string, api.File] {
	return func(yield func(string, api.File) bool) {
		for i, f := range v.base.files {
			if !v.gone[i] && !yield(v.base.names[i], f) {
				return
			}
		}
		for _, f := range v.extra {
			if !yield(f.Name, f) {
				return
			}
		}
	}
}

// The entries a view keeps beside its base: at most a 64th of the base, or
// 256. Past that it is made anew: in a folder of 100,000 entries, one view
// made (12 ms) per 1,562 edits, each of which copies what it keeps beside.
const (
	viewAsideMin   = 256
	viewAsideShare = 64
)

// derived is the view of l when l is v's listing edited once by the mount
// (cache.Listing.Edited: files removed, replaced, put in), each file put in
// under its own name: v's base is kept, with the change beside it. In a
// folder of 100,000 entries a view made anew took 12 ms, once per file
// copied in, removed or replaced. Not ok where the change is another, or
// changes how names are given: a name already shown, too long, a link's
// (links.go), a view whose names are not all their files' own or with link
// files shadowed (a removal may show one); the view is then made anew.
func (v *dirView) derived(l *cache.Listing, links bool) (*dirView, bool) {
	if v == nil || v.renamed || len(v.shadowed) > 0 {
		return nil, false
	}
	removed, added, ok := l.Edited(v.listing)
	if !ok || len(v.gone)+len(v.extra)+len(removed)+len(added) > max(viewAsideMin, len(v.base.files)/viewAsideShare) {
		return nil, false
	}
	w := &dirView{listing: l, base: v.base, gone: v.gone, extra: v.extra, extraBy: v.extraBy}
	for _, f := range removed {
		name := safeName(shownName(f, links))
		if i, ok := w.extraBy[name]; ok && w.extra[i].ID == f.ID {
			w.extra = slices.Delete(slices.Clone(w.extra), i, i+1)
			w.extraBy = nil
			for j, x := range w.extra {
				w.extraBy = put(w.extraBy, x.Name, j)
			}
		} else if i, ok := w.base.byName[name]; ok && !w.gone[i] && w.base.files[i].ID == f.ID {
			w.gone = maps.Clone(w.gone)
			if w.gone == nil {
				w.gone = map[int]bool{}
			}
			w.gone[i] = true
		} else {
			return nil, false // not shown where it would be
		}
	}
	if len(added) > 0 {
		w.extra = append(slices.Clip(w.extra), added...)
		w.extraBy = maps.Clone(w.extraBy)
		for j, f := range added {
			if safeName(shownName(f, links)) != f.Name || w.has(f.Name) || len(f.Name) > maxName {
				return nil, false
			}
			w.extraBy = put(w.extraBy, f.Name, len(w.extra)-len(added)+j)
		}
	}
	return w, true
}

// put is m with k set to i, made where m is nil.
func put(m map[string]int, k string, i int) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k] = i
	return m
}

// Shown is the entry of listing l that the mount shows as name (a name
// told apart, a '/' shown as '／', a link under its link's name), for a
// path given by a user (.ctl/pins).
func (f *FS) Shown(l *cache.Listing, name string) (api.File, bool) {
	return newDirView(l, !f.opts.NoLinks).lookup(name)
}
