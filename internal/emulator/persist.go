package emulator

// Persistence. With Options.DataDir set, the organizations' state is kept in
// DataDir/state.json (mode 0600: it holds the API secrets) and the object
// contents under DataDir/objects, so that an emulator started again on the
// same directory carries on where the last one stopped: the same files and
// folders with the same ids, computers, images, usage, action logs, download
// jobs, tasks, and the same credentials (credentials files written before
// stay valid; so do presigned URLs, whose signing secret is kept too, as
// long as the object store listens on the same address).
//
// The state is saved whole, atomically (a temporary file, fsync, rename,
// fsync of the directory), at most saveDelay after a change, never more
// than about a tenth of the time (a large state waits longer), and at
// Close. A state-changing request is any authenticated request but GET, and
// the GETs that log or build (a file's download URL, a download job's
// status). The clock-driven transitions (computers starting and stopping,
// images building, jobs zipping) need no save: their schedule is in the
// state and a restored emulator applies what fell due while it was away.
//
// What is not kept: nonces (a request signed before a restart may be
// replayed once within the 5-minute window), the statistics, injected errors
// and drops, the network play, and the admin token of PlayPath (written
// anew beside the credentials at each start).

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

const (
	stateFile    = "state.json"
	stateVersion = 1
	saveDelay    = 200 * time.Millisecond
)

// stateJSON is the saved state. Resources refer to each other by id,
// organizations by name, users by their integer id within the organization
// (0: none).
type stateJSON struct {
	Version      int            `json:"version"`
	Seed         string         `json:"seed"`      // the seed the state started from
	SeededAt     time.Time      `json:"seeded_at"` // when
	SavedAt      time.Time      `json:"saved_at"`
	NextID       int64          `json:"next_id"`
	NextLogID    int64          `json:"next_log_id"`
	ObjectSecret string         `json:"object_secret"` // hex; signs presigned URLs
	Orgs         []orgJSON      `json:"organizations"`
	Seatless     []seatlessJSON `json:"machines_without_seat"`
	Seats        []seatState    `json:"computers"`
	Images       []imageState   `json:"images"`
	Tasks        []taskState    `json:"tasks"`
	Nodes        []nodeState    `json:"files"` // roots, folders, files, incomplete uploads
	Jobs         []jobState     `json:"download_jobs"`
	Logs         []logState     `json:"action_logs"` // oldest first
	Fixtures     []Fixtures     `json:"fixtures"`
}

type orgJSON struct {
	Name          string      `json:"name"`
	Key           string      `json:"key"`
	Secret        string      `json:"secret"`
	Features      []string    `json:"features"`
	Users         []userState `json:"users"` // the admin first
	Region        string      `json:"region"`
	Storage       string      `json:"storage_region"`
	UsageMinutes  int64       `json:"usage_minutes"`
	MachineTypeID int64       `json:"machine_type_id"`
	TypeIDs       []int64     `json:"machine_type_ids"`
	Shared        areaState   `json:"shared_storage"`
	Recordings    areaState   `json:"recordings"`
}

type userState struct {
	ID    int64  `json:"id"`
	UUID  string `json:"uuid"`
	Email string `json:"email"`
	Name  string `json:"name"`
}

// areaState is a storage area; its used bytes are recomputed from its files.
type areaState struct {
	Root  int64 `json:"root_id"`
	Quota int64 `json:"quota"`
}

type seatlessJSON struct {
	ID  int64  `json:"id"`
	Org string `json:"org"`
}

type stepState struct {
	At     time.Time `json:"at"`
	Status string    `json:"status"`
}

