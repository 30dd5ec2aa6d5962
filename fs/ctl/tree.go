package ctl

// The control tree of one mount (Tree: its dependencies and state), and its
// top folder .ctl/: README, usage, software, seats, stats, refresh, result,
// and the folders below (machines/, images/, logs/, downloads/; the upload
// queue's files are in uploads.go).
//
// Locks: Tree.mu guards the tree's maps, for memory only (docs/ARCHITECTURE.md).

import (
	"context"
	_ "embed"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/fs"
)

// Deps are what the control tree uses.
type Deps struct {
	// Mount is the data tree the control tree is shown in: its attributes,
	// read-only state and statfs are the control tree's too.
	Mount *fs.FS
	// Store holds the caches the control tree shows (the computer list,
	// the upload queue, the counters) and drops (refresh).
	Store *cache.Store
	// Admin is the service's management interface (required).
	Admin Admin
	Log   logrus.FieldLogger
}

// Options shape the control tree.
type Options struct {
	// DirCacheTime is how long the values control files show are kept
	// (like listings); default 30s.
	DirCacheTime time.Duration
}

// Tree is the control tree of one mount: .ctl/ and everything below it.
type Tree struct {
	// Dependencies
	mount *fs.FS
	store *cache.Store
	admin Admin
	log   logrus.FieldLogger

	// Constants
	opts Options
	root *dirNode // .ctl/ itself

	// Mutable state
	gen     atomic.Uint64 // bumped by refresh: every value is read again
	memo    *memo
	mu      sync.Mutex
	folders map[string]*folderState // guarded by mu; by path, so results outlive the kernel's inodes
	links   map[int64]string        // guarded by mu; the last access link per computer
	jobs    map[int64]time.Time     // guarded by mu; download jobs this mount started
}

// New makes the control tree of a mount. Its root (Root) is given to the
// mount as fs.MountOptions.Ctl.
func New(deps Deps, opts Options) *Tree {
	if opts.DirCacheTime <= 0 {
		opts.DirCacheTime = 30 * time.Second
	}
	t := &Tree{
		mount: deps.Mount, store: deps.Store, admin: deps.Admin, log: deps.Log,
		opts:    opts,
		memo:    &memo{ttl: opts.DirCacheTime, m: map[string]memoEntry{}},
		folders: map[string]*folderState{},
		links:   map[int64]string{},
		jobs:    map[int64]time.Time{},
	}
	t.root = t.newRoot()
	return t
}

// Root is .ctl/, the node the mount shows in its root.
func (t *Tree) Root() gofs.InodeEmbedder { return t.root }

// folder returns the state of the control folder at path.
func (t *Tree) folder(path string) *folderState {
	t.mu.Lock()
	defer t.mu.Unlock()
	fo := t.folders[path]
	if fo == nil {
		fo = &folderState{path: path}
		t.folders[path] = fo
	}
	return fo
}

// refresh drops every value read: the next read of any file asks the service.
func (t *Tree) refresh() {
	t.gen.Add(1)
	t.memo.drop()
}

//go:embed readme.txt
var readme []byte

// newRoot makes .ctl/.
func (t *Tree) newRoot() *dirNode {
	const dir = fs.CtlName
	refresh := &action{name: "refresh", anything: true, parse: func(string) (step, error) {
		return step{what: "every cached listing and value", run: func(context.Context) (any, error) {
			t.Refresh()
			return nil, nil
		}}, nil
	}}
	es := []entry{
		t.volatileEntry(dir, "README", 0o444, func(context.Context) ([]byte, error) { return readme, nil }, nil),
		t.fileEntry(dir, "usage", 0o444, jsonRead(t.admin.Usage), nil),
		t.fileEntry(dir, "software", 0o444, jsonRead(t.admin.Software), nil),
		t.volatileEntry(dir, "seats", 0o644, jsonRead(t.seatList), t.seatsAction()),
		t.dirEntry(dir, "machines", t.machinesList, nil),
		t.dirEntry(dir, "images", t.imagesList, nil),
		t.dirEntry(dir, "logs", t.logsList(dir+"/logs", api.LogsRequest{}), nil),
		t.dirEntry(dir, "downloads", t.downloadsList, t.downloadFind),
		t.volatileEntry(dir, "uploads", 0o644, t.uploadsRead, t.uploadsAction()),
		t.volatileEntry(dir, "uploads.json", 0o444, jsonRead(t.uploadsJSON), nil),
		t.volatileEntry(dir, "pins", 0o644, t.pinsRead, t.pinsAction()),
		t.volatileEntry(dir, "pins.json", 0o444, jsonRead(t.pinsJSON), nil),
		t.volatileEntry(dir, "conflicts", 0o444, t.conflictsRead, nil),
		t.volatileEntry(dir, "conflicts.json", 0o444, jsonRead(t.conflictsJSON), nil),
		t.fileEntry(dir, "sync", 0o200, nil, t.syncAction()),
		t.volatileEntry(dir, "stats", 0o444, jsonRead(func(context.Context) (*Stats, error) { return t.Stats(), nil }), nil),
		t.fileEntry(dir, "refresh", 0o200, nil, refresh),
		t.resultEntry(dir),
	}
	return &dirNode{node: node{t: t}, path: dir, list: func(context.Context) ([]entry, error) { return es, nil }}
}

// Refresh drops every cached listing and control value (SIGHUP, .ctl/refresh).
func (t *Tree) Refresh() {
	t.store.Dirs.DropAll()
	t.refresh()
}

// changed is called after every action: every value may have moved (the
// computer list with its statuses, images, balances, today's log), so every
// control file is read again at its next read.
func (t *Tree) changed() {
	t.store.Dirs.DropSeats()
	t.refresh()
}

