package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// A desk whose clock is off has every request refused: the service checks
// the signature's timestamp against its own clock (service-notes.md:
// ±5 minutes at the emulator). The client learns the service's time from
// every answer (the envelope's timestamp, else the Date header), keeps the
// offset between the two clocks, and signs with its own clock corrected by
// it. A refusal (401) whose answer shows a clock further off than the one
// the request was signed with is retried once, with the new offset, whatever
// the operation's retry policy: a refused request was not acted on.

const (
	// SkewNotable is the offset from which the client warns (once) that the
	// desk's clock is off, and orgfs doctor reports it as degraded.
	SkewNotable = 30 * time.Second
	// skewRetryMin is how far the offset an answer shows must be from the
	// one a refused request was signed with for the refusal to be the
	// clock's: a sample is off by at most half its round trip (seconds at
	// worst), and services accept some seconds of skew at least.
	skewRetryMin = 5 * time.Second
	// skewMaxRTT bounds the round trip of an answer whose time is taken as
	// a sample once an offset is known: the service's time is somewhere
	// within the round trip, so a long one says little.
	skewMaxRTT = 5 * time.Second
)

// serviceClock is the client's estimate of the service's clock.
type serviceClock struct {
	// dependencies
	local func() time.Time
	log   logrus.FieldLogger
	// mutable state (atomic)
	offset atomic.Int64 // service time minus local time, in nanoseconds
	known  atomic.Bool  // an answer has told the service's time
	warned atomic.Bool  // the skew was logged
}

// now is the local clock corrected by the offset: the time requests are
// signed with.
func (s *serviceClock) now() time.Time {
	return s.local().Add(time.Duration(s.offset.Load()))
}

// skew returns the offset (service time minus local time) and whether an
// answer has told it.
func (s *serviceClock) skew() (time.Duration, bool) {
	return time.Duration(s.offset.Load()), s.known.Load()
}

// observe learns the service's clock from an answer whose request left at
// sent and whose head came back at got (local clock), with the envelope's
// timestamp as it came (JSON text, nil when none). It returns the offset in
// force afterwards and whether the answer told a time.
func (s *serviceClock) observe(sent, got time.Time, header http.Header, stamp json.RawMessage) (time.Duration, bool) {
	at, ok := serviceTime(header, stamp)
	if !ok {
		return time.Duration(s.offset.Load()), false
	}
	rtt := max(got.Sub(sent), 0)
	if rtt > skewMaxRTT && s.known.Load() {
		return time.Duration(s.offset.Load()), true
	}
	// The service stamped its answer somewhere between sent and got: the
	// midpoint is off by at most half the round trip.
	off := at.Sub(sent.Add(rtt / 2))
	s.offset.Store(int64(off))
	s.known.Store(true)
	if (off >= SkewNotable || off <= -SkewNotable) && !s.warned.Swap(true) {
		s.log.WithField("clock", SkewText(off)).Warn("this desk's clock is off: requests are signed with the service's time (set the clock right, e.g. with NTP)")
	}
	return off, true
}

// serviceTime reads the time an answer was made: the envelope's timestamp
// (in any spelling the decoder reads, parseTime), else the Date header
// (whole seconds, so the middle of its second).
func serviceTime(header http.Header, stamp json.RawMessage) (time.Time, bool) {
	if at := parseTime(stamp); !at.IsZero() {
		return at, true
	}
	if d := header.Get("Date"); d != "" {
		if at, err := http.ParseTime(d); err == nil {
			return at.Add(500 * time.Millisecond), true
		}
	}
	return time.Time{}, false
}

// ClockSkew returns how far the service's clock is ahead of this desk's
// (negative: behind), as the latest answer told it, and whether an answer
// has told it yet. Requests are signed with the desk's clock plus this.
func (c *Client) ClockSkew() (time.Duration, bool) { return c.svcClock.skew() }

// SkewText describes an offset (service time minus desk time) for a person,
// as where the desk's clock stands: "10m0s behind the service's", "2.5s
// ahead of the service's", rounded to what matters.
func SkewText(off time.Duration) string {
	word := "behind the service's"
	if off < 0 {
		word, off = "ahead of the service's", -off
	}
	if off < time.Millisecond {
		return "within 1ms of the service's"
	}
	switch {
	case off >= time.Minute:
		off = off.Round(time.Second)
	case off >= time.Second:
		off = off.Round(100 * time.Millisecond)
	default:
		off = off.Round(time.Millisecond)
	}
	return off.String() + " " + word
}

// clockRefused reports whether err is a 401 the service answered to a
// request signed with a clock at least skewRetryMin off the one its answer
// showed: retried once with the learned offset.
func clockRefused(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.clockRefused
}
