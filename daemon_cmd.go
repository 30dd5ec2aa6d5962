package main

// Running in the background: orgfs mount --daemon, the mount helper that
// mount(8) and /etc/fstab call (mount.fuse.orgfs, mount.orgfs, or orgfs
// called by mount.fuse3), and systemd's notify protocol.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// daemonEnv marks the child of orgfs mount --daemon; its value is the fd of
// the pipe to tell the parent "ready" (or the error) on.
const daemonEnv = "ORGFS_DAEMON_CHILD"

// daemonize starts orgfs mount again in the background with the same
// arguments and returns once its mount answers (or with its error).
func daemonize(args []string, dir string, o mountOptions, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logFile := o.Log.File
	if logFile == "" {
		base, err := cacheHome()
		if err != nil {
			return fmt.Errorf("no place for the log (give --log-file): %w", err)
		}
		abs, _ := filepath.Abs(dir)
		logFile = filepath.Join(base, "orgfs", "logs", strings.Trim(strings.ReplaceAll(abs, "/", "-"), "-")+".log")
		if err := os.MkdirAll(filepath.Dir(logFile), 0o700); err != nil {
			return err
		}
		args = append([]string{"--log-file", logFile}, args...)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, append([]string{"mount"}, args...)...)
	cmd.Env = append(os.Environ(), daemonEnv+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "ready" {
		fmt.Fprintf(stdout, "orgfs: mounted at %s in the background (pid %d, log %s); 'orgfs unmount %s' ends it\n", dir, cmd.Process.Pid, logFile, dir)
		cmd.Process.Release()
		return nil
	}
	state, _ := cmd.Process.Wait()
	msg := strings.TrimPrefix(line, "error: ")
	if msg == "" {
		msg = fmt.Sprintf("the daemon ended (%v) before the mount answered; see %s", state, logFile)
	}
	return errors.New(msg)
}

// daemonChild reports to the parent of orgfs mount --daemon, once: "ready"
// when err is nil, else the error. It does nothing in a foreground mount.
func daemonChild(err error) {
	fd := os.Getenv(daemonEnv)
	if fd == "" {
		return
	}
	os.Unsetenv(daemonEnv)
	f := os.NewFile(3, "daemon-pipe")
	if f == nil || fd != "3" {
		return
	}
	defer f.Close()
	if err != nil {
		fmt.Fprintf(f, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	fmt.Fprintln(f, "ready")
}

// sdNotify sends state to systemd when it asked for it (NOTIFY_SOCKET, as
// for Type=notify units); it reports whether it was sent.
func sdNotify(state string) bool {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return false
	}
	if strings.HasPrefix(sock, "@") {
		sock = "\x00" + sock[1:] // an abstract socket
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(time.Second))
	_, err = c.Write([]byte(state))
	return err == nil
}

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
  write_back=D drain_timeout=D io_timeout=D transfers=N ro rw allow_other uid=N
  gid=N umask=NNN log_file=FILE log_level=LEVEL; _netdev, x-systemd.*, noauto,
  nofail, user, defaults and the generic mount flags are ignored.
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
	"log_file": {"--log-file", true}, "log_level": {"--log-level", true},
	"ro": {"--read-only", false}, "allow_other": {"--allow-other", false}, "demo": {"--demo", false},
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
