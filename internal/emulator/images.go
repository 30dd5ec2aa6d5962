package emulator

// Images (templates) and the software catalog. Image builds take two steps:
// pending → building → available. An image from a computer keeps the
// computer installing until it is available. Sizes are in GB (two decimals);
// an image from a computer is the computer's used disk, an installed image
// (base image + software) × 1.05. Software sizes are bytes, as in the catalog.
// The list gives softwares as a plain array, the install answer as
// {"data": [...]} (the two shapes of the contract's examples).

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// lookupImage finds an image of the organization or answers 404.
func (e *Emulator) lookupImage(c *call) (*image, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	im := e.images[id]
	if im == nil || im.deleted || im.org != c.org {
		return nil, notFound(fmt.Sprintf("image %d", id))
	}
	return im, nil
}

// GET /images (page, per_page default 20, q: case-insensitive substring of the name); by id.
func (e *Emulator) getImages(c *call) (any, error) {
	page, perPage, err := c.pageParams(20)
	if err != nil {
		return nil, err
	}
	q := c.r.URL.Query().Get("q")
	var items []*image
	for _, im := range e.images {
		if im.org == c.org && !im.deleted && (q == "" || containsFold(im.name, q)) {
			items = append(items, im)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].id < items[j].id })
	pg, next := paginate(items, page, perPage)
	recs := make([]imageJSON, len(pg))
	for i, im := range pg {
		recs[i] = e.dialect.imageRecord(im, false)
	}
	return map[string]any{"images": recs, "count": len(items), "page": page, "next_page": next}, nil
}

// GET /images/{id} → envelope + the image object.
func (e *Emulator) getImage(c *call) (any, error) {
	im, err := e.lookupImage(c)
	if err != nil {
		return nil, err
	}
	return e.dialect.imageRecord(im, false), nil
}

// checkImageName refuses a name longer than 30 characters, and a missing or
// empty one in the dialect name-required.
func (e *Emulator) checkImageName(name *string) error {
	if e.dialect.NameRequired && (name == nil || strings.TrimSpace(*name) == "") {
		return badRequest("name is required")
	}
	if name != nil && utf8.RuneCountInString(*name) > 30 {
		return badRequest("name must be at most 30 characters")
	}
	return nil
}

// newImage registers an image. Called with mu held.
func (e *Emulator) newImage(c *call, name string, source string) *image {
	im := &image{id: e.newID(), org: c.org, name: name, source: source, created: c.now, updated: c.now}
	e.images[im.id] = im
	return im
}

// POST /images {"machine_id", "name"}
func (e *Emulator) postImage(c *call) (any, error) {
	var req struct {
		MachineID *int64  `json:"machine_id"`
		Name      *string `json:"name"`
	}
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.MachineID == nil {
		return nil, badRequest("machine_id is required")
	}
	if err := e.checkImageName(req.Name); err != nil {
		return nil, err
	}
	s, err := e.lookupSeat(c.org, *req.MachineID)
	if err != nil {
		return nil, err
	}
	if s.creatingImage != nil {
		return nil, errf(4212, "an image of computer %d is still being created (image %d)", s.id, s.creatingImage.id)
	}
	if s.status != stOff {
		return nil, errf(4209, "computer %d is not stopped: it is %s", s.id, s.status)
	}
	if !s.hasDiskImage {
		return nil, errf(4208, "computer %d has no image yet: it was never started", s.id)
	}
	im := e.newImage(c, "", "seat")
	im.name = "Template #" + itoa(im.id)
	if req.Name != nil && strings.TrimSpace(*req.Name) != "" {
		im.name = *req.Name
	}
	im.sizeGB = float64(s.diskGB) * 0.4
	if s.assigned != nil {
		im.software = s.assigned.software
	}
	im.status = imgPending
	im.steps = []step{{at: c.now.Add(e.step), status: imgBuilding}, {at: c.now.Add(2 * e.step), status: imgAvailable}}
	im.fromSeat = s
	s.creatingImage = im
	s.schedule(c.now, 2*e.step, stInstalling, stOff)
	e.appendLog(c.org, "image_created", c.org.admin, s.id, map[string]any{"image_id": im.id, "image_name": im.name}, c.now)
	return e.dialect.imageRecord(im, false), nil
}

