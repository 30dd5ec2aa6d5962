package writeback

import (
	"context"
	"io"

	"github.com/orgfs/orgfs/api"
)

// Locks: none.

// Client is what the write side asks of the service: exactly the methods of
// *api.Client it calls, so that its tests can put an in-memory fake in its
// place where the HTTP emulator adds nothing.
type Client interface {
	// Uploads and the deletions after them (uploader.go); the folders of a
	// file made again when another writer deleted them (remake.go).
	Upload(ctx context.Context, req api.UploadRequest) (*api.UploadResult, error)
	DeleteFile(ctx context.Context, id int64) error
	CreateDirectory(ctx context.Context, req api.CreateDirectoryRequest) (*api.CreatedDirectory, error)

	// Whose version a name holds before an upload replaces it
	// (conflicts.go): the folder's listing, and the content of a version
	// to compare with the staged one.
	SharedFiles(ctx context.Context, req api.ListFilesRequest) *api.FileList
	MachineFiles(ctx context.Context, machineID int64, req api.ListFilesRequest) *api.FileList
	FileURL(ctx context.Context, fileID int64) (*api.DownloadLink, error)
	ReadRange(ctx context.Context, rawURL string, off, n int64) (io.ReadCloser, error)
}

var _ Client = (*api.Client)(nil)

// missing reports whether no client was given: nil, or a nil *api.Client
// (which an interface holding it does not compare equal to nil).
func missing(c Client) bool {
	ac, ok := c.(*api.Client)
	return c == nil || ok && ac == nil
}
