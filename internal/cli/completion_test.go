package cli

import (
	"slices"
	"strings"
	"testing"
)

// What completes a command line comes from the command table and the
// commands' flag sets: commands, flags, a flag's fixed values, the mount
// points for the desk commands, and paths where a command takes them.
func TestComplete(t *testing.T) {
	mounts := func() []string { return []string{"/mnt/org", "/home/a/orgfs"} }
	for _, tt := range []struct {
		words []string
		want  []string // exactly, in order
		paths bool
	}{
		{[]string{"st"}, []string{"status"}, false},
		{[]string{""}, commandNames(), false},
		{[]string{"mount", "--log-f"}, []string{"--log-format", "--log-file"}, false},
		{[]string{"mount", "--log-format", ""}, []string{"text", "json"}, false},
		{[]string{"mount", "--log-level", "w"}, []string{"warn"}, false},
		{[]string{"emulator", "--seed", "e"}, []string{"empty"}, false},
		{[]string{"emulator", "--dialect", "four"}, []string{"four-digit-422", "four-digit-200"}, false},
		{[]string{"mount", "--cache-dir", ""}, nil, true},
		{[]string{"mount", "--read-only", ""}, nil, true}, // a switch takes no value: the mount point
		{[]string{"status", "/mnt"}, []string{"/mnt/org"}, true},
		{[]string{"unmount", ""}, []string{"/mnt/org", "/home/a/orgfs"}, true},
		{[]string{"completion", ""}, []string{"bash", "fish", "zsh"}, false},
		{[]string{"help", "do"}, []string{"doctor"}, false},
		{[]string{"nosuch", ""}, nil, true},
	} {
		got, paths := complete(tt.words, mounts)
		if !slices.Equal(got, tt.want) || paths != tt.paths {
			t.Errorf("complete(%q) = %q, paths %v; want %q, paths %v", tt.words, got, paths, tt.want, tt.paths)
		}
	}
	// Every flag of mount is offered after --, and --help.
	got, _ := complete([]string{"mount", "--"}, mounts)
	if len(got) < 20 || !slices.Contains(got, "--help") || !slices.Contains(got, "--cache-max-size") {
		t.Errorf("the flags of mount: %d offered: %s", len(got), strings.Join(got, " "))
	}
}
