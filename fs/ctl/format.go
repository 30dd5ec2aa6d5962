package ctl

// The formats of the control files that programs read, orgfs's own commands
// among them (orgfs status, sync, unmount): a folder's result (Result), a
// line of uploads.json (Upload), stats (Stats); and how every control file
// shows a record (indented JSON and a newline) or a single value (one line).
//
// Locks: none.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/orgfs/orgfs/api"
)

// Result is a folder's result file: the outcome of its last write.
type Result struct {
	OK      bool      `json:"ok"`
	Code    int       `json:"code"`            // the service's client_code; 0 when refused before any request
	Errno   string    `json:"errno,omitempty"` // what the write returned, e.g. EBUSY
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`
	Record  any       `json:"record,omitempty"` // what the service answered, when it is a record worth keeping
}

// Upload is one line of .ctl/uploads.json.
type Upload struct {
	Path     string `json:"path"`
	State    string `json:"state"` // open, waiting, queued, uploading, retrying, failed, uploaded; "delete" for a deletion made offline, waiting for the service
	Size     int64  `json:"size"`
	Done     int64  `json:"done"`  // bytes sent by the upload in flight (or the last one)
	Total    int64  `json:"total"` // bytes of that upload
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
}

// Stats are the mount's counters: .ctl/stats, and the metrics.
type Stats struct {
	// Service is whether the service can be reached (api.Reachability):
	// online, or offline since when and why; ChangesWaiting counts the
	// files written and not on the service yet (pending and in flight) and
	// the deletions made offline.
	Service struct {
		Online         bool       `json:"online"`
		OfflineSince   *time.Time `json:"offline_since,omitempty"`
		OfflineReason  string     `json:"offline_reason,omitempty"`
		ChangesWaiting int        `json:"changes_waiting"`
	} `json:"service"`
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
		// Listings fetched by the listing read-ahead (--dir-read-ahead), and
		// how many of them a reader then asked for.
		ListingsAhead     int64 `json:"listings_ahead"`
		ListingsAheadRead int64 `json:"listings_ahead_read"`
	} `json:"cache"`
	Reads struct {
		RangeRequests int64 `json:"range_requests"`
		ReadAhead     int64 `json:"read_ahead_requests"`
		BytesFetched  int64 `json:"bytes_fetched"`
		BytesDirect   int64 `json:"bytes_past_cache"`
	} `json:"reads"`
	// Kernel counts what the kernel asked the daemon for files in storage
	// folders (lookups: also each entry of a readdirplus); what it answered
	// from what it keeps (entries, attributes, pages) is not counted.
	Kernel struct {
		Lookups  int64 `json:"lookups"`
		Getattrs int64 `json:"getattrs"`
		Opens    int64 `json:"opens"`
		Reads    int64 `json:"reads"`
		Writes   int64 `json:"writes"`
	} `json:"kernel"`
	// Passthrough is how reads of cached files are served: "on" (FUSE
	// passthrough: the kernel reads the cache's files, and a read asks the
	// daemon nothing) or "off: " and why; opens counts the opens served so.
	Passthrough struct {
		Mode  string `json:"mode"`
		Opens int64  `json:"opens"`
	} `json:"passthrough"`
	Bundles struct {
		Jobs      int64 `json:"jobs"`
		Completed int64 `json:"completed"`
		Failed    int64 `json:"failed"`
		Aborted   int64 `json:"aborted"`
		Files     int64 `json:"files"`
		Bytes     int64 `json:"bytes"`    // of the completed bundles' ZIPs
		Disabled  bool  `json:"disabled"` // the organization cannot bundle (4710)
		// Where the completed bundles' time went, in seconds summed over
		// them (cache.BundleStats).
		JobSeconds      float64 `json:"job_seconds"`
		TransferSeconds float64 `json:"transfer_seconds"`
		UnpackSeconds   float64 `json:"unpack_seconds"`
	} `json:"bundles"`
	Uploads struct {
		Pending     int   `json:"pending"`
		InFlight    int   `json:"in_flight"`
		Failed      int   `json:"failed"`
		Uploaded    int64 `json:"uploaded"`
		Bytes       int64 `json:"bytes"`
		StagedBytes int64 `json:"staged_bytes"`
		Conflicts   int64 `json:"conflicts"` // files that went up as conflict copies beside another writer's version
	} `json:"uploads"`
	// Pins: what is kept on this desk (orgfs pin), all pins together: the
	// files they cover and those whole in the cache, their bytes, the files
	// that failed.
	Pins struct {
		Pins      int   `json:"pins"`
		Files     int   `json:"files"`
		FilesDone int   `json:"files_done"`
		Bytes     int64 `json:"bytes"`
		BytesDone int64 `json:"bytes_done"`
		Failed    int   `json:"failed"`
	} `json:"pins"`
}

// jsonOut is a record as control files show it: indented JSON and a newline.
func jsonOut(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// lineOut is a single value as control files show it: one line.
func lineOut(s string) []byte { return []byte(s + "\n") }

// jsonRead reads a record with fetch and shows it as JSON.
func jsonRead[T any](fetch func(ctx context.Context) (T, error)) func(ctx context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		v, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		return jsonOut(v)
	}
}
