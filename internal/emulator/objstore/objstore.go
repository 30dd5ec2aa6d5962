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
package objstore

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
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

	qExpires   = "expires"
	qMinSize   = "min_size"
	qFilename  = "filename"
	qSignature = "signature"
	sigVersion = "orgfs-objstore-v1"
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

// PresignGet returns a URL that GETs object key until ttl from now. filename, when
// not empty, is sent back as Content-Disposition.
func (s *Store) PresignGet(key string, ttl time.Duration, filename string) string {
	return s.presign(http.MethodGet, key, ttl, 0, filename)
}

// PresignPut returns a URL that PUTs object key until ttl from now. When
// minSize > 0 a body shorter than minSize is refused with 400 (S3's 5 MiB part minimum).
func (s *Store) PresignPut(key string, ttl time.Duration, minSize int64) string {
	return s.presign(http.MethodPut, key, ttl, minSize, "")
}

func (s *Store) presign(method, key string, ttl time.Duration, minSize int64, filename string) string {
	exp := s.now().Add(ttl)
	expires := exp.Unix()
	if time.Unix(expires, 0).Before(exp) {
		expires++ // round up: a URL is never valid for less than ttl
	}
	q := url.Values{}
	q.Set(qExpires, strconv.FormatInt(expires, 10))
	var minStr string
	if minSize > 0 {
		minStr = strconv.FormatInt(minSize, 10)
		q.Set(qMinSize, minStr)
	}
	if filename != "" {
		q.Set(qFilename, filename)
	}
	q.Set(qSignature, s.sign(method, key, q.Get(qExpires), minStr, filename))
	s.mu.Lock()
	base := s.base
	s.mu.Unlock()
	return base + escapeKey(key) + "?" + q.Encode()
}

