// Package units parses and prints the sizes and rates that orgfs's flags take.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Suffixes. K, M, G, T (and Ki, KiB, ...) are binary multiples, as in rclone and
// most mount tools; KB, MB, GB, TB are decimal. A bare number is bytes.
var multipliers = map[string]float64{
	"": 1, "B": 1,
	"K": 1 << 10, "KI": 1 << 10, "KIB": 1 << 10, "KB": 1e3,
	"M": 1 << 20, "MI": 1 << 20, "MIB": 1 << 20, "MB": 1e6,
	"G": 1 << 30, "GI": 1 << 30, "GIB": 1 << 30, "GB": 1e9,
	"T": 1 << 40, "TI": 1 << 40, "TIB": 1 << 40, "TB": 1e12,
}

// ParseSize parses "10G", "64K", "1.5MiB", "100MB" or "4096" into bytes.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, suffix := t, ""
	if i >= 0 {
		num, suffix = t[:i], strings.TrimSpace(t[i:])
	}
	m, ok := multipliers[suffix]
	if num == "" || !ok {
		return 0, fmt.Errorf("invalid size %q: want a number with an optional suffix K, M, G, T (binary) or KB, MB, GB, TB (decimal)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	v := f * m
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// ParseRate parses a rate in bytes per second: a size with an optional "/s"
// ("100MB/s", "50M", "0" for unlimited).
func ParseRate(s string) (int64, error) {
	return ParseSize(strings.TrimSuffix(strings.TrimSpace(s), "/s"))
}

// FormatSize prints bytes with a binary suffix, e.g. "1.5 MiB".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// CompactSize prints bytes as users write them on the command line: the
// largest binary suffix that divides them exactly ("10G", "128M", "1536K"),
// else the number of bytes.
func CompactSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// Size is a pflag.Value holding a byte count written with a suffix.
type Size int64

// String prints the size as it is parsed back ("10G").
func (s *Size) String() string { return CompactSize(int64(*s)) }

// Set parses a size.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// Type names the value in help text.
func (s *Size) Type() string { return "size" }

// Rate is a pflag.Value holding bytes per second.
type Rate int64

// String prints the rate as it is parsed back ("100M/s"; "0": unlimited).
func (r *Rate) String() string {
	if *r == 0 {
		return "0"
	}
	return CompactSize(int64(*r)) + "/s"
}

// Set parses a rate.
func (r *Rate) Set(v string) error {
	n, err := ParseRate(v)
	if err != nil {
		return err
	}
	*r = Rate(n)
	return nil
}

// Type names the value in help text.
func (r *Rate) Type() string { return "rate" }

// Duration is a pflag.Value holding a duration, printed as users write it
// ("5m", "1h30m", "2s", "50ms") rather than "5m0s".
type Duration time.Duration

// String prints the duration without its zero parts.
func (d *Duration) String() string { return FormatDuration(time.Duration(*d)) }

// Set parses a duration ("30s", "5m").
func (d *Duration) Set(v string) error {
	x, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not a duration (write it as 30s, 5m or 1h)", v)
	}
	*d = Duration(x)
	return nil
}

// Type names the value in help text.
func (d *Duration) Type() string { return "duration" }

// FormatDuration prints d without its zero parts: "5m", "1h30m", "2s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
