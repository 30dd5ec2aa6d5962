package cache

// The cache dir's layout version: one number for the set of files a mount
// keeps there and their formats (the content records, staging/, the
// journal, attrs.jsonl, the listings, the pins), in LayoutFile. A cache dir
// without it was written by a release before the file (layout 1): this
// release reads it as it is, and then marks it. One of a newer layout than
// this release knows is refused before anything in it is read or changed:
// what a newer orgfs staged there (files, journaled changes) waits for it,
// never set aside by an older one.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
)

// LayoutFile holds the cache dir's layout version, in the cache dir.
const LayoutFile = "layout"

// Layout is the cache dir layout this release writes and reads (and every
// one before it). 2: the journal (journal.json), the listings kept
// (listings.json.gz) and the pins (pins.json), with a format of their own.
const Layout = 2

// ErrNewerLayout is a cache dir written by a newer orgfs.
var ErrNewerLayout = errors.New("cache: the cache dir was written by a newer orgfs")

// checkLayout makes dir when it is not there, and reads its layout version: a newer one is refused with
// ErrNewerLayout (nothing read or changed); none, or an older one, is
// marked Layout (what an older release wrote reads as it is). An
// unreadable mark is replaced, with a warning.
func checkLayout(dir string, log logrus.FieldLogger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	path := filepath.Join(dir, LayoutFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("cache: reading the layout version: %w", err)
	default:
		v, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		switch {
		case perr != nil || v < 1:
			log.WithField("file", path).Warn("cache: the cache dir's layout version is unreadable; taken as this release's")
		case v > Layout:
			return fmt.Errorf("%w (%s: layout %d; this one reads up to %d): upgrade orgfs, or mount with another --cache-dir (nothing in it was changed)", ErrNewerLayout, dir, v, Layout)
		case v == Layout:
			return nil
		}
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(Layout)+"\n"), 0o600); err != nil {
		return fmt.Errorf("cache: marking the layout version: %w", err)
	}
	return nil
}