// sign computes the hex HMAC of a request's signed fields, each length-prefixed
// so that no two field lists share a canonical text.
func (s *Store) sign(method, key, expires, minSize, filename string) string {
	m := hmac.New(sha256.New, s.secret)
	for _, f := range []string{sigVersion, method, key, expires, minSize, filename} {
		fmt.Fprintf(m, "%d:%s\n", len(f), f)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// escapeKey turns a key into a URL path ("/" + escaped segments).
func escapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return "/" + strings.Join(segs, "/")
}

// Write stores r as object key (server-side: seeding, ZIP bundles), returning its
// size and ETag (the quoted hex MD5).
func (s *Store) Write(key string, r io.Reader) (size int64, etag string, err error) {
	return s.store(key, r, 0)
}

// errTooSmall: a PUT body is shorter than the presigned minimum.
var errTooSmall = errors.New("objstore: body smaller than the minimum size")

// bodyError wraps an error reading the source of a write (not the disk).
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "objstore: reading body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// errReader records the first error of the reader it wraps.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// store streams r into a temporary file, hashing it, and renames it to key
// unless it is shorter than minSize (errTooSmall, nothing stored).
func (s *Store) store(key string, r io.Reader, minSize int64) (int64, string, error) {
	path, err := s.path(key)
	if err != nil {
		return 0, "", err
	}
	tmp, err := s.createTemp(filepath.Dir(path))
	if err != nil {
		return 0, "", err
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := md5.New()
	er := &errReader{r: r}
	n, err := io.Copy(io.MultiWriter(tmp, h), er)
	if err != nil {
		if er.err != nil {
			return n, "", &bodyError{er.err}
		}
		return n, "", fmt.Errorf("objstore: writing %q: %w", key, err)
	}
	if n < minSize {
		return n, "", errTooSmall
	}
	etag := quoteHex(h)
	if err := s.commit(key, tmp, path, etag); err != nil {
		return n, "", err
	}
	committed = true
	return n, etag, nil
}

// commit closes tmp, renames it to path and records its ETag. On error tmp is
// left for the caller to remove.
func (s *Store) commit(key string, tmp *os.File, path, etag string) error {
	fi, err := tmp.Stat()
	if err != nil {
		return fmt.Errorf("objstore: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("objstore: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("objstore: %w", err)
	}
	s.mu.Lock()
	s.meta[key] = objMeta{etag: etag, fi: fi}
	s.mu.Unlock()
	return nil
}

func quoteHex(h hash.Hash) string { return `"` + hex.EncodeToString(h.Sum(nil)) + `"` }

// createTemp creates a temporary file in dir, creating dir as needed. It
// retries when a concurrent Remove prunes dir between the two steps.
func (s *Store) createTemp(dir string) (*os.File, error) {
	var err error
	for range 10 {
		if err = os.MkdirAll(dir, 0o700); err != nil {
			continue
		}
		var f *os.File
		if f, err = os.CreateTemp(dir, tmpPattern); err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	return nil, fmt.Errorf("objstore: %w", err)
}

// Open opens object key for reading.
func (s *Store) Open(key string) (*os.File, error) {
	path, err := s.path(key)
	if err != nil {
		return nil, err
	}
	return os.Open(path)
}

// Stat returns an object's size and ETag; an error wrapping os.ErrNotExist when absent.
func (s *Store) Stat(key string) (size int64, etag string, err error) {
	f, err := s.Open(key)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	m, err := s.metaOf(key, f)
	if err != nil {
		return 0, "", err
	}
	return m.fi.Size(), m.etag, nil
}

// metaOf returns the size and ETag of the open object file f, from memory when
// they describe f, else by hashing f (without moving its offset).
func (s *Store) metaOf(key string, f *os.File) (objMeta, error) {
	fi, err := f.Stat()
	if err != nil {
		return objMeta{}, fmt.Errorf("objstore: %w", err)
	}
	s.mu.Lock()
	m, ok := s.meta[key]
	s.mu.Unlock()
	if ok && m.matches(fi) {
		return m, nil
	}
	h := md5.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, fi.Size())); err != nil {
		return objMeta{}, fmt.Errorf("objstore: hashing %q: %w", key, err)
	}
	m = objMeta{etag: quoteHex(h), fi: fi}
	s.mu.Lock()
	s.meta[key] = m
	s.mu.Unlock()
	return m, nil
}

// Concat writes object dst as the concatenation of srcs in order (multipart
// complete). Its ETag is S3's multipart ETag (see the package documentation).
func (s *Store) Concat(dst string, srcs []string) (size int64, err error) {
	path, err := s.path(dst)
	if err != nil {
		return 0, err
	}
	files := make([]*os.File, 0, len(srcs))
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	digests := md5.New()
	for _, src := range srcs {
		f, err := s.Open(src)
		if err != nil {
			return 0, fmt.Errorf("objstore: concat part %q: %w", src, err)
		}
		files = append(files, f)
		d, err := s.partDigest(src, f)
		if err != nil {
			return 0, err
		}
		digests.Write(d)
	}
	tmp, err := s.createTemp(filepath.Dir(path))
	if err != nil {
		return 0, err
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	for i, f := range files {
		n, err := io.Copy(tmp, f) // *os.File to *os.File: copy_file_range on Linux
		if err != nil {
			return 0, fmt.Errorf("objstore: concat part %q: %w", srcs[i], err)
		}
		size += n
	}
	var etag string
	if len(srcs) == 0 {
		etag = quoteHex(md5.New())
	} else {
		etag = `"` + hex.EncodeToString(digests.Sum(nil)) + "-" + strconv.Itoa(len(srcs)) + `"`
	}
	if err := s.commit(dst, tmp, path, etag); err != nil {
		return 0, err
	}
	committed = true
	return size, nil
}

// partDigest returns the binary MD5 of a part's content: from its ETag when it
// is a plain MD5, else by hashing the file.
func (s *Store) partDigest(key string, f *os.File) ([]byte, error) {
	m, err := s.metaOf(key, f)
	if err != nil {
		return nil, err
	}
	if d, err := hex.DecodeString(strings.Trim(m.etag, `"`)); err == nil && len(d) == md5.Size {
		return d, nil
	}
	h := md5.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, m.fi.Size())); err != nil {
		return nil, fmt.Errorf("objstore: hashing %q: %w", key, err)
	}
	return h.Sum(nil), nil
}

// Remove deletes object key; a missing object is not an error.
func (s *Store) Remove(key string) error {
	path, err := s.path(key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.meta, key)
	s.mu.Unlock()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore: %w", err)
	}
	s.prune(filepath.Dir(path))
	return nil
}

