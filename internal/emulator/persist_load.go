package emulator

// Loading the saved state (persist.go): every reference is checked, so a state
// file that does not hold together is an error naming what is wrong rather
// than an emulator that fails later.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// readState reads a state file; nil (and no error) when there is none.
func readState(path string) (*stateJSON, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // log metadata numbers come back as written
	d.DisallowUnknownFields()
	var st stateJSON
	if err := d.Decode(&st); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s is not valid JSON (byte %d: %v)", path, se.Offset, err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("%s is cut short (%d bytes): not valid JSON", path, len(b))
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%s: data after the state", path)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("%s: state version %d, this emulator reads version %d", path, st.Version, stateVersion)
	}
	return &st, nil
}

// restore rebuilds the emulator's state from st. Called before the emulator
// serves anything (no lock needed, taken anyway for the race detector).
func (e *Emulator) restore(st *stateJSON) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seededWith, e.seededAt = st.Seed, st.SeededAt
	e.nextID, e.nextLogID = st.NextID, st.NextLogID

	// Nodes first, unlinked; the areas claim their roots.
	if err := e.restoreNodes(st); err != nil {
		return err
	}
	users := stateUsers{}
	if err := e.restoreOrgs(st, users); err != nil {
		return err
	}
	if err := e.restoreSeatless(st); err != nil {
		return err
	}
	// Computers, images and tasks, then the references between them.
	if err := e.restoreSeats(st, users); err != nil {
		return err
	}
	if err := e.restoreImages(st); err != nil {
		return err
	}
	if err := e.restoreTasks(st); err != nil {
		return err
	}
	if err := e.linkSeats(st); err != nil {
		return err
	}
	if err := e.linkNodes(st, users); err != nil {
		return err
	}
	if err := e.restoreJobs(st); err != nil {
		return err
	}
	if err := e.restoreLogs(st, users); err != nil {
		return err
	}
	for _, fx := range st.Fixtures {
		e.fixtures[fx.Org] = fx
	}
	e.raiseCounters()
	// Whatever fell due while the emulator was away happens now.
	now := e.now()
	e.tick(now)
	e.sweepJobs(now)
	return nil
}

// inconsistent is the error of a state that does not hold together.
func inconsistent(format string, args ...any) error {
	return fmt.Errorf("inconsistent state: "+format, args...)
}

// stateUsers are the users of the restored organizations: organization name
// → user id → user.
type stateUsers map[string]map[int64]*user

// user finds the user id (0: none) of o, for what refers to it.
func (users stateUsers) user(o *org, id int64, what string) (*user, error) {
	if id == 0 {
		return nil, nil
	}
	if u := users[o.name][id]; u != nil {
		return u, nil
	}
	return nil, inconsistent("%s: %s has no user %d", what, o.name, id)
}

// stateOrg finds the organization name, for what refers to it. Called with
// mu held.
func (e *Emulator) stateOrg(name, what string) (*org, error) {
	o, err := e.orgByName(name)
	if err != nil {
		return nil, inconsistent("%s: unknown organization %q", what, name)
	}
	return o, nil
}

// claimRoot gives the area a the root and quota of as; the root must be a
// root node no other area has claimed. Called with mu held.
func (e *Emulator) claimRoot(a *area, as areaState, what string) error {
	r := e.nodes[as.Root]
	if r == nil || r.kind != kindRoot || r.area != nil {
		return inconsistent("%s: root %d is not a root of its own", what, as.Root)
	}
	a.root, a.quota, r.area, r.org = r, as.Quota, a, a.org
	return nil
}

// restoreNodes registers the nodes of st, not yet linked to their parents
// and areas. Called with mu held, by restore.
func (e *Emulator) restoreNodes(st *stateJSON) error {
	for _, ns := range st.Nodes {
		if e.nodes[ns.ID] != nil || ns.ID <= 0 {
			return inconsistent("file id %d repeated or invalid", ns.ID)
		}
		n := &node{id: ns.ID, name: ns.Name, size: ns.Size, contentType: ns.ContentType, modified: ns.Modified,
			uid: ns.UID, objKey: ns.ObjKey, machineID: ns.MachineID}
		switch ns.Kind {
		case "root":
			n.kind = kindRoot
		case "directory":
			n.kind = kindDir
		case "file":
			n.kind = kindFile
		default:
			return inconsistent("file %d has kind %q", ns.ID, ns.Kind)
		}
		if n.kind != kindFile {
			n.children = map[string]*node{}
		}
		if u := ns.Upload; u != nil {
			n.up = &upload{declared: u.Declared, chunk: u.Chunk, parts: u.Parts, overwrite: u.Overwrite, done: u.Done, etags: u.ETags}
		}
		e.nodes[n.id] = n
	}
	return nil
}

