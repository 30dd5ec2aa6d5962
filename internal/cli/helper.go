package cli

// The mount helper: orgfs as mount(8) and /etc/fstab call it (mount.fuse.orgfs,
// mount.orgfs, or orgfs called by mount.fuse3 as "orgfs SOURCE MOUNTPOINT -o OPTIONS").

import (
	"io"
	"path/filepath"
	"strings"
)

// isMountHelper reports whether orgfs was called as mount(8)'s helper:
// by the name mount.fuse.orgfs or mount.orgfs, or by mount.fuse3 as
// "orgfs SOURCE MOUNTPOINT -o OPTIONS".
func isMountHelper(argv0 string, args []string) bool {
	switch filepath.Base(argv0) {
	case "mount.fuse.orgfs", "mount.orgfs":
		return true
	}
	if len(args) >= 2 {
		if _, known := commands()[args[0]]; !known && !strings.HasPrefix(args[0], "-") {
			for _, a := range args {
				if a == "-o" {
					return true
				}
			}
		}
	}
	return false
}

const helperUsage = `usage: mount.fuse.orgfs SOURCE MOUNTPOINT [-o OPTIONS] [-f] [-n] [-s] [-v]
  (called by 'mount -t fuse.orgfs' and by /etc/fstab lines such as
   orgfs /mnt/org fuse.orgfs credentials=/etc/orgfs/org.json,_netdev 0 0)
  OPTIONS: credentials=FILE cache_dir=DIR cache_max_size=SIZE dir_cache_time=D
  dir_read_ahead=N write_back=D drain_timeout=D io_timeout=D transfers=N
  gc_percent=N ro rw
  allow_other uid=N gid=N umask=NNN log_file=FILE log_level=LEVEL nolinks
  (--links=false) nopassthrough (--passthrough=false) cold_direct_io
  (--cold-direct-io); _netdev,
  x-systemd.*, noauto, nofail, user, defaults and the generic mount flags are
  ignored.
  -f stays in the foreground.`

// helperFlags maps the mount options orgfs takes to its flags (true: the
// option takes a value).
var helperFlags = map[string]struct {
	flag  string
	value bool
}{
	"credentials": {"--credentials", true}, "cache_dir": {"--cache-dir", true},
	"cache_max_size": {"--cache-max-size", true}, "dir_cache_time": {"--dir-cache-time", true},
	"write_back": {"--write-back", true}, "drain_timeout": {"--drain-timeout", true},
	"io_timeout": {"--io-timeout", true}, "transfers": {"--transfers", true},
	"uid": {"--uid", true}, "gid": {"--gid", true}, "umask": {"--umask", true},
	"log_file": {"--log-file", true}, "log_level": {"--log-level", true}, "desk_name": {"--desk-name", true},
	"rename_fetch_max": {"--rename-fetch-max", true}, "dir_read_ahead": {"--dir-read-ahead", true},
	"gc_percent": {"--gc-percent", true},
	"ro":         {"--read-only", false}, "allow_other": {"--allow-other", false}, "demo": {"--demo", false},
	"nolinks": {"--links=false", false}, "nopassthrough": {"--passthrough=false", false},
	"cold_direct_io": {"--cold-direct-io", false},
}

// ignoredOption reports whether a mount option is one orgfs leaves to
// mount(8), systemd or the kernel.
func ignoredOption(name string) bool {
	switch name {
	case "rw", "_netdev", "noauto", "auto", "nofail", "user", "users", "nouser", "owner", "group", "defaults",
		"dev", "nodev", "suid", "nosuid", "exec", "noexec", "atime", "noatime", "relatime", "strictatime",
		"nodiratime", "async", "sync", "dirsync", "loud", "silent", "comment", "fsname", "subtype", "default_permissions":
		return true
	}
	return strings.HasPrefix(name, "x-") || strings.HasPrefix(name, "comment=")
}

// helperArgs turns a mount helper's command line into orgfs mount's.
func helperArgs(args []string) ([]string, error) {
	var pos, opts []string
	foreground := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-o":
			if i+1 == len(args) {
				return nil, usagef("-o needs options\n%s", helperUsage)
			}
			i++
			opts = append(opts, strings.Split(args[i], ",")...)
		case strings.HasPrefix(a, "-o"):
			opts = append(opts, strings.Split(a[2:], ",")...)
		case a == "-f":
			foreground = true
		case a == "-n", a == "-s", a == "-v": // no mtab, sloppy, verbose: nothing to do
		case a == "-h", a == "--help":
			return nil, usagef("%s", helperUsage)
		case strings.HasPrefix(a, "-"):
			return nil, usagef("unknown option %s\n%s", a, helperUsage)
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return nil, usagef("want SOURCE and MOUNTPOINT\n%s", helperUsage)
	}
	var out []string
	var unknown []string
	for _, o := range opts {
		name, value, hasValue := strings.Cut(strings.TrimSpace(o), "=")
		if name == "" || ignoredOption(name) {
			continue
		}
		f, ok := helperFlags[name]
		switch {
		case !ok:
			unknown = append(unknown, name)
		case f.value && !hasValue:
			return nil, usagef("mount option %s needs a value (%s=...)", name, name)
		case f.value:
			out = append(out, f.flag, value)
		default:
			out = append(out, f.flag)
		}
	}
	if len(unknown) > 0 {
		return nil, usagef("unknown mount options: %s\n%s", strings.Join(unknown, ", "), helperUsage)
	}
	if !foreground {
		out = append(out, "--daemon")
	}
	return append(out, pos[1]), nil
}

// runHelper is orgfs as mount(8)'s helper.
func runHelper(args []string, stdout, stderr io.Writer) error {
	margs, err := helperArgs(args)
	if err != nil {
		return err
	}
	return runMount(margs, stdout, stderr)
}
