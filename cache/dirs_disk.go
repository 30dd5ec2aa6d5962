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

// listingsFormat is the version of ListingsFile's layout.
const listingsFormat = 1

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
	Listings     []savedListing `json:"listings"`
	Seats        []api.Seat     `json:"seats,omitempty"`
	SeatsFetched time.Time      `json:"seats_fetched,omitzero"`
}

type savedListing struct {
	Key     place.DirKey `json:"key"`
	Fetched time.Time    `json:"fetched"`
	Current *api.File    `json:"current,omitempty"`
	Files   []api.File   `json:"files"`
}

// snapshot is what Save writes: the listings the cache holds (none of a
// folder made offline), those fetched last first, within savedEntriesMax.
func (d *Dirs) snapshot(account string) savedListings {
	d.mu.Lock()
	out := savedListings{Format: listingsFormat, Account: account, Saved: d.now()}
	for key, l := range d.dirs {
		if key.ID >= 0 {
			// Without the folders made offline: the journal shows them
			// again at the start, or a crash left them to nothing.
			files := l.Files
			if slices.ContainsFunc(files, func(f api.File) bool { return f.ID < 0 }) {
				files = slices.DeleteFunc(slices.Clone(files), func(f api.File) bool { return f.ID < 0 })
			}
			out.Listings = append(out.Listings, savedListing{Key: key, Fetched: l.Fetched, Current: l.Current, Files: files})
		}
	}
	if d.seats != nil {
		out.Seats, out.SeatsFetched = d.seats.seats, d.seats.fetched
	}
	d.mu.Unlock()
	// The areas' roots first (a start offline lists from them), then the
	// folders listed last, as many as fit.
	slices.SortFunc(out.Listings, func(a, b savedListing) int {
		if (a.Key.ID == 0) != (b.Key.ID == 0) {
			if a.Key.ID == 0 {
				return -1
			}
			return 1
		}
		return b.Fetched.Compare(a.Fetched)
	})
	n, kept := 0, out.Listings[:0]
	for _, l := range out.Listings {
		if n+len(l.Files) <= savedEntriesMax {
			n += len(l.Files)
			kept = append(kept, l)
		}
	}
	out.Listings = kept
	return out
}

// SaveListings writes the listings the cache holds to path (anew, then
// renamed into place), for the next start; account names whose they are;
// clean: the last, at the unmount. It returns how many folders it wrote.
func (d *Dirs) SaveListings(path, account string, clean bool) (int, error) {
	s := d.snapshot(account)
	os.Remove(path + cleanSuffix)
	err := safefile.Write(path, func(w io.Writer) error {
		z := gzip.NewWriter(w)
		if err := json.NewEncoder(z).Encode(s); err != nil {
			return err
		}
		return z.Close()
	})
	if err == nil && clean {
		err = safefile.Write(path+cleanSuffix, func(io.Writer) error { return nil })
	}
	if err != nil {
		return 0, fmt.Errorf("cache: saving the listings: %w", err)
	}
	return len(s.Listings), nil
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
	_, cerr := os.Stat(path + cleanSuffix)
	clean := cerr == nil
	if clean {
		if err := os.Remove(path + cleanSuffix); err != nil {
			clean = false
		}
	}
	s, err := readListings(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err == nil && !clean && !offline {
		// Kept before a crash, and the service answers: they would answer
		// only in an outage, older than what it lists; not read.
		return 0, nil
	}
	if err == nil && s.Format != listingsFormat {
		err = fmt.Errorf("format %d, this orgfs reads %d", s.Format, listingsFormat)
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
	for _, l := range s.Listings {
		if _, ok := d.dirs[l.Key]; ok || l.Key.ID < 0 {
			continue
		}
		kept := newListing(d.withMadeLocked(l.Key, d.visibleLocked(l.Files)), l.Current, l.Fetched, d.editSeq)
		kept.kept = true
		kept.behind = clean
		d.dirs[l.Key] = kept
	}
	if d.seats == nil && s.Seats != nil {
		d.seats = &seatList{seats: s.Seats, fetched: s.SeatsFetched}
	}
	return len(s.Listings), nil
}

// readListings decodes ListingsFile at path.
func readListings(path string) (savedListings, error) {
	var s savedListings
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	z, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return s, err
	}
	err = json.NewDecoder(z).Decode(&s)
	return s, err
}

// HasListings reports whether path holds listings kept for account: a
// start without the service mounts from them.
func HasListings(path, account string) bool {
	s, err := readListings(path)
	return err == nil && s.Format == listingsFormat && s.Account == account && len(s.Listings) > 0
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
// background (listingsSaveEvery); now has them written at once (the
// service just became unreachable: a crash from here starts from what was
// listed up to now); stop writes them once more and waits.
func (d *Dirs) KeepListings(path, account string) (now, stop func()) {
	done, stopped, asked := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	saved := d.version()
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
