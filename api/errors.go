package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Codes of the service's client_code field: the documented ones of the
// interface (organization-api.md, "Errors") and the further ones the public
// reference names for computer actions (service-notes.md).
const (
	CodeOK                      = 200  // success
	CodeBadRequest              = 400  // missing or invalid parameters, computer not running (list-content, reset)
	CodeUnauthorized            = 401  // authentication failed (signature, timestamp, nonce, key)
	CodeForbidden               = 403  // forbidden (session recordings list)
	CodeNotFound                = 404  // resource not found, or outside the organization
	CodeTooManyRequests         = 429  // rate limited (HTTP status; not documented by the service)
	CodeCloudCapacity           = 440  // no cloud capacity to start the computer
	CodeStorageFull             = 450  // storage full; limit exceeded after upload; deleting a root folder
	CodeFileExists              = 451  // file already exists and overwrite is false
	CodeSizeMismatch            = 452  // uploaded size differs from the declared size (file deleted)
	CodeDiskResizing            = 469  // the computer's disk is being resized
	CodeInsufficientBalance     = 480  // insufficient organization balance; no usage left in the computer
	CodeBalanceOperationFailed  = 482  // balance assignment or usage retrieval failed
	CodeSubscriptionPayment     = 4110 // subscription payment waiting
	CodeComputerNotReady        = 4201 // computer not ready to start
	CodePermissionsRequired     = 4202 // permissions required (computer actions)
	CodeComputerImageNotFound   = 4208 // computer image not found
	CodeComputerNotStopped      = 4209 // computer is not stopped
	CodeImageNotAvailable       = 4210 // image status is not available
	CodeNoMachinesFound         = 4211 // no machines found, or machines not in the organization
	CodeImageBeingCreated       = 4212 // computer image is still being created
	CodeImageBuilding           = 4213 // image is building and cannot be deleted
	CodeNotAssignable           = 4214 // computer not assignable for the template
	CodeImageTooLarge           = 4510 // image size exceeds the computer's disk size
	CodeSeatNotFound            = 4709 // seat not found for the computer
	CodePermissionRequired      = 4710 // permission required, or multiple_file_download not enabled
	CodeDownloadNotAbortable    = 4716 // download already uploaded, failed or cancelled
	CodeDownloadTargetNotFound  = 4717 // directory or file not found
	CodeFileCountMismatch       = 4718 // requested files not found
	CodeDirectoryEmpty          = 4719 // directory is empty or has no completed files
	CodeDownloadURLFailed       = 4720 // download URL generation failed
	CodeDownloadSelectorInvalid = 4722 // not exactly one of directory_id, file_ids, task_id
)

// ErrMalformedResponse is wrapped by the *Error returned when a successful
// HTTP answer carries a body that cannot be decoded as the expected record.
var ErrMalformedResponse = errors.New("malformed response")

// ErrPaginationLoop is returned by a list iterator when the service repeats a
// page (a next_page already visited, or a page holding only items already
// seen), so that the listing would never end.
var ErrPaginationLoop = errors.New("service repeated a page")

// ErrRangeNotSatisfiable is returned when a ranged read starts at or past the
// end of an object (HTTP 416). It wraps io.EOF: errors.Is(err, io.EOF) holds.
var ErrRangeNotSatisfiable = fmt.Errorf("requested range not satisfiable: %w", io.EOF)

// ErrDownloadFailed is wrapped by the error of Bundle when the download job
// ends as failed or cancelled.
var ErrDownloadFailed = errors.New("download job did not complete")

// Error is an answer of the service that is not a success, or the failure of
// one operation (network error, timeout, undecodable answer) after retries.
//
// Code is the service's client_code, read from the body whatever the HTTP
// status; when the body is not the service's envelope, Code falls back to the
// HTTP status. Code is 0 when no answer was received (Err then says why) or
// when a 2xx answer could not be decoded (Err wraps ErrMalformedResponse).
type Error struct {
	Op         string // "METHOD /path" below the /organization-management/v1 prefix, ids filled in, no query
	HTTPStatus int    // HTTP status of the answer; 0 when none was received
	Code       int    // client_code
	Message    string // the answer's message (or error) text
	Err        error  // underlying cause, if any (network error, context error, ErrMalformedResponse)

	retryAfter time.Duration // from a Retry-After header; 0 when absent
	// clockRefused: a 401 to a request signed with a clock the answer
	// showed to be off (skew.go); retried once with the learned offset.
	clockRefused bool
}

