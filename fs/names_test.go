package fs

// Tests of names (names.go) without a mount: safe and unique names, probe
// names, the checks of names made, and a folder's view (dirview.go).

import (
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
)

func TestProbeName(t *testing.T) {
	for _, n := range []string{"._foo", ".DS_Store", "desktop.ini", "Desktop.ini", "Thumbs.db", ".Trash", ".Trash-0", ".hidden", "autorun.inf", ".xdg-volume-info"} {
		if !probeName(n) {
			t.Errorf("probeName(%q) = false", n)
		}
	}
	for _, n := range []string{"report.pdf", ".bashrc", "_foo", "trash", "DS_Store", "hidden"} {
		if probeName(n) {
			t.Errorf("probeName(%q) = true", n)
		}
	}
}

func TestUniqueNames(t *testing.T) {
	got := uniqueNames([]named{
		{"Design #1", 1}, {"a/b", 2}, {"Design #1", 3}, {"..", 4}, {"", 5}, {"x\x00y", 6}, {"ünï code", 7}, {"a／b", 8},
	})
	want := []string{"Design #1 (1)", "a／b (2)", "Design #1 (3)", ".._", "_", "xy", "ünï code", "a／b (8)"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// Stable whatever the listing order.
	rev := uniqueNames([]named{{"Design #1", 3}, {"Design #1", 1}})
	if !slices.Equal(rev, []string{"Design #1 (3)", "Design #1 (1)"}) {
		t.Fatalf("order-dependent names: %q", rev)
	}
}

func TestUniqueNamesStayUnique(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	got := uniqueNames([]named{{"a", 5}, {"a", 6}, {"a (5)", 7}, {long, 8}, {long + "x", 9}})
	seen := map[string]bool{}
	for i, n := range got {
		if seen[n] {
			t.Fatalf("name %q given twice: %q", n, got)
		}
		seen[n] = true
		if len(n) > 255 || !utf8.ValidString(n) {
			t.Fatalf("name %d is %d bytes or not UTF-8", i, len(n))
		}
	}
	if got[0] != "a (5)" || got[1] != "a (6)" {
		t.Fatalf("clashing names: %q", got[:3])
	}
}

// badNames are names refused at create, mkdir and rename, with the errno in
// shared storage and in a computer's (0: accepted).
var badNames = []struct {
	name            string
	shared, machine syscall.Errno
}{
	{strings.Repeat("a", 256), syscall.ENAMETOOLONG, syscall.ENAMETOOLONG},
	{strings.Repeat("a", 300), syscall.ENAMETOOLONG, syscall.ENAMETOOLONG},
	{strings.Repeat("a", 1025), syscall.ENAMETOOLONG, syscall.ENAMETOOLONG},
	{strings.Repeat("a", 3000), syscall.ENAMETOOLONG, syscall.ENAMETOOLONG},
	{strings.Repeat("é", 128), syscall.ENAMETOOLONG, syscall.ENAMETOOLONG}, // 128 runes, 256 bytes
	{"inv\xff\xfe.txt", syscall.EILSEQ, syscall.EILSEQ},
	{"inv\xfe\xff.txt", syscall.EILSEQ, syscall.EILSEQ},
	{"cut\xc3", syscall.EILSEQ, syscall.EILSEQ},         // a rune cut short
	{"sur\xed\xa0\x80", syscall.EILSEQ, syscall.EILSEQ}, // an encoded surrogate
	{"a:b", 0, syscall.EINVAL},
	{"q?", 0, syscall.EINVAL},
	{"star*", 0, syscall.EINVAL},
	{`back\slash`, 0, syscall.EINVAL},
	{`say "hi"`, 0, syscall.EINVAL},
	{"<in>", 0, syscall.EINVAL},
	{"a|b", 0, syscall.EINVAL},
	{"tab\there", 0, syscall.EINVAL},
	{"ctl\x1f", 0, syscall.EINVAL},
	{"CON", 0, syscall.EINVAL},
	{"con", 0, syscall.EINVAL},
	{"Prn", 0, syscall.EINVAL},
	{"aux", 0, syscall.EINVAL},
	{"NUL", 0, syscall.EINVAL},
	{"nul.txt", 0, syscall.EINVAL},
	{"com1", 0, syscall.EINVAL},
	{"COM9.log", 0, syscall.EINVAL},
	{"com1.log", 0, syscall.EINVAL},
	{"lpt1", 0, syscall.EINVAL},
	{"Lpt9.tar.gz", 0, syscall.EINVAL},
	{"con .txt", 0, syscall.EINVAL},
	{"COM¹", 0, syscall.EINVAL},
	{"trail.", 0, syscall.EINVAL},
	{"trail ", 0, syscall.EINVAL},
	{"...", 0, syscall.EINVAL},
	// Not refused anywhere.
	{strings.Repeat("a", 255), 0, 0},
	{strings.Repeat("é", 127) + "a", 0, 0}, // 255 bytes
	{"ünïcødé ✓.txt", 0, 0},
	{"a／b", 0, 0},
	{"com10", 0, 0},
	{"com0", 0, 0},
	{"console", 0, 0},
	{"nul_", 0, 0},
	{"lpt", 0, 0},
	{"cons.txt", 0, 0},
	{".con", 0, 0},
	{"x.nul", 0, 0},
	{" lead", 0, 0},
	{".hidden.d", 0, 0},
	{"50% off.txt", 0, 0},
	{"del\x7f", 0, 0},
	{"\ufffd", 0, 0},
}

func TestCheckName(t *testing.T) {
	for _, c := range badNames {
		for _, m := range []struct {
			machine bool
			want    syscall.Errno
		}{{false, c.shared}, {true, c.machine}} {
			got, why := checkName(c.name, m.machine)
			if got != m.want || (got == 0) != (why == "") {
				t.Errorf("checkName(%q, machine %v) = %v, %q; want %v", c.name, m.machine, got, why, m.want)
			}
		}
	}
	for _, n := range []string{"", ".", "..", "a/b", "x\x00y"} {
		if got, _ := checkName(n, false); got != syscall.EINVAL {
			t.Errorf("checkName(%q) = %v, want EINVAL", n, got)
		}
	}
}

// windowsBad matches the names Windows cannot hold, written apart from
// checkName as the rules read.
var windowsBad = regexp.MustCompile(`[<>:"/\\|?*\x00-\x1f]|[. ]$|^(?i:con|prn|aux|nul|com[1-9¹²³]|lpt[1-9¹²³]) *(\.|$)`)

// wantErrno is the errno the rules give name.
func wantErrno(name string, machine bool) syscall.Errno {
	switch {
	case len(name) > 255:
		return syscall.ENAMETOOLONG
	case !utf8.ValidString(name):
		return syscall.EILSEQ
	case name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00"):
		return syscall.EINVAL
	case machine && windowsBad.MatchString(name):
		return syscall.EINVAL
	}
	return 0
}

// FuzzNames checks the names both ways. Service names to shown names: every
// shown name is one path component (no '/', no NUL, not "", "." or "..") of
// at most 255 bytes, unique in its folder, and leads back to its service
// name through the folder's view. Names made here: checkName agrees with the
// rules, and a name it accepts is the service name as well as the name shown
// for it.
func FuzzNames(f *testing.F) {
	for _, c := range badNames {
		f.Add(c.name, int64(5))
	}
	for _, s := range []string{"", ".", "..", "a/b", "x\x00y", "/", "//", "\x00", "a (5)", "a (5) (5)",
		strings.Repeat("a", 251) + " (5)", strings.Repeat("é", 200), strings.Repeat("/", 300), "ſ", "K"} {
		f.Add(s, int64(5))
	}
	f.Add("x", int64(-1))
	f.Add("y", int64(0))
	f.Add("z", int64(1<<63-1))
	f.Fuzz(func(t *testing.T, name string, id int64) {
		for _, machine := range []bool{false, true} {
			errno, why := checkName(name, machine)
			if want := wantErrno(name, machine); errno != want || (errno == 0) != (why == "") {
				t.Fatalf("checkName(%q, machine %v) = %v, %q; the rules say %v", name, machine, errno, why, want)
			}
		}
		if errno, _ := checkName(name, false); errno == 0 {
			// Made here: the service gets name, and shows it as name.
			if got := uniqueNames([]named{{name, id}}); got[0] != name {
				t.Fatalf("a name made as %q shows as %q", name, got[0])
			}
		}
		// A folder whose names clash with name every way the mapping can:
		// the names clashes give it (more than uniqueNames tries), the same
		// name (under another id and under the same one, as pending files
		// all have id 0), and other names shown the same.
		shown := safeName(name)
		var items []named
		for k, n := 1, withID(shown, id); k <= 5; k, n = k+1, withID(n, id) {
			items = append(items, named{n, id + int64(k)})
		}
		slices.Reverse(items)
		items = append(items, named{name, id}, named{shown, id + 6}, named{name, id}, named{shown + "/", id + 7},
			named{strings.ToValidUTF8(name, "\ufffd"), id + 8})
		self := len(items) - 5
		for _, order := range [][]named{items, reversed(items), items[self : self+1]} {
			checkShown(t, order)
		}
	})
}

func reversed(s []named) []named {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// checkShown checks the names a folder of items shows, and that each leads
// back to its item through the folder's view.
func checkShown(t *testing.T, items []named) {
	t.Helper()
	files := make([]api.File, len(items))
	for i, it := range items {
		files[i] = api.File{ID: it.id, Name: it.name, ObjectType: api.ObjectFile}
	}
	v := newDirView(&cache.Listing{Files: files}, false)
	seen := make(map[string]int, len(items))
	for i, n := range v.base.names {
		if j, dup := seen[n]; dup {
			t.Fatalf("%q shown for items %d and %d of %v", n, j, i, items)
		}
		seen[n] = i
		switch {
		case n == "" || n == "." || n == "..", strings.ContainsAny(n, "/\x00"), len(n) > maxName:
			t.Fatalf("service name %q shows as %q (%d bytes)", items[i].name, n, len(n))
		case utf8.ValidString(items[i].name) && !utf8.ValidString(n):
			t.Fatalf("service name %q shows as %q, not UTF-8", items[i].name, n)
		}
		if j, ok := v.base.byName[n]; !ok || j != i || v.base.files[j].Name != items[i].name {
			t.Fatalf("%q, shown for service name %q, leads back to item %d (%v)", n, items[i].name, j, ok)
		}
		if utf8.ValidString(items[i].name) {
			// Every name shown in shared storage may be given back (cp, mv).
			if errno, why := checkName(n, false); errno != 0 {
				t.Fatalf("%q, shown for %q, is refused: %s", n, items[i].name, why)
			}
		}
	}
}

func TestNamesStayUniqueWhenSuffixesRunOut(t *testing.T) {
	// A 255-byte name ending in its own suffix is its own withID: only the
	// " (id.n)" form separates it from a service name that already reads so.
	long := strings.Repeat("a", 251) + " (5)"
	got := uniqueNames([]named{{long, 9}, {long, 5}, {long, 5}})
	if got[0] == got[1] || got[1] == got[2] || got[0] == got[2] {
		t.Fatalf("names %q clash", got)
	}
}
