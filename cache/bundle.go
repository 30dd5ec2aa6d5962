package cache

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/logging"
	"github.com/orgfs/orgfs/place"
)

// Locks: Bundler.mu, a leaf of the package's lock order (docs/ARCHITECTURE.md): taken
// alone, never with the content cache's locks, and never held across a
// request, a disk write or a wait.

// BundleOptions configures a Bundler. Zero values take the defaults.
type BundleOptions struct {
	Client  Client
	Content *Content
	TempDir string // where bundle ZIPs are downloaded before being unpacked

	SmallFile    int64         // files up to this size are bundled; default 1 MiB
	Trigger      int           // distinct small files opened in a folder within Window that start a bundle; default 2
	Window       time.Duration // default 10s
	MinFiles     int           // small uncached files a folder needs for a bundle; default 8
	MaxFiles     int           // files in one bundle, at most; default 1000
	MaxBytes     int64         // bytes in one bundle, at most; default 256 MiB
	WaitLimit    time.Duration // how long a read waits for a bundle before fetching its file alone; default 30s
	Idle         time.Duration // a bundle no reader asked about for this long is aborted; default 20s
	PollInterval time.Duration // first wait between job status polls; default 200ms, growing to 2s
	Log          logrus.FieldLogger
}

func (o BundleOptions) withDefaults() BundleOptions {
	setDefault(&o.SmallFile, 1<<20)
	setDefault(&o.MaxBytes, 256<<20)
	setDefault(&o.Trigger, 2)
	setDefault(&o.MinFiles, 8)
	setDefault(&o.MaxFiles, 1000)
	setDefault(&o.Window, 10*time.Second)
	setDefault(&o.WaitLimit, 30*time.Second)
	setDefault(&o.Idle, 20*time.Second)
	setDefault(&o.PollInterval, 200*time.Millisecond)
	o.Log = logging.OrDiscard(o.Log)
	return o
}

// BundleStats are the bundler's counters.
type BundleStats struct {
	Jobs, Completed, Failed, Aborted int64
	Files                            int64 // files put in the cache from bundles
	Bytes                            int64 // bytes of the completed bundles' ZIPs
	Disabled                         bool  // the organization cannot bundle (4710)
	// Where the completed bundles' time went, summed over them: Job from
	// asking for the job until its ZIP was ready (the service zipping, and
	// the polls that found out), Transfer fetching the ZIP, Unpack putting
	// its entries in the cache.
	Job, Transfer, Unpack time.Duration
}

// Bundler notices folders whose small files are read one after another (cp -r,
// rsync, a file manager making thumbnails) and fetches the rest of them in
// one bundle job, a ZIP whose entries fill the content cache. Reads of files
// a running bundle covers wait for their entry instead of fetching the file
// alone, unless the bundle fails or is slow.
//
// Bundles name files (file_ids) rather than the folder (directory_id): a
// folder's bundle would zip its subfolders too, however large, while the
// files wanted are exactly the small ones the listing shows.
type Bundler struct {
	opts BundleOptions

	mu       sync.Mutex
	disabled bool                          // guarded by mu; 4710 seen: the organization lacks the feature
	folders  map[place.DirKey]*folderState // guarded by mu
	byFile   map[int64]*bundleJob          // guarded by mu; files a running job covers
	jobs     map[*bundleJob]bool           // guarded by mu
	closed   bool                          // guarded by mu
	wg       sync.WaitGroup

	stats struct {
		jobs, completed, failed, aborted, files, bytes atomic.Int64
		job, transfer, unpack                          atomic.Int64 // nanoseconds
	}
}

type folderState struct {
	opened    map[int64]time.Time // small files opened lately
	job       *bundleJob          // running, if any
	quietTill time.Time           // no new bundle before (after a failure)
}

type bundleJob struct {
	folder       place.DirKey
	files        map[string]api.File // by name
	order        []int64             // the files' ids in the listing's order: the ZIP's, so that a reader in that order is served while it is unpacked
	total        int64               // the files' bytes
	waits        map[int64]chan struct{}
	cancel       context.CancelFunc
	lastInterest time.Time // guarded by Bundler.mu
	waiting      int       // guarded by Bundler.mu; reads waiting now (never idle then)
}

