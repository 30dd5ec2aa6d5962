package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/logging"
	"github.com/orgfs/orgfs/place"
	"github.com/orgfs/orgfs/writeback"
)

// Locks: none of its own. Its methods take the locks of the parts they call,
// one at a time, and hold none across a request.

// Store is the cache layer as the file system sees it: the caches, and for
// every change made through the mount one method that calls the service and
// keeps listings, staging, content and user-set times in step (in the manner
// of gcsfuse's caching bucket). Package fs calls these and never edits a
// cache by hand; the one hook after an upload is registered here.
type Store struct {
	Client  Client
	Dirs    *Dirs
	Content *Content
	Bundler *Bundler
	Fetcher *Fetcher
	Staging *writeback.Staging // nil on a read-only mount
	Attrs   *Attrs             // what users set: modes, owners, times
	log     logrus.FieldLogger
	retirer *retirer // folders renamed with their content (retire.go); nil on a read-only mount
	// stopKeeping ends the writing of the listings to disk (dirs_disk.go),
	// once more first; nil: not kept.
	stopKeeping func()
	// listingsRead is closed once the listings kept are read at the start
	// (loadListings: in the background online); nil when none are kept.
	listingsRead <-chan struct{}
	// Pins are what the user keeps on this desk (pins.go); nil without a
	// listing cache.
	Pins *Pins
	// ioTimeout bounds a caller's wait on the service (Bound); 0: no bound.
	ioTimeout time.Duration
	// live, set by the mount (SetLive), says whether a cache file is read
	// and written by the kernel itself (FUSE passthrough), and gives the
	// way to link it under another name; nil: none is.
	live func(f *os.File) (link func(path string) error)
	// afterUploaded, set by tests before the first upload, runs at the end
	// of the hook after an upload (uploaded), from the upload's goroutine.
	afterUploaded func(f api.File)
	// folderMade, set by the mount before it serves (SetFolderMade), is
	// told that a folder made offline is on the service now.
	folderMade func(provisional, made place.DirKey)
}

// SetLive tells the store which cache files the kernel reads and writes
// itself (FUSE passthrough): a staging copy of such a file's content is that
// very file, not a copy (StageCopy), since the kernel keeps using it for
// every open of the file. Set before the mount serves.
func (s *Store) SetLive(live func(f *os.File) (link func(path string) error)) { s.live = live }

// StoreOptions configures OpenStore. Zero values take the parts' defaults.
type StoreOptions struct {
	Dir          string // the cache dir: content/, bundles/ and staging/ under it
	StagingDir   string // default Dir/staging
	Client       Client // required
	MaxSize      int64  // content cache budget in bytes
	DirCacheTime time.Duration
	ReadAhead    int64
	// Transfers is the files uploaded at once, each in up to as many parts
	// at once (4x as many parts in all); reads use 4x as many range
	// requests, 2x per file.
	Transfers int
	WriteBack time.Duration
	// MinBackoff and MaxBackoff shape the retries of failed uploads.
	MinBackoff, MaxBackoff time.Duration
	ReadOnly               bool               // no staging: nothing is written
	Desk                   string             // this desk's name in conflict copies' names
	Bundle                 BundleOptions      // tuning of the bundler (Client, Content, TempDir and Log are filled in)
	Now                    func() time.Time   // the listings' clock; default time.Now
	Log                    logrus.FieldLogger // default: discard
	// IOTimeout bounds how long a caller (a syscall of the mount) waits on
	// the service: in total for an answer (Bound), and for content while no
	// byte of it comes (Reader.Ready, so also StageCopy). Background work
	// (uploads, read-ahead, a fetch other callers share) keeps its own
	// retries. 0: no bound.
	IOTimeout time.Duration
	// DirReadAhead is the most folders listed ahead of a reader listing
	// folders (Dirs.EnableAhead); 0: no listing read-ahead.
	DirReadAhead int
	// StartOffline: the service did not answer at the start; the listings
	// kept before a crash are read too (dirs_disk.go).
	StartOffline bool
	// PinRefresh is how often what is pinned is listed again while online,
	// when longer than DirCacheTime (pins.go); 0: DirCacheTime.
	PinRefresh time.Duration
	// Account names the service and credentials the cache dir is of (a
	// digest, AccountOf): the listings are kept on disk for the next start
	// under it (ListingsFile), and read back only by the same. "": not kept.
	Account string
}

