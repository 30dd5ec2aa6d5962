package api

// A file's permission bits and modification time, as parameters of its
// content type (RFC 2045: type/subtype; name=value): the one field of a
// file a writer sets that every listing returns, so that every desk shows
// a file with the mode and time its writer gave it, with no request more.
// A reader that does not know them still gets the right MIME type.
//
//	text/x-shellscript; x-orgfs-mode=0755; x-orgfs-mtime=1732851234.123456789

import (
	"fmt"
	"mime"
	"strconv"
	"strings"
	"time"
)

// The parameters' names.
const (
	ParamMode  = "x-orgfs-mode"  // permission bits, octal (07777 at most)
	ParamMTime = "x-orgfs-mtime" // seconds since 1970 UTC, a dot and 9 digits of nanoseconds
)

// TypeAttrs is what a content type carries of its file's attributes.
type TypeAttrs struct {
	Mode  *uint32    // permission bits; nil: not carried
	MTime *time.Time // modification time; nil: not carried
}

// Written is what a file's content type carries of the mode and time its
// writer gave it, as every File keeps it (16 bytes; a listing drops the
// rest of the record: cache/dirs.go). The zero Written carries nothing.
type Written struct {
	sec  int64
	nsec int32
	mode uint16
	has  uint8 // writtenMode | writtenMTime
}

const (
	writtenMode uint8 = 1 << iota
	writtenMTime
)

// WrittenOf is what contentType carries (TypeAttrsOf).
func WrittenOf(contentType string) Written {
	var w Written
	a := TypeAttrsOf(contentType)
	if a.Mode != nil {
		w.mode, w.has = uint16(*a.Mode), w.has|writtenMode
	}
	if a.MTime != nil {
		w.sec, w.nsec, w.has = a.MTime.Unix(), int32(a.MTime.Nanosecond()), w.has|writtenMTime
	}
	return w
}

// Attrs is w as TypeAttrs: nil where it carries nothing.
func (w Written) Attrs() TypeAttrs {
	var a TypeAttrs
	if w.has&writtenMode != 0 {
		m := uint32(w.mode)
		a.Mode = &m
	}
	if w.has&writtenMTime != 0 {
		t := time.Unix(w.sec, int64(w.nsec)).UTC()
		a.MTime = &t
	}
	return a
}

// Parts is w as plain numbers, for a record kept on disk (WrittenFrom).
func (w Written) Parts() (sec int64, nsec int32, mode uint16, has uint8) {
	return w.sec, w.nsec, w.mode, w.has
}

// WrittenFrom is the Written of Parts; parts out of range carry nothing.
func WrittenFrom(sec int64, nsec int32, mode uint16, has uint8) Written {
	w := Written{has: has & (writtenMode | writtenMTime)}
	if w.has&writtenMode != 0 {
		if mode > 0o7777 {
			return Written{}
		}
		w.mode = mode
	}
	if w.has&writtenMTime != 0 {
		if sec < 0 || sec >= maxTypeTime || nsec < 0 || nsec > 999_999_999 {
			return Written{}
		}
		w.sec, w.nsec = sec, nsec
	}
	return w
}

// IsZero reports whether w carries nothing.
func (w Written) IsZero() bool { return w.has == 0 }

// WithTypeAttrs is contentType with a's parameters, set anew; its other
// parameters stay.
func WithTypeAttrs(contentType string, a TypeAttrs) string {
	base, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		base, params = "application/octet-stream", map[string]string{}
	}
	delete(params, ParamMode)
	delete(params, ParamMTime)
	if a.Mode != nil {
		params[ParamMode] = fmt.Sprintf("%04o", *a.Mode&0o7777)
	}
	if a.MTime != nil {
		params[ParamMTime] = fmt.Sprintf("%d.%09d", a.MTime.Unix(), a.MTime.Nanosecond())
	}
	if s := mime.FormatMediaType(base, params); s != "" {
		return s
	}
	return contentType
}

// TypeAttrsOf reads the attributes contentType carries; a parameter
// missing or unreadable is not carried.
func TypeAttrsOf(contentType string) TypeAttrs {
	var a TypeAttrs
	if !strings.Contains(contentType, "x-orgfs-") {
		return a // the usual case: no parsing
	}
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return a
	}
	if v, ok := params[ParamMode]; ok {
		if m, err := strconv.ParseUint(v, 8, 32); err == nil && m <= 0o7777 {
			mode := uint32(m)
			a.Mode = &mode
		}
	}
	if v, ok := params[ParamMTime]; ok {
		if t, ok := parseUnixNano(v); ok {
			a.MTime = &t
		}
	}
	return a
}

// maxTypeTime bounds a time carried (seconds since 1970): the year 10000.
// One before 1970 is not carried either (a FUSE time has no sign).
const maxTypeTime = 253402300800

// parseUnixNano reads "SECONDS.NANOSECONDS" (the fraction up to 9 digits,
// optional).
func parseUnixNano(v string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(v, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s < 0 || s >= maxTypeTime || len(frac) > 9 || strings.HasPrefix(sec, "+") {
		return time.Time{}, false
	}
	var ns int64
	if frac != "" {
		n, err := strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if err != nil || strings.HasPrefix(frac, "+") {
			return time.Time{}, false
		}
		ns = int64(n)
	}
	return time.Unix(s, ns).UTC(), true
}

// contentTypeOf is a listing's content type, interned when it carries no
// attributes (a few values over a listing; one that does is its file's
// own).
func contentTypeOf(v flexString) string {
	if strings.Contains(string(v), "x-orgfs-") {
		return string(v)
	}
	return v.intern()
}
