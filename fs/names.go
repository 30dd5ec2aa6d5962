package fs

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// probeName reports whether name is one that desktops and platforms look up
// on every drive and the service never holds (macOS resource forks and
// indexes, Windows and Linux desktop files, trash folders). Such lookups answer
// ENOENT from memory, with no request.
func probeName(name string) bool {
	if strings.HasPrefix(name, "._") || strings.HasPrefix(name, ".Trash") {
		return true
	}
	switch strings.ToLower(name) {
	case ".ds_store", "desktop.ini", "thumbs.db", ".hidden", "autorun.inf", ".xdg-volume-info",
		".spotlight-v100", ".fseventsd", ".metadata_never_index", ".localized", ".directory":
		return true
	}
	return false
}

// safeName makes a service name usable as one path component: '/' becomes
// '／' (U+FF0F FULLWIDTH SOLIDUS), NUL is dropped, and the names "", "." and
// ".." get a trailing '_'.
func safeName(name string) string {
	name = strings.ReplaceAll(name, "/", "／")
	name = strings.ReplaceAll(name, "\x00", "")
	switch name {
	case "", ".", "..":
		name += "_"
	}
	return name
}

// named is an item to be given a unique, path-safe name.
type named struct {
	name string // as the service has it
	id   int64
}

// maxName is the longest name a path component may have (bytes).
const maxName = 255

// uniqueNames gives each item a path-safe name unique among them. Every item of
// a clashing group gets " (<id>)" appended, so a name does not depend on which
// item the service lists first and stays stable while the names do. A name
// that still clashes (a service name that already reads "x (7)") or is too
// long gets its id again, shortened to fit. The result is in the order of
// items.
func uniqueNames(items []named) []string {
	out := make([]string, len(items))
	count := make(map[string]int, len(items))
	for i, it := range items {
		out[i] = safeName(it.name)
		count[out[i]]++
	}
	for i, it := range items {
		if count[out[i]] > 1 || len(out[i]) > maxName {
			out[i] = withID(out[i], it.id)
		}
	}
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		for n := 0; seen[out[i]] && n < 3; n++ {
			out[i] = withID(out[i], it.id)
		}
		seen[out[i]] = true
	}
	return out
}

// withID appends " (id)" to name, cutting name (at a rune boundary) so the
// whole stays within maxName bytes.
func withID(name string, id int64) string {
	suffix := " (" + strconv.FormatInt(id, 10) + ")"
	if len(name)+len(suffix) > maxName {
		cut := maxName - len(suffix)
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut]
	}
	return name + suffix
}
