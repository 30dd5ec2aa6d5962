// Package emulator is an in-process emulator of the organization management
// service (spec/organization-api.md, with the choices of spec/service-notes.md):
// every endpoint under /organization-management/v1, HMAC verification, two
// organizations, the state machines of images, computers and download jobs
// advanced lazily by an injectable clock, and an object store with presigned
// URLs on a listener of its own (package objstore).
//
// With Options.DataDir the state is kept there across runs (persist.go).
//
// Its files and its lock order are in docs/ARCHITECTURE.md.
//
// Packages below: objstore (the object store), faults (fault injection),
// content (the seeded files' content; content/contenttest checks it) and
// emutest (test helpers: a served emulator, a fake clock, a signing client).
package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/internal/emulator/faults"
	"github.com/orgfs/orgfs/internal/emulator/objstore"
)

// Prefix is the fixed path prefix of every API route.
const Prefix = "/organization-management/v1"

// Seed names.
const (
	SeedDemo  = "demo"  // a believable organization (default)
	SeedEmpty = "empty" // empty storage roots and one stopped computer per organization
)

// Organization names.
const (
	OrgA = "org-a" // has the multiple_file_download feature
	OrgB = "org-b" // has not
)

// Durations of the service's time-bound records.
const (
	downloadURLTTL = time.Hour      // presigned GET URLs
	uploadURLTTL   = 24 * time.Hour // presigned part PUT URLs
	jobLifetime    = 24 * time.Hour // temporary ZIP files of download jobs
	authWindow     = 5 * time.Minute
	logWindow      = 30 * 24 * time.Hour
	maxLogAnswer   = 1000
	maxLogsKept    = 100000
	mib            = 1 << 20
	gib            = 1 << 30
	partMinimum    = 5 * mib // S3's part minimum, all parts but the last
	maxParts       = 10000
	maxPerPage     = 1000
	maxBodyBytes   = 1 << 20
)

// Options configures an Emulator. Zero values take the defaults written next
// to each field.
type Options struct {
	DataDir       string           // state (state.json) and objects (objects/) kept across runs; "" → a temp dir removed by Close, nothing kept
	Seed          string           // "demo" (default), "empty" or "bench"; not applied when DataDir has a saved state
	StepDelay     time.Duration    // per state-machine step; default 2s
	Latency       time.Duration    // per API request
	ObjectLatency time.Duration    // before the first byte of an object transfer
	StreamRate    int64            // bytes/s per object connection; 0 unlimited
	FaultRate     float64          // 0..1, API and object store
	FaultSeed     int64            // makes the faults deterministic
	Now           func() time.Time // clock; default time.Now (tests inject a fake one)
	ClockOffset   time.Duration    // added to Now: the service's clock off a desk's (auth.go)
	Log           logrus.FieldLogger
	BenchFileSize int64 // size of bench/big.bin in the bench seed; default 1 GiB
	// The bench seed's scale folders: bench/huge's entries and bench/tree's
	// files (0: none).
	BenchHugeFiles, BenchTreeFiles int
	// Dialect is the reading of the contract's ambiguities the emulator
	// answers in (dialect.go); the zero value is the default dialect.
	Dialect Dialect
}

