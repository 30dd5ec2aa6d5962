package cache

// Pins: what a user keeps on this desk ("keep available offline"). A pin is
// a file, or a folder with its whole subtree. What it covers is downloaded
// in the background, one file at a time (a reader's request never waits
// behind it), is never evicted (the content cache's budget counts it
// apart from the LRU: a pin that cannot fit is refused up front), and
// follows the service: while online the pinned tree is listed again every
// refresh (--dir-cache-time, or --pin-refresh when longer), new and changed
// files are fetched, those gone are no longer kept. Pins last across
// restarts (PinsFile, with a format version).
//
// Locks: Pins.mu guards the pins and their progress; never held across a
// request, a listing or the content cache's lock. The content cache and
// the listing cache ask what is kept through atomic sets (keptFiles,
// keptDirs), with no lock.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/safefile"
	"github.com/orgfs/orgfs/internal/units"
	"github.com/orgfs/orgfs/place"
)

// PinsFile is the pins, in the cache dir.
const PinsFile = "pins.json"

const pinsFormat = 1

// Pin is what a user pinned: a file (ID, in folder Parent) or a folder
// (Dir: ID is the folder's), at Path in the mount.
type Pin struct {
	Path   string       `json:"path"`
	Parent place.DirKey `json:"parent"`
	ID     int64        `json:"id"`
	Dir    bool         `json:"dir,omitempty"`
	Since  time.Time    `json:"since"`
	// Above are the folders from the area's root down to Parent: their
	// listings are kept too, so that the path lists offline.
	Above []place.DirKey `json:"above,omitempty"`
	// Size is the bytes it covered at its last pass (what the budget
	// counts for it until its next).
	Size int64 `json:"size"`
}

// key is the folder a folder pin covers.
func (p Pin) key() place.DirKey { return place.DirKey{Area: p.Parent.Area, ID: p.ID} }

// PinState is a pin and how far it is: the files it covers (as last
// listed), those whole in the cache, their bytes, what could not be
// fetched and why.
type PinState struct {
	Pin
	Files       int          `json:"files"`
	FilesDone   int          `json:"files_done"`
	Bytes       int64        `json:"bytes"`
	BytesDone   int64        `json:"bytes_done"`
	FilesFailed int          `json:"files_failed,omitempty"`
	Failed      []PinFailure `json:"failed,omitempty"`  // the first pinFailuresKept of them
	Offline     bool         `json:"offline,omitempty"` // the last pass met the service unreachable
	Checked     time.Time    `json:"checked,omitzero"`  // the last pass's end

	// What it covers, as last listed: kept even while a pass cannot list
	// it again (offline).
	files map[int64]bool
	dirs  []place.DirKey
}

// PinFailure is a file of a pin that could not be fetched.
type PinFailure struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// pinFailuresKept is how many failures a pin's state names.
const pinFailuresKept = 20

// Summary is the state in a few words: "complete", "3 of 7 files, 12 MiB
// left", "offline: 2 files missing".
func (p PinState) Summary() string {
	left := p.Files - p.FilesDone
	switch {
	case p.Checked.IsZero() && p.Files == 0:
		return "listing"
	case left == 0 && len(p.Failed) == 0:
		return "complete"
	case p.Offline:
		return fmt.Sprintf("offline: %d files missing", left)
	case len(p.Failed) > 0 && !p.Checked.IsZero():
		return fmt.Sprintf("%d of %d files, %d failed (%s)", p.FilesDone, p.Files, max(p.FilesFailed, len(p.Failed)), p.Failed[0].Error)
	}
	return fmt.Sprintf("%d of %d files, %s left", p.FilesDone, p.Files, units.FormatSize(p.Bytes-p.BytesDone))
}

// Pins keeps the pins of a mount (see the file's doc).
type Pins struct {
	// dependencies
	s   *Store
	log logrus.FieldLogger
	// constants
	path    string
	refresh time.Duration

	keptFiles atomic.Pointer[map[int64]bool]        // the files the pins cover, as last listed
	keptDirs  atomic.Pointer[map[place.DirKey]bool] // the folders they cover

	mu     sync.Mutex
	pins   []*PinState   // guarded by mu; by path
	wake   chan struct{} // a pass is asked for (a pin added, the service back)
	done   chan struct{}
	closed sync.WaitGroup
	cancel context.CancelFunc
}

