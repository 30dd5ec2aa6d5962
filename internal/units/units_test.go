package units

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0": 0, "4096": 4096, "64K": 64 << 10, "10G": 10 << 30, "1.5M": 3 << 19,
		"2MiB": 2 << 20, "100MB": 100e6, "1 GiB": 1 << 30, "7b": 7, "1T": 1 << 40,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1", "10X", "1..2M", "1e3", "99999999999T"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]int64{"100MB/s": 100e6, "50M": 50 << 20, "0": 0} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 64 << 20: "64.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestHelpShowsValuesAsWritten(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{10 << 30, "10G"}, {128 << 20, "128M"}, {1536 << 10, "1536K"}, {1000, "1000"}, {0, "0"}, {3 << 40, "3T"}} {
		s := Size(c.n)
		if got := s.String(); got != c.want {
			t.Errorf("Size(%d) = %q, want %q", c.n, got, c.want)
		}
		var back Size
		if err := back.Set(s.String()); err != nil || back != s {
			t.Errorf("%q parses back as %d (%v), want %d", s.String(), back, err, c.n)
		}
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{5 * time.Minute, "5m"}, {time.Minute, "1m"}, {2 * time.Second, "2s"}, {90 * time.Minute, "1h30m"}, {time.Hour, "1h"}, {50 * time.Millisecond, "50ms"}, {61 * time.Second, "1m1s"}} {
		d := Duration(c.d)
		if got := d.String(); got != c.want {
			t.Errorf("Duration(%v) = %q, want %q", c.d, got, c.want)
		}
		var back Duration
		if err := back.Set(d.String()); err != nil || back != d {
			t.Errorf("%q parses back as %v (%v)", d.String(), time.Duration(back), err)
		}
	}
	var d Duration
	if err := d.Set("5 minutes"); err == nil {
		t.Error("5 minutes parsed as a duration")
	}
	r := Rate(100 << 20)
	if r.String() != "100M/s" {
		t.Errorf("Rate = %q", r.String())
	}
}
