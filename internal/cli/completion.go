package cli

// Shell completion. orgfs completion bash|zsh|fish prints a small script
// that asks orgfs itself what completes a command line (orgfs __complete
// WORDS..., the word being completed last): the commands, a command's
// flags, the values of a flag that takes one of a fixed set, the mount
// points of the orgfs mounts for the desk commands, and paths. The answer
// comes from the command table and the flag sets the commands build
// (commandFlags), so it cannot drift from orgfs help.

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/logging"
	"github.com/spf13/pflag"
)

// completeCommand is the hidden command the scripts call.
const completeCommand = "__complete"

// The first line of __complete's answer: whether the shell adds paths to
// the candidates that follow, one a line.
const (
	completePaths   = "paths"
	completeNoPaths = "nopaths"
)

const completionSynopsis = ` bash|zsh|fish

Prints the shell completion script of orgfs for bash, zsh or fish. It completes
commands, flags, the values of --log-level, --log-format, --seed and --dialect,
the mount points of orgfs mounts for status, sync, unmount, pin and unpin,
and paths.

  bash: orgfs completion bash > /etc/bash_completion.d/orgfs
        (or: source <(orgfs completion bash))
  zsh:  orgfs completion zsh > "${fpath[1]}/_orgfs"
  fish: orgfs completion fish > ~/.config/fish/completions/orgfs.fish`

// completionScripts are the scripts, by shell.
var completionScripts = map[string]string{
	"bash": `# orgfs completion for bash (orgfs completion bash)
_orgfs() {
	local cur="${COMP_WORDS[COMP_CWORD]}" IFS=$'\n'
	local -a out
	out=($(orgfs __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)) || return
	COMPREPLY=("${out[@]:1}")
	if [ "${out[0]}" = paths ]; then
		COMPREPLY+=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _orgfs orgfs
`,
	"zsh": `#compdef orgfs
# orgfs completion for zsh (orgfs completion zsh)
_orgfs() {
	local -a out
	out=("${(@f)$(orgfs __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	local mode=$out[1]
	shift out
	(( $#out )) && compadd -- $out
	[[ $mode == paths ]] && _files
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
	_orgfs "$@"
else
	compdef _orgfs orgfs
fi
`,
	"fish": `# orgfs completion for fish (orgfs completion fish)
function __orgfs_complete
	set -l words (commandline -opc) (commandline -ct)
	set -l out (orgfs __complete $words[2..-1] 2>/dev/null)
	for c in $out[2..-1]
		echo $c
	end
	if test "$out[1]" = paths
		__fish_complete_path (commandline -ct)
	end
end
complete -c orgfs -f -a '(__orgfs_complete)'
`,
}

func runCompletion(args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("completion", completionSynopsis, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one shell: bash, zsh or fish (see 'orgfs completion --help')")
	}
	script, ok := completionScripts[fs.Arg(0)]
	if !ok {
		return usagef("no completion for %q: want bash, zsh or fish", fs.Arg(0))
	}
	_, err := io.WriteString(stdout, script)
	return err
}

// runComplete answers the scripts: words is the command line after orgfs,
// the word being completed last (maybe empty).
func runComplete(words []string, stdout io.Writer) error {
	cands, paths := complete(words, orgfsMounts)
	mode := completeNoPaths
	if paths {
		mode = completePaths
	}
	_, err := fmt.Fprintln(stdout, strings.Join(append([]string{mode}, cands...), "\n"))
	return err
}

// deskCommands take a mount point (or paths in one).
var deskCommands = []string{"status", "sync", "unmount", "pin", "unpin"}

// complete returns what completes the last of words (the command line
// after orgfs), and whether paths do too; mounts lists the orgfs mount
// points.
func complete(words []string, mounts func() []string) (cands []string, paths bool) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	if len(words) == 1 {
		return withPrefix(commandNames(), cur), false
	}
	name := words[0]
	cmd, ok := commands()[name]
	if !ok {
		return nil, true
	}
	fs, _, err := commandFlags(cmd)
	if err != nil {
		return nil, true
	}
	if prev := words[len(words)-2]; fs != nil && strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
		if f := lookupFlag(fs, prev); f != nil && f.NoOptDefVal == "" {
			if values := flagChoices(f.Name); values != nil {
				return withPrefix(values, cur), false
			}
			return nil, true // a value of its own: a path, a size, a time
		}
	}
	switch {
	case strings.HasPrefix(cur, "-"):
		var flags []string
		if fs != nil {
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					flags = append(flags, "--"+f.Name)
				}
			})
		}
		return withPrefix(append(flags, "--help"), cur), false
	case name == "help":
		return withPrefix(commandNames(), cur), false
	case name == "completion":
		return withPrefix([]string{"bash", "fish", "zsh"}, cur), false
	case slices.Contains(deskCommands, name):
		return withPrefix(mounts(), cur), true
	}
	return nil, true
}

// lookupFlag finds the flag a word names: --name or -s.
func lookupFlag(fs *pflag.FlagSet, word string) *pflag.Flag {
	if name, ok := strings.CutPrefix(word, "--"); ok {
		return fs.Lookup(name)
	}
	return fs.ShorthandLookup(strings.TrimPrefix(word, "-"))
}

// flagChoices is the fixed set of values a flag takes, nil when it takes
// any: each from where it is checked.
func flagChoices(name string) []string {
	switch name {
	case "log-level":
		return logging.Levels
	case "log-format":
		return logging.Formats
	case "seed":
		return []string{emulator.SeedDemo, emulator.SeedEmpty, emulator.SeedBench}
	case "dialect":
		names := []string{emulator.DialectDefault, emulator.DialectOther}
		for _, sw := range emulator.DialectSwitches() {
			names = append(names, sw.Name)
		}
		return names
	}
	return nil
}

// withPrefix is those of words that start with prefix.
func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}
