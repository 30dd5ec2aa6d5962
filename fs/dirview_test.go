package fs

// Tests of a folder's view (dirview.go) without a mount: a view that
// follows the mount's edits of its listing shows what the view made anew
// from the edited listing shows.

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
)

// shown is what a view shows: each name and its entry, in order.
func shown(v *dirView) (names []string, files []api.File) {
	for name, f := range v.all() {
		names = append(names, name)
		files = append(files, f)
	}
	return names, files
}

// sameView fails t unless got shows what want shows, in the same order, and
// looks each name up as want does (and the names gone as gone).
func sameView(t *testing.T, got, want *dirView, gone []string) {
	t.Helper()
	gn, gf := shown(got)
	wn, wf := shown(want)
	if !slices.Equal(gn, wn) || !slices.Equal(gf, wf) || got.size() != want.size() || got.size() != len(wn) {
		t.Fatalf("derived view shows %q (size %d); made anew: %q (size %d)", gn, got.size(), wn, want.size())
	}
	for _, name := range append(slices.Clone(wn), gone...) {
		g, gok := got.lookup(name)
		w, wok := want.lookup(name)
		if g != w || gok != wok {
			t.Fatalf("lookup of %q: derived %+v %v, made anew %+v %v", name, g, gok, w, wok)
		}
	}
}

// fileOf is a record of name; a name ending in "/" is a folder's.
func fileOf(id int64, n string) api.File {
	f := api.File{ID: id, Name: strings.TrimSuffix(n, "/"), ObjectType: api.ObjectFile}
	if strings.HasSuffix(n, "/") {
		f.ObjectType = api.ObjectDirectory
	}
	return f
}

// A view follows files put in its listing by the mount (its uploads: of a
// new name, appended in place or in a copy; of a name listed, replaced) and
// files taken out (deleted, renamed away), and is then the view made anew
// from the edited listing; or is not made (ok false) where the change
// changes how names are given: a name shown already for another service
// name (a link's, a name made safe), one too long, a link file, a view with
// names not their files' own or with a link file shadowed.
func TestViewDerivedIsTheViewMadeAnew(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := []struct {
		name        string
		base, add   []string
		remove      []int // indexes in base
		links       bool
		derives     bool
		roomToGrow  bool // the listing's array has room: appended in place
		replaceLast bool // the last of add replaces the base entry of its name
	}{
		{"new names in place", []string{"a", "b", "dir.rclonelink/"}, []string{"c", "d/"}, nil, true, true, true, false},
		{"new names in a copy", []string{"a", "b"}, []string{"c", "d/"}, nil, true, true, false, false},
		{"links off", []string{"a", "x.rclonelink"}, []string{"y.rclonelink", "x"}, nil, false, true, true, false},
		{"removed", []string{"a", "b", "c", "l.rclonelink"}, nil, []int{1, 3}, true, true, false, false},
		{"removed and put", []string{"a", "b", "c"}, []string{"b"}, []int{0}, true, true, false, true},
		{"replaced", []string{"a", "b", "c"}, []string{"a"}, nil, true, true, false, true},
		{"a name listed, put again", []string{"a", "b"}, []string{"c", "a"}, nil, true, true, true, true},
		{"a slash", []string{"a/b"}, []string{"a／b"}, nil, false, false, true, false},
		{"too long", []string{"a"}, []string{long}, nil, false, false, true, false},
		{"a link file", []string{"a"}, []string{"l.rclonelink"}, nil, true, false, true, false},
		{"a link's name", []string{"l.rclonelink"}, []string{"l"}, nil, true, false, true, false},
		{"renamed before", []string{"a", "a"}, []string{"a"}, nil, false, false, true, false},
		{"renamed before, removed", []string{"a", "a", "b"}, nil, []int{2}, false, false, false, false},
		{"shadowed before", []string{"l", "l.rclonelink"}, []string{"b"}, nil, true, false, true, false},
		{"shadowed before, removed", []string{"l", "l.rclonelink"}, nil, []int{0}, true, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := make([]api.File, 0, len(c.base)+len(c.add))
			if !c.roomToGrow {
				files = files[:0:len(c.base)]
			}
			for i, n := range c.base {
				files = append(files, fileOf(int64(10+i), n))
			}
			// One pass or uniqueNames: the same names.
			v := newDirView(&cache.Listing{Files: files}, c.links)
			all := &dirView{base: &viewBase{files: v.base.files}}
			all.uniqueNames(c.links)
			if !slices.Equal(v.base.names, all.base.names) || !maps.Equal(v.base.byName, all.base.byName) || v.renamed != all.renamed {
				t.Fatalf("a view's names %q, uniqueNames' %q", v.base.names, all.base.names)
			}

			d := cache.NewDirs(nil, time.Hour, nil)
			key := place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 5}
			d.Seed(key, files)
			l, _ := d.Cached(key)
			derives := true
			step := func() {
				next, _ := d.Cached(key)
				w, ok := newDirView(l, c.links).derived(next, c.links)
				derives = derives && ok
				if ok {
					sameView(t, w, newDirView(next, c.links), c.base)
					if w.listing != next {
						t.Fatal("derived view of another listing")
					}
				}
				l = next
			}
			for _, i := range c.remove {
				d.Remove(key, files[i].ID)
				step()
			}
			for i, n := range c.add {
				f := fileOf(int64(100+i), n)
				if c.replaceLast && i == len(c.add)-1 {
					f.Size = 7 // same name, another version (an upload)
				}
				d.Put(key, f)
				step()
			}
			if derives != c.derives {
				t.Fatalf("derived: %v, want %v", derives, c.derives)
			}
		})
	}
	// A listing that is not the view's edited once: made anew.
	d := cache.NewDirs(nil, time.Hour, nil)
	key := place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 5}
	d.Seed(key, []api.File{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}, {ID: 3, Name: "c"}})
	l0, _ := d.Cached(key)
	d.Remove(key, 1)
	d.Remove(key, 2)
	l2, _ := d.Cached(key)
	other := &cache.Listing{Files: []api.File{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}}
	for _, l := range []*cache.Listing{l2, other} {
		if _, ok := newDirView(l0, true).derived(l, true); ok {
			t.Fatalf("a view derived for a listing two edits apart or fetched: %+v", l.Files)
		}
	}
}