// NewBundler makes a bundler.
func NewBundler(opts BundleOptions) (*Bundler, error) {
	if missing(opts.Client) || opts.Content == nil || opts.TempDir == "" {
		return nil, errors.New("cache: a bundler needs a client, a content cache and a temp dir")
	}
	// ZIPs a run left behind (it ended while unpacking) are of no use.
	os.RemoveAll(opts.TempDir)
	if err := os.MkdirAll(opts.TempDir, 0o700); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	opts = opts.withDefaults()
	return &Bundler{opts: opts, folders: map[place.DirKey]*folderState{}, byFile: map[int64]*bundleJob{}, jobs: map[*bundleJob]bool{}}, nil
}

// Stats returns the counters.
func (b *Bundler) Stats() BundleStats {
	b.mu.Lock()
	disabled := b.disabled
	b.mu.Unlock()
	return BundleStats{
		Jobs: b.stats.jobs.Load(), Completed: b.stats.completed.Load(), Failed: b.stats.failed.Load(),
		Aborted: b.stats.aborted.Load(), Files: b.stats.files.Load(), Bytes: b.stats.bytes.Load(), Disabled: disabled,
		Job: time.Duration(b.stats.job.Load()), Transfer: time.Duration(b.stats.transfer.Load()), Unpack: time.Duration(b.stats.unpack.Load()),
	}
}

// Opened tells the bundler that file f of folder dir, whose listing is files,
// is being opened for reading. It may start a bundle of the folder's small
// files that are not cached yet.
func (b *Bundler) Opened(dir place.DirKey, files []api.File, f api.File) {
	if f.Size > b.opts.SmallFile || f.IsDir() {
		return
	}
	now := time.Now()
	st := b.noteOpened(dir, f, now)
	if st == nil {
		return
	}
	// Choose the files, outside the lock (the cache is asked about each).
	chosen, order, total := b.choose(files)
	if len(chosen) < b.opts.MinFiles {
		// Mostly cached already: do not scan the folder again on every open.
		b.mu.Lock()
		st.quietTill = now.Add(b.opts.Window)
		st.opened = map[int64]time.Time{}
		b.mu.Unlock()
		return
	}
	b.start(dir, st, chosen, order, total, now)
}

// noteOpened counts the opening of small file f in folder dir, and returns
// the folder's state when enough of its small files were opened lately to
// start a bundle (nil otherwise).
func (b *Bundler) noteOpened(dir place.DirKey, f api.File, now time.Time) *folderState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.disabled || b.closed {
		return nil
	}
	st := b.folders[dir]
	if st == nil {
		st = &folderState{opened: map[int64]time.Time{}}
		b.folders[dir] = st
	}
	if st.job != nil {
		st.job.lastInterest = now
		return nil
	}
	for id, t := range st.opened {
		if now.Sub(t) > b.opts.Window {
			delete(st.opened, id)
		}
	}
	st.opened[f.ID] = now
	if len(st.opened) >= b.opts.Trigger && now.After(st.quietTill) {
		return st
	}
	return nil
}

// choose picks the files of a listing a bundle would bring: small files not
// cached yet whose name is unique in the folder, within the bundle's limits;
// order is their ids in the listing's order, the order readdir shows them
// in and cp -r, rsync and file managers read them in.
func (b *Bundler) choose(files []api.File) (chosen map[string]api.File, order []int64, total int64) {
	seen := map[string]int{}
	for _, x := range files {
		seen[x.Name]++
	}
	chosen = map[string]api.File{}
	for _, x := range files {
		if x.IsDir() || x.Size > b.opts.SmallFile || seen[x.Name] > 1 || len(chosen) >= b.opts.MaxFiles || total+x.Size > b.opts.MaxBytes {
			continue
		}
		if b.opts.Content.Complete(Meta{ID: x.ID, Size: x.Size, ModTime: x.LastModified}) {
			continue
		}
		chosen[x.Name] = x
		order = append(order, x.ID)
		total += x.Size
	}
	return chosen, order, total
}

// start starts a bundle of the chosen files of folder dir, unless another
// started meanwhile or the bundler was disabled or closed.
func (b *Bundler) start(dir place.DirKey, st *folderState, chosen map[string]api.File, order []int64, total int64, now time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	job := &bundleJob{folder: dir, files: chosen, order: order, total: total, waits: map[int64]chan struct{}{}, cancel: cancel, lastInterest: now}
	b.mu.Lock()
	if st.job != nil || b.disabled || b.closed {
		b.mu.Unlock()
		cancel()
		return
	}
	st.job = job
	st.opened = map[int64]time.Time{}
	b.jobs[job] = true
	for _, x := range chosen {
		if _, taken := b.byFile[x.ID]; !taken {
			b.byFile[x.ID] = job
			job.waits[x.ID] = make(chan struct{})
		}
	}
	b.wg.Add(2)
	b.mu.Unlock()
	b.stats.jobs.Add(1)
	b.opts.Log.WithFields(logrus.Fields{"folder": dir.Area.String(), "folder_id": dir.ID, "files": len(chosen), "bytes": total}).Debug("bundle: fetching small files in one job")
	go b.watch(ctx, job)
	go b.run(ctx, job)
}

