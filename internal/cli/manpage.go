package cli

// The manual pages, orgfs(1) (every command, with its flags) and
// mount.fuse.orgfs(8) (the mount options), rendered from the command table
// and the flag sets the commands build, as docs/CONFIGURATION.md is
// (confdoc.go): orgfs __man DIR writes them into the man tree DIR
// (DIR/man1/orgfs.1, DIR/man8/mount.fuse.orgfs.8: make install).

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
)

// manCommand is the hidden command that writes the pages.
const manCommand = "__man"

// manPages are the pages __man writes, by file name.
var manPages = map[string]func(w *strings.Builder) error{
	"man1/orgfs.1":            renderOrgfsMan,
	"man8/mount.fuse.orgfs.8": renderHelperMan,
}

// runMan writes the manual pages into the man tree args[0].
func runMan(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return usagef("%s DIR: want the man tree to write the pages in", manCommand)
	}
	for name, render := range manPages {
		var b strings.Builder
		if err := render(&b); err != nil {
			return err
		}
		path := filepath.Join(args[0], name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, filepath.Join(args[0], name))
	}
	return nil
}

// renderOrgfsMan renders orgfs(1).
func renderOrgfsMan(b *strings.Builder) error {
	fmt.Fprintf(b, ".TH ORGFS 1 \"\" \"orgfs %s\" \"User Commands\"\n", roff(versionString()))
	b.WriteString(".SH NAME\norgfs \\- your organization's cloud-computer storage as a local drive\n")
	b.WriteString(".SH SYNOPSIS\n.B orgfs\n.I COMMAND\n.RI [ flags ]\n")
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString("orgfs mounts an organization's shared storage, every computer's storage and the session recordings as one drive, " +
		"and turns the rest of the service's management interface into control files under\n.IR MOUNTPOINT /.ctl/ .\n")
	b.WriteString("On a new endpoint start with\n.BR \"orgfs doctor \\-\\-credentials \" FILE :\nit says what works, what does not and the fix.\n")
	b.WriteString(".SH COMMANDS\n")
	for _, name := range commandNames() {
		fs, help, err := commandFlags(commands()[name])
		if err != nil {
			return err
		}
		if fs == nil { // help: it prints orgfs's usage
			fmt.Fprintf(b, ".SS \"orgfs %s [COMMAND]\"\n%s\n", roff(name), roff(commands()[name].summary))
			continue
		}
		synopsis, _, _ := strings.Cut(help, "\nFlags:\n")
		usageLine, rest, _ := strings.Cut(strings.TrimSpace(synopsis), "\n")
		fmt.Fprintf(b, ".SS \"%s\"\n", roff(strings.TrimPrefix(usageLine, "Usage: ")))
		for _, para := range strings.Split(strings.TrimSpace(rest), "\n\n") {
			if para = strings.TrimSpace(para); para != "" {
				fmt.Fprintf(b, ".PP\n.nf\n%s\n.fi\n", roff(para))
			}
		}
		writeManFlags(b, name, fs)
	}
	b.WriteString(".SH ENVIRONMENT\n.TP\n.B ORGFS_ENDPOINT, ORGFS_API_KEY, ORGFS_API_SECRET\n" +
		"the credentials, where no\n.B \\-\\-credentials\nfile is given (never on the command line).\n")
	b.WriteString(".SH SEE ALSO\n.BR mount.fuse.orgfs (8),\n.BR fusermount3 (1)\n")
	return nil
}

// writeManFlags writes a command's flags as a list.
func writeManFlags(b *strings.Builder, command string, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		value, usage := pflag.UnquoteUsage(f)
		b.WriteString(".TP\n")
		if f.Shorthand != "" {
			fmt.Fprintf(b, "\\fB\\-%s\\fR, ", f.Shorthand)
		}
		fmt.Fprintf(b, "\\fB\\-\\-%s\\fR", roff(f.Name))
		if value != "" {
			fmt.Fprintf(b, " \\fI%s\\fR", roff(value))
		}
		b.WriteString("\n" + roff(usage))
		if d := strings.Trim(defaultCell(command, f), "`"); d != "" && !(f.Value.Type() == "bool" && d == "false") {
			fmt.Fprintf(b, " (default: %s)", roff(d))
		}
		b.WriteString("\n")
	})
}

// renderHelperMan renders mount.fuse.orgfs(8).
func renderHelperMan(b *strings.Builder) error {
	fs, _, err := commandFlags(commands()["mount"])
	if err != nil {
		return err
	}
	fmt.Fprintf(b, ".TH MOUNT.FUSE.ORGFS 8 \"\" \"orgfs %s\" \"System Administration\"\n", roff(versionString()))
	b.WriteString(".SH NAME\nmount.fuse.orgfs, mount.orgfs \\- mount orgfs from mount(8) and /etc/fstab\n")
	b.WriteString(".SH SYNOPSIS\n.B mount \\-t fuse.orgfs\n.I SOURCE MOUNTPOINT\n.RB [ \\-o\n.IR OPTIONS ]\n")
	b.WriteString(".SH DESCRIPTION\n.B mount\\ \\-t\\ fuse.orgfs\nand\n.I /etc/fstab\ncall orgfs as\n.B mount.fuse.orgfs\nor\n.BR mount.orgfs ;\n" +
		"each option sets a flag of\n.BR \"orgfs mount\" ,\nsee\n.BR orgfs (1).\n")
	fmt.Fprintf(b, ".PP\n.nf\n%s\n.fi\n", roff(strings.TrimRight(helperUsage, "\n")))
	b.WriteString(".SH OPTIONS\n")
	for _, opt := range sortedHelperOptions() {
		h := helperFlags[opt]
		f, err := mountOptionFlag(fs, opt)
		if err != nil {
			return err
		}
		value, usage := pflag.UnquoteUsage(f)
		fmt.Fprintf(b, ".TP\n\\fB%s\\fR", roff(opt))
		if h.value {
			fmt.Fprintf(b, "=\\fI%s\\fR", roff(value))
		}
		fmt.Fprintf(b, "\nsets \\fB%s\\fR: %s\n", roff(h.flag), roff(usage))
	}
	b.WriteString(".SH EXAMPLES\n.nf\n# /etc/fstab\norgfs /mnt/org fuse.orgfs credentials=/etc/orgfs/org.json,_netdev 0 0\n.fi\n")
	b.WriteString(".SH SEE ALSO\n.BR orgfs (1),\n.BR fstab (5),\n.BR mount (8)\n")
	return nil
}

// roff escapes text for a man page: backslashes, dashes, and a line that
// would start with a control character.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}