// Emulator is the state of the emulated service. Its API handler is Handler();
// its object store, Objects().
type Emulator struct {
	// dependencies
	opts      Options
	now       func() time.Time
	log       logrus.FieldLogger
	store     *objstore.Store
	faults    *faults.Injector // API faults
	objFaults *faults.Injector // object-store faults (a separate sequence of the same seed family)
	handler   http.Handler
	net       *network // network play switched at run time
	dialect   Dialect

	// constants
	dataDir    string
	removeDir  bool // dataDir is ours: removed by Close
	step       time.Duration
	catalog    *catalog
	background sync.WaitGroup // asynchronous removals
	objSecret  []byte         // signs presigned URLs (kept with the state)
	restored   bool           // the state was loaded from dataDir
	lock       *os.File       // the data directory's lock; nil when none

	// persistence (persist.go)
	saveMu     sync.Mutex    // serializes saves; taken before mu
	persist    bool          // guarded by mu; changes are saved
	saveTimer  *time.Timer   // guarded by mu; a save is scheduled
	saveCost   time.Duration // guarded by mu; how long the last save took
	saved      bool          // guarded by mu; the final save is done
	seededWith string        // guarded by mu; the seed the state started from
	seededAt   time.Time     // guarded by mu

	mu        sync.Mutex
	closed    bool                 // guarded by mu
	nextID    int64                // guarded by mu; one counter for every resource of both organizations
	nextLogID int64                // guarded by mu
	orgs      []*org               // guarded by mu
	byKey     map[string]*org      // guarded by mu; API key → organization
	nodes     map[int64]*node      // guarded by mu; files, directories, roots, incomplete uploads
	seats     map[int64]*seat      // guarded by mu
	seatless  map[int64]*org       // guarded by mu; machine ids without a seat (4709)
	images    map[int64]*image     // guarded by mu
	jobs      map[int64]*job       // guarded by mu
	tasks     map[int64]*task      // guarded by mu
	logs      []*logRecord         // guarded by mu; oldest first
	nonces    map[string]time.Time // guarded by mu; key+nonce → when it may be forgotten
	nonceAdds int                  // guarded by mu; insertions since the last pruning
	stats     statsCounters        // guarded by mu
	injected  map[string][]int     // guarded by mu; route → codes to answer, in order
	drops     map[string]int       // guarded by mu; route → answers to drop
	fixtures  map[string]Fixtures  // guarded by mu (written by the seed)
}

// New creates an emulator with the state saved in opts.DataDir when there
// is one (persist.go), else with the seed of opts. Close releases it.
func New(opts Options) (*Emulator, error) {
	if opts.Seed == "" {
		opts.Seed = SeedDemo
	}
	if opts.Seed != SeedDemo && opts.Seed != SeedEmpty && opts.Seed != SeedBench {
		return nil, fmt.Errorf("emulator: unknown seed %q (want %q, %q or %q)", opts.Seed, SeedDemo, SeedEmpty, SeedBench)
	}
	if opts.StepDelay <= 0 {
		opts.StepDelay = 2 * time.Second
	}
	if opts.FaultRate < 0 || opts.FaultRate > 1 {
		return nil, fmt.Errorf("emulator: fault rate %v outside 0..1", opts.FaultRate)
	}
	if err := opts.Dialect.validate(); err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Now = offsetClock(opts.Now, opts.ClockOffset)
	if opts.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		opts.Log = l
	}
	e := &Emulator{
		opts:     opts,
		now:      opts.Now,
		log:      opts.Log.WithField("component", "emulator"),
		faults:   faults.New(opts.FaultRate, opts.FaultSeed),
		net:      newNetwork(opts.Latency),
		dialect:  opts.Dialect,
		step:     opts.StepDelay,
		catalog:  newCatalog(),
		nextID:   1000,
		byKey:    map[string]*org{},
		nodes:    map[int64]*node{},
		seats:    map[int64]*seat{},
		seatless: map[int64]*org{},
		images:   map[int64]*image{},
		jobs:     map[int64]*job{},
		tasks:    map[int64]*task{},
		nonces:   map[string]time.Time{},
		injected: map[string][]int{},
		drops:    map[string]int{},
		fixtures: map[string]Fixtures{},
	}
	e.stats.init()
	if err := e.open(); err != nil {
		e.background.Wait()
		e.cleanup()
		return nil, fmt.Errorf("emulator: %w", err)
	}
	return e, nil
}

// stateHint ends the errors about a saved state that cannot be used.
const stateHint = "the state is left as it is: repair it, or move it away to start from a seed"