// AccountOf names the service at endpoint and the credentials of key for
// StoreOptions.Account: a digest, which tells neither.
func AccountOf(endpoint, key string) string {
	sum := sha256.Sum256([]byte(endpoint + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// OpenStore opens every part under opts.Dir. Pending uploads of an earlier
// run resume at once. Close closes the parts again.
func OpenStore(opts StoreOptions) (_ *Store, err error) {
	if missing(opts.Client) {
		return nil, errors.New("cache: StoreOptions.Client is required")
	}
	log := logging.OrDiscard(opts.Log)
	if err := checkLayout(opts.Dir, log); err != nil {
		return nil, err // before anything in it is read or changed
	}
	s := &Store{Client: opts.Client, log: log, ioTimeout: max(opts.IOTimeout, 0)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.Attrs, err = OpenAttrs(filepath.Join(opts.Dir, AttrsFile), opts.ReadOnly, log); err != nil {
		return nil, err
	}
	if s.Content, err = OpenContent(ContentOptions{Dir: filepath.Join(opts.Dir, "content"), MaxSize: opts.MaxSize, Log: log}); err != nil {
		return nil, err
	}
	b := opts.Bundle
	b.Client, b.Content, b.TempDir, b.Log = opts.Client, s.Content, filepath.Join(opts.Dir, "bundles"), log
	if s.Bundler, err = NewBundler(b); err != nil {
		return nil, err
	}
	transfers := opts.Transfers
	if transfers <= 0 {
		transfers = writeback.DefaultStagingTransfers
	}
	if s.Fetcher, err = NewFetcher(FetcherOptions{Client: opts.Client, Content: s.Content, Bundler: s.Bundler,
		Transfers: 4 * transfers, PerFile: 2 * transfers, ReadAhead: opts.ReadAhead, IOTimeout: s.ioTimeout, Log: log}); err != nil {
		return nil, err
	}
	s.Dirs = NewDirs(opts.Client, opts.DirCacheTime, opts.Now)
	s.Dirs.log = log
	s.Dirs.EnableAhead(DirAheadOptions{Folders: opts.DirReadAhead, IOTimeout: s.ioTimeout})
	s.loadListings(opts) // before an upload of a run before lands in one
	if opts.ReadOnly {
		s.keepListings(opts)
		return s, nil
	}
	dir := opts.StagingDir
	if dir == "" {
		dir = filepath.Join(opts.Dir, "staging")
	}
	s.Staging, err = writeback.OpenStaging(writeback.StagingOptions{Dir: dir, Client: opts.Client, WriteBack: opts.WriteBack,
		Transfers: transfers, Parallel: max(transfers, writeback.DefaultStagingParallel), MinBackoff: opts.MinBackoff, MaxBackoff: opts.MaxBackoff, Log: log, OnUploaded: s.uploaded,
		OnConflict: s.conflicted, OnLanded: s.landed, Desk: opts.Desk,
		OnSuperseded: func(t place.Target, id int64) { s.Dirs.Hide(place.DirKey{Area: t.Area, ID: t.ParentID}, id) },
		OnKept:       s.Dirs.Show, UploadMode: s.uploadMode,
		OnRemade: func(from, to place.Target, under place.DirKey) {
			s.Attrs.Move(from, to)
			s.Dirs.Drop(under) // shows the folders made again
		},
		OnMade: s.made})
	if err != nil {
		return nil, err
	}
	// A file renamed away before a crash stays away: its old version is
	// deleted once the new name is up, and listed until then.
	s.Dirs.HideIDs(s.Staging.Superseded())
	s.Dirs.HideIDs(s.Staging.DeletedLater()) // deleted offline before a restart
	s.showMadeLater()                        // folders made offline before a restart
	s.Staging.Resume()                       // and made now, hidden first
	s.Attrs.KeepPending(func(t place.Target) bool { return s.Staging.Lookup(t) != nil })
	if w, ok := opts.Client.(reachWatcher); ok {
		// Online again: what was written meanwhile goes up now, not at its
		// backoff.
		w.WatchReach(func(r api.Reachability) {
			if r.Online {
				s.Staging.Resume()
			}
		})
	}
	if s.retirer, err = openRetirer(s, filepath.Join(opts.Dir, RetiringFile), log); err != nil {
		return nil, err
	}
	s.keepListings(opts) // once what is hidden is: it stays out of them
	return s, nil
}

// keepsListings reports whether the listings are kept on disk.
func keepsListings(opts StoreOptions) bool { return opts.Account != "" && opts.DirCacheTime > 0 }

// loadListings reads back the listings a run before kept (dirs_disk.go).
func (s *Store) loadListings(opts StoreOptions) {
	if !keepsListings(opts) {
		return
	}
	read := make(chan struct{})
	s.listingsRead = read
	load := func() {
		defer close(read)
		start := time.Now()
		if n, err := s.Dirs.LoadListings(filepath.Join(opts.Dir, ListingsFile), opts.Account, opts.StartOffline); err != nil {
			s.log.WithError(err).Warn("cache: the listings kept on disk are not used; the folders are listed again")
		} else if n > 0 {
			s.log.WithFields(logrus.Fields{"folders": n, "took": time.Since(start).Round(time.Millisecond)}).Info("cache: listings kept from the last run read back; each is listed again at its first use")
		}
	}
	if opts.StartOffline {
		load() // what the mount answers from
		return
	}
	// Online, the mount does not wait for them (200,000 entries take a
	// second): a folder looked at while they are read waits for them
	// (Dirs.list), one looked at before the read began is listed.
	go load()
}

// keepListings keeps the listings on disk from now on, and the pins.
func (s *Store) keepListings(opts StoreOptions) {
	if !keepsListings(opts) {
		return
	}
	saveNow, stop := s.Dirs.KeepListings(filepath.Join(opts.Dir, ListingsFile), opts.Account, s.listingsRead)
	s.stopKeeping = stop
	s.Pins = openPins(s, filepath.Join(opts.Dir, PinsFile), max(opts.DirCacheTime, opts.PinRefresh), s.log)
	s.Content.SetKeep(s.Pins.Kept)
	keepDir := s.Pins.KeptDir
	s.Dirs.keep.Store(&keepDir)
	if w, ok := opts.Client.(reachWatcher); ok {
		pins := s.Pins
		w.WatchReach(func(r api.Reachability) {
			if r.Online {
				pins.kick() // what is pinned and missing comes now
			} else {
				saveNow() // what was listed until now, for a start offline
			}
		})
	}
}

// reachWatcher is the client's word on the service's reach (*api.Client).
type reachWatcher interface {
	WatchReach(w func(api.Reachability))
	Reachability() api.Reachability
}

// Offline reports whether the client found the service unreachable, and
// has not found it back since.
func (s *Store) Offline() bool {
	w, ok := s.Client.(reachWatcher)
	return ok && !w.Reachability().Online
}

// Close closes the parts (staging without draining: Drain first for that).
func (s *Store) Close() error {
	var errs []error
	if s.Pins != nil {
		s.Pins.Close()
	}
	if s.Dirs != nil {
		s.Dirs.Close()
	}
	if s.retirer != nil {
		s.retirer.close()
	}
	if s.Staging != nil {
		errs = append(errs, s.Staging.Close())
	}
	if s.stopKeeping != nil {
		// Last: what the retirer and the staging did at their end shows
		// in the listings kept (a clean copy answers at the next start).
		s.stopKeeping()
	}
	if s.Bundler != nil {
		s.Bundler.Close()
	}
	if s.Attrs != nil {
		errs = append(errs, s.Attrs.Close())
	}
	if s.Content != nil {
		if err := s.Content.Close(); err != nil {
			errs = append(errs, fmt.Errorf("saving the content cache's records: %w", err))
		}
	}
	return errors.Join(errs...)
}

// uploaded is the one hook after an upload: the folder's cached listing gets
// the file, and a time the user set follows it to its service id. It runs
// before the staged copy leaves the staging (and a listing fetched across
// it gets the file too: Dirs replays it), so whoever looks at the staging first and the
// listing second finds the file in one or the other.
func (s *Store) uploaded(t place.Target, f api.File, modTime time.Time) {
	s.Attrs.Uploaded(t, f.ID, f.LastModified, modTime)
	s.Dirs.Put(place.DirKey{Area: t.Area, ID: t.ParentID}, f)
	if s.afterUploaded != nil {
		s.afterUploaded(f)
	}
}

// landed is the hook after an uploaded file left the staging unchanged: its
// content (data) becomes the cache entry of the version it made, unless a
// reader took that entry meanwhile.
func (s *Store) landed(f api.File, data string) {
	if err := s.Content.Adopt(MetaOf(f), data); err != nil {
		s.log.WithError(err).WithField("file_id", f.ID).Debug("cache: the uploaded content was not kept in the cache")
	}
}

// conflicted is the hook after a file went up as a conflict copy: the
// folder is listed again, showing the other writer's version under the name
// and the copy beside it; the content of the version the change started
// from is stale.
func (s *Store) conflicted(t place.Target, c writeback.Conflict) {
	s.Dirs.Drop(place.DirKey{Area: t.Area, ID: t.ParentID})
	if c.Base != 0 {
		s.Fetcher.Forget(c.Base)
	}
}

// MetaOf is what the content cache keys a service file's content by.
func MetaOf(f api.File) Meta {
	return Meta{ID: f.ID, Size: f.Size, ModTime: f.LastModified}
}

// Mkdir is a user's mkdir: it creates folder name in parent (MakeFolder;
// path: in the mount), keeps what was set on it (its mode, owner; nothing
// when set is zero), and moves parent's times, as a disk does when an entry
// is made in it.
func (s *Store) Mkdir(ctx context.Context, parent place.DirKey, name, path string, set Attr) (api.File, error) {
	f, err := s.MakeFolder(ctx, parent, name, path)
	if err != nil {
		return api.File{}, err
	}
	if !set.IsZero() {
		s.Attrs.SetDir(place.DirKey{Area: parent.Area, ID: f.ID}, set)
	}
	s.Attrs.TouchDir(parent)
	return f, nil
}

// MakeFolder creates folder name in parent (path: in the mount), as a step
// of a larger change (a folder rename makes the new folders): no folder's
// times move (Renamed moves them once the change is done). The new folder
// is known to be empty: it needs no listing before its first use. Offline
// (api.IsOffline), or in a folder made offline and not on the service yet,
// the folder is made later: journaled in the write side
// (writeback/folders.go) and shown at once, under a provisional id
// (store_made.go).
func (s *Store) MakeFolder(ctx context.Context, parent place.DirKey, name, path string) (api.File, error) {
	if s.Staging != nil {
		parent = s.Staging.Resolve(parent)
	}
	if parent.ID < 0 {
		return s.makeLater(parent, name, path)
	}
	req := api.CreateDirectoryRequest{ParentID: parent.ID, Name: name}
	if parent.Area.Kind == place.Machine {
		req.MachineID = parent.Area.MachineID
	}
	var d *api.CreatedDirectory
	err := s.settled(ctx, func(ctx context.Context) (err error) {
		d, err = s.Client.CreateDirectory(ctx, req)
		return err
	})
	if err != nil && api.IsOffline(err) && s.Staging != nil && ctx.Err() == nil {
		return s.makeLater(parent, name, path)
	}
	if err != nil {
		return api.File{}, err
	}
	f := api.File{ID: d.ID, Name: name, ObjectType: api.ObjectDirectory, ParentID: parent.ID, LastModified: time.Now(),
		Details: &api.FileDetails{Type: "file", ContentType: "directory"}}
	s.Dirs.Put(parent, f)
	if !d.Recovered { // else another writer's, maybe, with what it holds
		s.Dirs.Seed(place.DirKey{Area: parent.Area, ID: d.ID}, nil)
	}
	return f, nil
}

// Remove is a user's unlink or rmdir of f, a file or folder of parent on
// the service, at path in the mount: Delete, then parent's times move, as a
// disk's do; offline, the deletion is journaled (DeleteNowOrLater).
func (s *Store) Remove(ctx context.Context, parent place.DirKey, f api.File, path string) error {
	if err := s.DeleteNowOrLater(ctx, parent, f, path); err != nil {
		return err
	}
	s.Attrs.TouchDir(parent)
	return nil
}

// DeleteNowOrLater is Delete, and offline (api.IsOffline) the deletion
// journaled in the write side (writeback/deletes.go), made when the service
// answers again if it still holds that version; f leaves every listing now.
// No folder's times move (a file unlinked while open, deleted at its last
// close; or Remove).
func (s *Store) DeleteNowOrLater(ctx context.Context, parent place.DirKey, f api.File, path string) error {
	err := s.Delete(ctx, parent, f)
	if err == nil || !api.IsOffline(err) || s.Staging == nil || ctx.Err() != nil {
		return err // the caller gave up (EIO): nothing is journaled behind its back
	}
	if jerr := s.Staging.DeleteLater(writeback.DeletionOf(parent, f, path)); jerr != nil {
		return errors.Join(err, jerr)
	}
	s.Dirs.Hide(parent, f.ID) // a listing fetched before the deletion is made
	s.Deleted(parent, f)
	return nil
}

// Delete deletes a file or folder of parent from the service (one already
// gone counts as deleted) and forgets it: its listing entry, its cached
// content, a folder's own listing, what was set on it. No folder's times
// move: it is a step of a larger change (a rename, an undo, the last close
// of a file unlinked while open), or of Remove.
func (s *Store) Delete(ctx context.Context, parent place.DirKey, f api.File) error {
	if f.ID < 0 {
		var done bool
		var err error
		if f, done, err = s.unmake(parent, f); done || err != nil {
			return err
		}
	}
	if err := s.settled(ctx, func(ctx context.Context) error { return s.Client.DeleteFile(ctx, f.ID) }); err != nil && !api.IsNotFound(err) {
		return err
	}
	s.Deleted(parent, f)
	return nil
}

// Deleted keeps the caches in step with f, of folder parent, deleted from
// the service: Delete's work once the service deleted it, for a caller that
// found it gone otherwise (a delete whose answer was lost).
func (s *Store) Deleted(parent place.DirKey, f api.File) {
	s.Dirs.Remove(parent, f.ID)
	if f.IsDir() {
		s.Dirs.Forget(place.DirKey{Area: parent.Area, ID: f.ID})
		s.Attrs.ForgetDir(place.DirKey{Area: parent.Area, ID: f.ID})
	} else {
		s.Fetcher.Forget(f.ID)
		s.Attrs.Forget(f.ID)
	}
}

// Unlinked takes a file the mount unlinked while it is open out of its
// folder's listing, cached or fetched from now on; the mount deletes it
// (Delete) at its last close.
func (s *Store) Unlinked(parent place.DirKey, f api.File) {
	s.Dirs.Hide(parent, f.ID)
}

// Gone reports whether err says that the version of a file a read asked for
// is no longer on the service: not found (404, 4717), its content shorter
// than its listing (ErrChanged), or its object refused even with a renewed
// URL. Another writer replaced or deleted it.
func Gone(err error) bool {
	return api.IsNotFound(err) || errors.Is(err, ErrChanged) || api.IsURLExpired(err)
}

// Check looks version m up on the service when its content is not all in
// the cache (the request its first read would make, its URL then kept for
// that read): an error that Gone reports says another writer replaced or
// deleted it.
func (s *Store) Check(ctx context.Context, m Meta) error {
	if m.Size == 0 || s.Content.Complete(m) {
		return nil
	}
	_, err := s.Fetcher.url(ctx, m.ID, "")
	return err
}

// Changed is what a read that found a file different from its listing
// (ErrChanged) does: the listing and the content are forgotten, so the next
// open sees the service's version.
func (s *Store) Changed(parent place.DirKey, id int64) {
	s.Dirs.Drop(parent)
	s.Fetcher.Forget(id)
}