// POST /images/install {"name", "software_ids", "base_image_id"}
func (e *Emulator) postImageInstall(c *call) (any, error) {
	var req struct {
		Name        *string `json:"name"`
		SoftwareIDs []int64 `json:"software_ids"`
		BaseImageID *int64  `json:"base_image_id"`
	}
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if err := e.checkImageName(req.Name); err != nil {
		return nil, err
	}
	if req.BaseImageID == nil && e.dialect.BaseImageRequired {
		return nil, badRequest("base_image_id is required")
	}
	inst, err := e.installation(req.BaseImageID, req.SoftwareIDs)
	if err != nil {
		return nil, err
	}
	base := inst.base
	im := e.newImage(c, "Template #"+itoa(base.id), "pre_installation")
	if req.Name != nil && strings.TrimSpace(*req.Name) != "" {
		im.name = *req.Name
	}
	im.software = inst.software
	im.sizeGB = roundGB(inst.bytes)
	im.status = imgPending
	im.steps = []step{{at: c.now.Add(e.step), status: imgBuilding}, {at: c.now.Add(2 * e.step), status: imgAvailable}}
	e.appendLog(c.org, "image_installed", c.org.admin, 0, map[string]any{"image_id": im.id, "image_name": im.name, "base_image_id": base.id, "software_ids": req.SoftwareIDs}, c.now)
	return e.dialect.imageRecord(im, true), nil
}

// POST /images/{id}/assign {"machine_ids": [...]}
func (e *Emulator) postImageAssign(c *call) (any, error) {
	im, err := e.lookupImage(c)
	if err != nil {
		return nil, err
	}
	var req struct {
		MachineIDs *[]int64 `json:"machine_ids"`
	}
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.MachineIDs == nil {
		return nil, badRequest("machine_ids is required")
	}
	if im.status != imgAvailable {
		return nil, errf(4210, "image %d is %s, not available", im.id, im.status)
	}
	if len(*req.MachineIDs) == 0 {
		return nil, errf(4211, "no machines given")
	}
	var targets []*seat
	for _, id := range *req.MachineIDs {
		s := e.seats[id]
		if s == nil || s.org != c.org {
			return nil, errf(4211, "machine %d not found in the organization", id)
		}
		targets = append(targets, s)
	}
	for _, s := range targets {
		if s.creatingImage != nil {
			return nil, errf(4214, "computer %d is not assignable: it has a pending session image", s.id)
		}
		if im.sizeGB > float64(s.diskGB) {
			return nil, errf(4510, "image %d (%.2f GB) exceeds the disk of computer %d (%d GB)", im.id, im.sizeGB, s.id, s.diskGB)
		}
	}
	for _, s := range targets {
		s.assigned = im
		s.installImage = true
		s.liveRevision++ // its data is reset
		e.appendLog(c.org, "image_assigned", c.org.admin, s.id, map[string]any{"image_id": im.id, "image_name": im.name, "machine_name": s.name}, c.now)
	}
	return nil, nil
}

// DELETE /images/{id}: building → 4213; otherwise gone at once.
func (e *Emulator) deleteImage(c *call) (any, error) {
	im, err := e.lookupImage(c)
	if err != nil {
		return nil, err
	}
	if im.status == imgBuilding {
		return nil, errf(4213, "image %d is building and cannot be deleted", im.id)
	}
	im.deleted = true
	delete(e.images, im.id)
	for _, s := range e.seats {
		if s.creatingImage == im {
			// The creation is abandoned; the computer is back to off.
			s.creatingImage = nil
			s.schedule(c.now, e.step, stOff)
		}
		if s.assigned == im {
			s.assigned = nil
			s.installImage = false
		}
	}
	e.appendLog(c.org, "image_deleted", c.org.admin, 0, map[string]any{"image_id": im.id, "image_name": im.name}, c.now)
	return nil, nil
}

// GET /software → {"software": [...], "base_images": [...]}
func (e *Emulator) getSoftware(c *call) (any, error) {
	var sw []map[string]any
	for _, s := range e.catalog.software {
		sw = append(sw, map[string]any{"id": s.id, "name": s.name, "size": e.dialect.softwareSize(s.size)})
	}
	var bi []map[string]any
	for _, b := range e.catalog.baseImages {
		bi = append(bi, map[string]any{"id": b.id, "name": b.name, "size": b.size, "type": "base_image"})
	}
	return map[string]any{"software": sw, "base_images": bi}, nil
}
