package fs

import (
	"slices"
	"testing"
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
