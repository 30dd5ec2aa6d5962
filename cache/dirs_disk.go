package cache

// The listings kept on disk: what the listing cache holds is written to the
// cache dir (ListingsFile) in the background, now and then and at the end,
// and read back at the start, so that a restart after a clean unmount
// answers a folder listed before at once (the copy is stale: it is listed
// again in the background at its first use) and a start without the
// service mounts from it.
// Bounded (savedEntriesMax entries, the folders listed last first), with a
// format version; a file unreadable or of another format is set aside with
// a warning.
//
// Locks: Dirs.mu, held only to take or put the listings (a snapshot: a
// listing is never changed once made); the file is written and read without
// it.

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/safefile"
	"github.com/orgfs/orgfs/place"
)

// ListingsFile is the listings kept on disk, in the cache dir.
const ListingsFile = "listings.json.gz"

// cleanSuffix names the mark, beside ListingsFile, that its copy was
// written at a clean unmount, with every change the mount made: made after
// that copy is in place, taken away by the start that reads it (before the
// run changes anything: a crash of that run leaves a copy that misses its
// last changes, and no mark).
const cleanSuffix = ".clean"

// listingsFormat is the version of ListingsFile's layout. 2: a header
// (savedListings), then its Count listings, one JSON value each (written
// and read one at a time: a tree's listings are not held twice); 1: the
// listings inside the header, still read.
const listingsFormat = 2

// savedEntriesMax bounds the entries ListingsFile keeps (about 80 bytes of
// disk each, compressed): the folders listed last come first.
const savedEntriesMax = 500_000

// savedListings is ListingsFile's content.
type savedListings struct {
	Format int `json:"format"`
	// Account names the service and the credentials whose listings these
	// are (a digest: no secret is written): another's are not read.
	Account      string         `json:"account"`
	Saved        time.Time      `json:"saved"`
	Count        int            `json:"count"`              // listings after the header
	Listings     []savedListing `json:"listings,omitempty"` // format 1's
	Seats        []api.Seat     `json:"seats,omitempty"`
	SeatsFetched time.Time      `json:"seats_fetched,omitzero"`
}

// heldListing is a listing the cache holds, as Save takes it (its entries
// shared, converted one listing at a time as they are written).
type heldListing struct {
	key     place.DirKey
	fetched time.Time
	current *api.File
	files   []api.File
}

type savedListing struct {
	Key     place.DirKey `json:"key"`
	Fetched time.Time    `json:"fetched"`
	Current *api.File    `json:"current,omitempty"`
	Files   []savedFile  `json:"files"`
}

// savedFile is an entry of a listing kept: what a listing keeps of a file
// (api.File without Details), in plain fields the json package reads and
// writes in one pass (api.File's own methods took 12 µs an entry: a
// 200,000-file tree's listings 2.5 s to read at the start).
type savedFile struct {
	ID               int64     `json:"id"`
	Name             string    `json:"name"`
	Size             int64     `json:"size,omitempty"`
	ObjectType       string    `json:"object_type"`
	ParentID         int64     `json:"parent_id"`
	LastModified     time.Time `json:"last_modified_date"`
	FileStorageSize  *int64    `json:"file_storage_size,omitempty"`
	FileStorageUsage *int64    `json:"file_storage_usage,omitempty"`
	// File.Written, as numbers (api.Written.Parts).
	WSec  int64  `json:"ws,omitempty"`
	WNsec int32  `json:"wn,omitempty"`
	WMode uint16 `json:"wm,omitempty"`
	WHas  uint8  `json:"wh,omitempty"`
}

func savedFileOf(f api.File) savedFile {
	s := savedFile{ID: f.ID, Name: f.Name, Size: f.Size, ObjectType: f.ObjectType, ParentID: f.ParentID, LastModified: f.LastModified,
		FileStorageSize: f.FileStorageSize, FileStorageUsage: f.FileStorageUsage}
	s.WSec, s.WNsec, s.WMode, s.WHas = f.Written.Parts()
	return s
}

func (s savedFile) file() api.File {
	f := api.File{ID: s.ID, Name: s.Name, Size: s.Size, ObjectType: s.ObjectType, ParentID: s.ParentID, LastModified: s.LastModified,
		FileStorageSize: s.FileStorageSize, FileStorageUsage: s.FileStorageUsage, Written: api.WrittenFrom(s.WSec, s.WNsec, s.WMode, s.WHas)}
	switch s.ObjectType { // one string for all, as decoded listings share it
	case api.ObjectFile:
		f.ObjectType = api.ObjectFile
	case api.ObjectDirectory:
		f.ObjectType = api.ObjectDirectory
	case api.ObjectRoot:
		f.ObjectType = api.ObjectRoot
	}
	return f
}