// Covers reports whether a running bundle will bring file id.
func (b *Bundler) Covers(id int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.byFile[id]
	return ok
}

// Wait waits until the bundle covering file id has put it in the cache
// (true), or reports false at once when no bundle covers it, and after the
// bundle failed, took longer than the wait limit, or ctx ended.
func (b *Bundler) Wait(ctx context.Context, id int64) bool {
	b.mu.Lock()
	job, ok := b.byFile[id]
	var ch chan struct{}
	var f api.File
	if ok {
		ch = job.waits[id]
		job.lastInterest = time.Now()
		job.waiting++
		for _, x := range job.files {
			if x.ID == id {
				f = x
			}
		}
	}
	b.mu.Unlock()
	if !ok {
		return false
	}
	defer func() {
		b.mu.Lock()
		job.waiting--
		job.lastInterest = time.Now()
		b.mu.Unlock()
	}()
	t := time.NewTimer(b.opts.WaitLimit)
	defer t.Stop()
	select {
	case <-ch:
		return b.opts.Content.Complete(Meta{ID: f.ID, Size: f.Size, ModTime: f.LastModified})
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// watch aborts a job no reader has asked about for a while.
func (b *Bundler) watch(ctx context.Context, job *bundleJob) {
	defer b.wg.Done()
	tick := time.NewTicker(min(time.Second, b.opts.Idle/4))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			b.mu.Lock()
			idle := job.waiting == 0 && time.Since(job.lastInterest) > b.opts.Idle
			b.mu.Unlock()
			if idle {
				b.opts.Log.WithField("folder_id", job.folder.ID).Debug("bundle: nobody waits for it any more, aborting")
				b.stats.aborted.Add(1)
				job.cancel()
				return
			}
		}
	}
}

// run creates the job, waits for its ZIP, and unpacks it into the cache.
func (b *Bundler) run(ctx context.Context, job *bundleJob) {
	defer b.wg.Done()
	err := b.fetch(ctx, job)
	b.mu.Lock()
	st := b.folders[job.folder]
	if st != nil && st.job == job {
		st.job = nil
		if err != nil {
			st.quietTill = time.Now().Add(b.opts.Window)
		}
	}
	if api.IsPermission(err) && !b.disabled {
		b.disabled = true
		b.opts.Log.WithError(err).Info("bundle: the organization cannot download several files at once; reading files one by one from now on")
	}
	for id, ch := range job.waits {
		if b.byFile[id] == job {
			delete(b.byFile, id)
		}
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	delete(b.jobs, job)
	b.mu.Unlock()
	job.cancel()
	switch {
	case err == nil:
		b.stats.completed.Add(1)
	case ctx.Err() != nil:
		// aborted: counted by whoever aborted it
	default:
		b.stats.failed.Add(1)
		if !api.IsPermission(err) {
			b.opts.Log.WithError(err).WithField("folder_id", job.folder.ID).Warn("bundle: failed; reading its files one by one")
		}
	}
}

// bundleStreams is how many ranged requests fetch a bundle's ZIP at once.
const bundleStreams = 8

// bundleBlock is the range a request of a bundle's ZIP asks for: an eighth
// of the files' bytes (the ZIP's size is known only once its first range
// answers, so that first range is fetched alone), between 1 and 8 MiB. At
// 8 MiB, the ZIP of 1,000 files of 8 KiB came in one range of 8 MiB, one
// stream's time.
func bundleBlock(total int64) int64 {
	return min(8<<20, max(1<<20, total/bundleStreams))
}

func (b *Bundler) fetch(ctx context.Context, job *bundleJob) error {
	t0 := time.Now()
	link, err := b.opts.Client.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: job.order})
	if err != nil {
		return err
	}
	if link.DownloadID == 0 {
		return errors.New("cache: the service started no bundle job")
	}
	// From here on, a cancelled bundle is aborted on the service too.
	jobURL, polls, err := b.await(ctx, job, link.DownloadID)
	if err != nil {
		if ctx.Err() != nil {
			actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if aerr := b.opts.Client.AbortDownload(actx, link.DownloadID); aerr != nil && !api.IsCode(aerr, api.CodeDownloadNotAbortable) {
				b.opts.Log.WithError(aerr).Debug("bundle: abort failed")
			}
			cancel()
		}
		return err
	}
	tmp, err := os.CreateTemp(b.opts.TempDir, "bundle-*.zip")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	tReady := time.Now()
	n, err := b.opts.Client.DownloadTo(ctx, api.DownloadToRequest{URL: jobURL, Dst: tmp, Parallel: bundleStreams, BlockSize: bundleBlock(job.total)})
	if err != nil {
		return err
	}
	tFetched := time.Now()
	zr, err := zip.NewReader(tmp, n)
	if err != nil {
		return fmt.Errorf("cache: the bundle is not a readable ZIP: %w", err)
	}
	for _, ze := range zr.File {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f, ok := job.files[path.Base(ze.Name)]
		if !ok || ze.FileInfo().IsDir() || int64(ze.UncompressedSize64) != f.Size {
			continue
		}
		if err := b.store(ze, f); err != nil {
			b.opts.Log.WithError(err).WithField("file_id", f.ID).Debug("bundle: entry not stored")
			continue
		}
		b.stats.files.Add(1)
		b.mu.Lock()
		if ch, ok := job.waits[f.ID]; ok && ch != closedChan { // a ZIP may hold a name twice
			close(ch)
			job.waits[f.ID] = closedChan
			delete(b.byFile, f.ID)
		}
		b.mu.Unlock()
	}
	b.noteDone(job, n, polls, t0, tReady, tFetched)
	return nil
}