// prune removes dir and its ancestors below s.dir while they are empty.
func (s *Store) prune(dir string) {
	for dir != s.dir && strings.HasPrefix(dir, s.dir+string(filepath.Separator)) {
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// RemovePrefix deletes every object whose key starts with prefix.
func (s *Store) RemovePrefix(prefix string) error {
	s.mu.Lock()
	for k := range s.meta {
		if strings.HasPrefix(k, prefix) {
			delete(s.meta, k)
		}
	}
	s.mu.Unlock()

	// Walk from the directory of the prefix's complete segments.
	segs := strings.Split(prefix, "/")
	start := s.dir
	for _, seg := range segs[:len(segs)-1] {
		start = filepath.Join(start, encodeSegment(seg))
	}
	var dirs []string
	var firstErr error
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if p == s.dir {
				return nil
			}
			dk, ok := s.dirKey(p)
			if !ok || !(strings.HasPrefix(dk, prefix) || strings.HasPrefix(prefix, dk)) {
				return filepath.SkipDir
			}
			dirs = append(dirs, p)
			return nil
		}
		key, ok := s.keyOf(p)
		if !ok || !strings.HasPrefix(key, prefix) {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && firstErr == nil {
			firstErr = err
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // only empty ones go
	}
	s.prune(start)
	if err == nil {
		err = firstErr
	}
	if err != nil {
		return fmt.Errorf("objstore: remove prefix %q: %w", prefix, err)
	}
	return nil
}

// Keys lists the keys of the objects stored, in no particular order.
func (s *Store) Keys() ([]string, error) {
	var keys []string
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if k, ok := s.keyOf(p); ok && !d.IsDir() {
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: listing: %w", err)
	}
	return keys, nil
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

// path maps a key to its object file.
func (s *Store) path(key string) (string, error) {
	if key == "" || len(key) > maxKeyLen {
		return "", fmt.Errorf("%w: %d bytes", ErrInvalidKey, len(key))
	}
	segs := strings.Split(key, "/")
	parts := make([]string, 0, len(segs)+1)
	parts = append(parts, s.dir)
	for _, seg := range segs {
		parts = append(parts, encodeSegment(seg))
	}
	parts[len(parts)-1] += objSuffix
	return filepath.Join(parts...), nil
}

// keyOf maps an object file back to its key; false for other files.
func (s *Store) keyOf(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, s.dir+string(filepath.Separator))
	if !ok {
		return "", false
	}
	rel, ok = strings.CutSuffix(rel, objSuffix)
	if !ok {
		return "", false
	}
	return decodePath(rel)
}

// dirKey maps a directory below s.dir to the key prefix it holds ("a/b/").
func (s *Store) dirKey(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, s.dir+string(filepath.Separator))
	if !ok {
		return "", false
	}
	k, ok := decodePath(rel)
	return k + "/", ok
}

func decodePath(rel string) (string, bool) {
	segs := strings.Split(rel, string(filepath.Separator))
	for i, seg := range segs {
		d, ok := decodeSegment(seg)
		if !ok {
			return "", false
		}
		segs[i] = d
	}
	return strings.Join(segs, "/"), true
}

func plainByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// encodeSegment escapes one key segment into a file name: [A-Za-z0-9._-]
// kept except a leading '.', everything else as %XX, the empty segment as "%".
func encodeSegment(seg string) string {
	if seg == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if plainByte(c) && (i > 0 || c != '.') {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// decodeSegment reverses encodeSegment; false for a name it cannot produce.
func decodeSegment(name string) (string, bool) {
	if name == "%" {
		return "", true
	}
	if name == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '%' && i+2 < len(name) && isHex(name[i+1]) && isHex(name[i+2]):
			v, _ := strconv.ParseUint(name[i+1:i+3], 16, 8)
			b.WriteByte(byte(v))
			i += 2
		case plainByte(c) && (i > 0 || c != '.'):
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' || 'a' <= c && c <= 'f'
}

// ServeHTTP serves presigned GET and PUT requests.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &exchange{s: s, w: w, r: r, start: time.Now()}
	defer x.logDone()

	key, keyOK := s.keyFromPath(r)
	x.key = key
	if r.Header.Get("Authorization") != "" {
		x.fail(http.StatusBadRequest, "InvalidArgument",
			"Credentials must not be sent to a presigned URL: the request carries an Authorization header; the URL's signature is the only authentication accepted")
		return
	}
	if !keyOK {
		x.fail(http.StatusForbidden, "SignatureDoesNotMatch", "The request path is not a presigned object path.")
		return
	}
	sr, ok := x.verify()
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodGet:
		x.get(sr)
	case http.MethodPut:
		x.put(sr)
	default: // unreachable: only GET and PUT are signed
		x.fail(http.StatusForbidden, "AccessDenied", "Method not allowed by this URL.")
	}
}

// keyFromPath extracts the object key from the request path.
func (s *Store) keyFromPath(r *http.Request) (string, bool) {
	p := r.URL.EscapedPath()
	s.mu.Lock()
	bp := s.basePath
	s.mu.Unlock()
	if bp != "" {
		rest, ok := strings.CutPrefix(p, bp)
		if !ok {
			return "", false
		}
		p = rest
	}
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		return "", false
	}
	key, err := url.PathUnescape(rest)
	if err != nil {
		return "", false
	}
	return key, true
}

