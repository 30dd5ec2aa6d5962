// Package objstore is the emulator's object store: objects on disk, reached
// through presigned, expiring URLs with S3 semantics, served on a listener of
// its own (a different host:port than the API, as in a real deployment).
//
// # URLs
//
// A presigned URL has the form
//
//	{base}/{key}?expires=UNIX&filename=NAME&min_size=N&signature=HEX
//
// where {key} is the object key with each '/'-separated segment path-escaped,
// expires is the Unix second from which the URL is refused, filename (GET only,
// optional) is sent back as Content-Disposition, min_size (PUT only, optional)
// is the smallest body accepted, and signature is the hex HMAC-SHA256, keyed
// with Options.Secret, over the method, the key and the raw text of expires,
// min_size and filename. Other query parameters are ignored. A request is
// checked in this order: an Authorization header is refused with 400
// InvalidArgument (credentials must never reach a presigned URL); a signature
// that does not match (altered path or parameter, or another method than the
// signed one) gives 403 SignatureDoesNotMatch; an expired URL gives 403
// AccessDenied "Request has expired". Every error body is S3-style XML.
//
// # Faults
//
// When Options.Faults is set, every request that passed those checks rolls
// one of Status500, Status503, Reset and Drop:
//
//   - Status500 / Status503: nothing is executed; any request body is read
//     and discarded (so the client reliably sees the answer), then 500
//     InternalError or 503 SlowDown is answered.
//   - Reset on GET: the headers and a part of the body (Faults.Intn of its
//     length, possibly nothing) are sent, then the connection is closed; the
//     client sees a short body (io.ErrUnexpectedEOF). An empty body is cut
//     before the headers.
//   - Reset on PUT: a part of the body is read, nothing is stored, and the
//     connection is closed under the client.
//   - Drop on PUT: the object is stored completely, then the connection is
//     closed without an answer.
//   - Drop on GET: the connection is closed without any answer (no status
//     line). Note that Go's http.Transport retries such a GET by itself once
//     when the connection was a reused idle one.
//
// A GET of a missing object answers 404 without rolling.
//
// # Objects on disk
//
// Object key a/b/c is the file Dir/a/b/c@obj: every segment is escaped (only
// [A-Za-z0-9._-] kept, a leading '.' escaped, an empty segment written "%"),
// so no key can escape Dir, and an object file (always containing '@') never
// collides with a directory (never containing '@'). Writes go to a temporary
// file in the same directory, renamed into place when complete.
//
// The ETag of a PUT or Write is the quoted hex MD5 of the content, computed
// while writing and kept in memory (recomputed once from the file when
// unknown, e.g. after a restart). The ETag of a Concat is, as for an S3
// multipart upload, the quoted hex MD5 of the concatenated binary MD5s of the
// parts followed by "-N" (N the number of parts), so that Concat can copy with
// copy_file_range without reading the data; Concat of no parts gives an empty
// object with the plain MD5 of nothing.
//
// Its files are in docs/ARCHITECTURE.md.
package objstore

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/internal/emulator/faults"
)

// Options configures a Store. Defaults in one place: zero values mean no
// latency, no rate limit, no faults, time.Now, a discarding logger, and a
// random secret.
type Options struct {
	Dir           string           // objects live under Dir; created if missing
	Secret        []byte           // signs presigned URLs; empty: a random secret
	Now           func() time.Time // the clock URLs expire by
	ObjectLatency time.Duration    // delay before the first byte of a transfer
	StreamRate    int64            // bytes/s per connection (each direction); 0 = unlimited
	Faults        *faults.Injector // nil: no faults
	Log           logrus.FieldLogger
}

// Stats counts what the store has served, for tests and benchmarks.
//
// Gets counts GETs answered 200 or 206 without a fault, RangeGets the 206
// ones among them; Puts counts objects stored by PUT (a dropped PUT included);
// Denied counts 4xx answers (400, 403, 404, 416); BytesOut and BytesIn count
// body bytes sent and received over HTTP (Write, Open and Concat are not
// counted); Faults counts injected faults of every kind.
type Stats struct {
	Gets, RangeGets, Puts, Denied int64 // requests answered (Denied: 403/400/416 and other refusals)
	BytesOut, BytesIn             int64
	Faults                        int64 // faults injected
}

