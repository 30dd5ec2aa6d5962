package emulator_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
)

// TestDialectsDocumented: docs/DIALECTS.md has a row for every switch, in the
// emulator's order (the order of its help), and none for a switch that does
// not exist.
func TestDialectsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/DIALECTS.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1])
	}
	var names []string
	for _, s := range emulator.DialectSwitches() {
		names = append(names, s.Name)
		if s.Help == "" || s.Default == "" {
			t.Errorf("switch %s: no help or no default", s.Name)
		}
	}
	if !slices.Equal(documented, names) {
		t.Errorf("docs/DIALECTS.md documents the switches\n  %s\nthe emulator has\n  %s", strings.Join(documented, ","), strings.Join(names, ","))
	}
}

// TestParseDialect: the names --dialect takes, and what they turn on.
func TestParseDialect(t *testing.T) {
	other := emulator.OtherDialect()
	for _, tt := range []struct {
		in   string
		want []string // switches on; nil: the default dialect
		err  bool
	}{
		{in: "", want: nil},
		{in: "default", want: nil},
		{in: "other", want: other.Switches()},
		{in: "chunk-mb", want: []string{"chunk-mb"}},
		{in: "errors-in-200, chunk-mb,chunk-mb", want: []string{"errors-in-200", "chunk-mb"}},
		{in: "default,no-get-image", want: []string{"no-get-image"}},
		{in: "other,four-digit-200", want: slices.Concat([]string{other.Switches()[0], "four-digit-200"}, other.Switches()[2:])},
		{in: "seats-only,machines-only", err: true},
		{in: "four-digit-422,four-digit-200", err: true},
		{in: "chunk-mb,other", err: true},
		{in: "nosuch", err: true},
		{in: "chunk-mb,", err: true},
	} {
		d, err := emulator.ParseDialect(tt.in)
		if (err != nil) != tt.err || err == nil && !slices.Equal(d.Switches(), tt.want) {
			t.Errorf("ParseDialect(%q) = %v, %v; want %v (error %v)", tt.in, d.Switches(), err, tt.want, tt.err)
		}
	}
	// Of a pair, other takes the first; every other switch is on.
	all := emulator.DialectSwitches()
	if got := other.Switches(); len(got) != len(all)-2 || slices.Contains(got, "four-digit-200") || slices.Contains(got, "machines-only") {
		t.Errorf("other = %v", got)
	}
	if other.String() != "other" || (emulator.Dialect{}).String() != "default" {
		t.Errorf("names: %q, %q", other.String(), emulator.Dialect{}.String())
	}
}