// signed holds the verified parameters of a presigned request.
type signed struct {
	key      string
	minSize  int64
	filename string
}

// exchange is one request being served.
type exchange struct {
	s     *Store
	w     http.ResponseWriter
	r     *http.Request
	start time.Time
	key   string
	// filled in while serving, read by logDone
	status int   // 0: no answer (connection cut or client gone)
	bytes  int64 // body bytes sent or received
	fault  faults.Kind
}

// verify checks the signature and expiry, answering 403 when they fail.
func (x *exchange) verify() (signed, bool) {
	q, err := url.ParseQuery(x.r.URL.RawQuery)
	if err != nil {
		x.fail(http.StatusForbidden, "AccessDenied", "Malformed query string.")
		return signed{}, false
	}
	for _, name := range []string{qExpires, qMinSize, qFilename, qSignature} {
		if len(q[name]) > 1 {
			x.fail(http.StatusForbidden, "AccessDenied", "Query parameter "+name+" is repeated.")
			return signed{}, false
		}
	}
	sig, expStr := q.Get(qSignature), q.Get(qExpires)
	if sig == "" || expStr == "" {
		x.fail(http.StatusForbidden, "AccessDenied", "Query-string authentication requires the signature and expires parameters.")
		return signed{}, false
	}
	minStr, filename := q.Get(qMinSize), q.Get(qFilename)
	want := x.s.sign(x.r.Method, x.key, expStr, minStr, filename)
	if !hmac.Equal([]byte(want), []byte(sig)) {
		msg := "The request signature we calculated does not match the signature you provided."
		for _, m := range []string{http.MethodGet, http.MethodPut} {
			if m != x.r.Method && hmac.Equal([]byte(x.s.sign(m, x.key, expStr, minStr, filename)), []byte(sig)) {
				msg += " This URL is signed for " + m + ", not " + x.r.Method + "."
			}
		}
		x.fail(http.StatusForbidden, "SignatureDoesNotMatch", msg)
		return signed{}, false
	}
	// Signed values are ours, so they parse.
	expires, err1 := strconv.ParseInt(expStr, 10, 64)
	var minSize int64
	var err2 error
	if minStr != "" {
		minSize, err2 = strconv.ParseInt(minStr, 10, 64)
	}
	if err1 != nil || err2 != nil {
		x.fail(http.StatusForbidden, "AccessDenied", "Malformed signed parameter.")
		return signed{}, false
	}
	if !x.s.now().Before(time.Unix(expires, 0)) {
		x.fail(http.StatusForbidden, "AccessDenied", "Request has expired")
		return signed{}, false
	}
	return signed{key: x.key, minSize: minSize, filename: filename}, true
}

// roll draws the request's fault and counts it.
func (x *exchange) roll() {
	x.fault = x.s.faults.Roll(x.s.kinds...)
	if x.fault != faults.None {
		x.s.stats.faults.Add(1)
	}
}