// open prepares the data directory, the object store and the state: the
// saved one when the data directory has one, else the seed's.
func (e *Emulator) open() error {
	if err := e.openDataDir(); err != nil {
		return err
	}
	statePath := filepath.Join(e.dataDir, stateFile)
	var st *stateJSON
	if !e.removeDir {
		var err error
		if st, err = readState(statePath); err != nil {
			return fmt.Errorf("%w (%s)", err, stateHint)
		}
	}
	objDir := filepath.Join(e.dataDir, "objects")
	if err := e.initObjectSecret(st, statePath, objDir); err != nil {
		return err
	}
	if err := e.openStore(objDir); err != nil {
		return err
	}
	e.handler = e.newHandler()
	if st != nil {
		return e.resume(st, statePath, objDir)
	}
	return e.seedFresh(statePath)
}

// openDataDir sets the data directory: a temporary one (removed by Close)
// without Options.DataDir, else that one, created when missing and locked.
func (e *Emulator) openDataDir() error {
	if e.opts.DataDir == "" {
		d, err := os.MkdirTemp("", "orgfs-emulator-")
		if err != nil {
			return err
		}
		e.dataDir, e.removeDir = d, true
		return nil
	}
	if err := os.MkdirAll(e.opts.DataDir, 0o700); err != nil {
		return err
	}
	e.dataDir = e.opts.DataDir
	lock, err := lockDir(e.dataDir)
	if err != nil {
		return err
	}
	e.lock = lock
	return nil
}

// initObjectSecret sets the secret of the presigned URLs: the saved state's
// when there is one (st), else a new one, the objects of an earlier run
// (objDir) being removed.
func (e *Emulator) initObjectSecret(st *stateJSON, statePath, objDir string) error {
	if st == nil {
		// Objects of an earlier run are not referenced by this run's state.
		if err := os.RemoveAll(objDir); err != nil {
			return err
		}
		e.objSecret = make([]byte, 32)
		if _, err := rand.Read(e.objSecret); err != nil {
			return err
		}
		return nil
	}
	var err error
	if e.objSecret, err = objectSecret(st); err != nil {
		return fmt.Errorf("%s: %w (%s)", statePath, err, stateHint)
	}
	return nil
}

// openStore opens the object store on objDir, with faults of its own.
func (e *Emulator) openStore(objDir string) error {
	opts := e.opts
	e.objFaults = faults.New(opts.FaultRate, opts.FaultSeed+1)
	store, err := objstore.New(objstore.Options{
		Dir:           objDir,
		Secret:        e.objSecret,
		Now:           opts.Now,
		ObjectLatency: opts.ObjectLatency,
		StreamRate:    opts.StreamRate,
		Faults:        e.objFaults,
		Log:           opts.Log,
	})
	if err != nil {
		return fmt.Errorf("object store: %w", err)
	}
	e.store = store
	return nil
}

// resume restores the saved state st, tidies the objects against it,
// schedules the ZIPs that were not kept, and turns saving on.
func (e *Emulator) resume(st *stateJSON, statePath, objDir string) error {
	if err := e.restore(st); err != nil {
		return fmt.Errorf("%s: %w (%s)", statePath, err, stateHint)
	}
	keys, err := e.store.Keys()
	if err != nil {
		return err
	}
	e.mu.Lock()
	missing := e.tidyObjects(keys)
	for _, j := range e.jobs {
		if j.final == "" {
			e.buildLater(j) // its ZIP was not kept
		}
	}
	e.restored, e.persist = true, true
	e.mu.Unlock()
	log := e.log.WithFields(map[string]any{"state": statePath, "seed": st.Seed, "seeded_at": isoTime(st.SeededAt), "saved_at": isoTime(st.SavedAt)})
	if missing > 0 {
		log.Warnf("%d files have lost their content (objects missing from %s)", missing, objDir)
	}
	if e.opts.Seed != st.Seed {
		log.Infof("state restored; the seed %q is not applied (remove %s to start from it)", e.opts.Seed, statePath)
	} else {
		log.Info("state restored; the seed is not applied again")
	}
	return nil
}

