package api

import (
	"bytes"
	"encoding/json"
	"time"
)

// Records of files, uploads, downloads and action logs (see types.go for
// the shapes every record decodes).

// ContentEntry is an entry of a running computer's file system (list-content).
type ContentEntry struct {
	Path        string `json:"path"`
	Name        string `json:"name"`
	IsDirectory bool   `json:"is_directory"`
}

// UnmarshalJSON decodes the record leniently.
func (e *ContentEntry) UnmarshalJSON(b []byte) error {
	var w struct {
		Path        flexString `json:"path"`
		Name        flexString `json:"name"`
		IsDirectory flexBool   `json:"is_directory"`
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = ContentEntry{Path: string(w.Path), Name: string(w.Name), IsDirectory: bool(w.IsDirectory)}
	return nil
}

// File is a file or folder of a storage area (shared, a computer's,
// recordings): what a mount reads of it, and the rest of the service's
// record in Details. A mount keeps a record for every entry of every folder
// listed and for every file node the kernel holds (both, for a file looked
// up), so the record is kept small: 104 bytes, where all the fields side by
// side took 184. A listing the cache keeps drops the Details
// (cache.Listing).
type File struct {
	ID               int64     `json:"id"`
	Name             string    `json:"name"`
	Size             int64     `json:"size"`        // bytes; 0 for directories
	ObjectType       string    `json:"object_type"` // ObjectFile, ObjectDirectory or ObjectRoot
	ParentID         int64     `json:"parent_id"`
	LastModified     time.Time `json:"last_modified_date"`
	FileStorageSize  *int64    `json:"file_storage_size"`  // bytes; roots only
	FileStorageUsage *int64    `json:"file_storage_usage"` // bytes; roots only
	// Details is the rest of the service's record: never nil in a record
	// the API client decoded, nil where a record was made without them.
	Details *FileDetails `json:"-"`
	// Written is what its content type carries of the mode and time its
	// writer gave it (typeparams.go), kept where Details are not.
	Written Written `json:"-"`
}

// FileDetails is the part of a File's record that a mount does not read.
// The strings that take a few values over a listing (Type, ContentType,
// Region, Status, and User's) are decoded shared between the records that
// hold the same value (flexString.intern), as are ObjectType and a
// LastModified's zone (sharedZone).
type FileDetails struct {
	Type        string  `json:"type,omitempty"` // "file"
	ContentType string  `json:"content_type"`   // MIME type, or "directory"
	Region      string  `json:"region,omitempty"`
	Status      string  `json:"status,omitempty"` // e.g. FileStatusUploadCompleted
	Path        *string `json:"path"`             // null for some files
	User        *User   `json:"user"`
	MachineID   *int64  `json:"machine_id"` // nil for the organization's shared storage
}

// IsDir reports whether the entry is a directory or a storage root.
func (f *File) IsDir() bool { return f.ObjectType == ObjectDirectory || f.ObjectType == ObjectRoot }

// MarshalJSON gives the flattened form: the record's fields and its
// Details' side by side, which UnmarshalJSON reads back (without Details,
// a content type that carries what Written holds).
func (f File) MarshalJSON() ([]byte, error) {
	type record File // without the methods
	d := f.Details
	if d == nil {
		d = &FileDetails{}
		if !f.Written.IsZero() { // read back by UnmarshalJSON
			d.ContentType = WithTypeAttrs("", f.Written.Attrs())
		}
	}
	return json.Marshal(struct {
		record
		*FileDetails
	}{record(f), d})
}

// fileAttrs are a file record's attributes, decoded leniently.
type fileAttrs struct {
	Name             flexString  `json:"name"`
	Size             flexInt     `json:"size"`
	ContentType      flexString  `json:"content_type"`
	Region           flexString  `json:"region"`
	Status           flexString  `json:"status"`
	ObjectType       flexString  `json:"object_type"`
	Path             *flexString `json:"path"`
	ParentID         flexInt     `json:"parent_id"`
	LastModified     flexTime    `json:"last_modified_date"`
	FileStorageSize  *flexInt    `json:"file_storage_size"`
	FileStorageUsage *flexInt    `json:"file_storage_usage"`
	User             *User       `json:"user"`
	MachineID        *flexInt    `json:"machine_id"`
}

// fileWire is a file record as it comes, decoded in one pass by the json
// package: its attributes object, or the same fields beside its id and
// type (the flattened form MarshalJSON writes). A listing of 100,000 files
// spent most of the daemon's CPU in decoding when each record was decoded
// on its own (File.UnmarshalJSON: the record's bytes scanned five times).
type fileWire struct {
	ID         flexInt    `json:"id"`
	Type       flexString `json:"type"`
	Attributes *fileAttrs `json:"attributes"`
	fileAttrs
}

// file is the record; a nil wire (a JSON null) is the zero File, as
// File.UnmarshalJSON leaves it.
func (w *fileWire) file() File {
	if w == nil {
		return File{}
	}
	a := &w.fileAttrs
	if w.Attributes != nil {
		a = w.Attributes
	}
	return File{
		ID: int64(w.ID), Name: string(a.Name), Size: int64(a.Size), ObjectType: a.ObjectType.intern(),
		ParentID: int64(a.ParentID), LastModified: time.Time(a.LastModified),
		FileStorageSize: a.FileStorageSize.ptr(), FileStorageUsage: a.FileStorageUsage.ptr(), Written: WrittenOf(string(a.ContentType)),
		Details: &FileDetails{
			Type: w.Type.intern(), ContentType: contentTypeOf(a.ContentType), Region: a.Region.intern(),
			Status: a.Status.intern(), Path: a.Path.ptr(), User: a.User, MachineID: a.MachineID.ptr(),
		},
	}
}

// UnmarshalJSON decodes the service's file object (or the flattened form):
// in one pass (fileWire), or, where that fails (an attributes value that is
// not an object, a field of the wrong kind), as a resource (decodeResource),
// whose errors are the answer.
func (f *File) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		return nil
	}
	var w fileWire
	if json.Unmarshal(b, &w) == nil {
		*f = w.file()
		return nil
	}
	var a fileAttrs
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	*f = (&fileWire{ID: r.ID, Type: r.Type, Attributes: &a}).file()
	return nil
}

