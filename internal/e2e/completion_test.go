package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The bash completion script, sourced in bash with orgfs on the PATH,
// completes a command, a command's flags, a flag's values and a path, as a
// user's TAB would; the zsh and fish scripts are printed.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed:", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	tab := func(line string) []string {
		t.Helper()
		script := `source <(orgfs completion bash) || exit 1
read -ra COMP_WORDS <<< "$LINE"
[[ $LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_orgfs
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"), "LINE="+line)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completing %q: %v\n%s", line, err, out)
		}
		return strings.Fields(string(out))
	}
	for line, want := range map[string]string{
		"orgfs st":                   "status",
		"orgfs mount --log-f":        "--log-format --log-file",
		"orgfs mount --log-format j": "json",
		"orgfs mount --cache-dir no": "notes.txt",
		"orgfs completion b":         "bash",
	} {
		if got := strings.Join(tab(line), " "); got != want {
			t.Errorf("orgfs completion of %q<TAB>: %q, want %q", line, got, want)
		}
	}
	for _, shell := range []string{"zsh", "fish"} {
		code, out := orgfsCmd(t, "completion", shell)
		if code != 0 || !strings.Contains(out, "orgfs __complete") {
			t.Errorf("orgfs completion %s: exit %d\n%s", shell, code, out)
		}
	}
	if code, out := orgfsCmd(t, "completion", "tcsh"); code != 2 || !strings.Contains(out, "want bash, zsh or fish") {
		t.Errorf("orgfs completion tcsh: exit %d\n%s", code, out)
	}
}
