// Package fakeclient is an in-memory fake of the service's client, for the
// tests of cache and writeback where HTTP adds nothing.
package fakeclient

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"mime"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// Client is an in-memory stand-in for *api.Client, for the tests where HTTP adds nothing:
// files and folders in a map, ids counted up, uploads stored, and, per
// method, errors to return and holds to wait on.
//
// The listings (SharedFiles, MachineFiles, Recordings) return an
// *api.FileList, which only an *api.Client can make: they go through a
// client whose transport answers from the map, in memory (no socket, no
// emulator, one attempt per call).
type Client struct {
	lister *api.Client // the listings' client

	mu     sync.Mutex
	nextID int64                    // guarded by mu
	files  map[int64]*file          // guarded by mu
	seats  []api.Seat               // guarded by mu
	jobs   map[int64][]int64        // guarded by mu; bundle jobs: the files of each
	errs   map[string][]error       // guarded by mu; by method: what its next calls return
	gates  map[string]chan struct{} // guarded by mu; by method: its calls wait until it closes
	// answerGates: by listing method, its calls read the files, then wait
	// until it closes to answer. Guarded by mu.
	answerGates map[string]chan struct{}
	heldAnswers int            // guarded by mu; listings that read the files and wait at an answer gate
	calls       map[string]int // guarded by mu; by method
	// beforeAnswer, when set, runs once a listing has read the files and
	// before it answers (a change landing while the answer is on its way).
	// Guarded by mu.
	beforeAnswer func(method string)
	uploads      []api.UploadRequest // guarded by mu; the Upload calls' requests
	// completed, when set, is called once an upload is on the service,
	// before its answer. Guarded by mu.
	completed func(id int64)
	downloads []api.DownloadToRequest // guarded by mu; the DownloadTo calls' requests
}

// file is one file or folder of the fake service.
type file struct {
	area place.Area
	file api.File
	data []byte
}

// New makes an empty fake service.
func New(t testing.TB) *Client {
	t.Helper()
	c := &Client{
		nextID: 1000, files: map[int64]*file{}, jobs: map[int64][]int64{},
		errs: map[string][]error{}, gates: map[string]chan struct{}{}, answerGates: map[string]chan struct{}{}, calls: map[string]int{},
	}
	lister, err := api.New(api.Credentials{Endpoint: "http://fake.invalid", Key: "fake", Secret: "fake"},
		api.Options{Transport: transport{c}, Logger: testkit.Log(t), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	c.lister = lister
	return c
}

// Put stores a file with data in folder parent of area, and returns it.
func (c *Client) Put(area place.Area, parent int64, name string, data []byte) api.File {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.putLocked(area, parent, name, slices.Clone(data))
}

func (c *Client) putLocked(area place.Area, parent int64, name string, data []byte) api.File {
	c.nextID++
	return c.putIDLocked(c.nextID, area, parent, name, data)
}

// OnCompleted sets (or clears: nil) the hook called once an upload is on
// the service, before its answer.
func (c *Client) OnCompleted(f func(id int64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.completed = f
}

// putIDLocked is putLocked with the id given (taken from nextID before).
func (c *Client) putIDLocked(id int64, area place.Area, parent int64, name string, data []byte) api.File {
	f := api.File{
		ID: id, Name: name, Size: int64(len(data)), ObjectType: api.ObjectFile, ParentID: parent,
		LastModified: time.Now().UTC().Truncate(time.Second),
		Details:      &api.FileDetails{Type: "file", ContentType: contentType(name), Status: api.FileStatusUploadCompleted},
	}
	if area.Kind == place.Machine {
		f.Details.MachineID = api.Int64(area.MachineID)
	}
	c.files[f.ID] = &file{area: area, file: f, data: data}
	return f
}

// Mkdir makes a folder in folder parent of area, and returns it.
func (c *Client) Mkdir(area place.Area, parent int64, name string) api.File {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.putLocked(area, parent, name, nil)
	f.ObjectType, f.Details.ContentType = api.ObjectDirectory, "directory"
	c.files[f.ID].file = f
	return f
}

// SetSeats sets the organization's computers.
func (c *Client) SetSeats(seats ...api.Seat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seats = seats
}

// FailNext makes the next calls of method return errs, one each.
func (c *Client) FailNext(method string, errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs[method] = append(c.errs[method], errs...)
}

// Hold makes the calls of method wait (until their context ends) until
// release is called.
func (c *Client) Hold(method string) (release func()) { return c.gate(c.gates, method) }

// HoldAnswer makes the listings of method read the files at once and wait
// to answer (until their context ends) until release is called: a listing
// that the service made before a change and that arrives after it.
func (c *Client) HoldAnswer(method string) (release func()) {
	return c.gate(c.answerGates, method)
}

// gate puts a closed-on-release channel in gates (one of c's, guarded by
// c.mu) for method.
func (c *Client) gate(gates map[string]chan struct{}, method string) (release func()) {
	ch := make(chan struct{})
	c.mu.Lock()
	gates[method] = ch
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			delete(gates, method)
			c.mu.Unlock()
			close(ch)
		})
	}
}

