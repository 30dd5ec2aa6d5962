package api

import (
	"testing"
	"time"
)

// A file's mode and time ride in its content type and read back as set;
// other parameters stay; a type without them, or with unreadable ones,
// carries nothing.
func TestTypeAttrs(t *testing.T) {
	mode := uint32(0o755)
	mt := time.Date(2024, 11, 29, 3, 4, 5, 123456789, time.UTC)
	ct := WithTypeAttrs("text/plain; charset=utf-8", TypeAttrs{Mode: &mode, MTime: &mt})
	if ct != "text/plain; charset=utf-8; x-orgfs-mode=0755; x-orgfs-mtime=1732849445.123456789" {
		t.Fatalf("WithTypeAttrs: %q", ct)
	}
	a := TypeAttrsOf(ct)
	if a.Mode == nil || *a.Mode != mode || a.MTime == nil || !a.MTime.Equal(mt) {
		t.Fatalf("TypeAttrsOf(%q) = %+v, want 0755 and %v", ct, a, mt)
	}
	// Set anew, not added twice; a time only.
	ct = WithTypeAttrs(ct, TypeAttrs{MTime: &mt})
	if a := TypeAttrsOf(ct); a.Mode != nil || a.MTime == nil || ct != "text/plain; charset=utf-8; x-orgfs-mtime=1732849445.123456789" {
		t.Fatalf("set anew: %q, %+v", ct, a)
	}
	// A service that reorders the parameters, or changes their case.
	if a := TypeAttrsOf("text/plain; X-Orgfs-Mtime=1732849445.123456789; charset=utf-8; x-orgfs-mode=0755"); a.Mode == nil || *a.Mode != mode || a.MTime == nil || !a.MTime.Equal(mt) {
		t.Errorf("reordered: %+v", a)
	}
	// Hostile values carry nothing: a mode out of range, a time past the
	// year 9999 or before 1970, signs, a parameter repeated (which one?).
	for _, in := range []string{"", "application/pdf", "text/plain; x-orgfs-mode=999", "text/plain; x-orgfs-mode=17777",
		"text/plain; x-orgfs-mode=-1", "text/plain; x-orgfs-mode=+755", "text/plain; x-orgfs-mtime=12.3456789012",
		"text/plain; x-orgfs-mtime=soon", "not a type; x-orgfs-mode=0755", "text/plain; x-orgfs-mtime=253402300800",
		"text/plain; x-orgfs-mtime=99999999999999999999", "text/plain; x-orgfs-mtime=-5", "text/plain; x-orgfs-mtime=+5",
		"text/plain; x-orgfs-mtime=5.+5", "text/plain; x-orgfs-mode=0755; x-orgfs-mode=0700"} {
		if a := TypeAttrsOf(in); a.Mode != nil || a.MTime != nil {
			t.Errorf("TypeAttrsOf(%q) = %+v, want nothing carried", in, a)
		}
	}
	if a := TypeAttrsOf("text/plain; x-orgfs-mtime=5.5"); a.MTime == nil || !a.MTime.Equal(time.Unix(5, 500_000_000)) {
		t.Errorf("a short fraction: %+v", a)
	}
	// A reader that does not know the parameters gets the MIME type.
	if ct := WithTypeAttrs("", TypeAttrs{Mode: &mode}); ct != "application/octet-stream; x-orgfs-mode=0755" {
		t.Errorf("no type: %q", ct)
	}
}

// TypeAttrsOf never panics, and what it reads of any content type goes
// back into one and reads the same.
func FuzzTypeAttrsOf(f *testing.F) {
	for _, s := range []string{"text/plain; x-orgfs-mode=0755; x-orgfs-mtime=1732849445.123456789", "a/b; x-orgfs-mtime=1.5",
		"text/plain; x-orgfs-mode=0755; x-orgfs-mode=0700", "x-orgfs-", "text/plain; charset=\"x-orgfs-mode=1\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		a := TypeAttrsOf(ct)
		if a.Mode != nil && *a.Mode > 0o7777 {
			t.Fatalf("%q: mode %o out of range", ct, *a.Mode)
		}
		back := TypeAttrsOf(WithTypeAttrs("application/octet-stream", a))
		if (a.Mode == nil) != (back.Mode == nil) || a.Mode != nil && *a.Mode != *back.Mode ||
			(a.MTime == nil) != (back.MTime == nil) || a.MTime != nil && !a.MTime.Equal(*back.MTime) {
			t.Fatalf("%q: read %+v, written and read again %+v", ct, a, back)
		}
	})
}