// restoreOrgs registers the organizations of st, with their users (noted in
// users), features and the roots of their shared storage and recordings.
// Called with mu held, by restore.
func (e *Emulator) restoreOrgs(st *stateJSON, users stateUsers) error {
	for _, oj := range st.Orgs {
		if _, err := e.orgByName(oj.Name); err == nil || e.byKey[oj.Key] != nil || len(oj.Users) == 0 || oj.Secret == "" {
			return inconsistent("organization %q repeated, without users or without credentials", oj.Name)
		}
		o := &org{name: oj.Name, key: oj.Key, secret: oj.Secret, features: map[string]bool{}, region: oj.Region,
			storage: oj.Storage, usageMinutes: oj.UsageMinutes, machineType: e.catalog.machineType(oj.MachineTypeID), typeIDs: oj.TypeIDs}
		if o.machineType == nil || len(o.typeIDs) == 0 {
			return inconsistent("organization %s: unknown machine type %d", o.name, oj.MachineTypeID)
		}
		for _, id := range o.typeIDs {
			if e.catalog.machineType(id) == nil {
				return inconsistent("organization %s: unknown machine type %d", o.name, id)
			}
		}
		for _, f := range oj.Features {
			o.features[f] = true
		}
		users[o.name] = map[int64]*user{}
		for _, us := range oj.Users {
			u := &user{intID: us.ID, uuid: us.UUID, email: us.Email, name: us.Name}
			if users[o.name][u.intID] != nil || u.intID == 0 {
				return inconsistent("organization %s: user id %d repeated or zero", o.name, u.intID)
			}
			users[o.name][u.intID] = u
			o.users = append(o.users, u)
		}
		o.admin = o.users[0]
		o.shared = &area{kind: areaShared, org: o}
		o.recordings = &area{kind: areaRecordings, org: o}
		if err := e.claimRoot(o.shared, oj.Shared, o.name+" shared storage"); err != nil {
			return err
		}
		if err := e.claimRoot(o.recordings, oj.Recordings, o.name+" recordings"); err != nil {
			return err
		}
		e.orgs = append(e.orgs, o)
		e.byKey[o.key] = o
	}
	if len(e.orgs) == 0 {
		return inconsistent("no organizations")
	}
	return nil
}

// restoreSeatless registers the machines of st without a seat. Called with
// mu held, by restore.
func (e *Emulator) restoreSeatless(st *stateJSON) error {
	for _, sl := range st.Seatless {
		o, err := e.stateOrg(sl.Org, fmt.Sprintf("machine %d", sl.ID))
		if err != nil {
			return err
		}
		e.seatless[sl.ID] = o
	}
	return nil
}

// restoreSeats registers the computers of st with their storage; their
// images and tasks are linked later (linkSeats). Called with mu held, by
// restore.
func (e *Emulator) restoreSeats(st *stateJSON, users stateUsers) error {
	for _, ss := range st.Seats {
		what := fmt.Sprintf("computer %d", ss.ID)
		o, err := e.stateOrg(ss.Org, what)
		if err != nil {
			return err
		}
		s := &seat{id: ss.ID, org: o, name: ss.Name, status: ss.Status, plan: e.catalog.plan(ss.PlanID), diskGB: ss.DiskGB,
			remainingUsage: ss.RemainingUsage, depositedUsage: ss.DepositedUsage, usageSource: ss.UsageSource,
			networkCredit: ss.NetworkCredit, autoStop: ss.AutoStop, installImage: ss.InstallImage, hasDiskImage: ss.HasDiskImage,
			perms: ss.Permissions, region: ss.Region, machineType: e.catalog.machineType(ss.MachineTypeID),
			liveRevision: ss.LiveRevision, created: ss.Created}
		if e.seats[s.id] != nil || s.plan == nil || s.machineType == nil {
			return inconsistent("%s repeated, or of an unknown plan or machine type", what)
		}
		for _, x := range ss.Steps {
			s.steps = append(s.steps, step{at: x.At, status: x.Status})
		}
		if ss.LastSession != nil {
			s.lastSession = *ss.LastSession
		}
		if s.user, err = users.user(o, ss.User, what); err != nil {
			return err
		}
		s.area = &area{kind: areaMachine, org: o, machineID: s.id}
		if err := e.claimRoot(s.area, ss.Storage, what+" storage"); err != nil {
			return err
		}
		e.seats[s.id] = s
	}
	return nil
}