// serverFault answers a Status500 or Status503 fault; false for other kinds.
func (x *exchange) serverFault() bool {
	switch x.fault {
	case faults.Status500:
		x.fail(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case faults.Status503:
		x.fail(http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	default:
		return false
	}
	return true
}

// get serves a GET of sr.key.
func (x *exchange) get(sr signed) {
	f, err := x.s.Open(sr.key)
	switch {
	case errors.Is(err, ErrInvalidKey):
		x.fail(http.StatusBadRequest, "InvalidArgument", "Invalid object key.")
		return
	case errors.Is(err, fs.ErrNotExist):
		x.fail(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	case err != nil:
		x.fail(http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	defer f.Close()
	m, err := x.s.metaOf(sr.key, f)
	if err != nil {
		x.fail(http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	x.roll()
	if x.serverFault() {
		return
	}
	if x.fault == faults.Drop {
		x.hangUp()
		return
	}
	if sleepCtx(x.r.Context(), time.Duration(x.s.latency.Load())) != nil {
		return
	}
	h := x.w.Header()
	h.Set("ETag", m.etag)
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "application/octet-stream")
	if sr.filename != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": sr.filename}))
	}
	gw := &getWriter{ResponseWriter: x.w, x: x, pace: &pacer{rate: x.s.rate.Load()}, cut: -1}
	http.ServeContent(gw, x.r, "", m.fi.ModTime(), f)
}

// errHungUp stops http.ServeContent once the connection was cut under it.
var errHungUp = errors.New("objstore: connection cut by fault injection")

// getWriter wraps the ResponseWriter under http.ServeContent: it paces the
// body, cuts it for a Reset fault, turns a 416 into an XML error and counts.
type getWriter struct {
	http.ResponseWriter
	x       *exchange
	pace    *pacer
	wrote   bool  // WriteHeader called
	swallow bool  // our own body was written (416): drop ServeContent's
	dead    bool  // connection cut
	cut     int64 // body bytes to send before a Reset; -1: no cut
}

// Unwrap lets http.ResponseController reach the connection.
func (g *getWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func (g *getWriter) WriteHeader(code int) {
	if g.wrote {
		return
	}
	g.wrote = true
	x := g.x
	x.status = code
	if code == http.StatusRequestedRangeNotSatisfiable {
		body := errorBody("InvalidRange", "The requested range is not satisfiable", x.key)
		h := g.Header()
		h.Del("X-Content-Type-Options")
		h.Set("Content-Type", "application/xml")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		g.ResponseWriter.WriteHeader(code)
		g.ResponseWriter.Write(body)
		g.swallow = true
		x.s.stats.denied.Add(1)
		return
	}
	ok := code == http.StatusOK || code == http.StatusPartialContent
	if ok && x.fault == faults.Reset {
		cl, _ := strconv.ParseInt(g.Header().Get("Content-Length"), 10, 64)
		if cl <= 0 {
			g.dead = true
			x.hangUp()
			return
		}
		g.cut = int64(x.s.faults.Intn(int(min(cl, 1<<30))))
	}
	if ok && x.fault == faults.None {
		x.s.stats.gets.Add(1)
		if code == http.StatusPartialContent {
			x.s.stats.rangeGets.Add(1)
		}
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *getWriter) Write(p []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.dead {
		return 0, errHungUp
	}
	if g.swallow {
		return len(p), nil
	}
	ctx := g.x.r.Context()
	written := 0
	for len(p) > 0 {
		n := min(len(p), chunkSize)
		cutNow := false
		if g.cut >= 0 && g.x.bytes+int64(n) >= g.cut {
			n, cutNow = int(g.cut-g.x.bytes), true
		}
		if err := g.pace.wait(ctx, n); err != nil {
			return written, err
		}
		m, err := g.ResponseWriter.Write(p[:n])
		written += m
		g.x.bytes += int64(m)
		g.x.s.stats.bytesOut.Add(int64(m))
		if err != nil {
			return written, err
		}
		if cutNow {
			http.NewResponseController(g.ResponseWriter).Flush()
			g.dead = true
			g.x.hangUp()
			return written, errHungUp
		}
		p = p[n:]
	}
	return written, nil
}

// put serves a PUT of sr.key.
func (x *exchange) put(sr signed) {
	x.roll()
	if x.serverFault() {
		return
	}
	ctx := x.r.Context()
	if sleepCtx(ctx, time.Duration(x.s.latency.Load())) != nil {
		return
	}
	body := &pacedReader{r: x.r.Body, ctx: ctx, pace: &pacer{rate: x.s.rate.Load()}, x: x}
	if x.fault == faults.Reset {
		limit := x.r.ContentLength
		if limit <= 0 {
			limit = resetLimit
		}
		io.CopyN(io.Discard, body, int64(x.s.faults.Intn(int(min(limit, 1<<30)))))
		x.hangUp()
		return
	}
	_, etag, err := x.s.store(sr.key, body, sr.minSize)
	var be *bodyError
	switch {
	case errors.Is(err, errTooSmall):
		x.fail(http.StatusBadRequest, "EntityTooSmall", fmt.Sprintf(
			"Your proposed upload is smaller than the minimum allowed size: %d bytes, at least %d required.", x.bytes, sr.minSize))
		return
	case errors.Is(err, ErrInvalidKey):
		x.fail(http.StatusBadRequest, "InvalidArgument", "Invalid object key.")
		return
	case errors.As(err, &be):
		if ctx.Err() != nil {
			return // client gone: nobody to answer
		}
		x.fail(http.StatusBadRequest, "IncompleteBody", "The request body could not be read completely: "+be.err.Error())
		return
	case err != nil:
		x.fail(http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	x.s.stats.puts.Add(1)
	if x.fault == faults.Drop {
		x.hangUp()
		return
	}
	x.w.Header().Set("ETag", etag)
	x.w.WriteHeader(http.StatusOK)
	x.status = http.StatusOK
}

// pacedReader reads a request body at the store's rate, counting bytes.
type pacedReader struct {
	r    io.Reader
	ctx  context.Context
	pace *pacer
	x    *exchange
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if len(b) > chunkSize {
		b = b[:chunkSize]
	}
	n, err := p.r.Read(b)
	p.x.bytes += int64(n)
	p.x.s.stats.bytesIn.Add(int64(n))
	if werr := p.pace.wait(p.ctx, n); werr != nil && err == nil {
		err = werr
	}
	return n, err
}

// hangUp closes the connection without (further) answer: hijacked and closed
// when the server allows it, else by aborting the handler.
func (x *exchange) hangUp() {
	x.status = 0
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// fail answers an S3-style XML error, after reading (up to maxDrain) and
// discarding any request body so that the client sees the answer rather than
// a broken pipe.
func (x *exchange) fail(status int, code, msg string) {
	if x.r.Body != nil {
		n, _ := io.CopyN(io.Discard, x.r.Body, maxDrain)
		x.s.stats.bytesIn.Add(n)
	}
	body := errorBody(code, msg, x.key)
	h := x.w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.w.WriteHeader(status)
	x.w.Write(body)
	x.status = status
	if status >= 400 && status < 500 {
		x.s.stats.denied.Add(1)
	}
}

// logDone writes the request's debug line (never the query string: it holds
// the signature).
func (x *exchange) logDone() {
	f := logrus.Fields{
		"method":   x.r.Method,
		"key":      x.key,
		"status":   x.status,
		"bytes":    x.bytes,
		"duration": time.Since(x.start).Round(time.Microsecond),
	}
	if x.fault != faults.None {
		f["fault"] = x.fault.String()
	}
	x.s.log.WithFields(f).Debug("objstore request")
}

// xmlError is S3's error document.
type xmlError struct {
	XMLName xml.Name `xml:"Error"`
	Code    string
	Message string
	Key     string `xml:",omitempty"`
}

func errorBody(code, msg, key string) []byte {
	b, err := xml.Marshal(xmlError{Code: code, Message: msg, Key: key})
	if err != nil { // cannot happen for strings
		b = []byte("<Error><Code>InternalError</Code></Error>")
	}
	return append([]byte(xml.Header), b...)
}

// pacer spaces a stream so that after n bytes at least n/rate seconds have
// passed since its first chunk.
type pacer struct {
	rate  int64 // bytes/s; 0: unlimited
	start time.Time
	done  int64
}

// wait accounts n more bytes and sleeps until they are due; an error when ctx
// ends first.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p.rate <= 0 {
		return ctx.Err()
	}
	if p.start.IsZero() {
		p.start = time.Now()
	}
	p.done += int64(n)
	due := p.start.Add(time.Duration(float64(p.done) / float64(p.rate) * float64(time.Second)))
	return sleepCtx(ctx, time.Until(due))
}

// sleepCtx sleeps for d, or less when ctx ends (returning its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