// seatList is every computer, every page, from the listing cache that
// computers/ uses too; while one of them changes state it is a second old at
// most, so that scripts waiting for a state see it when it comes.
func (t *Tree) seatList(ctx context.Context) ([]api.Seat, error) {
	seats, err := t.store.Dirs.Seats(ctx)
	if err == nil && seatsMoving(seats) {
		seats, err = t.store.Dirs.SeatsWithin(ctx, briefTTL)
	}
	if seats == nil && err == nil {
		seats = []api.Seat{}
	}
	return seats, err
}

// seatsMoving reports whether a computer is between off and running.
func seatsMoving(seats []api.Seat) bool {
	for _, s := range seats {
		switch s.FriendlyStatus {
		case api.SeatOff, api.SeatReady:
		default:
			return true
		}
	}
	return false
}

// seatsAction is a write to .ctl/seats: a JSON body for POST /seats.
func (t *Tree) seatsAction() *action {
	return &action{name: "seats create", json: true, parse: func(in string) (step, error) {
		var req api.CreateSeatsRequest
		if err := strictJSON(in, &req); err != nil {
			return step{}, err
		}
		switch {
		case req.SeatPlanID <= 0:
			return step{}, refuse(syscall.EINVAL, "seat_plan_id must be a positive plan id")
		case req.Quantity <= 0:
			return step{}, refuse(syscall.EINVAL, "quantity must be a positive number of computers")
		}
		return step{what: strconv.Itoa(req.Quantity) + " of plan " + strconv.FormatInt(req.SeatPlanID, 10), run: func(ctx context.Context) (any, error) {
			defer t.changed()
			res, err := t.admin.CreateSeats(ctx, req)
			if err != nil {
				return nil, err
			}
			return res.Seats, nil
		}}, nil
	}}
}

// strictJSON decodes one JSON object into v, refusing anything else, unknown
// fields, wrong types and trailing data (EINVAL with the reason).
func strictJSON(in string, v any) error {
	if !strings.HasPrefix(strings.TrimSpace(in), "{") {
		return refuse(syscall.EINVAL, "a JSON object {...} expected")
	}
	dec := json.NewDecoder(strings.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return refuse(syscall.EINVAL, "not the JSON expected: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return refuse(syscall.EINVAL, "one JSON object expected, more follows")
	}
	return nil
}

// Stats returns the mount's counters now.
func (t *Tree) Stats() *Stats {
	var s Stats
	r := t.admin.Reachability()
	s.Service.Online = r.Online
	if !r.Online {
		s.Service.OfflineSince, s.Service.OfflineReason = &r.Since, r.Reason
	}
	as := t.admin.Stats()
	s.Requests, s.Errors, s.BytesUp, s.BytesDown = as.Ops, as.Errors, as.BytesUploaded, as.BytesDownloaded
	if t.store.Content != nil {
		cs := t.store.Content.Stats()
		s.Cache.Bytes, s.Cache.MaxBytes, s.Cache.Files, s.Cache.Evictions = cs.Used, cs.MaxSize, cs.Entries, cs.Evictions
	}
	ds := t.store.Dirs.Stats()
	s.Cache.ListingsAhead, s.Cache.ListingsAheadRead = ds.Ahead, ds.AheadRead
	if total := ds.Hits + ds.Listings + ds.SeatLists; total > 0 {
		s.Cache.HitRate = float64(ds.Hits) / float64(total)
	}
	if t.store.Fetcher != nil {
		fst := t.store.Fetcher.Stats()
		s.Reads.RangeRequests, s.Reads.ReadAhead, s.Reads.BytesFetched, s.Reads.BytesDirect = fst.RangeRequests, fst.AheadFetches, fst.BytesFetched, fst.BytesDirect
	}
	if t.mount != nil {
		k := t.mount.KernelRequests()
		s.Kernel.Lookups, s.Kernel.Getattrs, s.Kernel.Opens, s.Kernel.Reads, s.Kernel.Writes = k.Lookups, k.Getattrs, k.Opens, k.Reads, k.Writes
		s.Passthrough.Mode, s.Passthrough.Opens = t.mount.PassthroughMode()
	}
	if t.store.Bundler != nil {
		bs := t.store.Bundler.Stats()
		s.Bundles.Jobs, s.Bundles.Completed, s.Bundles.Failed, s.Bundles.Aborted, s.Bundles.Files, s.Bundles.Disabled =
			bs.Jobs, bs.Completed, bs.Failed, bs.Aborted, bs.Files, bs.Disabled
		s.Bundles.Bytes = bs.Bytes
		s.Bundles.JobSeconds, s.Bundles.TransferSeconds, s.Bundles.UnpackSeconds = bs.Job.Seconds(), bs.Transfer.Seconds(), bs.Unpack.Seconds()
	}
	if ss, ok := t.store.UploadStats(); ok {
		s.Uploads.Pending, s.Uploads.InFlight, s.Uploads.Failed = ss.Pending, ss.Uploading, ss.Failed
		s.Uploads.Uploaded, s.Uploads.Bytes, s.Uploads.StagedBytes = ss.Uploaded, ss.Bytes, ss.StagedBytes
		s.Uploads.Conflicts = ss.Conflicts
		s.Service.ChangesWaiting = ss.Pending + ss.Uploading + ss.Journaled
	}
	for _, p := range t.pinList() {
		s.Pins.Pins++
		s.Pins.Files, s.Pins.FilesDone, s.Pins.Failed = s.Pins.Files+p.Files, s.Pins.FilesDone+p.FilesDone, s.Pins.Failed+len(p.Failed)
		s.Pins.Bytes, s.Pins.BytesDone = s.Pins.Bytes+p.Bytes, s.Pins.BytesDone+p.BytesDone
	}
	return &s
}
