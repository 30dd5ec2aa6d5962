package objstore

// Objects on disk: writing (Write, PUT bodies, Concat) through a temporary
// file renamed into place, reading, ETags, removal and listing.

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

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