// restoreImages registers the images of st, with their software and the
// computer they were made from. Called with mu held, by restore.
func (e *Emulator) restoreImages(st *stateJSON) error {
	for _, is := range st.Images {
		what := fmt.Sprintf("image %d", is.ID)
		o, err := e.stateOrg(is.Org, what)
		if err != nil {
			return err
		}
		im := &image{id: is.ID, org: o, name: is.Name, sizeGB: is.SizeGB, status: is.Status, source: is.Source,
			created: is.Created, updated: is.Updated}
		for _, x := range is.Steps {
			im.steps = append(im.steps, step{at: x.At, status: x.Status})
		}
		for _, id := range is.Software {
			sw := e.catalog.softwareByID(id)
			if sw == nil {
				return inconsistent("%s: unknown software %d", what, id)
			}
			im.software = append(im.software, sw)
		}
		if is.FromSeat != 0 {
			if im.fromSeat = e.seats[is.FromSeat]; im.fromSeat == nil {
				return inconsistent("%s: unknown computer %d", what, is.FromSeat)
			}
		}
		if e.images[im.id] != nil {
			return inconsistent("%s repeated", what)
		}
		e.images[im.id] = im
	}
	return nil
}

// restoreTasks registers the tasks of st, with their computer and folders.
// Called with mu held, by restore.
func (e *Emulator) restoreTasks(st *stateJSON) error {
	for _, ts := range st.Tasks {
		what := fmt.Sprintf("task %d", ts.ID)
		o, err := e.stateOrg(ts.Org, what)
		if err != nil {
			return err
		}
		t := &task{id: ts.ID, org: o, seat: e.seats[ts.Seat], name: ts.Name, created: ts.Created}
		if t.seat == nil || t.seat.org != o || e.tasks[t.id] != nil {
			return inconsistent("%s repeated or of unknown computer %d", what, ts.Seat)
		}
		if ts.Output != 0 {
			if t.output = e.nodes[ts.Output]; t.output == nil {
				return inconsistent("%s: unknown output folder %d", what, ts.Output)
			}
		}
		for _, id := range ts.Recordings {
			r := e.nodes[id]
			if r == nil {
				return inconsistent("%s: unknown recording folder %d", what, id)
			}
			t.recordings = append(t.recordings, r)
		}
		e.tasks[t.id] = t
	}
	return nil
}

// linkSeats links the restored computers to their assigned image, the image
// being created from them and their task. Called with mu held, by restore.
func (e *Emulator) linkSeats(st *stateJSON) error {
	for _, ss := range st.Seats {
		s := e.seats[ss.ID]
		what := fmt.Sprintf("computer %d", s.id)
		if ss.AssignedImage != 0 {
			if s.assigned = e.images[ss.AssignedImage]; s.assigned == nil {
				return inconsistent("%s: unknown assigned image %d", what, ss.AssignedImage)
			}
		}
		if ss.CreatingImage != 0 {
			if s.creatingImage = e.images[ss.CreatingImage]; s.creatingImage == nil {
				return inconsistent("%s: unknown image being created %d", what, ss.CreatingImage)
			}
		}
		if ss.Task != 0 {
			if s.task = e.tasks[ss.Task]; s.task == nil {
				return inconsistent("%s: unknown task %d", what, ss.Task)
			}
		}
	}
	return nil
}

// linkNodes links the restored nodes: their parents, areas and users, the
// listing of completed entries, the bytes used. Called with mu held, by
// restore.
func (e *Emulator) linkNodes(st *stateJSON, users stateUsers) error {
	nodeByID := map[int64]nodeState{}
	for _, ns := range st.Nodes {
		nodeByID[ns.ID] = ns
	}
	var areaOf func(n *node, depth int) (*area, error)
	areaOf = func(n *node, depth int) (*area, error) {
		if n.area != nil {
			return n.area, nil
		}
		ns := nodeByID[n.id]
		p := e.nodes[ns.Parent]
		if n.kind == kindRoot || p == nil || p.kind == kindFile || depth > len(st.Nodes) {
			return nil, inconsistent("file %d: parent %d is not a folder, or the file is not under a root", n.id, ns.Parent)
		}
		a, err := areaOf(p, depth+1)
		if err != nil {
			return nil, err
		}
		n.parent, n.area, n.org = p, a, a.org
		return a, nil
	}
	for _, ns := range st.Nodes {
		n := e.nodes[ns.ID]
		a, err := areaOf(n, 0)
		if err != nil {
			return err
		}
		if n.user, err = users.user(a.org, ns.User, fmt.Sprintf("file %d", n.id)); err != nil {
			return err
		}
		if n.parent == nil || !n.completed() {
			continue
		}
		if n.parent.children[n.name] != nil {
			return inconsistent("folder %d holds two entries named %q", n.parent.id, n.name)
		}
		n.parent.children[n.name] = n
		if n.kind == kindFile {
			a.used += n.size
		}
	}
	return nil
}