// ErrInvalidKey is returned (wrapped) for a key that cannot name an object:
// empty, or longer than 1024 bytes.
var ErrInvalidKey = errors.New("objstore: invalid object key")

const (
	maxKeyLen  = 1024     // as on S3
	chunkSize  = 32 << 10 // pacing granularity
	maxDrain   = 64 << 20 // most of a refused request body read before answering
	objSuffix  = "@obj"   // object file names end with it; directory names never contain '@'
	tmpPattern = ".tmp-*" // temporary files; escaped names never start with '.'
	resetLimit = 64 << 10 // where a Reset PUT of unknown length may cut
)

// Store is an http.Handler serving presigned GET (with Range) and PUT.
type Store struct {
	// dependencies
	log    logrus.FieldLogger
	faults *faults.Injector
	now    func() time.Time

	// constants, fixed by New
	dir    string
	secret []byte
	kinds  []faults.Kind // faults rolled per transfer (tests narrow it to one)

	stats   counters
	latency atomic.Int64 // nanoseconds before the first byte of a transfer; SetLatency changes it
	rate    atomic.Int64 // bytes/s per connection; SetStreamRate changes it

	mu       sync.Mutex
	base     string             // guarded by mu: URL prefix, no trailing '/'
	basePath string             // guarded by mu: path part of base
	meta     map[string]objMeta // guarded by mu: known size/ETag per key
}

var _ http.Handler = (*Store)(nil)

// counters are the atomics behind Stats.
type counters struct {
	gets, rangeGets, puts, denied, bytesOut, bytesIn, faults atomic.Int64
}

// objMeta is what the store knows about an object file; fi identifies the
// file it describes (a replaced file is detected with os.SameFile).
type objMeta struct {
	etag string
	fi   os.FileInfo
}

func (m objMeta) matches(fi os.FileInfo) bool {
	return m.fi != nil && os.SameFile(m.fi, fi) && m.fi.Size() == fi.Size() && m.fi.ModTime().Equal(fi.ModTime())
}

// New creates a store.
func New(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("objstore: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	secret := bytes.Clone(opts.Secret)
	if len(secret) == 0 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("objstore: secret: %w", err)
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	log := opts.Log
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		l.SetLevel(logrus.PanicLevel)
		log = l
	}
	s := &Store{
		log:    log,
		faults: opts.Faults,
		now:    now,
		dir:    dir,
		secret: secret,
		kinds:  []faults.Kind{faults.Status500, faults.Status503, faults.Reset, faults.Drop},
		meta:   make(map[string]objMeta),
	}
	s.SetLatency(opts.ObjectLatency)
	s.SetStreamRate(opts.StreamRate)
	return s, nil
}

// SetLatency changes the delay before the first byte of the transfers that
// start from now on.
func (s *Store) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// SetStreamRate changes the bandwidth (bytes/s, 0 unlimited) of the transfers
// that start from now on.
func (s *Store) SetStreamRate(rate int64) { s.rate.Store(rate) }

// Play returns the latency and stream rate in force.
func (s *Store) Play() (latency time.Duration, rate int64) {
	return time.Duration(s.latency.Load()), s.rate.Load()
}

// SetBaseURL tells the store where its handler is reachable ("http://127.0.0.1:PORT"),
// the prefix of every URL it presigns. A path in base ("http://host/objects")
// is expected, and stripped, in requests.
func (s *Store) SetBaseURL(base string) {
	base = strings.TrimRight(base, "/")
	var basePath string
	if u, err := url.Parse(base); err == nil {
		basePath = strings.TrimRight(u.EscapedPath(), "/")
	}
	s.mu.Lock()
	s.base, s.basePath = base, basePath
	s.mu.Unlock()
}

// Stats returns the counters.
func (s *Store) Stats() Stats {
	c := &s.stats
	return Stats{
		Gets:      c.gets.Load(),
		RangeGets: c.rangeGets.Load(),
		Puts:      c.puts.Load(),
		Denied:    c.denied.Load(),
		BytesOut:  c.bytesOut.Load(),
		BytesIn:   c.bytesIn.Load(),
		Faults:    c.faults.Load(),
	}
}
