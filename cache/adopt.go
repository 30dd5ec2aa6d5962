package cache

// What the mount uploaded becomes its content cache entry: a file just
// written is not downloaded to be read (a 50 MB file was fetched again at
// its first read, and a git status after a clone read every file anew). The
// other way, a cache file the kernel reads in passthrough taken as a
// writer's staging copy, is writeback.Staging.Adopt.
//
// Locks: Content.mu, then entry.mu, as in content.go; held across a rename
// of a local file and the entry's record, no request.

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Adopt makes the file at path, which holds the whole content of version m
// (a link to a staged copy just uploaded as m), the cache's complete entry
// of m: it is moved into the cache, not copied. On failure path is left for
// its owner to remove. An entry of m in use is left alone (a reader got
// there first).
// m's time is the mount's own record of the upload: the first listing of
// the same id and size replaces it with the service's (same).
func (c *Content) Adopt(m Meta, path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("cache: closed")
	}
	if e, ok := c.lru.Peek(m.ID); ok {
		if e.refs > 0 {
			return errors.New("cache: the entry is in use")
		}
		c.removeLocked(e)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != m.Size {
		return fmt.Errorf("cache: %s is not %d bytes (%v)", path, m.Size, err)
	}
	if err := os.Rename(path, c.dataPath(m.ID)); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	n := c.blocks(m.Size)
	e := &entry{id: m.ID, meta: m, present: make([]uint64, (n+63)/64), nPresent: n, bytes: m.Size,
		dirty: true, provisional: true, lastUsed: time.Now()}
	for i := range n {
		e.present[i/64] |= 1 << (i % 64)
	}
	e.mu.Lock()
	err := c.saveLocked(e)
	e.mu.Unlock()
	if err != nil {
		c.removeFiles(m.ID)
		return err
	}
	c.lru.Add(m.ID, e)
	c.used += m.Size
	c.evictLocked()
	return nil
}

// same reports whether the entry holds version m. An entry of the mount's
// own upload takes the service's time of it from the first listing that
// gives the same size (the id is the upload's own), and keeps answering to
// its own time too.
func (e *entry) same(m Meta) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.meta.Size != m.Size {
		return false
	}
	if e.provisional && !e.meta.ModTime.Equal(m.ModTime) {
		e.ownTime = e.meta.ModTime
		e.meta.ModTime, e.provisional, e.dirty = m.ModTime, false, true
	}
	// A listing kept from before the service's time was known (a start
	// offline after a crash: dirs_disk.go) still names the upload by the
	// mount's own time: the same id, size and upload.
	return e.meta.ModTime.Equal(m.ModTime) || !e.ownTime.IsZero() && e.ownTime.Equal(m.ModTime)
}

// Dir is the folder of the content cache's files.
func (c *Content) Dir() string { return c.dir }
