// Package objstore is the emulator's object store: objects on disk, reached
// through presigned, expiring URLs with S3 semantics, served on a listener of
// its own (a different host:port than the API, as in a real deployment).
package objstore

import (
	"io"
	"net/http"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/internal/emulator/faults"
)

// Options configures a Store. Defaults in one place: zero values mean no
// latency, no rate limit, no faults, time.Now, a discarding logger.
type Options struct {
	Dir           string           // objects live under Dir; created if missing
	Secret        []byte           // signs presigned URLs
	Now           func() time.Time // the clock URLs expire by
	ObjectLatency time.Duration    // delay before the first byte of a transfer
	StreamRate    int64            // bytes/s per connection (each direction); 0 = unlimited
	Faults        *faults.Injector // nil: no faults
	Log           logrus.FieldLogger
}

// Stats counts what the store has served, for tests and benchmarks.
type Stats struct {
	Gets, RangeGets, Puts, Denied int64 // requests answered (Denied: 403/400/416 and other refusals)
	BytesOut, BytesIn            int64
	Faults                       int64 // faults injected
}

// Store is an http.Handler serving presigned GET (with Range) and PUT.
type Store struct {
	opts Options
}

var _ http.Handler = (*Store)(nil)

// New creates a store.
func New(opts Options) (*Store, error) { panic("not yet written") }

// SetBaseURL tells the store where its handler is reachable ("http://127.0.0.1:PORT"),
// the prefix of every URL it presigns.
func (s *Store) SetBaseURL(base string) { panic("not yet written") }

// PresignGet returns a URL that GETs object key until ttl from now. filename, when
// not empty, is sent back as Content-Disposition.
func (s *Store) PresignGet(key string, ttl time.Duration, filename string) string {
	panic("not yet written")
}

// PresignPut returns a URL that PUTs object key until ttl from now. When
// minSize > 0 a body shorter than minSize is refused with 400 (S3's 5 MiB part minimum).
func (s *Store) PresignPut(key string, ttl time.Duration, minSize int64) string {
	panic("not yet written")
}

// Write stores r as object key (server-side: seeding, ZIP bundles), returning its
// size and ETag (the quoted hex MD5).
func (s *Store) Write(key string, r io.Reader) (size int64, etag string, err error) {
	panic("not yet written")
}

// Open opens object key for reading.
func (s *Store) Open(key string) (*os.File, error) { panic("not yet written") }

// Stat returns an object's size and ETag; an error wrapping os.ErrNotExist when absent.
func (s *Store) Stat(key string) (size int64, etag string, err error) { panic("not yet written") }

// Concat writes object dst as the concatenation of srcs in order (multipart complete).
func (s *Store) Concat(dst string, srcs []string) (size int64, err error) {
	panic("not yet written")
}

// Remove deletes object key; a missing object is not an error.
func (s *Store) Remove(key string) error { panic("not yet written") }

// RemovePrefix deletes every object whose key starts with prefix.
func (s *Store) RemovePrefix(prefix string) error { panic("not yet written") }

// Stats returns the counters.
func (s *Store) Stats() Stats { panic("not yet written") }

// ServeHTTP serves presigned GET and PUT requests.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) { panic("not yet written") }