// snapshot is what Save writes: the header and the listings the cache
// holds (none of a folder made offline), those fetched last first, within
// savedEntriesMax.
func (d *Dirs) snapshot(account string) (savedListings, []heldListing) {
	d.mu.Lock()
	head := savedListings{Format: listingsFormat, Account: account, Saved: d.now()}
	var held []heldListing
	for key, l := range d.dirs {
		if key.ID >= 0 {
			held = append(held, heldListing{key: key, fetched: l.Fetched, current: l.Current, files: l.Files})
		}
	}
	if d.seats != nil {
		head.Seats, head.SeatsFetched = d.seats.seats, d.seats.fetched
	}
	d.mu.Unlock()
	// The areas' roots first (a start offline lists from them), then the
	// folders listed last, as many as fit.
	slices.SortFunc(held, func(a, b heldListing) int {
		if (a.key.ID == 0) != (b.key.ID == 0) {
			if a.key.ID == 0 {
				return -1
			}
			return 1
		}
		return b.fetched.Compare(a.fetched)
	})
	n, kept := 0, held[:0]
	for _, l := range held {
		if n+len(l.files) <= savedEntriesMax {
			n += len(l.files)
			kept = append(kept, l)
		}
	}
	head.Count = len(kept)
	return head, kept
}

// write writes l to w as one savedListing, its files encoded one at a time
// as they are converted (a folder of 100,000 entries copied whole, then
// encoded whole, raised the daemon's peak by tens of MiB while the folder
// was being listed: bench row 9), without the folders made offline (the
// journal shows them again at the start, or a crash left them to nothing).
// enc encodes into w.
func (l heldListing) write(w io.Writer, enc *json.Encoder) error {
	head, err := json.Marshal(savedListing{Key: l.key, Fetched: l.fetched, Current: l.current, Files: []savedFile{}})
	if err != nil {
		return err
	}
	// head ends with its empty list of files and its own end: "[]}".
	if _, err := w.Write(head[:len(head)-2]); err != nil {
		return err
	}
	first := true
	for _, f := range l.files {
		if f.ID < 0 {
			continue
		}
		if !first {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		first = false
		if err := enc.Encode(savedFileOf(f)); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "]}\n")
	return err
}

// SaveListings writes the listings the cache holds to path (anew, then
// renamed into place), for the next start; account names whose they are;
// clean: the last, at the unmount. It returns how many folders it wrote.
func (d *Dirs) SaveListings(path, account string, clean bool) (int, error) {
	head, held := d.snapshot(account)
	os.Remove(path + cleanSuffix)
	err := safefile.Write(path, func(w io.Writer) error {
		z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // written at every unmount: speed first
		enc := json.NewEncoder(z)
		if err := enc.Encode(head); err != nil {
			return err
		}
		for _, l := range held {
			if err := l.write(z, enc); err != nil {
				return err
			}
		}
		return z.Close()
	})
	if err == nil && clean {
		err = safefile.Write(path+cleanSuffix, func(io.Writer) error { return nil })
	}
	if err != nil {
		return 0, fmt.Errorf("cache: saving the listings: %w", err)
	}
	return head.Count, nil
}

// errOtherAccount says that the listings on disk are another account's.
var errOtherAccount = errors.New("the listings kept are of another service or credentials")

// LoadListings reads the listings a run before kept at path, when they are
// account's. Those written at a clean unmount hold every change the mount
// made: each is the answer at once, and the folder is listed again behind
// at its first use (a restart answers ls of a folder listed before without
// waiting for the service). Those kept before a crash may miss its last
// changes: they are read only for a start offline, and answer only while
// the service cannot be reached (online, they showed the mount's own last
// changes undone for a moment: the model test found it). Files hidden now
// stay hidden. None there is no error; a file unreadable, of another format
// or of another account is set aside (PATH.bad) and reported. It returns
// how many folders it read.
func (d *Dirs) LoadListings(path, account string, offline bool) (int, error) {
	// Read as a listing is fetched: what the mount changes meanwhile (an
	// upload of a run before landing) is made on each listing read, and a
	// folder listed meanwhile keeps its listing.
	d.mu.Lock()
	since, gen := d.beginFetchLocked(), d.gen
	d.mu.Unlock()
	loading := make(chan struct{})
	d.loading.Store(&loading)
	defer func() {
		d.mu.Lock()
		d.endFetchLocked(since)
		d.mu.Unlock()
		d.loading.Store(nil)
		close(loading)
	}()
	_, cerr := os.Stat(path + cleanSuffix)
	clean := cerr == nil
	if clean {
		if err := os.Remove(path + cleanSuffix); err != nil {
			clean = false
		}
	}
	s, ls, err := readListings(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err == nil && !clean && !offline {
		// Kept before a crash, and the service answers: they would answer
		// only in an outage, older than what it lists; not read.
		return 0, nil
	}
	if err == nil && s.Account != account {
		err = errOtherAccount
	}
	if err != nil {
		os.Rename(path, path+".bad")
		return 0, fmt.Errorf("cache: the listings kept in %s are set aside (%s.bad): %w", path, path, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen != gen {
		return 0, nil // all dropped meanwhile (DropAll): listed anew
	}
	for _, l := range ls {
		if _, ok := d.dirs[l.key]; ok || l.key.ID < 0 {
			continue
		}
		files, dropped := l.files, false
		for _, e := range d.editLog[l.key] {
			switch {
			case e.seq <= since:
			case e.f == nil:
				dropped = true // Drop, Forget: listed anew
			default:
				files = e.f(files)
			}
		}
		if dropped {
			continue
		}
		kept := newListing(d.withMadeLocked(l.key, d.visibleLocked(files)), l.current, l.fetched, d.editSeq)
		kept.kept = true
		kept.behind = clean
		d.dirs[l.key] = kept
	}
	if d.seats == nil && s.Seats != nil {
		d.seats = &seatList{seats: s.Seats, fetched: s.SeatsFetched}
	}
	return len(ls), nil
}

// readListings decodes ListingsFile at path: its header, and its listings
// (each converted as it is read).
func readListings(path string) (savedListings, []heldListing, error) {
	f, dec, head, err := openListings(path)
	if err != nil {
		return head, nil, err
	}
	defer f.Close()
	held := make([]heldListing, 0, head.Count+len(head.Listings))
	add := func(l savedListing) {
		files := make([]api.File, len(l.Files))
		for i, f := range l.Files {
			files[i] = f.file()
		}
		held = append(held, heldListing{key: l.Key, fetched: l.Fetched, current: l.Current, files: files})
	}
	for _, l := range head.Listings { // format 1
		add(l)
	}
	for range head.Count {
		var l savedListing
		if err := dec.Decode(&l); err != nil {
			return head, nil, err
		}
		add(l)
	}
	return head, held, nil
}

// openListings opens ListingsFile at path and reads its header; the
// listings follow in dec (format 2).
func openListings(path string) (*os.File, *json.Decoder, savedListings, error) {
	var head savedListings
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, head, err
	}
	z, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err == nil {
		dec := json.NewDecoder(z)
		if err = dec.Decode(&head); err == nil {
			switch {
			case head.Format != 1 && head.Format != listingsFormat:
				err = fmt.Errorf("format %d, this orgfs reads 1 and %d", head.Format, listingsFormat)
			case head.Format == 1:
				head.Count = 0
			}
		}
		if err == nil {
			return f, dec, head, nil
		}
	}
	f.Close()
	return nil, nil, head, err
}

// HasListings reports whether path holds listings kept for account: a
// start without the service mounts from them.
func HasListings(path, account string) bool {
	f, _, head, err := openListings(path)
	if err != nil {
		return false
	}
	f.Close()
	return head.Account == account && head.Count+len(head.Listings) > 0
}

// listingsSaveEvery is how often the listings are written while they
// change (and at the end, and when the service becomes unreachable): at
// most every second, and at most a 20th of the time (a large tree's
// listings take a while to write: 500,000 entries, about a second).
const (
	listingsSaveEvery = time.Second
	listingsSaveShare = 20
)

// KeepListings writes the listings to path while they change, in the
// background (listingsSaveEvery), once after is closed (the listings kept
// there are read: LoadListings); now has them written at once (the
// service just became unreachable: a crash from here starts from what was
// listed up to now); stop writes them once more and waits.
func (d *Dirs) KeepListings(path, account string, after <-chan struct{}) (now, stop func()) {
	done, stopped, asked := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	var saved [2]uint64
	var next time.Time
	// save writes the listings when they changed and the last write is
	// long enough ago; now: whatever the last write; last: at the end,
	// clean.
	save := func(now, last bool) {
		v, start := d.version(), time.Now()
		if !now && !last && (v == saved || start.Before(next)) {
			return
		}
		n, err := d.SaveListings(path, account, last)
		next = start.Add(listingsSaveShare * time.Since(start))
		if err != nil {
			d.log.WithError(err).Warn("cache: the listings could not be kept on disk; a restart lists the folders again")
			return
		}
		saved = v
		d.log.WithField("folders", n).Debug("cache: listings kept on disk")
	}
	go func() {
		defer close(stopped)
		if after != nil {
			<-after // the listings kept are read: never written over before
		}
		saved = d.version()
		t := time.NewTicker(listingsSaveEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				save(false, false)
			case <-asked:
				save(true, false)
			case <-done:
				save(true, true)
				return
			}
		}
	}()
	now = func() {
		select {
		case asked <- struct{}{}:
		default:
		}
	}
	return now, func() {
		close(done)
		<-stopped
	}
}

// version changes whenever what SaveListings writes may have: a listing
// fetched, edited or dropped.
func (d *Dirs) version() [2]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return [2]uint64{d.editSeq, uint64(d.stats.listings.Load()+d.stats.seatLists.Load()) + d.gen}
}
