package ctl

// .ctl/images/: the organization's images, and the making of new ones.
//
// Locks: none of its own (docs/ARCHITECTURE.md).

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs"
)

// maxImageName is the longest image name the service takes, in characters.
const maxImageName = 30

// images is every image, every page, kept like listings.
func (t *Tree) images(ctx context.Context) ([]api.Image, error) {
	return memoGet(ctx, t.memo, "images", func(ctx context.Context) (imagesInMotion, error) {
		ims, err := api.Collect(t.admin.Images(ctx, ""))
		if ims == nil && err == nil {
			ims = []api.Image{}
		}
		return ims, err
	})
}

// imagesInMotion is an image list, moving while an image is pending or building.
type imagesInMotion []api.Image

func (l imagesInMotion) moving() bool {
	for _, im := range l {
		if im.Status == api.ImagePending || im.Status == api.ImageBuilding {
			return true
		}
	}
	return false
}

// image returns image id from the list (ENOENT when it is not there).
func (t *Tree) image(ctx context.Context, id int64) (*api.Image, error) {
	ims, err := t.images(ctx)
	if err != nil {
		return nil, err
	}
	for i := range ims {
		if ims[i].ID == id {
			return &ims[i], nil
		}
	}
	return nil, refuse(syscall.ENOENT, "no image %d in the organization", id)
}

// imagesList is .ctl/images/: a folder per image, new, install, result.
func (t *Tree) imagesList(ctx context.Context) ([]entry, error) {
	const dir = fs.CtlName + "/images"
	ims, err := t.images(ctx)
	if err != nil {
		return nil, err
	}
	es := make([]entry, 0, len(ims)+3)
	for _, im := range ims {
		es = append(es, t.imageEntry(im.ID))
	}
	return append(es,
		t.fileEntry(dir, "new", 0o200, nil, t.newImageAction()),
		t.fileEntry(dir, "install", 0o200, nil, t.installImageAction()),
		t.resultEntry(dir),
	), nil
}

// imageEntry is .ctl/images/<id>/.
func (t *Tree) imageEntry(id int64) entry {
	sid := strconv.FormatInt(id, 10)
	dir := fs.CtlName + "/images/" + sid
	es := []entry{
		t.volatileEntry(dir, "info", 0o444, jsonRead(func(ctx context.Context) (*api.Image, error) { return t.image(ctx, id) }), nil),
		t.fileEntry(dir, "assign", 0o200, nil, t.assignImageAction(id)),
		t.fileEntry(dir, "delete", 0o200, nil, t.deleteImageAction(id)),
		t.resultEntry(dir),
	}
	return t.dirEntry(fs.CtlName+"/images", sid, func(ctx context.Context) ([]entry, error) {
		if _, err := t.image(ctx, id); err != nil {
			return nil, err
		}
		return es, nil
	}, nil)
}

// checkImageName refuses a name the service would not take.
func checkImageName(name string) error {
	if n := utf8.RuneCountInString(name); n > maxImageName {
		return refuse(syscall.EINVAL, "image name %q has %d characters; at most %d", name, n, maxImageName)
	}
	return nil
}

// newImageAction is images/new: {"machine_id": N, "name": "..."}.
func (t *Tree) newImageAction() *action {
	return &action{name: "images new", json: true, parse: func(in string) (step, error) {
		var req struct {
			MachineID *int64 `json:"machine_id"`
			Name      string `json:"name"`
		}
		if err := strictJSON(in, &req); err != nil {
			return step{}, err
		}
		if req.MachineID == nil || *req.MachineID <= 0 {
			return step{}, refuse(syscall.EINVAL, "machine_id (a computer id) is required")
		}
		if err := checkImageName(req.Name); err != nil {
			return step{}, err
		}
		return step{what: "from computer " + strconv.FormatInt(*req.MachineID, 10), run: func(ctx context.Context) (any, error) {
			defer t.changed()
			return t.admin.CreateImage(ctx, *req.MachineID, req.Name)
		}}, nil
	}}
}

// installImageAction is images/install: {"name", "software_ids", "base_image_id"}.
func (t *Tree) installImageAction() *action {
	return &action{name: "images install", json: true, parse: func(in string) (step, error) {
		var req struct {
			Name        string  `json:"name"`
			SoftwareIDs []int64 `json:"software_ids"`
			BaseImageID int64   `json:"base_image_id"`
		}
		if err := strictJSON(in, &req); err != nil {
			return step{}, err
		}
		if err := checkImageName(req.Name); err != nil {
			return step{}, err
		}
		if req.BaseImageID < 0 {
			return step{}, refuse(syscall.EINVAL, "base_image_id must be an id from software")
		}
		for _, id := range req.SoftwareIDs {
			if id <= 0 {
				return step{}, refuse(syscall.EINVAL, "software_ids must be ids from software, not %d", id)
			}
		}
		what := strings.TrimSpace("named " + strconv.Quote(req.Name))
		return step{what: what, run: func(ctx context.Context) (any, error) {
			defer t.changed()
			return t.admin.InstallImage(ctx, api.InstallImageRequest{Name: req.Name, SoftwareIDs: req.SoftwareIDs, BaseImageID: req.BaseImageID})
		}}, nil
	}}
}

// parseIDs reads computer ids separated by spaces or commas.
func parseIDs(in string) ([]int64, error) {
	fields := strings.FieldsFunc(in, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(fields) == 0 {
		return nil, refuse(syscall.EINVAL, "write computer ids, separated by spaces or commas")
	}
	ids := make([]int64, len(fields))
	for i, s := range fields {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return nil, refuse(syscall.EINVAL, "%q is not a computer id", s)
		}
		ids[i] = id
	}
	return ids, nil
}

// assignImageAction is images/<id>/assign: computer ids.
func (t *Tree) assignImageAction(id int64) *action {
	return &action{name: "image assign", also: fs.CtlName + "/images", parse: func(in string) (step, error) {
		ids, err := parseIDs(in)
		if err != nil {
			return step{}, err
		}
		what := strconv.FormatInt(id, 10) + " to computers " + strings.Join(strings.Fields(strings.ReplaceAll(in, ",", " ")), ",")
		return step{what: what, run: func(ctx context.Context) (any, error) {
			defer t.changed()
			return nil, t.admin.AssignImage(ctx, id, ids)
		}}, nil
	}}
}

// deleteImageAction is images/<id>/delete: the word delete.
func (t *Tree) deleteImageAction(id int64) *action {
	return &action{name: "image delete", also: fs.CtlName + "/images", ends: true, parse: func(in string) (step, error) {
		if in != "delete" {
			return step{}, refuse(syscall.EINVAL, "write the word delete to delete image %d", id)
		}
		return step{what: strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			defer t.changed()
			return nil, t.admin.DeleteImage(ctx, id)
		}}, nil
	}}
}
