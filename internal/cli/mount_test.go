package cli

import (
	"runtime/debug"
	"testing"
)

// --gc-percent sets the daemon's GOGC, 40 unless told; not given, a GOGC in
// the environment (which the Go runtime applied at start) stays in force.
func TestGCPercent(t *testing.T) {
	if d := defaultMountOptions().GCPercent; d != 40 {
		t.Errorf("default --gc-percent %d, want 40", d)
	}
	t.Cleanup(func() { debug.SetGCPercent(100) })
	for _, c := range []struct {
		flag  int
		given bool
		env   string
		want  int // what it leaves set: 77 is the setting before
	}{
		{50, false, "", 50},
		{50, false, "200", 77},
		{30, true, "200", 30},
		{30, true, "", 30},
	} {
		debug.SetGCPercent(77)
		setGCPercent(c.flag, c.given, c.env)
		if got := debug.SetGCPercent(100); got != c.want {
			t.Errorf("--gc-percent %d (given: %v), GOGC=%q: GOGC is %d, want %d", c.flag, c.given, c.env, got, c.want)
		}
	}
}
