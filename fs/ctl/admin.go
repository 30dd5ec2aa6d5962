package ctl

// The service's management interface as the control tree uses it.
//
// Locks: none.

import (
	"context"
	"io"
	"iter"

	"github.com/orgfs/orgfs/api"
)

// Admin is what .ctl asks of the service: the management methods of
// *api.Client.
type Admin interface {
	Usage(ctx context.Context) (*api.AccountUsage, error)
	MachineUsage(ctx context.Context, machineID int64) (*api.MachineUsage, error)
	AssignUsage(ctx context.Context, machineID, minutes int64) (*api.AssignResult, error)
	RetrieveUsage(ctx context.Context, machineID, minutes int64) (*api.RetrieveResult, error)
	Software(ctx context.Context) (*api.SoftwareCatalog, error)

	Seats(ctx context.Context, query string) iter.Seq2[api.Seat, error]
	CreateSeats(ctx context.Context, req api.CreateSeatsRequest) (*api.CreateSeatsResult, error)
	StartMachine(ctx context.Context, machineID int64, opts api.StartOptions) error
	StopMachine(ctx context.Context, machineID int64, gracefully bool) error
	ResetMachine(ctx context.Context, machineID int64) error
	AccessLink(ctx context.Context, machineID int64, expiresInMinutes int) (*api.AccessLink, error)
	MachineTypes(ctx context.Context, machineID int64) ([]api.MachineType, error)
	SetMachineType(ctx context.Context, machineID, machineTypeID int64) error
	ListContent(ctx context.Context, machineID int64, path string) ([]api.ContentEntry, error)
	MachineFiles(ctx context.Context, machineID int64, req api.ListFilesRequest) *api.FileList
	SharedFiles(ctx context.Context, req api.ListFilesRequest) *api.FileList
	Recordings(ctx context.Context, req api.ListFilesRequest) *api.FileList

	Images(ctx context.Context, query string) iter.Seq2[api.Image, error]
	CreateImage(ctx context.Context, machineID int64, name string) (*api.Image, error)
	InstallImage(ctx context.Context, req api.InstallImageRequest) (*api.Image, error)
	AssignImage(ctx context.Context, imageID int64, machineIDs []int64) error
	DeleteImage(ctx context.Context, id int64) error

	UserActionLogs(ctx context.Context, req api.LogsRequest) (*api.Logs, error)

	Bundle(ctx context.Context, req api.BundleRequest) (io.ReadCloser, *api.DownloadJob, error)
	DownloadStatus(ctx context.Context, id int64, generateURL bool) (*api.DownloadJob, error)
	AbortDownload(ctx context.Context, id int64) error

	Stats() api.Stats
	Reachability() api.Reachability
}

var _ Admin = (*api.Client)(nil)
