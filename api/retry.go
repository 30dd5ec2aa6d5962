package api

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/sirupsen/logrus"
)

// retryPolicy says when a failed attempt of an operation may be repeated.
type retryPolicy uint8

const (
	// retrySafe: the operation is idempotent, or repeating it is harmless.
	// Retried on network errors, timeouts, HTTP 429 and 5xx.
	retrySafe retryPolicy = iota
	// retryUnsent: repeating the operation could do it twice. Retried only
	// when the attempt provably never reached the server (the connection
	// could not be established: dial error, connection refused, name
	// resolution), or when the service refused it unprocessed with 429.
	retryUnsent
)

// retryTable is the retry choice of every operation of the client, keyed by
// operation (the Stats key). It is the one place where these choices live.
//
// Why each POST is where it is:
//   - POST /files (file): an upload record stays invisible until completed
//     and the next initiation for the same name replaces it, so a repeat only
//     leaves an orphan incomplete record. Retried.
//   - POST /files (directory): retried; when a retry answers 451 after an
//     attempt that may have reached the service, CreateDirectory looks the
//     directory up by name in the parent and returns it (Recovered).
//   - POST /files/{id}/complete: the service answers a repeated complete of
//     the same parts the same way (as S3 does; SDKs retry it). Retried.
//   - POST /files/download: a single-file URL or a new job; a repeat makes at
//     most an extra temporary file that expires. Retried.
//   - POST /machines/{id}/access, list-content: reads or a fresh link. Retried.
//   - POST /machines/{id}/machine-type: setting the same value again. Retried.
//   - POST /usage/assign, /usage/retrieve, /images, /images/install,
//     /images/{id}/assign, /seats, start, stop, reset: each repeat acts again
//     (minutes moved twice, two images, two computers, a second reset...).
//     Retried only when provably unsent.
//
// DELETEs are retried; when a retry of a DELETE answers "not found" after an
// attempt that may have reached the service, the delete is reported done.
//
// A 401 is retried once, with a fresh signature, for retrySafe operations:
// over HTTP/1 with TLS net/http may itself re-send a GET whose connection
// broke, with the same nonce, which the service refuses as replayed. A 401
// whose answer shows the request was signed with a clock off the service's
// is retried once more, for every operation, signed with the service's time
// (skew.go): a refused request was not acted on.
var retryTable = map[string]retryPolicy{
	opUsage:           retrySafe,
	opMachinesUsage:   retrySafe,
	opMachineUsage:    retrySafe,
	opAssignUsage:     retryUnsent,
	opRetrieveUsage:   retryUnsent,
	opListImages:      retrySafe,
	opGetImage:        retrySafe,
	opCreateImage:     retryUnsent,
	opInstallImage:    retryUnsent,
	opAssignImage:     retryUnsent,
	opDeleteImage:     retrySafe,
	opSoftware:        retrySafe,
	opCreateSeats:     retryUnsent,
	opListSeats:       retrySafe,
	opStartMachine:    retryUnsent,
	opStopMachine:     retryUnsent,
	opAccessLink:      retrySafe,
	opResetMachine:    retryUnsent,
	opMachineTypes:    retrySafe,
	opSetMachineType:  retrySafe,
	opListContent:     retrySafe,
	opMachineFiles:    retrySafe,
	opSharedFiles:     retrySafe,
	opRecordings:      retrySafe,
	opCreateFile:      retrySafe,
	opCreateDirectory: retrySafe,
	opCompleteFile:    retrySafe,
	opDeleteFile:      retrySafe,
	opFileDownloadURL: retrySafe,
	opCreateDownload:  retrySafe,
	opDownloadStatus:  retrySafe,
	opAbortDownload:   retrySafe,
	opUserActionLogs:  retrySafe,
	opObjectPutPart:   retrySafe, // a part PUT replaces the part: idempotent
	opObjectGet:       retrySafe,
	opProbe:           retrySafe, // one attempt, never retried (reach.go)
}

