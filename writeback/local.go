package writeback

import (
	"os"
	"sync/atomic"
	"time"
)

// Locks: none.

// privateDir creates dir (and its parents) if need be, and makes it 0700:
// staged files are the user's data.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// setDefault sets the option *v to d when it is not positive: how
// StagingOptions fills in its defaults (withDefaults).
func setDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// stamp is a time kept atomically: Staging.sent, when an upload last sent
// a byte.
type stamp struct{ at atomic.Int64 }

func (s *stamp) mark() { s.at.Store(time.Now().UnixNano()) }

// time is the time marked; the zero Unix time when none was.
func (s *stamp) time() time.Time { return time.Unix(0, s.at.Load()) }