// openPins reads the pins a run before kept at path (a file unreadable or
// of another format is set aside, with a warning) and starts keeping them.
func openPins(s *Store, path string, refresh time.Duration, log logrus.FieldLogger) *Pins {
	p := &Pins{s: s, log: log, path: path, refresh: max(refresh, time.Second), wake: make(chan struct{}, 1), done: make(chan struct{})}
	p.keptFiles.Store(&map[int64]bool{})
	p.keptDirs.Store(&map[place.DirKey]bool{})
	if err := p.load(); err != nil {
		os.Rename(path, path+".bad")
		log.WithError(err).WithField("kept_as", path+".bad").Warn("cache: the pins kept are unreadable and set aside; pin again what you need")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.closed.Add(1)
	go p.run(ctx)
	return p
}

type pinsOnDisk struct {
	Format int   `json:"format"`
	Pins   []Pin `json:"pins"`
}

func (p *Pins) load() error {
	b, err := os.ReadFile(p.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var d pinsOnDisk
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	if d.Format != pinsFormat {
		return fmt.Errorf("format %d, this orgfs reads %d", d.Format, pinsFormat)
	}
	for _, pin := range d.Pins {
		p.pins = append(p.pins, &PinState{Pin: pin, Bytes: pin.Size, dirs: pin.Above})
	}
	p.publishKeptLocked()
	return nil
}

// saveLocked writes the pins anew, synced, then renamed into place.
func (p *Pins) saveLocked() error {
	d := pinsOnDisk{Format: pinsFormat, Pins: []Pin{}}
	for _, ps := range p.pins {
		pin := ps.Pin
		pin.Size = ps.Bytes
		d.Pins = append(d.Pins, pin)
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.Write(p.path, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return fmt.Errorf("cache: writing the pins: %w", err)
	}
	return nil
}

// ErrPinTooLarge is a pin refused: what it covers cannot fit in the content
// cache's budget beside what is pinned already.
var ErrPinTooLarge = errors.New("the pin does not fit in the cache")

// Add pins f, of folder parent (a folder: its whole subtree), at path in
// the mount. It lists what the pin covers first: a pin that cannot fit
// under the cache's budget, beside the others, is refused with the figures
// (ErrPinTooLarge). A path pinned already is pinned anew.
func (p *Pins) Add(ctx context.Context, above []place.DirKey, parent place.DirKey, f api.File, path string) (PinState, error) {
	if f.ID < 0 || parent.ID < 0 {
		return PinState{}, fmt.Errorf("%s is not on the service yet (made offline): pin it once it is", path)
	}
	pin := Pin{Path: path, Parent: parent, ID: f.ID, Dir: f.IsDir(), Since: time.Now(), Above: above}
	files, dirs, _, err := p.walk(ctx, pin, f)
	if err != nil {
		return PinState{}, err
	}
	var need int64
	for _, pf := range files {
		need += pf.f.Size
	}
	budget := p.s.Content.Stats().MaxSize // before Pins.mu: a leaf
	p.mu.Lock()
	defer p.mu.Unlock()
	others := p.pinnedBytesLocked(path)
	if budget > 0 && others+need > budget {
		return PinState{}, fmt.Errorf("%w: needs %s, %s free under --cache-max-size %s", ErrPinTooLarge,
			units.FormatSize(need), units.FormatSize(max(0, budget-others)), units.FormatSize(budget))
	}
	st := &PinState{Pin: pin, Files: len(files), Bytes: need}
	st.cover(files, dirs)
	p.pins = slices.DeleteFunc(p.pins, func(x *PinState) bool { return x.Path == path })
	p.pins = append(p.pins, st)
	slices.SortFunc(p.pins, func(a, b *PinState) int { return strings.Compare(a.Path, b.Path) })
	if err := p.saveLocked(); err != nil {
		p.pins = slices.DeleteFunc(p.pins, func(x *PinState) bool { return x == st })
		return PinState{}, err
	}
	p.publishKeptLocked()
	p.kick()
	return st.copy(), nil
}

// Remove unpins path (and every pin below it, with under): what they kept
// is evictable again. It reports how many pins went.
func (p *Pins) Remove(path string, under bool) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.pins
	p.pins = slices.DeleteFunc(slices.Clone(p.pins), func(x *PinState) bool {
		return x.Path == path || under && strings.HasPrefix(x.Path, path+"/")
	})
	n := len(was) - len(p.pins)
	if n == 0 {
		return 0, nil
	}
	if err := p.saveLocked(); err != nil {
		p.pins = was
		return 0, err
	}
	p.publishKeptLocked() // what they kept is evictable again
	return n, nil
}

// List is every pin and its state, by path.
func (p *Pins) List() []PinState {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PinState, len(p.pins))
	for i, ps := range p.pins {
		out[i] = ps.copy()
	}
	return out
}

// copy is ps for a reader: without what it covers.
func (ps *PinState) copy() PinState {
	out := *ps
	out.Failed, out.files, out.dirs = slices.Clone(ps.Failed), nil, nil
	return out
}

// cover makes files and dirs (with the folders above the pin) what ps
// covers.
func (ps *PinState) cover(files []pinFile, dirs []place.DirKey) {
	ps.files = make(map[int64]bool, len(files))
	for _, pf := range files {
		ps.files[pf.f.ID] = true
	}
	ps.dirs = append(append(slices.Clone(ps.Above), ps.Parent), dirs...)
}

// Kept reports whether a pin covers file id (the content cache never
// evicts it).
func (p *Pins) Kept(id int64) bool { return (*p.keptFiles.Load())[id] }

// KeptDir reports whether a pin covers folder key (its listing is never
// pruned).
func (p *Pins) KeptDir(key place.DirKey) bool { return (*p.keptDirs.Load())[key] }

// pinnedBytesLocked is the size of what the pins cover, but the pin at
// path.
func (p *Pins) pinnedBytesLocked(path string) int64 {
	var n int64
	for _, ps := range p.pins {
		if ps.Path != path {
			n += ps.Bytes
		}
	}
	return n
}

// publishKeptLocked makes what every pin covers the kept sets: the content
// cache and the listing cache read them with no lock.
func (p *Pins) publishKeptLocked() {
	files, dirs := map[int64]bool{}, map[place.DirKey]bool{}
	for _, ps := range p.pins {
		maps.Copy(files, ps.files)
		for _, k := range ps.dirs {
			dirs[k] = true
		}
	}
	p.keptFiles.Store(&files)
	p.keptDirs.Store(&dirs)
}

// kick asks for a pass now.
func (p *Pins) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Close stops the pins' work (what is kept stays on disk).
func (p *Pins) Close() {
	p.cancel()
	close(p.done)
	p.closed.Wait()
}

// pinFile is a file a pin covers, with its folder and its path.
type pinFile struct {
	f    api.File
	dir  place.DirKey
	path string
}

// run makes a pass over every pin now and then (pass), until Close: at
// once, when asked (kick: a pin added, the service back), and every
// refresh.
func (p *Pins) run(ctx context.Context) {
	defer p.closed.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
		case <-t.C:
		}
		p.pass(ctx)
		t.Reset(p.refresh)
	}
}