// CreateFileResult is the answer of POST /files (upload initiation).
type CreateFileResult struct {
	ID         int64       `json:"id"` // file id, for CompleteFile and DeleteFile
	UID        string      `json:"uid"`
	UploadURLs []UploadURL `json:"upload_urls"` // nil for directories
	ChunkSize  int64       `json:"chunk_size"`  // MB per part as answered; 0 when absent
}

// UnmarshalJSON decodes the record leniently.
func (r *CreateFileResult) UnmarshalJSON(b []byte) error {
	var w struct {
		ID         flexInt     `json:"id"`
		UID        flexString  `json:"uid"`
		UploadURLs []UploadURL `json:"upload_urls"`
		ChunkSize  lenientInt  `json:"chunk_size"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = CreateFileResult{ID: int64(w.ID), UID: string(w.UID), UploadURLs: w.UploadURLs, ChunkSize: int64(w.ChunkSize)}
	return nil
}

// UploadURL is the presigned URL of one part of a multipart upload.
type UploadURL struct {
	PartNumber int    `json:"part_number"` // from 1
	URL        string `json:"url"`
}

// UnmarshalJSON decodes the record leniently.
func (u *UploadURL) UnmarshalJSON(b []byte) error {
	var w struct {
		PartNumber flexInt    `json:"part_number"`
		URL        flexString `json:"url"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*u = UploadURL{PartNumber: int(w.PartNumber), URL: string(w.URL)}
	return nil
}

// Part is a completed part of a multipart upload.
type Part struct {
	PartNumber int    `json:"part_number"`
	ETag       string `json:"etag"` // exactly as the object store returned it, quotes included
}

// CompleteResult is the answer of POST /files/{id}/complete.
type CompleteResult struct {
	UID         string `json:"uid"`
	DownloadURL string `json:"download_url"` // presigned; typically valid 1 hour
}

// UnmarshalJSON decodes the record leniently.
func (r *CompleteResult) UnmarshalJSON(b []byte) error {
	var w struct {
		UID         flexString `json:"uid"`
		DownloadURL flexString `json:"download_url"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = CompleteResult{UID: string(w.UID), DownloadURL: string(w.DownloadURL)}
	return nil
}

// DownloadLink is the answer of POST /files/download and GET /files/{id}/download:
// either a presigned URL (a single file) or the id of a download job (a
// bundle), which DownloadStatus polls.
type DownloadLink struct {
	URL         string    `json:"url,omitempty"` // presigned; "" when a job was started
	Size        *int64    `json:"size"`          // bytes (total of all files for bundles); nil when unknown
	Name        string    `json:"name,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	DownloadID  int64     `json:"download_id,omitempty"` // 0 when no job was started
	ExpiresAt   time.Time `json:"expires_at"`            // when URL expires, if the URL tells; zero when unknown
}

// UnmarshalJSON decodes the record leniently.
func (l *DownloadLink) UnmarshalJSON(b []byte) error {
	var w struct {
		URL         flexString `json:"url"`
		Size        *flexInt   `json:"size"`
		Name        flexString `json:"name"`
		ContentType flexString `json:"content_type"`
		DownloadID  flexInt    `json:"download_id"`
		ExpiresAt   flexTime   `json:"expires_at"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = DownloadLink{
		URL: string(w.URL), Size: w.Size.ptr(), Name: string(w.Name), ContentType: string(w.ContentType),
		DownloadID: int64(w.DownloadID), ExpiresAt: time.Time(w.ExpiresAt),
	}
	return nil
}

// DownloadJob is a bundle download job (GET /files/downloads/{id}).
type DownloadJob struct {
	ID          int64     `json:"id"` // the download_id
	Type        string    `json:"type,omitempty"`
	Status      string    `json:"status"`       // DownloadPending, DownloadProcessing, DownloadUploaded, DownloadFailed, DownloadCancelled
	DownloadURL string    `json:"download_url"` // presigned; only when uploaded
	ExpiresAt   time.Time `json:"expires_at"`   // when the temporary file is deleted
	Size        *int64    `json:"size"`         // total bytes to be zipped; nil for older records
}

// Done reports whether the job reached a final state.
func (j *DownloadJob) Done() bool {
	switch j.Status {
	case DownloadUploaded, DownloadFailed, DownloadCancelled:
		return true
	}
	return false
}

// UnmarshalJSON decodes the service's download object (or the flattened form).
func (j *DownloadJob) UnmarshalJSON(b []byte) error {
	var a struct {
		Status      flexString `json:"status"`
		DownloadURL flexString `json:"download_url"`
		ExpiresAt   flexTime   `json:"expires_at"`
		Size        *flexInt   `json:"size"`
	}
	r, ok, err := decodeResource(b, &a)
	if err != nil || !ok {
		return err
	}
	*j = DownloadJob{
		ID: int64(r.ID), Type: string(r.Type), Status: string(a.Status), DownloadURL: string(a.DownloadURL),
		ExpiresAt: time.Time(a.ExpiresAt), Size: a.Size.ptr(),
	}
	return nil
}

// LogRecord is an action log record.
type LogRecord struct {
	ID         int64           `json:"id"`
	ActionType string          `json:"action_type"` // e.g. machine_started, file_uploaded
	UserID     int64           `json:"user_id"`
	UserEmail  string          `json:"user_email"`
	MachineID  *int64          `json:"machine_id"`
	Metadata   json.RawMessage `json:"metadata,omitempty"` // an object; nil when absent or null
	CreatedAt  time.Time       `json:"created_at"`
}

// UnmarshalJSON decodes the record leniently.
func (l *LogRecord) UnmarshalJSON(b []byte) error {
	var w struct {
		ID         flexInt         `json:"id"`
		ActionType flexString      `json:"action_type"`
		UserID     lenientInt      `json:"user_id"`
		UserEmail  flexString      `json:"user_email"`
		MachineID  *flexInt        `json:"machine_id"`
		Metadata   json.RawMessage `json:"metadata"`
		CreatedAt  flexTime        `json:"created_at"`
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = LogRecord{
		ID: int64(w.ID), ActionType: string(w.ActionType), UserID: int64(w.UserID), UserEmail: string(w.UserEmail),
		MachineID: w.MachineID.ptr(), Metadata: rawOrNil(w.Metadata), CreatedAt: time.Time(w.CreatedAt),
	}
	return nil
}
