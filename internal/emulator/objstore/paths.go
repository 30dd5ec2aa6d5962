package objstore

// Object keys and the files that hold them: every key segment escaped into a
// file name (see "Objects on disk" in the package documentation).

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

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
