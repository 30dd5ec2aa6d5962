package fs

// .ctl/images/: the organization's images, and the making of new ones.
//
// Locks: none of its own (see ctl.go).

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/orgfs/orgfs/api"
)

// maxImageName is the longest image name the service takes, in characters.
const maxImageName = 30

// images is every image, every page, kept like listings.
func (f *FS) images(ctx context.Context) ([]api.Image, error) {
	return memoGet(ctx, f.ctl.memo, "images", func(ctx context.Context) (imagesInMotion, error) {
		ims, err := api.Collect(f.Admin.Images(ctx, ""))
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
func (f *FS) image(ctx context.Context, id int64) (*api.Image, error) {
	ims, err := f.images(ctx)
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
func (f *FS) imagesList(ctx context.Context) ([]ctlEntry, error) {
	const dir = ctlName + "/images"
	ims, err := f.images(ctx)
	if err != nil {
		return nil, err
	}
	es := make([]ctlEntry, 0, len(ims)+3)
	for _, im := range ims {
		es = append(es, f.imageEntry(im.ID))
	}
	return append(es,
		f.ctlFileEntry(dir, "new", 0o200, nil, f.newImageAction()),
		f.ctlFileEntry(dir, "install", 0o200, nil, f.installImageAction()),
		f.ctlResultEntry(dir),
	), nil
}

// imageEntry is .ctl/images/<id>/.
func (f *FS) imageEntry(id int64) ctlEntry {
	sid := strconv.FormatInt(id, 10)
	dir := ctlName + "/images/" + sid
	es := []ctlEntry{
		f.ctlLiveEntry(dir, "info", 0o444, jsonRead(func(ctx context.Context) (*api.Image, error) { return f.image(ctx, id) }), nil),
		f.ctlFileEntry(dir, "assign", 0o200, nil, f.assignImageAction(id)),
		f.ctlFileEntry(dir, "delete", 0o200, nil, f.deleteImageAction(id)),
		f.ctlResultEntry(dir),
	}
	return f.ctlDirEntry(ctlName+"/images", sid, func(ctx context.Context) ([]ctlEntry, error) {
		if _, err := f.image(ctx, id); err != nil {
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
func (f *FS) newImageAction() *ctlAction {
	return &ctlAction{name: "images new", json: true, parse: func(in string) (ctlRun, error) {
		var req struct {
			MachineID *int64 `json:"machine_id"`
			Name      string `json:"name"`
		}
		if err := strictJSON(in, &req); err != nil {
			return ctlRun{}, err
		}
		if req.MachineID == nil || *req.MachineID <= 0 {
			return ctlRun{}, refuse(syscall.EINVAL, "machine_id (a computer id) is required")
		}
		if err := checkImageName(req.Name); err != nil {
			return ctlRun{}, err
		}
		return ctlRun{what: "from computer " + strconv.FormatInt(*req.MachineID, 10), run: func(ctx context.Context) (any, error) {
			defer f.changed()
			return f.Admin.CreateImage(ctx, *req.MachineID, req.Name)
		}}, nil
	}}
}

// installImageAction is images/install: {"name", "software_ids", "base_image_id"}.
func (f *FS) installImageAction() *ctlAction {
	return &ctlAction{name: "images install", json: true, parse: func(in string) (ctlRun, error) {
		var req struct {
			Name        string  `json:"name"`
			SoftwareIDs []int64 `json:"software_ids"`
			BaseImageID int64   `json:"base_image_id"`
		}
		if err := strictJSON(in, &req); err != nil {
			return ctlRun{}, err
		}
		if err := checkImageName(req.Name); err != nil {
			return ctlRun{}, err
		}
		if req.BaseImageID < 0 {
			return ctlRun{}, refuse(syscall.EINVAL, "base_image_id must be an id from software")
		}
		for _, id := range req.SoftwareIDs {
			if id <= 0 {
				return ctlRun{}, refuse(syscall.EINVAL, "software_ids must be ids from software, not %d", id)
			}
		}
		what := strings.TrimSpace("named " + strconv.Quote(req.Name))
		return ctlRun{what: what, run: func(ctx context.Context) (any, error) {
			defer f.changed()
			return f.Admin.InstallImage(ctx, api.InstallImageRequest{Name: req.Name, SoftwareIDs: req.SoftwareIDs, BaseImageID: req.BaseImageID})
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
func (f *FS) assignImageAction(id int64) *ctlAction {
	return &ctlAction{name: "image assign", also: ctlName + "/images", parse: func(in string) (ctlRun, error) {
		ids, err := parseIDs(in)
		if err != nil {
			return ctlRun{}, err
		}
		what := strconv.FormatInt(id, 10) + " to computers " + strings.Join(strings.Fields(strings.ReplaceAll(in, ",", " ")), ",")
		return ctlRun{what: what, run: func(ctx context.Context) (any, error) {
			defer f.changed()
			return nil, f.Admin.AssignImage(ctx, id, ids)
		}}, nil
	}}
}

// deleteImageAction is images/<id>/delete: the word delete.
func (f *FS) deleteImageAction(id int64) *ctlAction {
	return &ctlAction{name: "image delete", also: ctlName + "/images", ends: true, parse: func(in string) (ctlRun, error) {
		if in != "delete" {
			return ctlRun{}, refuse(syscall.EINVAL, "write the word delete to delete image %d", id)
		}
		return ctlRun{what: strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			defer f.changed()
			return nil, f.Admin.DeleteImage(ctx, id)
		}}, nil
	}}
}