// Operations: the keys of retryTable and of Stats.
const (
	opUsage           = "GET /usage"
	opMachinesUsage   = "GET /usage/machines"
	opMachineUsage    = "GET /usage/machines/{id}"
	opAssignUsage     = "POST /usage/assign"
	opRetrieveUsage   = "POST /usage/retrieve"
	opListImages      = "GET /images"
	opGetImage        = "GET /images/{id}"
	opCreateImage     = "POST /images"
	opInstallImage    = "POST /images/install"
	opAssignImage     = "POST /images/{id}/assign"
	opDeleteImage     = "DELETE /images/{id}"
	opSoftware        = "GET /software"
	opCreateSeats     = "POST /seats"
	opListSeats       = "GET /seats"
	opStartMachine    = "POST /machines/{id}/start"
	opStopMachine     = "POST /machines/{id}/stop"
	opAccessLink      = "POST /machines/{id}/access"
	opResetMachine    = "POST /machines/{id}/reset"
	opMachineTypes    = "GET /machines/{id}/available-machine-types"
	opSetMachineType  = "POST /machines/{id}/machine-type"
	opListContent     = "POST /machines/{id}/list-content"
	opMachineFiles    = "GET /machines/{id}/files"
	opSharedFiles     = "GET /files"
	opRecordings      = "GET /files/recordings"
	opCreateFile      = "POST /files (file)"
	opCreateDirectory = "POST /files (directory)"
	opCompleteFile    = "POST /files/{id}/complete"
	opDeleteFile      = "DELETE /files/{id}"
	opFileDownloadURL = "GET /files/{id}/download"
	opCreateDownload  = "POST /files/download"
	opDownloadStatus  = "GET /files/downloads/{id}"
	opAbortDownload   = "DELETE /files/downloads/{id}"
	opUserActionLogs  = "GET /user-action-logs"
	opObjectPutPart   = "PUT object part"
	opObjectGet       = "GET object"
	opProbe           = "GET /files (probe)"
)

// outcome tells a caller of withRetry how the attempts went.
type outcome struct {
	attempts int
	// mayHaveActed: an attempt before the last failed in a way that may
	// have reached the service (it was not provably unsent), so the service
	// may already have done what the call asks.
	mayHaveActed bool
}

// attemptFunc performs one attempt; attempt counts from 1.
type attemptFunc func(ctx context.Context, attempt int) error

// withRetry runs fn until it succeeds, fails in a way policy does not retry,
// or the attempts (Options.MaxAttempts) or the time (Options.MaxRetryTime)
// run out. Between attempts it sleeps an exponential backoff with full
// jitter, or the Retry-After the answer asked for when longer. Cancelling
// ctx stops it at once. It counts requests, retries and failures for op.
// The error returned is fn's last error, or ctx's error when cancelled.
func (c *Client) withRetry(ctx context.Context, op string, fn attemptFunc) (outcome, error) {
	policy, ok := retryTable[op]
	if !ok {
		policy = retryUnsent // unknown operation: the safe choice
	}
	st := c.stats.op(op)
	start := time.Now()
	authRetried, clockRetried := false, false
	var out outcome
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			c.stats.failed(st, err)
			return out, err
		}
		out.attempts = attempt
		st.requests.Add(1)
		err := fn(ctx, attempt)
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil {
			c.stats.failed(st, ctx.Err())
			return out, ctx.Err()
		}
		if oe := c.offlineAfter(ctx, err); oe != nil {
			c.stats.failed(st, oe)
			return out, oe
		}
		if ctx.Err() != nil { // ended while the probe asked
			c.stats.failed(st, ctx.Err())
			return out, ctx.Err()
		}
		retry := retryable(policy, err)
		clockRetry := !retry && !clockRetried && clockRefused(err)
		if clockRetry {
			retry, clockRetried = true, true
		} else if !retry && policy == retrySafe && !authRetried && isStatus(err, CodeUnauthorized) {
			retry, authRetried = true, true
		}
		if !retry || attempt >= c.opts.MaxAttempts {
			c.stats.failed(st, err)
			return out, err
		}
		wait := c.backoff(attempt)
		if ra := retryAfterOf(err); ra > wait {
			wait = ra
		}
		if time.Since(start)+wait > c.opts.MaxRetryTime {
			c.stats.failed(st, err)
			return out, err
		}
		if !unsent(err) && !clockRetry {
			out.mayHaveActed = true // a refusal for the clock was not acted on
		}
		st.retries.Add(1)
		c.log.WithFields(logrus.Fields{"op": op, "attempt": attempt, "wait": wait.Round(time.Millisecond), "error": err}).Debug("api: retrying")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			c.stats.failed(st, ctx.Err())
			return out, ctx.Err()
		case <-t.C:
		}
	}
}

// retryable reports whether an attempt that failed with err may be repeated
// under policy.
func retryable(policy retryPolicy, err error) bool {
	if unsent(err) || isStatus(err, 429) {
		return true
	}
	if policy != retrySafe {
		return false
	}
	// A per-attempt timeout (the caller's context is still alive).
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return Temporary(err)
}

func isStatus(err error, status int) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.HTTPStatus == status || (e.HTTPStatus == 200 && e.Code == status)
	}
	var oe *ObjectError
	return errors.As(err, &oe) && oe.HTTPStatus == status
}

// backoff returns the wait before attempt+1: full jitter over an
// exponential ceiling, uniform in [0, min(MaxBackoff, BaseBackoff·2^(attempt-1))].
func (c *Client) backoff(attempt int) time.Duration {
	ceil := c.opts.BaseBackoff
	for i := 1; i < attempt && ceil < c.opts.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.opts.MaxBackoff)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil + 1)
}
