package api

import (
	"context"
	"iter"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ListFilesRequest selects the entries of one folder of a storage area.
type ListFilesRequest struct {
	ParentID  int64  // folder id; 0: the area's root
	Query     string // search by file or directory name (q)
	TaskID    int64  // MachineFiles only: the task's output folder and its recording folders
	MachineID int64  // Recordings only: recordings of this computer
}

// FileList is a folder listing of a storage area. All iterates over the
// entries of all pages; Current and Count give the folder's own record and
// its item count as the first page of the latest iteration told them.
type FileList struct {
	// dependencies
	c   *Client
	ctx context.Context
	// constants
	op, path  string
	query     url.Values
	machineID int64  // a computer's storage: its id, for computerCall
	suffix    string // a computer's storage: the route's suffix ("files"); "" for the others

	mu      sync.Mutex
	current *File // guarded by mu
	count   int64 // guarded by mu
}

// All iterates over the folder's entries, all pages, one page at a time.
// Each call lists anew.
func (l *FileList) All() iter.Seq2[File, error] {
	return paginate(l.ctx, "GET "+l.path, l.fetchFiles, func(f *File) int64 { return f.ID })
}

// Current returns the folder's own record from the first page (nil at a
// root, and before an iteration fetched the first page).
func (l *FileList) Current() *File {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current
}

// Count returns the number of items in the folder, from the first page (0
// before an iteration fetched it).
func (l *FileList) Count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

func (c *Client) fileList(ctx context.Context, op, path string, req ListFilesRequest, extra url.Values) *FileList {
	q := url.Values{}
	q.Set("parent_id", strconv.FormatInt(req.ParentID, 10))
	if req.Query != "" {
		q.Set("q", req.Query)
	}
	for k, v := range extra {
		q[k] = v
	}
	return &FileList{c: c, ctx: ctx, op: op, path: path, query: q}
}

// SharedFiles lists a folder of the organization's shared storage (GET /files).
func (c *Client) SharedFiles(ctx context.Context, req ListFilesRequest) *FileList {
	return c.fileList(ctx, opSharedFiles, "/files", req, nil)
}

// MachineFiles lists a folder of a computer's storage (GET /machines/{id}/files,
// or /seats/{id}/files where the service serves that form alone).
func (c *Client) MachineFiles(ctx context.Context, machineID int64, req ListFilesRequest) *FileList {
	extra := url.Values{}
	if req.TaskID != 0 {
		extra.Set("task_id", strconv.FormatInt(req.TaskID, 10))
	}
	l := c.fileList(ctx, opMachineFiles, pathf("/machines/%d/files", machineID), req, extra)
	l.machineID, l.suffix = machineID, "files"
	return l
}

// Recordings lists a folder of the session recordings (GET /files/recordings).
func (c *Client) Recordings(ctx context.Context, req ListFilesRequest) *FileList {
	extra := url.Values{}
	if req.MachineID != 0 {
		extra.Set("machine_id", strconv.FormatInt(req.MachineID, 10))
	}
	return c.fileList(ctx, opRecordings, "/files/recordings", req, extra)
}

// CreateFileRequest is POST /files for a file: it creates the file record
// and starts its multipart upload. Upload does the whole upload.
type CreateFileRequest struct {
	MachineID   int64  // 0: the organization's shared storage
	ParentID    int64  // 0: the root
	Name        string // unique in the folder unless Overwrite
	ContentType string // MIME type; "" sends application/octet-stream
	Size        int64  // bytes
	ChunkSizeMB int64  // part size in MB; 0: the service default (250)
	Overwrite   bool   // replace a file of the same name
}

type createFileBody struct {
	MachineID   int64  `json:"machine_id,omitempty"`
	FileName    string `json:"file_name"`
	ObjectType  string `json:"object_type"`
	ContentType string `json:"content_type,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	ChunkSize   int64  `json:"chunk_size,omitempty"`
	Overwrite   bool   `json:"overwrite"`
	ParentID    int64  `json:"parent_id"`
}

// CreateFile creates a file record and starts its multipart upload
// (POST /files, object_type file). Retried: an upload record stays invisible
// until completed and the next initiation replaces it.
func (c *Client) CreateFile(ctx context.Context, req CreateFileRequest) (*CreateFileResult, error) {
	ct := req.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	size := req.Size
	body := createFileBody{
		MachineID: req.MachineID, FileName: req.Name, ObjectType: ObjectFile, ContentType: ct,
		Size: &size, ChunkSize: req.ChunkSizeMB, Overwrite: req.Overwrite, ParentID: req.ParentID,
	}
	var out CreateFileResult
	if _, err := c.do(ctx, call{op: opCreateFile, method: "POST", path: "/files", body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateDirectoryRequest is POST /files for a directory.
type CreateDirectoryRequest struct {
	MachineID int64 // 0: the organization's shared storage
	ParentID  int64 // 0: the root
	Name      string
}

// CreatedDirectory is the result of CreateDirectory.
type CreatedDirectory struct {
	ID  int64
	UID string // "" when Recovered
	// Recovered: an attempt may have created the directory but its answer
	// was lost; the retry answered 451 and the directory was found by name
	// in the parent.
	Recovered bool
}

// CreateDirectory creates a directory (POST /files, object_type directory).
// It is retried; when a retry answers 451 (exists) after an attempt that may
// have reached the service, the directory is looked up by name in the parent
// and returned with Recovered set. A 451 on a first attempt is returned as is.
func (c *Client) CreateDirectory(ctx context.Context, req CreateDirectoryRequest) (*CreatedDirectory, error) {
	body := createFileBody{MachineID: req.MachineID, FileName: req.Name, ObjectType: ObjectDirectory, ParentID: req.ParentID}
	var out CreateFileResult
	res, err := c.do(ctx, call{op: opCreateDirectory, method: "POST", path: "/files", body: body, out: &out})
	if err == nil {
		return &CreatedDirectory{ID: out.ID, UID: out.UID}, nil
	}
	if !res.mayHaveActed || !IsExists(err) {
		return nil, err
	}
	f, lerr := c.findChild(ctx, req.MachineID, req.ParentID, req.Name)
	if lerr != nil || f == nil || !f.IsDir() {
		return nil, err
	}
	c.log.WithField("id", f.ID).Debug("api: directory creation recovered after a lost answer")
	return &CreatedDirectory{ID: f.ID, Recovered: true}, nil
}

// findChild looks an entry up by exact name in a folder; nil when absent.
// The name search (q) may also match entries deeper below the folder, so
// only an entry whose parent_id is the folder's is taken; at a root (parentID
// 0) that id is learned from the parent_id of the root's first entry.
func (c *Client) findChild(ctx context.Context, machineID, parentID int64, name string) (*File, error) {
	list := func(req ListFilesRequest) *FileList {
		if machineID != 0 {
			return c.MachineFiles(ctx, machineID, req)
		}
		return c.SharedFiles(ctx, req)
	}
	want := parentID
	if want == 0 {
		for f, err := range list(ListFilesRequest{}).All() {
			if err != nil {
				return nil, err
			}
			want = f.ParentID
			break
		}
		if want == 0 {
			return nil, nil // an empty root
		}
	}
	for f, err := range list(ListFilesRequest{ParentID: parentID, Query: name}).All() {
		if err != nil {
			return nil, err
		}
		if f.Name == name && f.ParentID == want {
			return &f, nil
		}
	}
	return nil, nil
}

// CompleteFile completes a multipart upload (POST /files/{id}/complete)
// with every part's ETag; parts are sent in part number order. Retried: the
// service answers a repeated complete of the same parts the same way.
func (c *Client) CompleteFile(ctx context.Context, fileID int64, parts []Part) (*CompleteResult, error) {
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, func(a, b Part) int { return a.PartNumber - b.PartNumber })
	if sorted == nil {
		sorted = []Part{}
	}
	body := struct {
		Parts []Part `json:"parts"`
	}{sorted}
	var out CompleteResult
	if _, err := c.do(ctx, call{op: opCompleteFile, method: "POST", path: pathf("/files/%d/complete", fileID), body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteFile deletes a file, or a directory with everything in it
// (DELETE /files/{id}); irreversible. A retry answering 404 after an attempt
// that may have reached the service counts as done.
func (c *Client) DeleteFile(ctx context.Context, id int64) error {
	out, err := c.do(ctx, call{op: opDeleteFile, method: "DELETE", path: pathf("/files/%d", id)})
	if err != nil && out.mayHaveActed && IsCode(err, CodeNotFound) {
		return nil
	}
	return err
}

// FileDownloadURL returns a file's presigned URL (GET /files/{id}/download;
// documented for files of the user's own and shared storage).
func (c *Client) FileDownloadURL(ctx context.Context, id int64) (*DownloadLink, error) {
	var out DownloadLink
	if _, err := c.do(ctx, call{op: opFileDownloadURL, method: "GET", path: pathf("/files/%d/download", id), out: &out}); err != nil {
		return nil, err
	}
	out.fillExpiry()
	return &out, nil
}

// CreateDownloadRequest is the body of POST /files/download. Exactly one of
// the three must be set (the service answers 4722 otherwise; the client
// sends what it is given).
type CreateDownloadRequest struct {
	DirectoryID int64   // zip a directory and its subdirectories
	FileIDs     []int64 // one file: a direct URL; several: a job
	TaskID      int64   // zip a task's output folder and its recording folders
}

// CreateDownload creates a download (POST /files/download): a presigned URL
// at once for a single file, otherwise a job (DownloadID) to poll with
// DownloadStatus. Retried (a repeat makes at most an extra temporary file).
func (c *Client) CreateDownload(ctx context.Context, req CreateDownloadRequest) (*DownloadLink, error) {
	body := struct {
		DirectoryID int64   `json:"directory_id,omitempty"`
		FileIDs     []int64 `json:"file_ids,omitempty"`
		TaskID      int64   `json:"task_id,omitempty"`
	}{req.DirectoryID, req.FileIDs, req.TaskID}
	var out DownloadLink
	if _, err := c.do(ctx, call{op: opCreateDownload, method: "POST", path: "/files/download", body: body, out: &out}); err != nil {
		return nil, err
	}
	out.fillExpiry()
	return &out, nil
}

// DownloadStatus returns a download job (GET /files/downloads/{id}). With
// generateURL the answer of an uploaded job carries a fresh presigned URL.
func (c *Client) DownloadStatus(ctx context.Context, id int64, generateURL bool) (*DownloadJob, error) {
	q := url.Values{"generate_download_url": {strconv.FormatBool(generateURL)}}
	var out DownloadJob
	if _, err := c.do(ctx, call{op: opDownloadStatus, method: "GET", path: pathf("/files/downloads/%d", id), query: q, out: &out}); err != nil {
		return nil, err
	}
	if out.ID == 0 {
		out.ID = id
	}
	return &out, nil
}

// AbortDownload aborts a pending or processing download job
// (DELETE /files/downloads/{id}). A retry answering 4716 (already final)
// after an attempt that may have reached the service counts as done.
func (c *Client) AbortDownload(ctx context.Context, id int64) error {
	out, err := c.do(ctx, call{op: opAbortDownload, method: "DELETE", path: pathf("/files/downloads/%d", id)})
	if err != nil && out.mayHaveActed && IsCode(err, CodeDownloadNotAbortable) {
		return nil
	}
	return err
}

// fillExpiry sets ExpiresAt from the URL when the answer did not give it.
func (l *DownloadLink) fillExpiry() {
	if l.ExpiresAt.IsZero() && l.URL != "" {
		l.ExpiresAt = URLExpiry(l.URL)
	}
}

// URLExpiry returns when a presigned URL expires, when its query tells
// (S3 SigV4 X-Amz-Date + X-Amz-Expires, or an Expires/expires Unix time);
// the zero time otherwise.
func URLExpiry(raw string) time.Time {
	u, err := url.Parse(raw)
	if err != nil {
		return time.Time{}
	}
	q := map[string]string{}
	for k, v := range u.Query() {
		if len(v) > 0 {
			q[strings.ToLower(k)] = v[0]
		}
	}
	if d, ok := q["x-amz-date"]; ok {
		t, err1 := time.Parse("20060102T150405Z", d)
		secs, err2 := strconv.ParseInt(q["x-amz-expires"], 10, 64)
		if err1 == nil && err2 == nil && secs > 0 {
			return t.Add(time.Duration(secs) * time.Second)
		}
	}
	for _, k := range []string{"expires", "exp", "expires_at", "se"} {
		v, ok := q[k]
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			if n > 1e12 {
				return time.UnixMilli(n).UTC()
			}
			return time.Unix(n, 0).UTC()
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t
		}
	}
	return time.Time{}
}