// restoreJobs registers the download jobs of st. Called with mu held, by
// restore.
func (e *Emulator) restoreJobs(st *stateJSON) error {
	for _, j := range st.Jobs {
		what := fmt.Sprintf("download job %d", j.ID)
		o, err := e.stateOrg(j.Org, what)
		if err != nil {
			return err
		}
		kind := -1
		for k, name := range jobKinds {
			if name == j.Kind {
				kind = k
			}
		}
		if kind < 0 || e.jobs[j.ID] != nil {
			return inconsistent("%s repeated or of kind %q", what, j.Kind)
		}
		e.jobs[j.ID] = &job{id: j.ID, org: o, kind: jobKind(kind), dirID: j.DirID, fileIDs: j.FileIDs, taskID: j.TaskID,
			name: j.Name, size: j.Size, created: j.Created, expires: j.Expires, final: j.Final, zipSize: j.ZipSize}
	}
	return nil
}

// restoreLogs appends the action logs of st. Called with mu held, by
// restore.
func (e *Emulator) restoreLogs(st *stateJSON, users stateUsers) error {
	for _, l := range st.Logs {
		what := fmt.Sprintf("action log %d", l.ID)
		o, err := e.stateOrg(l.Org, what)
		if err != nil {
			return err
		}
		u, err := users.user(o, l.User, what)
		if err != nil {
			return err
		}
		e.logs = append(e.logs, &logRecord{id: l.ID, org: o, actionType: l.ActionType, user: u, machineID: l.MachineID,
			metadata: l.Metadata, created: l.Created})
	}
	return nil
}

// raiseCounters raises the id counters past every restored id, so that ids
// are never given twice, whatever the counters say. Called with mu held, by
// restore.
func (e *Emulator) raiseCounters() {
	for id := range e.nodes {
		e.nextID = max(e.nextID, id)
	}
	for id := range e.seats {
		e.nextID = max(e.nextID, id)
	}
	for id := range e.images {
		e.nextID = max(e.nextID, id)
	}
	for id := range e.tasks {
		e.nextID = max(e.nextID, id)
	}
	for id := range e.jobs {
		e.nextID = max(e.nextID, id)
	}
	for id := range e.seatless {
		e.nextID = max(e.nextID, id)
	}
	for _, l := range e.logs {
		e.nextLogID = max(e.nextLogID, l.id)
	}
}

// objectSecret decodes the saved object-store secret.
func objectSecret(st *stateJSON) ([]byte, error) {
	b, err := hex.DecodeString(st.ObjectSecret)
	if err != nil || len(b) < 16 {
		return nil, errors.New("inconsistent state: object_secret is not a secret in hex")
	}
	return b, nil
}

// tidyObjects removes in the background the objects no resource refers to
// (written after the last save of a run that did not close, parts of
// uploads that were dropped, ZIPs of jobs that are gone), marks failed the
// jobs whose ZIP is gone, and counts the files whose content is missing.
// Called with mu held, at start.
func (e *Emulator) tidyObjects(keys []string) (missing int) {
	want := map[string]bool{}
	var uploads []string
	for _, n := range e.nodes {
		if n.objKey != "" {
			want[n.objKey] = true
		}
		if n.up != nil && !n.up.done {
			uploads = append(uploads, partPrefix(n.id))
		}
	}
	have := map[string]bool{}
	for _, k := range keys {
		have[k] = true
	}
	for _, j := range e.jobs {
		if j.final == jobUploaded {
			if !have[zipKey(j.id)] {
				j.final = jobFailed // its ZIP is gone: failed rather than a link to nothing
			}
			want[zipKey(j.id)] = true
		}
	}
	var drop []string
	for _, k := range keys {
		if want[k] {
			continue
		}
		keep := false
		for _, p := range uploads {
			keep = keep || strings.HasPrefix(k, p)
		}
		if !keep {
			drop = append(drop, k)
		}
	}
	for k := range want {
		if !have[k] {
			missing++
		}
	}
	e.removeObjectsLater(drop, nil)
	return missing
}