type seatState struct {
	ID             int64       `json:"id"`
	Org            string      `json:"org"`
	Name           string      `json:"name"`
	Status         string      `json:"status"`
	Steps          []stepState `json:"steps,omitempty"`
	PlanID         int64       `json:"plan_id"`
	DiskGB         int64       `json:"disk_gb"`
	Storage        areaState   `json:"storage"`
	RemainingUsage int64       `json:"remaining_usage"`
	DepositedUsage int64       `json:"deposited_usage"`
	UsageSource    string      `json:"usage_source"`
	NetworkCredit  int64       `json:"network_credit"`
	AutoStop       int64       `json:"auto_stop_threshold"`
	AssignedImage  int64       `json:"assigned_image_id,omitempty"`
	InstallImage   bool        `json:"install_image,omitempty"`
	HasDiskImage   bool        `json:"has_disk_image,omitempty"`
	CreatingImage  int64       `json:"creating_image_id,omitempty"`
	Permissions    permissions `json:"permissions"`
	User           int64       `json:"user_id"`
	Region         string      `json:"region"`
	MachineTypeID  int64       `json:"machine_type_id"`
	LastSession    *time.Time  `json:"last_session,omitempty"`
	Task           int64       `json:"task_id,omitempty"`
	LiveRevision   int         `json:"live_revision,omitempty"`
	Created        time.Time   `json:"created"`
}

type imageState struct {
	ID       int64       `json:"id"`
	Org      string      `json:"org"`
	Name     string      `json:"name"`
	SizeGB   float64     `json:"size_gb"`
	Status   string      `json:"status"`
	Steps    []stepState `json:"steps,omitempty"`
	Source   string      `json:"source"`
	Created  time.Time   `json:"created"`
	Updated  time.Time   `json:"updated"`
	Software []int64     `json:"software_ids"`
	FromSeat int64       `json:"from_computer_id,omitempty"`
}

type taskState struct {
	ID         int64     `json:"id"`
	Org        string    `json:"org"`
	Seat       int64     `json:"computer_id"`
	Name       string    `json:"name"`
	Output     int64     `json:"output_folder_id,omitempty"`
	Recordings []int64   `json:"recording_folder_ids"`
	Created    time.Time `json:"created"`
}

// nodeState is a root, folder, file or incomplete upload. Its area is its
// root's (the roots are named by the organizations and computers).
type nodeState struct {
	ID          int64        `json:"id"`
	Parent      int64        `json:"parent_id,omitempty"` // 0: a root
	Name        string       `json:"name"`
	Kind        string       `json:"kind"` // root, directory, file
	Size        int64        `json:"size,omitempty"`
	ContentType string       `json:"content_type,omitempty"`
	Modified    time.Time    `json:"modified"`
	User        int64        `json:"user_id,omitempty"`
	UID         string       `json:"uid"`
	ObjKey      string       `json:"object,omitempty"`
	MachineID   int64        `json:"machine_id,omitempty"`
	Upload      *uploadState `json:"upload,omitempty"`
}

type uploadState struct {
	Declared  int64    `json:"declared_size"`
	Chunk     int64    `json:"chunk_bytes"`
	Parts     int      `json:"parts"`
	Overwrite bool     `json:"overwrite,omitempty"`
	Done      bool     `json:"done,omitempty"`
	ETags     []string `json:"etags,omitempty"`
}

type jobState struct {
	ID      int64     `json:"id"`
	Org     string    `json:"org"`
	Kind    string    `json:"kind"` // directory, files, task
	DirID   int64     `json:"directory_id,omitempty"`
	FileIDs []int64   `json:"file_ids,omitempty"`
	TaskID  int64     `json:"task_id,omitempty"`
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Final   string    `json:"final_status,omitempty"`
	ZipSize int64     `json:"zip_size,omitempty"`
}