// Error formats the error as "api: POST /files: 451 file already exists (HTTP 451)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("api: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	if e.Code != 0 {
		b.WriteString(strconv.Itoa(e.Code))
		if e.Message != "" {
			b.WriteByte(' ')
			b.WriteString(e.Message)
		}
		if e.Err != nil {
			b.WriteString(": ")
		}
	} else if e.Message != "" && e.Err == nil {
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether retrying the same request later may succeed:
// HTTP 429 or 5xx, a 5xx client_code, or a network failure or timeout.
func (e *Error) Temporary() bool {
	if e.Err != nil && e.HTTPStatus == 0 {
		return temporaryCause(e.Err)
	}
	return temporaryStatus(e.HTTPStatus) || (e.Code >= 500 && e.Code <= 599) || e.Code == CodeTooManyRequests
}

// ObjectError is an error answer of the object store behind a presigned URL
// (upload parts, downloads). URL holds the host and path only: the query of a
// presigned URL carries its signature and is never kept.
type ObjectError struct {
	Op         string // "GET" or "PUT"
	URL        string // host + path
	HTTPStatus int
	Code       string // the S3-style error code of the XML body, e.g. AccessDenied; may be empty
	Message    string

	retryAfter time.Duration
}

// Error formats the error as "api: GET host/path: 403 AccessDenied: Request has expired".
func (e *ObjectError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "api: %s %s: %d", e.Op, e.URL, e.HTTPStatus)
	if e.Code != "" {
		b.WriteByte(' ')
		b.WriteString(e.Code)
	} else if t := http.StatusText(e.HTTPStatus); t != "" {
		b.WriteByte(' ')
		b.WriteString(t)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Temporary reports whether retrying may succeed (HTTP 429 or 5xx).
func (e *ObjectError) Temporary() bool { return temporaryStatus(e.HTTPStatus) }

// IsCode reports whether err is (or wraps) an *Error with the given client_code.
func IsCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsNotFound reports whether err says that a resource does not exist or is
// not the organization's: client_code 404, 4709 (seat not found), 4717
// (directory or file not found) or 4718 (requested files not found).
func IsNotFound(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case CodeNotFound, CodeSeatNotFound, CodeDownloadTargetNotFound, CodeFileCountMismatch:
		return true
	}
	return false
}

// IsExists reports whether err is 451: a file of that name already exists.
func IsExists(err error) bool { return IsCode(err, CodeFileExists) }

// IsStorageFull reports whether err is 450. Note that the service also
// answers 450 to an attempt to delete a root folder.
func IsStorageFull(err error) bool { return IsCode(err, CodeStorageFull) }

// IsSizeMismatch reports whether err is 452: the uploaded size differed from
// the declared one and the service deleted the file.
func IsSizeMismatch(err error) bool { return IsCode(err, CodeSizeMismatch) }

// IsPermission reports whether err is a refusal for lack of permission:
// client_code 4710, 4202 or 403.
func IsPermission(err error) bool {
	return IsCode(err, CodePermissionRequired) || IsCode(err, CodeForbidden) || IsCode(err, CodePermissionsRequired)
}

// IsUnauthorized reports whether err is 401: the request's authentication was refused.
func IsUnauthorized(err error) bool { return IsCode(err, CodeUnauthorized) }

// IsURLExpired reports whether err is the object store refusing a presigned
// URL (HTTP 403: expired or altered). A caller can ask for a new URL and retry.
func IsURLExpired(err error) bool {
	var e *ObjectError
	return errors.As(err, &e) && e.HTTPStatus == http.StatusForbidden
}

// Temporary reports whether err is a transient failure that retrying the
// same request later may cure: HTTP 429 or 5xx from the service or the object
// store, a network error or a timeout. Context cancellation is not temporary.
func Temporary(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Temporary()
	}
	var oe *ObjectError
	if errors.As(err, &oe) {
		return oe.Temporary()
	}
	return temporaryCause(err)
}

func temporaryStatus(status int) bool {
	return status == http.StatusTooManyRequests || (status >= 500 && status <= 599)
}

// temporaryCause classifies a failure that is not an answer: network errors
// and timeouts are temporary, context cancellation and local errors are not.
func temporaryCause(err error) bool {
	switch {
	case err == nil:
		return false
	case IsOffline(err):
		return true // the service may come back
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrRangeNotSatisfiable), errors.Is(err, ErrMalformedResponse):
		return false
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true // connection closed mid-answer
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTimeout || dns.IsTemporary
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return false
	}
	// net/http reports some connection failures as plain errors.
	msg := err.Error()
	for _, s := range []string{"connection reset", "broken pipe", "server closed", "transport connection broken", "unexpected EOF", "use of closed network connection"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// unsent reports whether err proves that the request never reached the
// server: the connection could not be established (dial error, connection
// refused, name resolution failure), so nothing of the request was written.
func unsent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// retryAfterOf returns the Retry-After delay carried by err, if any.
func retryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.retryAfter
	}
	var oe *ObjectError
	if errors.As(err, &oe) {
		return oe.retryAfter
	}
	return 0
}

// parseRetryAfter reads a Retry-After header: delay seconds (fractions are
// tolerated) or an HTTP date. It returns 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > 24*3600 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
