package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
)

// Images iterates over the organization's images, all pages (GET /images).
// query, when not empty, searches by image name.
func (c *Client) Images(ctx context.Context, query string) iter.Seq2[Image, error] {
	q := url.Values{}
	if query != "" {
		q.Set("q", query)
	}
	fetch := func(ctx context.Context, page int64) ([]Image, *lenientInt, error) {
		var p struct {
			Images   []Image     `json:"images"`
			NextPage *lenientInt `json:"next_page"`
		}
		_, err := c.do(ctx, call{op: opListImages, method: "GET", path: "/images", query: c.pageQuery(q, page), out: &p})
		return p.Images, p.NextPage, err
	}
	return paginate(ctx, "GET /images", fetch, func(im *Image) int64 { return im.ID })
}

// GetImage returns one image (GET /images/{id}). The interface document
// refers to that route without showing it; where the service answers it 404
// for an image its list holds, the image is read from the list
// (GET /images), then and from then on.
func (c *Client) GetImage(ctx context.Context, id int64) (*Image, error) {
	var notFound error
	if !c.dialect.noGetImage.Load() {
		var out imageAnswer
		_, err := c.do(ctx, call{op: opGetImage, method: "GET", path: pathf("/images/%d", id), out: &out})
		if err == nil {
			return &out.Image, nil
		}
		if !IsCode(err, CodeNotFound) {
			return nil, err
		}
		notFound = err
	}
	for im, err := range c.Images(ctx, "") {
		if err != nil {
			return nil, err
		}
		if im.ID == id {
			if notFound != nil && c.dialect.noGetImage.CompareAndSwap(false, true) {
				c.log.Debug("api: GET /images/{id} answers 404 for a listed image; images are read from the list")
			}
			return &im, nil
		}
	}
	if notFound == nil {
		notFound = &Error{Op: pathf("GET /images/%d", id), Code: CodeNotFound, Message: "no such image in GET /images"}
	}
	return nil, notFound
}

// imageAnswer is an answer carrying one image object at the top level (as
// documented) or, tolerated, under "image" or "data".
type imageAnswer struct{ Image Image }

func (a *imageAnswer) UnmarshalJSON(b []byte) error {
	var w struct {
		Image json.RawMessage `json:"image"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	for _, inner := range []json.RawMessage{w.Image, w.Data} {
		if t := bytes.TrimSpace(inner); len(t) > 0 && t[0] == '{' {
			return json.Unmarshal(t, &a.Image)
		}
	}
	return json.Unmarshal(b, &a.Image)
}

// CreateImage creates an image from a stopped computer (POST /images). The
// name is always sent (the schema requires it): an empty one is sent as
// "Template of computer <id>". The build is asynchronous: the image starts
// pending. Not retried unless provably unsent.
func (c *Client) CreateImage(ctx context.Context, machineID int64, name string) (*Image, error) {
	if name == "" {
		name = fmt.Sprintf("Template of computer %d", machineID)
		if len(name) > maxImageName {
			name = fmt.Sprintf("Template %d", machineID)
		}
	}
	body := struct {
		MachineID int64  `json:"machine_id"`
		Name      string `json:"name"`
	}{machineID, name}
	var out imageAnswer
	if _, err := c.do(ctx, call{op: opCreateImage, method: "POST", path: "/images", body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out.Image, nil
}

// maxImageName is the longest image name the service takes, in characters.
const maxImageName = 30

// InstallImageRequest is the body of POST /images/install.
type InstallImageRequest struct {
	Name        string  // optional, at most 30 characters; "Template #<base image id>" when empty
	SoftwareIDs []int64 // ids from Software; empty installs only the base image
	BaseImageID int64   // 0: the latest base image
}

// InstallImage creates an image by installing software on a base image
// (POST /images/install). Name and base_image_id are always sent (the
// schema requires both): without a base image, the latest is asked for by
// its id (the highest id of GET /software), and without a name, the one the
// service would give ("Template #<base image id>"). Asynchronous: the image
// starts pending. Not retried unless provably unsent.
func (c *Client) InstallImage(ctx context.Context, req InstallImageRequest) (*Image, error) {
	if req.BaseImageID == 0 {
		cat, err := c.Software(ctx)
		if err != nil {
			return nil, err
		}
		for _, b := range cat.BaseImages {
			req.BaseImageID = max(req.BaseImageID, b.ID)
		}
		if req.BaseImageID == 0 {
			return nil, &Error{Op: "POST /images/install", Err: errors.New("the service lists no base image (GET /software)")}
		}
	}
	if req.Name == "" {
		req.Name = fmt.Sprintf("Template #%d", req.BaseImageID)
	}
	body := struct {
		Name        string  `json:"name"`
		SoftwareIDs []int64 `json:"software_ids"`
		BaseImageID int64   `json:"base_image_id"`
	}{Name: req.Name, SoftwareIDs: req.SoftwareIDs, BaseImageID: req.BaseImageID}
	if body.SoftwareIDs == nil {
		body.SoftwareIDs = []int64{}
	}
	var out imageAnswer
	if _, err := c.do(ctx, call{op: opInstallImage, method: "POST", path: "/images/install", body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out.Image, nil
}

// AssignImage assigns an available image to computers
// (POST /images/{id}/assign); their data is reset. Not retried unless
// provably unsent.
func (c *Client) AssignImage(ctx context.Context, imageID int64, machineIDs []int64) error {
	body := struct {
		MachineIDs []int64 `json:"machine_ids"`
	}{machineIDs}
	if body.MachineIDs == nil {
		body.MachineIDs = []int64{}
	}
	_, err := c.do(ctx, call{op: opAssignImage, method: "POST", path: pathf("/images/%d/assign", imageID), body: body})
	return err
}

// DeleteImage deletes an image (DELETE /images/{id}); the service cleans it
// up asynchronously. A retry answering 404 after an attempt that may have
// reached the service counts as done.
func (c *Client) DeleteImage(ctx context.Context, id int64) error {
	out, err := c.do(ctx, call{op: opDeleteImage, method: "DELETE", path: pathf("/images/%d", id)})
	if err != nil && out.mayHaveActed && IsCode(err, CodeNotFound) {
		return nil
	}
	return err
}