// pass lists what every pin covers and fetches what the cache lacks. Each
// pin's walk makes what it covers the kept sets' part of it at once, before
// its downloads; a walk that fails (offline) keeps what it covered.
func (p *Pins) pass(ctx context.Context) {
	p.mu.Lock()
	pins := slices.Clone(p.pins)
	p.mu.Unlock()
	for _, ps := range pins {
		if ctx.Err() != nil {
			return
		}
		files, dirs, offline, err := p.walk(ctx, ps.Pin, api.File{ID: ps.ID, Name: filepath.Base(ps.Path), ObjectType: objectType(ps.Dir)})
		st := PinState{Pin: ps.Pin, Offline: offline}
		if err != nil {
			st.Failed, st.FilesFailed = []PinFailure{{Path: ps.Path, Error: err.Error()}}, 0
			st.Offline = offline || api.IsOffline(err)
		}
		for _, pf := range files {
			st.Files++
			st.Bytes += pf.f.Size
		}
		if err == nil {
			st.cover(files, dirs)
			p.publish(ps, st, true)
		} else {
			p.publish(ps, st, false)
		}
		for _, pf := range files {
			if ctx.Err() != nil {
				return
			}
			ferr := p.fetch(ctx, pf.f)
			switch {
			case ferr == nil:
				st.FilesDone++
				st.BytesDone += pf.f.Size
			case api.IsOffline(ferr):
				st.Offline = true
			default:
				st.FilesFailed++
				if len(st.Failed) < pinFailuresKept {
					st.Failed = append(st.Failed, PinFailure{Path: pf.path, Error: ferr.Error()})
				}
			}
			p.publish(ps, st, false)
		}
		st.Checked = time.Now()
		p.publish(ps, st, false)
	}
}

