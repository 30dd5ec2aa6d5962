package emulator

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Every type in this file is guarded by Emulator.mu (except upload.mu).

// user is a person of an organization: owner of files and computers, author of
// action logs.
type user struct {
	intID int64  // user_id in action logs
	uuid  string // user.id in records
	email string
	name  string
}

// org is one organization (team).
type org struct {
	name     string // "org-a"
	key      string // API key
	secret   string // API secret
	features map[string]bool
	admin    *user   // the API key acts as this user
	users    []*user // admin first
	region   string  // computers' region
	storage  string  // files' storage region

	usageMinutes int64        // team balance
	machineType  *machineType // friendly name used for the account usage
	typeIDs      []int64      // machine types available to its computers

	shared     *area
	recordings *area
}

const featureMultiDownload = "multiple_file_download"

// areaKind tells the three storage areas apart.
type areaKind int

const (
	areaShared areaKind = iota
	areaMachine
	areaRecordings
)

// area is a storage area: the shared storage, one computer's storage, or the
// session recordings.
type area struct {
	kind      areaKind
	org       *org
	machineID int64 // computer areas
	root      *node
	quota     int64 // bytes
	used      int64 // bytes of completed files
}

// objectKind is object_type.
type objectKind int

const (
	kindRoot objectKind = iota
	kindDir
	kindFile
)

func (k objectKind) String() string { return [...]string{"root", "directory", "file"}[k] }

// node is a root, a directory, a file, or an incomplete upload (a file node
// with up != nil && !up.done, absent from its parent's children).
type node struct {
	id          int64
	org         *org
	area        *area
	parent      *node // nil for roots
	name        string
	kind        objectKind
	size        int64
	contentType string
	modified    time.Time
	user        *user // nil: none
	uid         string
	objKey      string           // content of a completed file
	machineID   int64            // 0: null (shared storage, recordings root)
	children    map[string]*node // roots and directories: completed entries by name
	deleted     bool
	up          *upload // files created by POST /files
}

// completed reports whether n is listed (not an incomplete upload, not deleted).
func (n *node) completed() bool {
	return !n.deleted && (n.up == nil || n.up.done)
}

