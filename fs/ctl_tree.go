package fs

// The top of the control tree: .ctl/ and the files that are not about one
// computer, image or day (usage, software, seats, downloads).
//
// Locks: none of its own (see ctl.go).

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
)

// Admin is what .ctl asks of the service: the management methods of
// *api.Client.
type Admin interface {
	Usage(ctx context.Context) (*api.AccountUsage, error)
	MachineUsage(ctx context.Context, machineID int64) (*api.MachineUsage, error)
	AssignUsage(ctx context.Context, machineID, minutes int64) (*api.AssignResult, error)
	RetrieveUsage(ctx context.Context, machineID, minutes int64) (*api.RetrieveResult, error)
	Software(ctx context.Context) (*api.SoftwareCatalog, error)

	Seats(ctx context.Context, query string) iter.Seq2[api.Seat, error]
	CreateSeats(ctx context.Context, req api.CreateSeatsRequest) (*api.CreateSeatsResult, error)
	StartMachine(ctx context.Context, machineID int64, opts api.StartOptions) error
	StopMachine(ctx context.Context, machineID int64, gracefully bool) error
	ResetMachine(ctx context.Context, machineID int64) error
	AccessLink(ctx context.Context, machineID int64, expiresInMinutes int) (*api.AccessLink, error)
	MachineTypes(ctx context.Context, machineID int64) ([]api.MachineType, error)
	SetMachineType(ctx context.Context, machineID, machineTypeID int64) error
	ListContent(ctx context.Context, machineID int64, path string) ([]api.ContentEntry, error)
	MachineFiles(ctx context.Context, machineID int64, req api.ListFilesRequest) *api.FileList
	SharedFiles(ctx context.Context, req api.ListFilesRequest) *api.FileList
	Recordings(ctx context.Context, req api.ListFilesRequest) *api.FileList

	Images(ctx context.Context, query string) iter.Seq2[api.Image, error]
	CreateImage(ctx context.Context, machineID int64, name string) (*api.Image, error)
	InstallImage(ctx context.Context, req api.InstallImageRequest) (*api.Image, error)
	AssignImage(ctx context.Context, imageID int64, machineIDs []int64) error
	DeleteImage(ctx context.Context, id int64) error

	UserActionLogs(ctx context.Context, req api.LogsRequest) (*api.Logs, error)

	Bundle(ctx context.Context, req api.BundleRequest) (io.ReadCloser, *api.DownloadJob, error)
	DownloadStatus(ctx context.Context, id int64, generateURL bool) (*api.DownloadJob, error)
	AbortDownload(ctx context.Context, id int64) error

	Stats() api.Stats
}

var _ Admin = (*api.Client)(nil)

// ctlName is the control tree's folder in the mount's root.
const ctlName = ".ctl"

//go:embed ctl_readme.txt
var ctlReadme []byte

// ctlRoot is .ctl/.
func (f *FS) ctlRoot() gofs.InodeEmbedder {
	const dir = ctlName
	refresh := &ctlAction{name: "refresh", anything: true, parse: func(string) (ctlRun, error) {
		return ctlRun{what: "every cached listing and value", run: func(context.Context) (any, error) {
			f.Refresh()
			return nil, nil
		}}, nil
	}}
	es := []ctlEntry{
		f.ctlLiveEntry(dir, "README", 0o444, func(context.Context) ([]byte, error) { return ctlReadme, nil }, nil),
		f.ctlFileEntry(dir, "usage", 0o444, jsonRead(f.Admin.Usage), nil),
		f.ctlFileEntry(dir, "software", 0o444, jsonRead(f.Admin.Software), nil),
		f.ctlLiveEntry(dir, "seats", 0o644, jsonRead(f.seatList), f.seatsAction()),
		f.ctlDirEntry(dir, "machines", f.machinesList, nil),
		f.ctlDirEntry(dir, "images", f.imagesList, nil),
		f.ctlDirEntry(dir, "logs", f.logsList(dir+"/logs", api.LogsRequest{}), nil),
		f.ctlDirEntry(dir, "downloads", f.downloadsList, f.downloadFind),
		f.ctlLiveEntry(dir, "uploads", 0o644, f.uploadsRead, f.uploadsAction()),
		f.ctlLiveEntry(dir, "uploads.json", 0o444, jsonRead(f.uploadsJSON), nil),
		f.ctlFileEntry(dir, "sync", 0o200, nil, f.syncAction()),
		f.ctlLiveEntry(dir, "stats", 0o444, jsonRead(func(context.Context) (*Stats, error) { return f.Stats(), nil }), nil),
		f.ctlFileEntry(dir, "refresh", 0o200, nil, refresh),
		f.ctlResultEntry(dir),
	}
	return &ctlDir{node: node{fsys: f}, path: dir, list: func(context.Context) ([]ctlEntry, error) { return es, nil }}
}

