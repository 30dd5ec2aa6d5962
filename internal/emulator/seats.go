package emulator

// Computers (seats). State machine (service-notes, emulator choice), one step
// of StepDelay per arrow:
//
//	create:  creating → off
//	start:   off → turning_on → ready            (with an image to install: off → installing → turning_on → ready)
//	stop:    ready → turning_off → off           (graceful: ready → graceful_stopping → off)
//	image:   off → installing → off              (POST /images; off when the image is available)
//	reset:   only when off; immediate
//
// Start of a computer that is ready or turning on, and stop of one that is
// off or stopping, succeed without change. Start in any other state answers
// 4201; stop of a computer that is creating, installing or turning on
// answers 400.

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// tick advances every state machine to now. Called with mu held.
func (e *Emulator) tick(now time.Time) {
	for _, s := range e.seats {
		s.advance(now)
	}
	for _, im := range e.images {
		im.advance(now)
	}
	for _, s := range e.seats {
		if s.creatingImage != nil && !s.creatingImage.inProgress() {
			s.creatingImage = nil
		}
	}
}

// orgSeats lists an organization's computers by id. Called with mu held.
func (e *Emulator) orgSeats(o *org) []*seat {
	var out []*seat
	for _, s := range e.seats {
		if s.org == o {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// GET /seats (page, per_page default 100, q: case-insensitive substring of the name)
func (e *Emulator) getSeats(c *call) (any, error) {
	page, perPage, err := c.pageParams(100)
	if err != nil {
		return nil, err
	}
	q := c.r.URL.Query().Get("q")
	var items []*seat
	for _, s := range e.orgSeats(c.org) {
		if q == "" || containsFold(s.name, q) {
			items = append(items, s)
		}
	}
	pg, next := paginate(items, page, perPage)
	recs := make([]seatJSON, len(pg))
	for i, s := range pg {
		recs[i] = e.dialect.seatRecord(s)
	}
	return map[string]any{"seats": recs, "count": len(items), "page": page, "next_page": next}, nil
}

type createSeatsRequest struct {
	SeatPlanID  *int64       `json:"seat_plan_id"`
	Quantity    *int64       `json:"quantity"`
	SoftwareIDs []int64      `json:"software_ids"`
	BaseImageID *int64       `json:"base_image_id"`
	Permissions *permissions `json:"permissions"`
}

// POST /seats → {"seats": [...], "count": N}
func (e *Emulator) postSeats(c *call) (any, error) {
	req := createSeatsRequest{Permissions: &permissions{}}
	*req.Permissions = defaultPermissions() // fields absent from the body keep their defaults
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.SeatPlanID == nil {
		return nil, badRequest("seat_plan_id is required")
	}
	p := e.catalog.plan(*req.SeatPlanID)
	if p == nil {
		return nil, badRequest("unknown seat_plan_id %d", *req.SeatPlanID)
	}
	qty := int64(1)
	if req.Quantity != nil {
		qty = *req.Quantity
	}
	if qty < 1 || qty > 10 {
		return nil, badRequest("quantity must be between 1 and 10")
	}
	inst, err := e.installation(req.BaseImageID, req.SoftwareIDs)
	if err != nil {
		return nil, err
	}
	base, sw, need := inst.base, inst.software, inst.bytes
	if need >= float64(p.diskGB)*1e9 {
		return nil, badRequest("the plan's disk (%d GB) must exceed the software and base image with a 5%% buffer (%.2f GB)", p.diskGB, need/1e9)
	}
	_ = sw
	perms := defaultPermissions()
	if req.Permissions != nil {
		perms = *req.Permissions
	}
	var recs []seatJSON
	for range qty {
		s := e.addSeat(c.org, "", p, c.now)
		s.perms = perms
		s.schedule(c.now, e.step, stCreating, stOff)
		recs = append(recs, e.dialect.seatRecord(s))
		e.appendLog(c.org, "machine_created", c.org.admin, s.id, map[string]any{"machine_name": s.name, "seat_plan_id": p.id, "base_image_id": base.id}, c.now)
	}
	return map[string]any{"seats": recs, "count": len(recs)}, nil
}

// installation is a base image with software on it, as an image install and
// a new computer choose them.
type installation struct {
	base     *baseImage
	software []*software
	bytes    float64 // base image and software, with the 5% buffer
}

// installation resolves a base image (nil: the latest; 404 for an unknown
// one) and software ids (400 for an unknown one).
func (e *Emulator) installation(baseID *int64, softwareIDs []int64) (installation, error) {
	base := e.catalog.latestBaseImage()
	if baseID != nil {
		if base = e.catalog.baseImage(*baseID); base == nil {
			return installation{}, notFound(fmt.Sprintf("base image %d", *baseID))
		}
	}
	inst := installation{base: base}
	total := float64(base.size)
	for _, id := range softwareIDs {
		s := e.catalog.softwareByID(id)
		if s == nil {
			return installation{}, badRequest("unknown software id %d", id)
		}
		inst.software = append(inst.software, s)
		total += s.size
	}
	inst.bytes = total * 1.05
	return inst, nil
}

// addSeat creates an off computer with its storage root. name "" gives
// "Computer #<id>". Called with mu held.
func (e *Emulator) addSeat(o *org, name string, p *plan, now time.Time) *seat {
	id := e.newID()
	if name == "" {
		name = "Computer #" + itoa(id)
	}
	s := &seat{
		id: id, org: o, name: name, status: stOff, plan: p, diskGB: p.diskGB,
		usageSource: "team_balance", networkCredit: 10_000_000_000, autoStop: 900,
		perms: defaultPermissions(), user: o.admin, region: o.region,
		machineType: e.catalog.machineType(o.typeIDs[0]), created: now,
	}
	s.area = &area{kind: areaMachine, org: o, machineID: id, quota: p.storageGB * gib}
	s.area.root = e.addNode(s.area, nil, "root", kindRoot, nil, now)
	e.seats[id] = s
	return s
}

// seatFromPath finds the computer of the path's {id}.
func (e *Emulator) seatFromPath(c *call) (*seat, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	return e.lookupSeat(c.org, id)
}

// availableTypes lists the machine types a computer may take.
func (e *Emulator) availableTypes(s *seat) []*machineType {
	var out []*machineType
	for _, id := range s.org.typeIDs {
		out = append(out, e.catalog.machineType(id))
	}
	return out
}

// typeFor resolves a machine type id among the computer's available types (400 otherwise).
func (e *Emulator) typeFor(s *seat, id int64) (*machineType, error) {
	for _, t := range e.availableTypes(s) {
		if t.id == id {
			return t, nil
		}
	}
	return nil, badRequest("machine_type_id %d is not available for computer %d", id, s.id)
}

type startRequest struct {
	MachineTypeID *int64  `json:"machine_type_id"`
	Region        *string `json:"region"`
}

// POST /machines/{id}/start
func (e *Emulator) postStart(c *call) (any, error) {
	s, err := e.seatFromPath(c)
	if err != nil {
		return nil, err
	}
	var req startRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	var mt *machineType
	if req.MachineTypeID != nil {
		if mt, err = e.typeFor(s, *req.MachineTypeID); err != nil {
			return nil, err
		}
	}
	switch s.status {
	case stReady, stTurningOn:
		return nil, nil
	case stOff:
	default:
		return nil, errf(4201, "computer %d is not ready to start: it is %s", s.id, s.status)
	}
	if mt != nil {
		s.machineType = mt
	}
	if req.Region != nil && *req.Region != "" {
		s.region = *req.Region
	}
	if s.installImage {
		s.schedule(c.now, e.step, stInstalling, stTurningOn, stReady)
	} else {
		s.schedule(c.now, e.step, stTurningOn, stReady)
	}
	e.appendLog(c.org, "machine_started", c.org.admin, s.id, map[string]any{"machine_name": s.name, "machine_type": s.machineType.friendly}, c.now)
	return nil, nil
}

// POST /machines/{id}/stop {"gracefully": bool}
func (e *Emulator) postStop(c *call) (any, error) {
	s, err := e.seatFromPath(c)
	if err != nil {
		return nil, err
	}
	var req struct {
		Gracefully *bool `json:"gracefully"`
	}
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	switch s.status {
	case stOff, stTurningOff, stGracefulStopping:
		return nil, nil
	case stReady:
	default:
		return nil, badRequest("computer %d cannot be stopped while %s", s.id, s.status)
	}
	graceful := req.Gracefully != nil && *req.Gracefully
	if graceful {
		s.schedule(c.now, e.step, stGracefulStopping, stOff)
	} else {
		s.schedule(c.now, e.step, stTurningOff, stOff)
	}
	e.appendLog(c.org, "machine_stopped", c.org.admin, s.id, map[string]any{"machine_name": s.name, "gracefully": graceful}, c.now)
	return nil, nil
}

// POST /machines/{id}/access {"expires_in": minutes (seconds in the dialect access-seconds)}
func (e *Emulator) postAccess(c *call) (any, error) {
	s, err := e.seatFromPath(c)
	if err != nil {
		return nil, err
	}
	var req struct {
		ExpiresIn *int64 `json:"expires_in"`
	}
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	unit, unitName := time.Minute, "minutes"
	if e.dialect.AccessSeconds {
		unit, unitName = time.Second, "seconds"
	}
	maxN := int64(7 * 24 * time.Hour / unit)
	n := int64(time.Hour / unit)
	if req.ExpiresIn != nil {
		if *req.ExpiresIn <= 0 || *req.ExpiresIn > maxN {
			return nil, badRequest("expires_in must be between 1 and %d %s", maxN, unitName)
		}
		n = *req.ExpiresIn
	}
	uid := newUUID()
	expires := c.now.Add(time.Duration(n) * unit)
	e.appendLog(c.org, "machine_external_access_created", c.org.admin, s.id, map[string]any{"machine_name": s.name, "expires_in": n}, c.now)
	return map[string]any{
		"id":   uid,
		"type": "machine_access",
		"attributes": map[string]any{
			"uid":             uid,
			"connection_link": "https://connect.emulator.invalid/session/" + uid + "?machine=" + itoa(s.id),
			"expires_at":      isoTime(expires),
		},
	}, nil
}

// POST /machines/{id}/reset: only when off (400 otherwise). The computer's
// disk goes back to its image (its live file system is regenerated); its
// storage area is kept.
func (e *Emulator) postReset(c *call) (any, error) {
	s, err := e.seatFromPath(c)
	if err != nil {
		return nil, err
	}
	if s.status != stOff {
		return nil, badRequest("computer %d must be off to be reset: it is %s", s.id, s.status)
	}
	s.liveRevision++
	if s.assigned != nil {
		s.installImage = true
	}
	e.appendLog(c.org, "machine_reset", c.org.admin, s.id, map[string]any{"machine_name": s.name}, c.now)
	return nil, nil
}

// GET /machines/{id}/available-machine-types
func (e *Emulator) getMachineTypes(c *call) (any, error) {
	s, err := e.seatFromPath(c)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, t := range e.availableTypes(s) {
		out = append(out, map[string]any{
			"id": itoa(t.id), "type": "machine_type",
			"attributes": map[string]any{"name": t.name, "friendly_name": t.friendly},
		})
	}
	return map[string]any{"machine_types": out}, nil
}

// POST /machines/{id}/machine-type {"machine_type_id": N}
func (e *Emulator) postMachineType(c *call) (any, error) {
	s, err := e.seatFromPath(c)
	if err != nil {
		return nil, err
	}
	var req struct {
		MachineTypeID *int64 `json:"machine_type_id"`
	}
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.MachineTypeID == nil {
		// Also accepted as a query parameter: the contract does not say where it goes.
		v, ok, err := c.queryInt("machine_type_id")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, badRequest("machine_type_id is required")
		}
		req.MachineTypeID = &v
	}
	t, err := e.typeFor(s, *req.MachineTypeID)
	if err != nil {
		return nil, err
	}
	old := s.machineType
	s.machineType = t
	e.appendLog(c.org, "machine_type_changed", c.org.admin, s.id, map[string]any{"machine_name": s.name, "from": old.friendly, "to": t.friendly}, c.now)
	return nil, nil
}

// POST /machines/{id}/list-content {"path": "C:\\Users"}: 400 unless ready.
func (e *Emulator) postListContent(c *call) (any, error) {
	s, err := e.seatFromPath(c)
	if err != nil {
		return nil, err
	}
	var req struct {
		Path *string `json:"path"`
	}
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if s.status != stReady {
		return nil, badRequest("computer %d is not running (it is %s)", s.id, s.status)
	}
	if req.Path == nil || strings.TrimSpace(*req.Path) == "" {
		return nil, badRequest("path is required")
	}
	entries, ok := liveTree(s).list(*req.Path)
	if !ok {
		return nil, badRequest("path %q not found on computer %d", *req.Path, s.id)
	}
	return map[string]any{"content": entries}, nil
}