// seedFresh applies the seed of the options and, when the state is kept,
// saves it at once and turns saving on.
func (e *Emulator) seedFresh(statePath string) error {
	seed := e.opts.Seed
	if err := e.seed(seed); err != nil {
		return fmt.Errorf("seed %s: %w", seed, err)
	}
	if seed == SeedBench {
		if err := e.seedBench(); err != nil {
			return fmt.Errorf("seed %s: %w", seed, err)
		}
	}
	e.mu.Lock()
	e.seededWith, e.seededAt = seed, e.now()
	e.mu.Unlock()
	if e.removeDir {
		return nil
	}
	if err := e.save(false); err != nil {
		return err
	}
	e.mu.Lock()
	e.persist = true
	e.mu.Unlock()
	e.log.WithField("state", statePath).Infof("no saved state: seeded %s; the state is kept in %s", seed, statePath)
	return nil
}

// Close waits for asynchronous removals, saves the state when it is kept,
// and deletes the data directory when New created it. The emulator must not
// be used afterwards.
func (e *Emulator) Close() error {
	e.net.close()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	persist := e.persist
	if e.saveTimer != nil {
		e.saveTimer.Stop() // a save under way finishes before the final one
		e.saveTimer = nil
	}
	e.mu.Unlock()
	e.background.Wait()
	var err error
	if persist {
		err = e.save(true)
	}
	if cerr := e.cleanup(); err == nil {
		err = cerr
	}
	return err
}

func (e *Emulator) cleanup() error {
	if e.lock != nil {
		e.lock.Close() // releases the lock
		e.lock = nil
	}
	if e.removeDir {
		return os.RemoveAll(e.dataDir)
	}
	return nil
}

// Restored reports whether the state was loaded from the data directory (the
// seed was not applied).
func (e *Emulator) Restored() bool { return e.restored }

// StateFile is the file the state is kept in; "" when it is not kept (no
// Options.DataDir).
func (e *Emulator) StateFile() string {
	if e.removeDir {
		return ""
	}
	return filepath.Join(e.dataDir, stateFile)
}

// Objects returns the object store behind the presigned URLs. Serve it on a
// listener of its own and tell it its address with SetBaseURL (Listen does both).
func (e *Emulator) Objects() *objstore.Store { return e.store }

// Handler returns the API handler, serving /organization-management/v1/...
// (every answer dated by the emulator's clock).
func (e *Emulator) Handler() http.Handler { return e.dated(e.handler) }

// DataDir is the directory holding the state and the objects.
func (e *Emulator) DataDir() string { return e.dataDir }

// Dialect is the dialect the emulator answers in.
func (e *Emulator) Dialect() Dialect { return e.dialect }

// StepDelay is the duration of one state-machine step.
func (e *Emulator) StepDelay() time.Duration { return e.step }

// newID returns a fresh id. Called with mu held.
func (e *Emulator) newID() int64 {
	e.nextID++
	return e.nextID
}

// orgByName finds an organization. Called with mu held.
func (e *Emulator) orgByName(name string) (*org, error) {
	for _, o := range e.orgs {
		if o.name == name {
			return o, nil
		}
	}
	return nil, fmt.Errorf("emulator: unknown organization %q", name)
}

// removeObjectsLater removes object keys and prefixes in the background
// (asynchronous deletion); Close waits for it. Called with mu held.
func (e *Emulator) removeObjectsLater(keys, prefixes []string) {
	if len(keys) == 0 && len(prefixes) == 0 || e.closed {
		return // after Close the data directory is no longer ours to tidy
	}
	e.background.Add(1)
	go func() {
		defer e.background.Done()
		for _, k := range keys {
			if err := e.store.Remove(k); err != nil {
				e.log.WithError(err).Warn("removing object")
			}
		}
		for _, p := range prefixes {
			if err := e.store.RemovePrefix(p); err != nil {
				e.log.WithError(err).Warn("removing objects")
			}
		}
	}()
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// newUUID returns a random version-4 UUID.
func newUUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// isoTime formats t as the service does: ISO 8601 in UTC with milliseconds.
func isoTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Now reads the emulator's clock.
func (e *Emulator) Now() time.Time { return e.now() }
