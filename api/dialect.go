package api

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Where the interface documents are ambiguous, the service may read them
// either way (docs/DIALECTS.md lists every such place). The client tolerates
// both readings in what it decodes (decode.go, types.go), sends what the
// stricter reading needs, and learns the rest from the service's answers:
//   - the path form of the computer routes (computerCall);
//   - whether GET /images/{id} exists (GetImage);
//   - the unit of an access link's expires_in (AccessLink), unless
//     Options.AccessUnit says it;
//   - the unit of chunk_size, from the number of upload URLs (planPartSize):
//     where both units give that number, the unit an earlier upload told
//     (MiB until one did). An S3-like store takes parts cut either way (it
//     checks the 5 MiB minimum, not the boundaries), so the guess costs
//     nothing where the count cannot tell.
// Sizes whose unit is ambiguous are converted by magnitude (the normalize
// functions below).

// learnedDialect is what the client learned of the service's reading.
// Every field is safe for concurrent use.
type learnedDialect struct {
	forms      sync.Map     // computer route suffix ("start", "files") → formMachines or formSeats, once one answered
	noGetImage atomic.Bool  // GET /images/{id} answered 404 for an image the list holds
	accessUnit atomic.Int32 // accessUnknown, accessMinutes or accessSeconds, once judged
	chunkUnit  atomic.Int64 // bytes of one chunk_size unit, once the number of upload URLs told it; 0 before
}

// Path forms of a computer route.
const (
	formUnknown = iota
	formMachines
	formSeats
)

const (
	accessUnknown int32 = iota
	accessMinutes
	accessSeconds
)

// computerPath is the path of a computer route: /machines/{id}/suffix, or
// /seats/{id}/suffix.
func computerPath(form int, machineID int64, suffix string) string {
	base := "/machines/"
	if form == formSeats {
		base = "/seats/"
	}
	return base + strconv.FormatInt(machineID, 10) + "/" + suffix
}

// form is the path form known to answer a computer route (formUnknown
// until one answered).
func (l *learnedDialect) form(suffix string) int {
	v, _ := l.forms.Load(suffix)
	f, _ := v.(int)
	return f
}

// computerCall performs a call of a computer route (cl.path is left to it).
// The interface documents list-content and files under both /machines/{id}
// and /seats/{id}, and the other computer routes under /machines/{id}; a
// service may serve one form alone. Once a form answered the route (a
// success, or a refusal such as 400 that says the route is there:
// routeAnswered), every call of it goes there. Until then the call goes to /machines/{id}, and a 404 is asked
// again as /seats/{id}. When both answer 404, the first answer is the error
// (no such computer).
//
// A call whose meaning differs between the forms (files with task_id, which
// only the /machines form documents) passes learn: it is sent once the form
// is known, which learn (a plain call of the route) finds out first.
func (c *Client) computerCall(ctx context.Context, cl call, machineID int64, suffix string, learn *call) (outcome, error) {
	form := c.dialect.form(suffix)
	if form == formUnknown && learn != nil {
		out, err := c.computerCall(ctx, *learn, machineID, suffix, nil)
		if form = c.dialect.form(suffix); form == formUnknown {
			return out, err
		}
	}
	if form != formUnknown {
		cl.path = computerPath(form, machineID, suffix)
		return c.do(ctx, cl)
	}
	cl.path = computerPath(formMachines, machineID, suffix)
	out, err := c.do(ctx, cl)
	if routeAnswered(err) {
		c.dialect.forms.Store(suffix, formMachines)
		return out, err
	}
	if !IsCode(err, CodeNotFound) {
		return out, err
	}
	cl.path = computerPath(formSeats, machineID, suffix)
	out2, err2 := c.do(ctx, cl)
	switch {
	case routeAnswered(err2):
		c.dialect.forms.Store(suffix, formSeats)
		c.log.WithField("route", suffix).Debug("api: the service answers this computer route as /seats/{id}/...; keeping that form")
		return out2, err2
	case IsCode(err2, CodeNotFound):
		return out, err
	}
	return out2, err2
}

// routeAnswered reports whether err (nil included) shows that the route
// exists: a success, or a refusal only a route gives (a 4xx client_code
// other than 404, or a 4-digit one; not 401, 429 nor 5xx, which a service
// may answer before it routes a request).
func routeAnswered(err error) bool {
	var e *Error
	if err == nil {
		return true
	}
	if !errors.As(err, &e) {
		return false
	}
	switch {
	case e.Code >= 1000:
		return true
	case e.Code < 400 || e.Code > 499:
		return false
	}
	return e.Code != CodeNotFound && e.Code != CodeUnauthorized && e.Code != CodeTooManyRequests
}

// Units told by magnitude. A value that reads as an absurd size in one unit
// and a plausible one in the other is converted; the bounds leave a factor
// of 1000 or more on each side of every size the service deals in.
const (
	// A disk, a storage quota or an image of a million GB does not exist,
	// nor one of under a megabyte: from 1e6 up, the value counts bytes.
	bytesFrom = 1e6
	// Software of a hundred thousand GB does not exist, nor software of
	// under 100 KB: below 1e5, the value counts GB.
	softwareGBBelow = 1e5
	gib             = 1 << 30
)

// gbOf reads a computer's file_storage_size or disk_size as GB (of 2^30
// bytes, as the storage root's byte count reads): the examples of the notes
// give GB (25, 75), the text says bytes.
func gbOf(v Size) Size {
	if float64(v) >= bytesFrom {
		return Size(math.Round(float64(v)/gib*100) / 100)
	}
	return v
}

// imageGBOf reads an image's size as GB (decimal, as the service computes
// it from bytes): documented in GB, one example at byte scale.
func imageGBOf(v Size) Size {
	if float64(v) >= bytesFrom {
		return Size(math.Round(float64(v)/1e9*100) / 100)
	}
	return v
}

// softwareBytesOf reads a software size as bytes: documented in bytes, an
// example fractional, as a size in GB would be.
func softwareBytesOf(v Size) Size {
	if v > 0 && float64(v) < softwareGBBelow {
		return Size(math.Round(float64(v) * 1e9))
	}
	return v
}

// accessUnitFor is the unit expires_in is sent in: the option's, else the
// one learned, else minutes.
func (c *Client) accessUnitFor() int32 {
	switch c.opts.AccessUnit {
	case AccessUnitMinutes:
		return accessMinutes
	case AccessUnitSeconds:
		return accessSeconds
	}
	if u := c.dialect.accessUnit.Load(); u != accessUnknown {
		return u
	}
	return accessMinutes
}

// judgeAccessUnit tells, from a link asked for minutes minutes in minutes,
// whether the service counted seconds: the link's lifetime (its expires_at
// less the answer's own timestamp, so that no clock skew enters) is nearer
// minutes seconds than minutes minutes (the boundary is their geometric
// mean). It reports accessUnknown when the answer cannot tell.
func judgeAccessUnit(minutes int, expires, answered time.Time) int32 {
	if minutes <= 0 || expires.IsZero() || answered.IsZero() {
		return accessUnknown
	}
	life := expires.Sub(answered)
	boundary := time.Duration(float64(minutes) * math.Sqrt(60) * float64(time.Second))
	if life < boundary {
		return accessSeconds
	}
	return accessMinutes
}