// Refresh drops every cached listing and control value (SIGHUP, .ctl/refresh).
func (f *FS) Refresh() {
	f.Dirs.DropAll()
	f.ctl.refresh()
}

// changed is called after every action: every value may have moved (the
// computer list with its statuses, images, balances, today's log), so every
// control file is read again at its next read.
func (f *FS) changed() {
	f.Dirs.DropSeats()
	f.ctl.refresh()
}

// seatList is every computer, every page, from the listing cache that
// computers/ uses too; while one of them changes state it is a second old at
// most, so that scripts waiting for a state see it when it comes.
func (f *FS) seatList(ctx context.Context) ([]api.Seat, error) {
	seats, err := f.Dirs.Seats(ctx)
	if err == nil && seatsMoving(seats) {
		seats, err = f.Dirs.SeatsWithin(ctx, briefTTL)
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
func (f *FS) seatsAction() *ctlAction {
	return &ctlAction{name: "seats create", json: true, parse: func(in string) (ctlRun, error) {
		var req api.CreateSeatsRequest
		if err := strictJSON(in, &req); err != nil {
			return ctlRun{}, err
		}
		switch {
		case req.SeatPlanID <= 0:
			return ctlRun{}, refuse(syscall.EINVAL, "seat_plan_id must be a positive plan id")
		case req.Quantity <= 0:
			return ctlRun{}, refuse(syscall.EINVAL, "quantity must be a positive number of computers")
		}
		return ctlRun{what: strconv.Itoa(req.Quantity) + " of plan " + strconv.FormatInt(req.SeatPlanID, 10), run: func(ctx context.Context) (any, error) {
			defer f.changed()
			res, err := f.Admin.CreateSeats(ctx, req)
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

// Stats are the mount's counters: .ctl/stats, and the metrics.
type Stats struct {
	Requests  map[string]api.OpStats `json:"requests"` // by endpoint
	Errors    map[string]int64       `json:"errors"`   // failed calls by client_code
	BytesUp   int64                  `json:"bytes_up"`
	BytesDown int64                  `json:"bytes_down"`
	Cache     struct {
		Bytes     int64   `json:"bytes"`
		MaxBytes  int64   `json:"max_bytes"`
		Files     int     `json:"files"`
		Evictions int64   `json:"evictions"`
		HitRate   float64 `json:"listing_hit_rate"` // listings answered from the cache
	} `json:"cache"`
	Reads struct {
		RangeRequests int64 `json:"range_requests"`
		ReadAhead     int64 `json:"read_ahead_requests"`
		BytesFetched  int64 `json:"bytes_fetched"`
		BytesDirect   int64 `json:"bytes_past_cache"`
	} `json:"reads"`
	Bundles struct {
		Jobs      int64 `json:"jobs"`
		Completed int64 `json:"completed"`
		Failed    int64 `json:"failed"`
		Aborted   int64 `json:"aborted"`
		Files     int64 `json:"files"`
		Disabled  bool  `json:"disabled"` // the organization cannot bundle (4710)
	} `json:"bundles"`
	Uploads struct {
		Pending     int   `json:"pending"`
		InFlight    int   `json:"in_flight"`
		Failed      int   `json:"failed"`
		Uploaded    int64 `json:"uploaded"`
		Bytes       int64 `json:"bytes"`
		StagedBytes int64 `json:"staged_bytes"`
	} `json:"uploads"`
}

// Stats returns the mount's counters now.
func (f *FS) Stats() *Stats {
	var s Stats
	as := f.Admin.Stats()
	s.Requests, s.Errors, s.BytesUp, s.BytesDown = as.Ops, as.Errors, as.BytesUploaded, as.BytesDownloaded
	if f.Content != nil {
		cs := f.Content.Stats()
		s.Cache.Bytes, s.Cache.MaxBytes, s.Cache.Files, s.Cache.Evictions = cs.Used, cs.MaxSize, cs.Entries, cs.Evictions
	}
	ds := f.Dirs.Stats()
	if total := ds.Hits + ds.Listings + ds.SeatLists; total > 0 {
		s.Cache.HitRate = float64(ds.Hits) / float64(total)
	}
	if f.Fetcher != nil {
		fs := f.Fetcher.Stats()
		s.Reads.RangeRequests, s.Reads.ReadAhead, s.Reads.BytesFetched, s.Reads.BytesDirect = fs.RangeRequests, fs.AheadFetches, fs.BytesFetched, fs.BytesDirect
	}
	if f.Bundler != nil {
		bs := f.Bundler.Stats()
		s.Bundles.Jobs, s.Bundles.Completed, s.Bundles.Failed, s.Bundles.Aborted, s.Bundles.Files, s.Bundles.Disabled =
			bs.Jobs, bs.Completed, bs.Failed, bs.Aborted, bs.Files, bs.Disabled
	}
	if f.Staging != nil {
		ss := f.Staging.Stats()
		s.Uploads.Pending, s.Uploads.InFlight, s.Uploads.Failed = ss.Pending, ss.Uploading, ss.Failed
		s.Uploads.Uploaded, s.Uploads.Bytes, s.Uploads.StagedBytes = ss.Uploaded, ss.Bytes, ss.StagedBytes
	}
	return &s
}

// uploadsRead is .ctl/uploads: one line per staged file.
func (f *FS) uploadsRead(context.Context) ([]byte, error) {
	var b bytes.Buffer
	if f.Staging != nil {
		for _, e := range f.Staging.Entries() {
			b.WriteString(e.String())
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// Upload is one line of .ctl/uploads.json.
type Upload struct {
	Path     string `json:"path"`
	State    string `json:"state"` // open, waiting, queued, uploading, retrying, failed, uploaded
	Size     int64  `json:"size"`
	Done     int64  `json:"done"`  // bytes sent by the upload in flight (or the last one)
	Total    int64  `json:"total"` // bytes of that upload
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
}

// uploadsJSON is .ctl/uploads.json: the queue for programs (orgfs status).
func (f *FS) uploadsJSON(context.Context) ([]Upload, error) {
	out := []Upload{}
	if f.Staging == nil {
		return out, nil
	}
	for _, e := range f.Staging.Entries() {
		p := e.Path
		if p == "" {
			p = e.Target.String()
		}
		out = append(out, Upload{Path: p, State: e.State, Size: e.Size, Done: e.Done, Total: e.Total, Attempts: e.Attempts, Error: e.Err})
	}
	return out, nil
}

// syncAction is a write to .ctl/sync: paths (one a line, or none for all);
// it returns once everything written under them before is on the service,
// or with EIO and the failures in result (orgfs sync).
func (f *FS) syncAction() *ctlAction {
	return &ctlAction{name: "sync", anything: true, parse: func(in string) (ctlRun, error) {
		var paths []string
		for _, l := range strings.Split(in, "\n") {
			if l = strings.Trim(strings.TrimSpace(l), "/"); l != "" {
				paths = append(paths, l)
			}
		}
		what := "everything"
		if len(paths) > 0 {
			what = strings.Join(paths, ", ")
		}
		return ctlRun{what: what, run: func(ctx context.Context) (any, error) {
			if f.Staging == nil {
				return map[string]int{"files": 0}, nil
			}
			n, err := f.Staging.FlushAll(ctx, paths)
			if err != nil {
				return nil, refuse(syscall.EIO, "not on the service: %v", err)
			}
			return map[string]int{"files": n}, nil
		}}, nil
	}}
}

// uploadsAction is a write to .ctl/uploads: "retry", or "discard PATH" for
// a failed upload.
func (f *FS) uploadsAction() *ctlAction {
	return &ctlAction{name: "uploads", parse: func(in string) (ctlRun, error) {
		word, rest, _ := strings.Cut(in, " ")
		switch {
		case f.Staging == nil:
			return ctlRun{}, refuse(syscall.EROFS, "the mount is read-only: nothing is uploaded")
		case in == "retry":
			return ctlRun{what: "retry", run: func(context.Context) (any, error) {
				f.Staging.Retry()
				return nil, nil
			}}, nil
		case word == "discard" && strings.TrimSpace(rest) != "":
			path := strings.TrimSpace(rest)
			return ctlRun{what: "discard " + path, run: func(context.Context) (any, error) {
				t, err := f.Staging.Discard(path)
				if err != nil {
					return nil, refuse(syscall.ENOENT, "%v (only a failed upload can be discarded; see .ctl/uploads)", err)
				}
				f.Dirs.Drop(cache.DirKey{Area: t.Area, ID: t.ParentID})
				f.forgetPath(path)
				return nil, nil
			}}, nil
		}
		return ctlRun{}, refuse(syscall.EINVAL, "write retry, or discard PATH (a failed upload, as listed)")
	}}
}

// downloadsList is .ctl/downloads/: the download jobs this mount started.
func (f *FS) downloadsList(context.Context) ([]ctlEntry, error) {
	f.ctl.mu.Lock()
	ids := make([]int64, 0, len(f.ctl.jobs))
	for id := range f.ctl.jobs {
		ids = append(ids, id)
	}
	f.ctl.mu.Unlock()
	slices.Sort(ids)
	es := make([]ctlEntry, 0, len(ids)+1)
	for _, id := range ids {
		es = append(es, f.downloadEntry(id))
	}
	return append(es, f.ctlResultEntry(ctlName+"/downloads")), nil
}

// downloadFind answers any job id of the organization.
func (f *FS) downloadFind(ctx context.Context, name string) (*ctlEntry, error) {
	id, err := strconv.ParseInt(name, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != name {
		return nil, nil
	}
	if _, err := f.Admin.DownloadStatus(ctx, id, false); err != nil {
		return nil, err
	}
	e := f.downloadEntry(id)
	return &e, nil
}

// downloadEntry is downloads/<id>: the job's record (with its presigned
// URL, hence 0600); write abort to cancel it.
func (f *FS) downloadEntry(id int64) ctlEntry {
	const dir = ctlName + "/downloads"
	return f.ctlFileEntry(dir, strconv.FormatInt(id, 10), 0o600, jsonRead(func(ctx context.Context) (*api.DownloadJob, error) {
		return f.Admin.DownloadStatus(ctx, id, true)
	}), f.downloadEntryAction(id))
}

// downloadEntryAction is a write to downloads/<id>: the word abort.
func (f *FS) downloadEntryAction(id int64) *ctlAction {
	return &ctlAction{name: "abort", parse: func(in string) (ctlRun, error) {
		if in != "abort" {
			return ctlRun{}, refuse(syscall.EINVAL, "write abort to cancel download %d", id)
		}
		return ctlRun{what: "download " + strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			return nil, f.Admin.AbortDownload(ctx, id)
		}}, nil
	}}
}

// noteJob remembers a download job this mount started, for downloads/.
func (f *FS) noteJob(id int64) {
	f.ctl.mu.Lock()
	f.ctl.jobs[id] = time.Now()
	f.ctl.mu.Unlock()
}
