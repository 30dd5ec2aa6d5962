package fs

// errno.go: service errors as errnos (the one mapper), and the I/O timeout
// of the operations that wait on the service.

import (
	"context"
	"errors"
	"io"
	"syscall"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
)

// An operation that waits on the service for an answer (a lookup or
// listing of a folder not cached, an open of content not cached, statfs, and
// the changes made on the service at once: create's check, mkdir, unlink,
// rmdir, rename) waits --io-timeout in total: it runs under bound. A wait for
// content (read, and the whole-file copies of open for writing, truncate and
// rename of a file on the service) goes on while bytes come and ends once
// none came for --io-timeout (cache.Reader.Ready), so a slow link still
// reads and an outage does not hang. Either answers EIO (errno), while what
// it waited for goes on by its own rules (a listing or fetch other callers
// share, the client's retries, uploads). fsync waits while its upload
// sends bytes, and gives up once none left for --io-timeout (Store.Flush).

// bound returns the operation's ctx bounded by the I/O timeout.
func (f *FS) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return f.store.Bound(ctx)
}

// errno is Errno for a step of an operation under bound: when the I/O
// timeout cut its wait, it answers EIO and logs one warning naming what it
// waited for (what: "listing shared/docs").
func (f *FS) errno(ctx context.Context, what string, err error) syscall.Errno {
	if te := cache.AsTimeout(ctx, err); te != nil {
		f.log.WithField("waited_for", what).WithField("io_timeout", te.After.String()).
			Warn("fs: no answer from the service within --io-timeout; EIO")
		return syscall.EIO
	}
	return Errno(f.log, what, err)
}

// Errno maps an error of the client or the cache to the errno a program
// sees, and logs it once with what was being done. It is the one place where
// service errors become errnos, for the data tree and the control tree
// (package fs/ctl) alike.
func Errno(log logrus.FieldLogger, what string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	var apiErr *api.Error
	var offline *api.OfflineError
	switch {
	case errors.As(err, &offline):
		// Offline: EIO at once, logged once per path and outage.
		if _, seen, _ := offlineLogged.PeekOrAdd(what+"\x00"+offline.Since.String(), struct{}{}); !seen {
			log.WithError(err).WithFields(logrus.Fields{"errno": syscall.EIO.Error(), "waited_for": what}).
				Warn("fs: the service cannot be reached (offline), and nothing cached answers; EIO")
		}
		return syscall.EIO
	case errors.As(err, &errno):
		if networkErrno[errno] {
			errno = syscall.EIO // the network's, not a file system's (ECONNREFUSED)
		}
	case errors.Is(err, context.Canceled):
		return syscall.EINTR // the reader gave up; nothing to log
	case errors.Is(err, context.DeadlineExceeded):
		errno = syscall.ETIMEDOUT
	case errors.Is(err, io.ErrUnexpectedEOF):
		errno = syscall.EIO
	case errors.As(err, &apiErr):
		errno = codeErrno(apiErr.Code)
	default:
		errno = syscall.EIO
	}
	log.WithError(err).WithField("errno", errno.Error()).Warn(what)
	return errno
}

// networkErrno are the errnos of the network, which no program expects of
// a file system: a failure that carries one answers EIO.
var networkErrno = map[syscall.Errno]bool{syscall.ECONNREFUSED: true, syscall.ECONNRESET: true, syscall.ECONNABORTED: true,
	syscall.ENETUNREACH: true, syscall.EHOSTUNREACH: true, syscall.ENETDOWN: true, syscall.EPIPE: true, syscall.ETIMEDOUT: true}

// offlineLogged are the operations (what, and the outage's start) whose
// failure offline was logged: one line per path and outage, not per call.
var offlineLogged, _ = lru.New[string, struct{}](4096)

// codeErrno maps a service client_code to an errno: 404 ENOENT; 401, 403,
// 4710 EACCES; 480 EDQUOT; 482 EIO; a computer or image in the wrong state
// EBUSY; 4510 EFBIG; 4716 EALREADY; any other 4xx (and 4xxx) EINVAL; the
// rest EIO.
func codeErrno(code int) syscall.Errno {
	switch code {
	case api.CodeNotFound, api.CodeDownloadTargetNotFound, api.CodeFileCountMismatch, api.CodeSeatNotFound:
		return syscall.ENOENT
	case api.CodeUnauthorized, api.CodeForbidden, api.CodePermissionRequired, api.CodePermissionsRequired:
		return syscall.EACCES
	case api.CodeStorageFull:
		return syscall.ENOSPC
	case api.CodeFileExists:
		return syscall.EEXIST
	case api.CodeImageBuilding, api.CodeComputerNotStopped, api.CodeImageBeingCreated, api.CodeNotAssignable,
		api.CodeComputerNotReady, api.CodeDiskResizing, api.CodeImageNotAvailable:
		return syscall.EBUSY
	case api.CodeDownloadNotAbortable:
		return syscall.EALREADY
	case api.CodeImageTooLarge:
		return syscall.EFBIG
	case api.CodeInsufficientBalance:
		return syscall.EDQUOT
	case api.CodeTooManyRequests, api.CodeCloudCapacity:
		return syscall.EAGAIN
	case api.CodeBalanceOperationFailed, api.CodeSizeMismatch, api.CodeDownloadURLFailed:
		return syscall.EIO // the service failed, not the request
	}
	if (code >= 400 && code < 500) || (code >= 4000 && code < 5000) {
		return syscall.EINVAL
	}
	return syscall.EIO
}