// A view follows a long run of the mount's edits of a folder (uploads of new
// names and of names listed, deletes, renames away, deletes of files not
// listed, uploads of files renamed away) as the daemon does (dirNode.setView: derived, else made anew), and
// shows at each step what the view made anew shows; what it keeps beside its
// base stays small (it is made anew past a 64th of its base, or 256).
func TestViewFollowsEditsAsMadeAnew(t *testing.T) {
	for _, links := range []bool{true, false} {
		d := cache.NewDirs(nil, time.Hour, nil)
		key := place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 5}
		var files []api.File
		for i := range 300 {
			files = append(files, fileOf(int64(1+i), "f"+strconv.Itoa(i)))
		}
		files = append(files, fileOf(301, "x.rclonelink"), fileOf(302, "sub/"))
		d.Seed(key, files)
		l, _ := d.Cached(key)
		v := newDirView(l, links)
		rng := rand.New(rand.NewPCG(7, 9))
		nextID, derived, anew, gone, hidden := int64(1000), 0, 0, []string(nil), []api.File(nil)
		for range 2000 {
			cur, _ := d.Cached(key)
			pick := cur.Files[rng.IntN(len(cur.Files))]
			switch r := rng.IntN(10); {
			case r < 2 && !pick.IsDir():
				d.Remove(key, pick.ID)
				gone = append(gone, pick.Name)
			case r < 5:
				d.Put(key, fileOf(nextID, "new"+strconv.FormatInt(nextID, 10))) // a new name
			case r < 7 && !pick.IsDir():
				d.Put(key, fileOf(nextID, pick.Name)) // a replacement: another version of the name
			case r < 8 && !pick.IsDir():
				pick.Size++
				d.Put(key, pick) // the same file, written to
			case r < 9:
				d.Remove(key, 99999) // not listed: nothing taken out
			case len(hidden) > 0 && rng.IntN(2) == 0:
				f := hidden[len(hidden)-1]
				f.Size++
				d.Put(key, f) // its upload ending as it was renamed away: stays out
			default:
				d.Hide(key, pick.ID) // renamed away
				gone, hidden = append(gone, pick.Name), append(hidden, pick)
			}
			nextID++
			l, _ = d.Cached(key)
			w, ok := v.derived(l, links)
			if ok {
				derived++
			} else {
				w, anew = newDirView(l, links), anew+1
			}
			if len(w.gone)+len(w.extra) > max(viewAsideMin, len(w.base.files)/viewAsideShare) {
				t.Fatalf("a view keeps %d gone and %d put in beside a base of %d", len(w.gone), len(w.extra), len(w.base.files))
			}
			sameView(t, w, newDirView(l, links), gone)
			v = w
		}
		// Made anew only when what it keeps beside is full: a few times.
		if derived < 1900 || anew == 0 {
			t.Fatalf("links %v: %d views derived, %d made anew, of 2000 edits", links, derived, anew)
		}
	}
}

// BenchmarkDirView100k makes the view of a folder of 100,000 entries, each
// under its own name (the daemon made one at every change of a listing).
func BenchmarkDirView100k(b *testing.B) {
	files := make([]api.File, 100000)
	for i := range files {
		files[i] = api.File{ID: int64(1000 + i), Name: "f" + strconv.Itoa(1000000+i) + ".dat", ObjectType: api.ObjectFile}
	}
	l := &cache.Listing{Files: files}
	b.ReportAllocs()
	for range b.N {
		newDirView(l, true)
	}
}

// BenchmarkDirViewRemove100k is a file removed from a folder of 100,000
// entries, and its view derived (the view made anew took 12 ms).
func BenchmarkDirViewRemove100k(b *testing.B) {
	files := make([]api.File, 100000)
	for i := range files {
		files[i] = api.File{ID: int64(1000 + i), Name: "f" + strconv.Itoa(1000000+i) + ".dat", ObjectType: api.ObjectFile}
	}
	d := cache.NewDirs(nil, time.Hour, nil)
	key := place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 5}
	d.Seed(key, files)
	l, _ := d.Cached(key)
	v := newDirView(l, true)
	b.ReportAllocs()
	for i := range b.N {
		d.Remove(key, files[i%len(files)].ID)
		l, _ = d.Cached(key)
		w, ok := v.derived(l, true)
		if !ok {
			w = newDirView(l, true)
		}
		v = w
	}
}