type logState struct {
	ID         int64          `json:"id"`
	Org        string         `json:"org"`
	ActionType string         `json:"action_type"`
	User       int64          `json:"user_id,omitempty"`
	MachineID  int64          `json:"machine_id,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Created    time.Time      `json:"created"`
}

var jobKinds = [...]string{jobDirectory: "directory", jobFiles: "files", jobTask: "task"}

func userID(u *user) int64 {
	if u == nil {
		return 0
	}
	return u.intID
}

func steps(ss []step) []stepState {
	var out []stepState
	for _, s := range ss {
		out = append(out, stepState{At: s.at, Status: s.status})
	}
	return out
}

// capture copies the state. Called with mu held; the result shares nothing
// mutable with the emulator (log metadata is never changed once recorded).
func (e *Emulator) capture() *stateJSON {
	st := &stateJSON{Version: stateVersion, Seed: e.seededWith, SeededAt: e.seededAt, SavedAt: e.now(),
		NextID: e.nextID, NextLogID: e.nextLogID, ObjectSecret: hex.EncodeToString(e.objSecret)}
	st.Orgs, st.Fixtures = e.captureOrgs()
	for id, o := range e.seatless {
		st.Seatless = append(st.Seatless, seatlessJSON{ID: id, Org: o.name})
	}
	sort.Slice(st.Seatless, func(i, j int) bool { return st.Seatless[i].ID < st.Seatless[j].ID })
	st.Seats = e.captureSeats()
	st.Images = e.captureImages()
	st.Tasks = e.captureTasks()
	st.Nodes = e.captureNodes()
	for _, j := range e.jobs {
		st.Jobs = append(st.Jobs, jobState{ID: j.id, Org: j.org.name, Kind: jobKinds[j.kind], DirID: j.dirID,
			FileIDs: append([]int64(nil), j.fileIDs...), TaskID: j.taskID, Name: j.name, Size: j.size,
			Created: j.created, Expires: j.expires, Final: j.final, ZipSize: j.zipSize})
	}
	sort.Slice(st.Jobs, func(i, j int) bool { return st.Jobs[i].ID < st.Jobs[j].ID })
	st.Logs = make([]logState, len(e.logs))
	for i, l := range e.logs {
		st.Logs[i] = logState{ID: l.id, Org: l.org.name, ActionType: l.actionType, User: userID(l.user),
			MachineID: l.machineID, Metadata: l.metadata, Created: l.created}
	}
	return st
}

// captureOrgs copies the organizations, with their users and features, and
// the fixtures of those that have some, in the order of e.orgs. Called with
// mu held.
func (e *Emulator) captureOrgs() (orgs []orgJSON, fixtures []Fixtures) {
	for _, o := range e.orgs {
		oj := orgJSON{Name: o.name, Key: o.key, Secret: o.secret, Region: o.region, Storage: o.storage,
			UsageMinutes: o.usageMinutes, MachineTypeID: o.machineType.id, TypeIDs: append([]int64(nil), o.typeIDs...),
			Shared: areaState{o.shared.root.id, o.shared.quota}, Recordings: areaState{o.recordings.root.id, o.recordings.quota}}
		for f, on := range o.features {
			if on {
				oj.Features = append(oj.Features, f)
			}
		}
		sort.Strings(oj.Features)
		for _, u := range o.users {
			oj.Users = append(oj.Users, userState{ID: u.intID, UUID: u.uuid, Email: u.email, Name: u.name})
		}
		orgs = append(orgs, oj)
		if fx, ok := e.fixtures[o.name]; ok {
			fixtures = append(fixtures, fx)
		}
	}
	return orgs, fixtures
}

// captureSeats copies the computers, by id. Called with mu held.
func (e *Emulator) captureSeats() []seatState {
	var seats []seatState
	for _, s := range e.seats {
		ss := seatState{ID: s.id, Org: s.org.name, Name: s.name, Status: s.status, Steps: steps(s.steps),
			PlanID: s.plan.id, DiskGB: s.diskGB, Storage: areaState{s.area.root.id, s.area.quota},
			RemainingUsage: s.remainingUsage, DepositedUsage: s.depositedUsage, UsageSource: s.usageSource,
			NetworkCredit: s.networkCredit, AutoStop: s.autoStop, InstallImage: s.installImage, HasDiskImage: s.hasDiskImage,
			Permissions: s.perms, User: userID(s.user), Region: s.region, MachineTypeID: s.machineType.id,
			LiveRevision: s.liveRevision, Created: s.created}
		if s.assigned != nil {
			ss.AssignedImage = s.assigned.id
		}
		if s.creatingImage != nil {
			ss.CreatingImage = s.creatingImage.id
		}
		if !s.lastSession.IsZero() {
			t := s.lastSession
			ss.LastSession = &t
		}
		if s.task != nil {
			ss.Task = s.task.id
		}
		seats = append(seats, ss)
	}
	sort.Slice(seats, func(i, j int) bool { return seats[i].ID < seats[j].ID })
	return seats
}

// captureImages copies the images, by id. Called with mu held.
func (e *Emulator) captureImages() []imageState {
	var images []imageState
	for _, im := range e.images {
		is := imageState{ID: im.id, Org: im.org.name, Name: im.name, SizeGB: im.sizeGB, Status: im.status,
			Steps: steps(im.steps), Source: im.source, Created: im.created, Updated: im.updated, Software: []int64{}}
		for _, sw := range im.software {
			is.Software = append(is.Software, sw.id)
		}
		if im.fromSeat != nil {
			is.FromSeat = im.fromSeat.id
		}
		images = append(images, is)
	}
	sort.Slice(images, func(i, j int) bool { return images[i].ID < images[j].ID })
	return images
}

// captureTasks copies the tasks, by id, with the folders that are not
// deleted. Called with mu held.
func (e *Emulator) captureTasks() []taskState {
	var tasks []taskState
	for _, t := range e.tasks {
		ts := taskState{ID: t.id, Org: t.org.name, Seat: t.seat.id, Name: t.name, Recordings: []int64{}, Created: t.created}
		if t.output != nil && !t.output.deleted {
			ts.Output = t.output.id
		}
		for _, r := range t.recordings {
			if !r.deleted {
				ts.Recordings = append(ts.Recordings, r.id)
			}
		}
		tasks = append(tasks, ts)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	return tasks
}

// captureNodes copies the nodes (roots, folders, files and uploads), by id.
// Called with mu held.
func (e *Emulator) captureNodes() []nodeState {
	nodes := make([]nodeState, 0, len(e.nodes))
	for _, n := range e.nodes {
		ns := nodeState{ID: n.id, Name: n.name, Kind: n.kind.String(), Size: n.size, ContentType: n.contentType,
			Modified: n.modified, User: userID(n.user), UID: n.uid, ObjKey: n.objKey, MachineID: n.machineID}
		if n.parent != nil {
			ns.Parent = n.parent.id
		}
		if up := n.up; up != nil {
			ns.Upload = &uploadState{Declared: up.declared, Chunk: up.chunk, Parts: up.parts, Overwrite: up.overwrite,
				Done: up.done, ETags: append([]string(nil), up.etags...)}
		}
		nodes = append(nodes, ns)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	return nodes
}

// changed notes that the state changed: it is saved within saveDelay (or
// longer when saving takes long). Called with mu held.
func (e *Emulator) changed() {
	if !e.persist || e.closed || e.saveTimer != nil {
		return
	}
	e.saveTimer = time.AfterFunc(max(saveDelay, 10*e.saveCost), func() {
		e.mu.Lock()
		e.saveTimer = nil
		e.mu.Unlock()
		if err := e.save(false); err != nil {
			e.log.WithError(err).Error("saving the state")
		}
	})
}

// save writes the state file. The final save (Close) is the last: saves
// that come after it do nothing. Takes saveMu, then mu.
func (e *Emulator) save(final bool) error {
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	e.mu.Lock()
	if e.saved {
		e.mu.Unlock()
		return nil
	}
	e.saved = final
	start := time.Now()
	st := e.capture()
	e.mu.Unlock()
	b, err := json.MarshalIndent(st, "", " ")
	if err == nil {
		err = writeFileAtomic(filepath.Join(e.dataDir, stateFile), append(b, '\n'), 0o600)
	}
	e.mu.Lock()
	e.saveCost = time.Since(start)
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("emulator: saving the state: %w", err)
	}
	return nil
}

// writeFileAtomic replaces path with b: a temporary file in the same
// directory, synced, renamed over path, and the directory synced.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, nothing
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
