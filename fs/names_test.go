package fs

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
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