// noteDone counts a completed bundle's bytes and where its time went, from
// its start t0, the moment its ZIP was ready and the moment it was fetched.
func (b *Bundler) noteDone(job *bundleJob, n int64, polls int, t0, tReady, tFetched time.Time) {
	now := time.Now()
	wait, transfer, unpack := tReady.Sub(t0), tFetched.Sub(tReady), now.Sub(tFetched)
	b.stats.bytes.Add(n)
	b.stats.job.Add(int64(wait))
	b.stats.transfer.Add(int64(transfer))
	b.stats.unpack.Add(int64(unpack))
	b.opts.Log.WithFields(logrus.Fields{
		"folder_id": job.folder.ID, "files": len(job.files), "zip_bytes": n, "polls": polls,
		"job": wait.Round(time.Millisecond), "transfer": transfer.Round(time.Millisecond), "unpack": unpack.Round(time.Millisecond),
	}).Debug("bundle: done")
}

// closedChan stands for a wait that is over.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// store writes one ZIP entry as the content of file f.
func (b *Bundler) store(ze *zip.File, f api.File) error {
	h, err := b.opts.Content.Acquire(Meta{ID: f.ID, Size: f.Size, ModTime: f.LastModified})
	if err != nil {
		return err
	}
	defer h.Release()
	if h.Complete() {
		return nil
	}
	rc, err := ze.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return h.WriteAll(rc)
}

// await polls a job until it is uploaded and returns its ZIP's URL: every
// PollInterval/4 while a read waits for it (a poll is one small request; a
// reader waiting is the whole transfer waiting), else at growing intervals.
func (b *Bundler) await(ctx context.Context, bj *bundleJob, id int64) (url string, polls int, err error) {
	wait := b.opts.PollInterval
	for {
		polls++
		job, err := b.opts.Client.DownloadStatus(ctx, id, true)
		if err != nil {
			return "", polls, err
		}
		switch job.Status {
		case api.DownloadUploaded:
			if job.DownloadURL == "" {
				return "", polls, errors.New("cache: the bundle is ready but has no URL")
			}
			return job.DownloadURL, polls, nil
		case api.DownloadFailed, api.DownloadCancelled:
			return "", polls, fmt.Errorf("cache: bundle job %d %s: %w", id, job.Status, api.ErrDownloadFailed)
		}
		b.mu.Lock()
		waiting := bj.waiting > 0
		b.mu.Unlock()
		next := wait
		if waiting {
			next = b.opts.PollInterval / 4
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", polls, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*3/2, 2*time.Second)
	}
}

// Close aborts the running bundles and waits for them to end.
func (b *Bundler) Close() {
	b.mu.Lock()
	b.closed = true
	for job := range b.jobs {
		job.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
}