// path is the full path of n in its area: "/" for the root, "/a/b" below it.
func (n *node) path() string {
	if n.parent == nil {
		return "/"
	}
	var parts []string
	for p := n; p.parent != nil; p = p.parent {
		parts = append(parts, p.name)
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return "/" + strings.Join(parts, "/")
}

// sortedChildren lists the completed children: directories first, then by
// name (byte order), then by id.
func (n *node) sortedChildren() []*node {
	out := make([]*node, 0, len(n.children))
	for _, c := range n.children {
		out = append(out, c)
	}
	sortNodes(out)
	return out
}

func sortNodes(ns []*node) {
	sort.Slice(ns, func(i, j int) bool {
		a, b := ns[i], ns[j]
		if (a.kind == kindFile) != (b.kind == kindFile) {
			return a.kind != kindFile
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.id < b.id
	})
}

// upload is the multipart state of a file created by POST /files.
type upload struct {
	mu sync.Mutex // serializes completes of this upload; taken before Emulator.mu

	declared  int64 // size announced at creation
	chunk     int64 // bytes per part
	parts     int
	overwrite bool
	done      bool     // completed (guarded by Emulator.mu)
	etags     []string // the parts of the successful complete, for idempotent repeats
}

// partKey is the object key of an upload part.
func partKey(id int64, n int) string { return "uploads/" + itoa(id) + "/" + itoa(int64(n)) }

// partPrefix is the prefix of every part of an upload.
func partPrefix(id int64) string { return "uploads/" + itoa(id) + "/" }

// fileKey is the object key of a completed file's content.
func fileKey(id int64) string { return "files/" + itoa(id) }

// zipKey is the object key of a download job's ZIP.
func zipKey(id int64) string { return "zips/" + itoa(id) + ".zip" }

// step is a scheduled transition of a state machine.
type step struct {
	at     time.Time
	status string
}

// Computer (friendly) states.
const (
	stOff              = "off"
	stCreating         = "creating"
	stTurningOn        = "turning_on"
	stReady            = "ready"
	stTurningOff       = "turning_off"
	stInstalling       = "installing"
	stGracefulStopping = "graceful_stopping"
)

// permissions of a computer.
type permissions struct {
	PublicInternetAccess              bool `json:"public_internet_access"`
	CanDownloadFromServiceWorkstation bool `json:"can_download_from_service_workstation"`
	AnalyticsCollectionEnabled        bool `json:"analytics_collection_enabled"`
	ClipboardEnabled                  bool `json:"clipboard_enabled"`
	ScreenRecordingEnabled            bool `json:"screen_recording_enabled"`
	InputRecordingEnabled             bool `json:"input_recording_enabled"`
}

func defaultPermissions() permissions {
	return permissions{PublicInternetAccess: true, CanDownloadFromServiceWorkstation: true, ClipboardEnabled: true}
}

// seat is a computer (seat and machine share the id).
type seat struct {
	id     int64
	org    *org
	name   string
	status string // friendly_status as of the last advance
	steps  []step // scheduled transitions; none: the state holds
	plan   *plan
	diskGB int64
	area   *area // the computer's storage

	remainingUsage int64 // minutes assigned to the computer
	depositedUsage int64
	usageSource    string // "machine" or "team_balance"
	networkCredit  int64
	autoStop       int64

	assigned      *image // assigned image, nil when none
	installImage  bool   // the assigned image is installed on the next start
	hasDiskImage  bool   // it has run at least once: an image can be made from it
	creatingImage *image // image being created from it (pending/building)

	perms        permissions
	user         *user
	region       string
	machineType  *machineType
	lastSession  time.Time // zero: never
	task         *task     // latest task, nil when none
	liveRevision int       // bumped by reset (the live file system is regenerated)
	created      time.Time
}

// advance applies the transitions due at now.
func (s *seat) advance(now time.Time) {
	for len(s.steps) > 0 && !now.Before(s.steps[0].at) {
		st := s.steps[0]
		s.steps = s.steps[1:]
		s.status = st.status
		if st.status == stReady {
			s.hasDiskImage = true
			s.installImage = false
			s.lastSession = st.at
		}
	}
}

// schedule replaces the pending transitions: the computer is in first now, and
// then in each of next, one step apart.
func (s *seat) schedule(now time.Time, stepDelay time.Duration, first string, next ...string) {
	s.status = first
	s.steps = nil
	for i, st := range next {
		s.steps = append(s.steps, step{at: now.Add(time.Duration(i+1) * stepDelay), status: st})
	}
}

// Image states.
const (
	imgPending   = "pending"
	imgBuilding  = "building"
	imgAvailable = "available"
	imgFailed    = "failed"
)

// image is an organization image (template).
type image struct {
	id       int64
	org      *org
	name     string
	sizeGB   float64
	status   string
	steps    []step
	source   string // "pre_installation" or "seat"
	created  time.Time
	updated  time.Time
	software []*software
	fromSeat *seat
	deleted  bool
}

func (im *image) advance(now time.Time) {
	for len(im.steps) > 0 && !now.Before(im.steps[0].at) {
		st := im.steps[0]
		im.steps = im.steps[1:]
		im.status = st.status
		im.updated = st.at
	}
}

// inProgress reports whether the image is still being created.
func (im *image) inProgress() bool {
	return !im.deleted && (im.status == imgPending || im.status == imgBuilding)
}

// Download job states.
const (
	jobPending    = "pending"
	jobProcessing = "processing"
	jobUploaded   = "uploaded"
	jobFailed     = "failed"
	jobCancelled  = "cancelled"
)

// jobKind tells what a job bundles.
type jobKind int

const (
	jobDirectory jobKind = iota
	jobFiles
	jobTask
)

// job is a download job (a ZIP bundle).
type job struct {
	id      int64
	org     *org
	kind    jobKind
	dirID   int64
	fileIDs []int64
	taskID  int64
	name    string // ZIP file name
	size    int64  // total bytes of the files
	created time.Time
	expires time.Time
	final   string // uploaded, failed or cancelled once reached; "" before
	zipSize int64
	bg      chan struct{} // closed when the ZIP built in the background (buildLater) is done
	built   *zipBuild     // that build's outcome, once bg is closed
}

// zipBuild is the outcome of a job's ZIP built in the background.
type zipBuild struct {
	size, zipSize int64
	err           error
}

// status is the job's state at now: final states stick; before, pending for a
// step, then processing (also while the ZIP is being built).
// The ZIP is built in the background from the job's creation, as a service
// would while "processing"; the job is uploaded once two steps passed and the
// ZIP is built.
func (j *job) status(now time.Time, stepDelay time.Duration) string {
	switch {
	case j.final != "":
		return j.final
	case now.Before(j.created.Add(stepDelay)):
		return jobPending
	default:
		return jobProcessing
	}
}

// due reports whether the ZIP should be built now.
func (j *job) due(now time.Time, stepDelay time.Duration) bool {
	return j.final == "" && !now.Before(j.created.Add(2*stepDelay))
}

// task is a computer's task: an output folder in the computer's storage and
// session recording folders linked to it.
type task struct {
	id         int64
	org        *org
	seat       *seat
	name       string
	output     *node
	recordings []*node
	created    time.Time
}

// logRecord is one action log entry.
type logRecord struct {
	id         int64
	org        *org
	actionType string
	user       *user
	machineID  int64 // 0: null
	metadata   map[string]any
	created    time.Time
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
