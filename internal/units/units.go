// Package units parses and prints the sizes and rates that orgfs's flags take.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
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

// Size is a pflag.Value holding a byte count written with a suffix.
type Size int64

// String prints the size as it is parsed back.
func (s *Size) String() string { return strconv.FormatInt(int64(*s), 10) }

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

// String prints the rate in bytes per second.
func (r *Rate) String() string { return strconv.FormatInt(int64(*r), 10) }

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
