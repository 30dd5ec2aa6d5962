package cache

import (
	"context"
	"io"
	"iter"

	"github.com/orgfs/orgfs/api"
)

// Locks: none.

// Client is what the package asks of the service: exactly the methods of
// *api.Client it calls, so that its tests can put an in-memory fake in its
// place where the HTTP emulator adds nothing.
type Client interface {
	// Listings (Dirs).
	SharedFiles(ctx context.Context, req api.ListFilesRequest) *api.FileList
	MachineFiles(ctx context.Context, machineID int64, req api.ListFilesRequest) *api.FileList
	Recordings(ctx context.Context, req api.ListFilesRequest) *api.FileList
	Seats(ctx context.Context, query string) iter.Seq2[api.Seat, error]

	// Content (Fetcher).
	FileURL(ctx context.Context, fileID int64) (*api.DownloadLink, error)
	ReadRange(ctx context.Context, rawURL string, off, n int64) (io.ReadCloser, error)

	// Bundles (Bundler).
	CreateDownload(ctx context.Context, req api.CreateDownloadRequest) (*api.DownloadLink, error)
	DownloadStatus(ctx context.Context, id int64, generateURL bool) (*api.DownloadJob, error)
	AbortDownload(ctx context.Context, id int64) error
	DownloadTo(ctx context.Context, req api.DownloadToRequest) (int64, error)

	// Uploads (Staging).
	Upload(ctx context.Context, req api.UploadRequest) (*api.UploadResult, error)
	DeleteFile(ctx context.Context, id int64) error

	// Changes made through the mount (Store).
	CreateDirectory(ctx context.Context, req api.CreateDirectoryRequest) (*api.CreatedDirectory, error)
}

var _ Client = (*api.Client)(nil)

// missing reports whether no client was given: nil, or a nil *api.Client
// (which an interface holding it does not compare equal to nil).
func missing(c Client) bool {
	if c == nil {
		return true
	}
	ac, ok := c.(*api.Client)
	return ok && ac == nil
}