func objectType(dir bool) string {
	if dir {
		return api.ObjectDirectory
	}
	return api.ObjectFile
}

// publish makes st the state of pin ps, unless it was unpinned or pinned
// anew meanwhile; covered: st says what it covers now (else it keeps what
// it covered), and the size it had changed, the pins are written.
func (p *Pins) publish(ps *PinState, st PinState, covered bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.pins, ps) || ps.Since != st.Since {
		return
	}
	st.Failed = slices.Clone(st.Failed)
	if !covered {
		st.files, st.dirs = ps.files, ps.dirs
	}
	if st.Offline && st.Files == 0 && ps.Files > 0 {
		// Not listed again: as it was, with nothing more fetched.
		st.Files, st.Bytes = ps.Files, ps.Bytes
	}
	resized := st.Bytes != ps.Bytes
	*ps = st
	if covered {
		p.publishKeptLocked()
	}
	if resized {
		if err := p.saveLocked(); err != nil {
			p.log.WithError(err).Warn("cache: the pins could not be written")
		}
	}
}

// walk lists what pin covers, f being what it pins: the files (a folder's
// whole subtree) and the folders. Offline, a folder listed before is taken
// as it was last seen; one never listed is skipped (offline reported).
func (p *Pins) walk(ctx context.Context, pin Pin, f api.File) (files []pinFile, dirs []place.DirKey, offline bool, err error) {
	if !pin.Dir {
		l, err := p.s.Dirs.List(ctx, pin.Parent)
		if err != nil {
			return nil, nil, api.IsOffline(err), err
		}
		i := slices.IndexFunc(l.Files, func(x api.File) bool { return x.ID == pin.ID })
		if i < 0 {
			return nil, nil, false, fmt.Errorf("%s is no longer on the service", pin.Path)
		}
		return []pinFile{{f: l.Files[i], dir: pin.Parent, path: pin.Path}}, nil, false, nil
	}
	type todo struct {
		key  place.DirKey
		path string
	}
	queue := []todo{{pin.key(), pin.Path}}
	for len(queue) > 0 {
		if ctx.Err() != nil {
			return files, dirs, offline, ctx.Err()
		}
		d := queue[0]
		queue = queue[1:]
		l, err := p.s.Dirs.List(ctx, d.key)
		if err != nil {
			if api.IsOffline(err) && d.key != pin.key() {
				offline = true
				continue
			}
			return files, dirs, offline || api.IsOffline(err), err
		}
		dirs = append(dirs, d.key)
		for _, x := range l.Files {
			if x.IsDir() {
				queue = append(queue, todo{place.DirKey{Area: d.key.Area, ID: x.ID}, d.path + "/" + x.Name})
			} else {
				files = append(files, pinFile{f: x, dir: d.key, path: d.path + "/" + x.Name})
			}
		}
	}
	return files, dirs, offline, nil
}

// pinChunk is how much of a file a pin's fetch asks the cache for at once.
const pinChunk = 8 << 20

// fetch makes f's content whole in the cache (nothing when it is).
func (p *Pins) fetch(ctx context.Context, f api.File) error {
	m := MetaOf(f)
	if f.Size == 0 || p.s.Content.Complete(m) {
		return nil
	}
	r, err := p.s.Fetcher.Open(m)
	if err != nil {
		return err
	}
	defer r.Close()
	for off := int64(0); off < f.Size; {
		n, err := r.Ready(ctx, off, min(pinChunk, f.Size-off))
		off += n
		if err == io.EOF && off >= f.Size {
			break
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no content came at offset %d", off)
		}
	}
	if !p.s.Content.Complete(m) {
		return errors.New("the cache did not keep it (its disk is full?)")
	}
	return nil
}
