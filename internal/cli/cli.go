// Package cli is the orgfs command: its command table, usage, exit codes and
// version (this file), and one file per command or concern.
//
// Its files are in docs/ARCHITECTURE.md.
package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// version is set at build time with
// -ldflags "-X github.com/orgfs/orgfs/internal/cli.version=..."; otherwise
// it comes from the module's build information.
var version = ""

// command is one subcommand of orgfs.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"mount":      {"mount", "mount the organization's storage (or, with --demo, the emulator's) at a directory", runMount},
		"emulator":   {"emulator", "run the service emulator on loopback (demo data or empty)", runEmulator},
		"version":    {"version", "print the version", runVersion},
		"sync":       {"sync", "wait until everything written to a mount (or under paths) is on the service", runSync},
		"status":     {"status", "show a mount's upload queue with progress, failures, cache and request counters", runStatus},
		"unmount":    {"unmount", "send what waits to upload, showing progress, then unmount", runUnmount},
		"pin":        {"pin", "keep files and folders on this desk, available offline (--list: the pins and their state)", runPin},
		"unpin":      {"unpin", "end pins: what they kept is evictable again", runUnpin},
		"doctor":     {"doctor", "check a service and its credentials before a first mount, one line per check (read-only; --write also uploads)", runDoctor},
		"help":       {"help", "show help for orgfs or one of its commands", runHelp},
		"completion": {"completion", "print the shell completion script for bash, zsh or fish", runCompletion},
	}
}

// usageError is a mistake on the command line: printed as it is, exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef makes a usageError.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// Main runs orgfs with argv (its name as called, then its arguments) and
// returns the exit status: as mount(8)'s helper (see isMountHelper), or a
// command.
func Main(argv []string, stdout, stderr io.Writer) int {
	argv0, args := "orgfs", []string(nil)
	if len(argv) > 0 {
		argv0, args = argv[0], argv[1:]
	}
	if isMountHelper(argv0, args) {
		return finish("mount helper", runHelper(args, stdout, stderr), stderr)
	}
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "--help" {
		name = "help"
	}
	if name == "--version" {
		name = "version"
	}
	switch name { // hidden: the completion scripts' question, the manual pages' writer
	case completeCommand:
		return finish(name, runComplete(args[1:], stdout), stderr)
	case manCommand:
		return finish(name, runMan(args[1:], stdout), stderr)
	}
	cmd, ok := commands()[name]
	if !ok {
		fmt.Fprintf(stderr, "orgfs: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return finish(name, cmd.run(args[1:], stdout, stderr), stderr)
}

// finish prints a command's error and returns the exit status it means.
func finish(name string, err error, stderr io.Writer) int {
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "orgfs %s: %v\n", name, err)
		var ue *usageError
		if errors.As(err, &ue) {
			return 2
		}
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "orgfs: your organization's cloud-computer storage as a local drive")
	fmt.Fprintln(w, "\nUsage: orgfs COMMAND [flags]\n\nCommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nOn a new endpoint start with 'orgfs doctor --credentials FILE': it says what works, what")
	fmt.Fprintln(w, "does not and the fix. Run 'orgfs help COMMAND' or 'orgfs COMMAND --help' for a command's flags.")
}

func runHelp(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stdout)
		return nil
	}
	cmd, ok := commands()[args[0]]
	if !ok || args[0] == "help" {
		usage(stdout)
		return nil
	}
	return cmd.run([]string{"--help"}, stdout, stderr)
}

func runVersion(args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version", "", stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "orgfs", versionString())
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		if modified {
			rev += " (with uncommitted changes)"
		}
		fmt.Fprintln(stdout, "commit  ", rev)
	}
	fmt.Fprintln(stdout, "go      ", info.GoVersion)
	for _, d := range info.Deps {
		if d.Path == "github.com/hanwen/go-fuse/v2" {
			fmt.Fprintln(stdout, "go-fuse ", d.Version)
		}
	}
	fmt.Fprintln(stdout, "platform", runtime.GOOS+"/"+runtime.GOARCH)
	return nil
}

func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		return strings.TrimSpace(v + " " + rev + dirty)
	}
	return v
}

// newFlagSet makes a subcommand's flag set whose --help prints a synopsis and
// the flags to w.
func newFlagSet(name, synopsis string, w io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("orgfs "+name, pflag.ContinueOnError)
	fs.SetOutput(w)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: orgfs %s [flags]%s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	if c, ok := w.(*flagSetCatcher); ok { // docs/CONFIGURATION.md (confdoc.go)
		c.caught(fs)
	}
	return fs
}

// parseFlags parses args and turns a flag error into a usage error.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usagef("%v (see '%s --help')", err, fs.Name())
	}
	return nil
}