// Count is the number of calls of method so far.
func (c *Client) Count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

// call counts a call of method, waits while it is held, and returns the
// error injected for it, if any.
func (c *Client) call(ctx context.Context, method string) error {
	c.mu.Lock()
	c.calls[method]++
	gate := c.gates[method]
	var err error
	if q := c.errs[method]; len(q) > 0 {
		err, c.errs[method] = q[0], q[1:]
	}
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// childrenLocked are the entries of folder parent of area, by id.
func (c *Client) childrenLocked(area place.Area, parent int64) []api.File {
	var out []api.File
	for _, f := range c.files {
		if f.area == area && f.file.ParentID == parent {
			out = append(out, f.file)
		}
	}
	slices.SortFunc(out, func(a, b api.File) int { return int(a.ID - b.ID) })
	return out
}

func notFound(op string, id int64) error {
	return &api.Error{Op: op, HTTPStatus: 200, Code: api.CodeNotFound, Message: fmt.Sprintf("no file %d", id)}
}

func (c *Client) SharedFiles(ctx context.Context, req api.ListFilesRequest) *api.FileList {
	return c.lister.SharedFiles(ctx, req)
}

func (c *Client) MachineFiles(ctx context.Context, machineID int64, req api.ListFilesRequest) *api.FileList {
	return c.lister.MachineFiles(ctx, machineID, req)
}

func (c *Client) Recordings(ctx context.Context, req api.ListFilesRequest) *api.FileList {
	return c.lister.Recordings(ctx, req)
}

func (c *Client) Seats(ctx context.Context, query string) iter.Seq2[api.Seat, error] {
	return func(yield func(api.Seat, error) bool) {
		if err := c.call(ctx, "Seats"); err != nil {
			yield(api.Seat{}, err)
			return
		}
		c.mu.Lock()
		seats := slices.Clone(c.seats)
		c.mu.Unlock()
		for _, s := range seats {
			if !yield(s, nil) {
				return
			}
		}
	}
}

func (c *Client) FileURL(ctx context.Context, id int64) (*api.DownloadLink, error) {
	if err := c.call(ctx, "FileURL"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.files[id]
	if !ok {
		return nil, notFound("POST /files/download", id)
	}
	return &api.DownloadLink{URL: fmt.Sprintf("fake://file/%d", id), Size: api.Int64(f.file.Size)}, nil
}

func (c *Client) ReadRange(ctx context.Context, rawURL string, off, n int64) (io.ReadCloser, error) {
	if err := c.call(ctx, "ReadRange"); err != nil {
		return nil, err
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(rawURL, "fake://file/"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("fake: no object at %q", rawURL)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.files[id]
	if !ok || off > int64(len(f.data)) {
		return nil, &api.ObjectError{Op: "GET", URL: rawURL, HTTPStatus: http.StatusNotFound}
	}
	end := int64(len(f.data))
	if n >= 0 {
		end = min(end, off+n)
	}
	return io.NopCloser(bytes.NewReader(f.data[off:end])), nil // data is never changed once stored
}

func (c *Client) CreateDownload(ctx context.Context, req api.CreateDownloadRequest) (*api.DownloadLink, error) {
	if err := c.call(ctx, "CreateDownload"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	c.jobs[c.nextID] = slices.Clone(req.FileIDs)
	return &api.DownloadLink{DownloadID: c.nextID}, nil
}

func (c *Client) DownloadStatus(ctx context.Context, id int64, generateURL bool) (*api.DownloadJob, error) {
	if err := c.call(ctx, "DownloadStatus"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.jobs[id]; !ok {
		return nil, notFound("GET /files/download/{id}", id)
	}
	return &api.DownloadJob{ID: id, Status: api.DownloadUploaded, DownloadURL: fmt.Sprintf("fake://bundle/%d", id)}, nil
}

func (c *Client) AbortDownload(ctx context.Context, id int64) error {
	if err := c.call(ctx, "AbortDownload"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.jobs, id)
	return nil
}

// DownloadTo writes a bundle's ZIP, its files at the top level.
func (c *Client) DownloadTo(ctx context.Context, req api.DownloadToRequest) (int64, error) {
	if err := c.call(ctx, "DownloadTo"); err != nil {
		return 0, err
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(req.URL, "fake://bundle/"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("fake: no bundle at %q", req.URL)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	c.mu.Lock()
	c.downloads = append(c.downloads, req)
	for _, fid := range c.jobs[id] {
		if f, ok := c.files[fid]; ok {
			w, _ := zw.Create(f.file.Name)
			w.Write(f.data)
		}
	}
	c.mu.Unlock()
	if err := zw.Close(); err != nil {
		return 0, err
	}
	n, err := req.Dst.WriteAt(buf.Bytes(), 0)
	return int64(n), err
}

// Upload stores Body's Size bytes as the file, after a 451 when the name is
// taken and Overwrite is not set.
func (c *Client) Upload(ctx context.Context, req api.UploadRequest) (*api.UploadResult, error) {
	if err := c.call(ctx, "Upload"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.uploads = append(c.uploads, req)
	c.mu.Unlock()
	data := make([]byte, req.Size)
	if n, err := req.Body.ReadAt(data, 0); int64(n) != req.Size {
		return nil, fmt.Errorf("fake: read %d of %d bytes: %v", n, req.Size, err)
	}
	area := place.Area{Kind: place.Shared}
	if req.MachineID != 0 {
		area = place.Area{Kind: place.Machine, MachineID: req.MachineID}
	}
	c.mu.Lock()
	for _, f := range c.childrenLocked(area, req.ParentID) {
		if f.Name == req.Name && !req.Overwrite {
			c.mu.Unlock()
			return nil, &api.Error{Op: "POST /files", HTTPStatus: 200, Code: api.CodeFileExists, Message: "file already exists"}
		}
	}
	c.nextID++
	id := c.nextID // the record's
	c.mu.Unlock()
	if req.Created != nil {
		req.Created(id)
	}
	c.mu.Lock()
	for _, f := range c.childrenLocked(area, req.ParentID) {
		if f.Name == req.Name {
			delete(c.files, f.ID)
		}
	}
	f := c.putIDLocked(id, area, req.ParentID, req.Name, data)
	c.files[f.ID].file.Details.ContentType = req.ContentType
	completed := c.completed
	c.mu.Unlock()
	if completed != nil {
		completed(f.ID) // on the service; its answer not read yet
	}
	if req.Progress != nil {
		req.Progress(req.Size, req.Size)
	}
	return &api.UploadResult{ID: f.ID, Size: f.Size, Parts: 1, PartSize: f.Size}, nil
}

func (c *Client) CreateDirectory(ctx context.Context, req api.CreateDirectoryRequest) (*api.CreatedDirectory, error) {
	if err := c.call(ctx, "CreateDirectory"); err != nil {
		return nil, err
	}
	area := place.Area{Kind: place.Shared}
	if req.MachineID != 0 {
		area = place.Area{Kind: place.Machine, MachineID: req.MachineID}
	}
	c.mu.Lock()
	for _, f := range c.childrenLocked(area, req.ParentID) {
		if f.Name == req.Name {
			c.mu.Unlock()
			return nil, &api.Error{Op: "POST /files", HTTPStatus: 200, Code: api.CodeFileExists, Message: "file already exists"}
		}
	}
	c.mu.Unlock()
	return &api.CreatedDirectory{ID: c.Mkdir(area, req.ParentID, req.Name).ID}, nil
}

func (c *Client) DeleteFile(ctx context.Context, id int64) error {
	if err := c.call(ctx, "DeleteFile"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.files[id]; !ok {
		return notFound("DELETE /files/{id}", id)
	}
	delete(c.files, id)
	return nil
}

// transport answers the listing requests of Client.lister from the
// fake's map: GET /files, /files/recordings and /machines/{id}/files, one
// page. An error injected for the method is answered as the service would.
type transport struct{ c *Client }

func (tr transport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := strings.TrimPrefix(req.URL.Path, api.PathPrefix)
	var method string
	var area place.Area
	switch {
	case p == "/files":
		method, area = "SharedFiles", place.Area{Kind: place.Shared}
	case p == "/files/recordings":
		method, area = "Recordings", place.Area{Kind: place.Recordings}
	case strings.HasPrefix(p, "/machines/") && strings.HasSuffix(p, "/files"):
		id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(p, "/machines/"), "/files"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("fake: %s", p)
		}
		method, area = "MachineFiles", place.Area{Kind: place.Machine, MachineID: id}
	default:
		return nil, fmt.Errorf("fake: no %s %s", req.Method, p)
	}
	if err := tr.c.call(req.Context(), method); err != nil {
		return answer(req, err, nil)
	}
	parent, _ := strconv.ParseInt(req.URL.Query().Get("parent_id"), 10, 64)
	tr.c.mu.Lock()
	files := tr.c.childrenLocked(area, parent)
	gate := tr.c.answerGates[method]
	if gate != nil {
		tr.c.heldAnswers++
	}
	hook := tr.c.beforeAnswer
	tr.c.mu.Unlock()
	if hook != nil {
		hook(method)
	}
	if gate != nil {
		select {
		case <-gate:
		case <-req.Context().Done():
			return answer(req, req.Context().Err(), nil)
		}
	}
	return answer(req, nil, map[string]any{"files": files})
}

// answer is the service's answer of body, or of err: an *api.Error as its
// status and client_code, anything else as a failed round trip.
func answer(req *http.Request, err error, body any) (*http.Response, error) {
	status := http.StatusOK
	if err != nil {
		e, ok := err.(*api.Error)
		if !ok {
			return nil, err
		}
		if e.HTTPStatus != 0 {
			status = e.HTTPStatus
		}
		body = map[string]any{"client_code": e.Code, "message": e.Message}
	}
	b, jerr := json.Marshal(body)
	if jerr != nil {
		return nil, jerr
	}
	return &http.Response{
		StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req,
	}, nil
}

// contentType is the type the service records for a file named name.
func contentType(name string) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Bundles are the bundle jobs made (each with its files' ids) and the
// DownloadTo calls' requests.
func (c *Client) Bundles() (map[int64][]int64, []api.DownloadToRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.jobs), slices.Clone(c.downloads)
}

// Uploads are the Upload calls' requests.
func (c *Client) Uploads() []api.UploadRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.uploads)
}

// Has reports whether the service holds file id.
func (c *Client) Has(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, there := c.files[id]
	return there
}

// Data is what the service holds of file id (nil when none).
func (c *Client) Data(id int64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.files[id]; ok {
		return slices.Clone(f.data)
	}
	return nil
}

// Remove deletes file id on the service, as another desk would.
func (c *Client) Remove(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.files, id)
}

// Replace deletes file old and stores a file with data in folder parent of
// area in one step, as another desk's upload over it would, and returns it.
func (c *Client) Replace(old int64, area place.Area, parent int64, name string, data []byte) api.File {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.files, old)
	return c.putLocked(area, parent, name, slices.Clone(data))
}

// HeldBytes is how many bytes of content the service holds.
func (c *Client) HeldBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.files {
		n += len(f.data)
	}
	return n
}

// HeldAnswers is how many listings read the files and wait at an answer
// gate (HoldAnswer).
func (c *Client) HeldAnswers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heldAnswers
}

// BeforeAnswer sets (or clears: nil) the hook run once a listing has read
// the files and before it answers (a change landing while the answer is on
// its way).
func (c *Client) BeforeAnswer(f func(method string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beforeAnswer = f
}
