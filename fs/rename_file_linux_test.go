package fs

// Tests of the rename of a file (rename_file.go): between storage areas,
// where a folder is EXDEV (rename_folder.go), and of a file another writer
// replaced since this mount listed it.

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/orgfs/orgfs/api"
)

// A file moves between shared/ and a computer's storage, both ways, as
// between folders (on the service too); a folder, empty or not, to another
// area is EXDEV and stays.
func TestRenameBetweenAreas(t *testing.T) {
	e := newEnv(t, envOptions{})
	machine := e.Emu.Fixtures(e.Org).StoppedMachine
	comp := e.Path("computers", "Workstation")
	if err := os.WriteFile(e.Path("shared", "f"), []byte("from shared"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.put(machine, e.root(machine), "g", []byte("from the computer"))
	e.settle()
	if err := os.Rename(e.Path("shared", "f"), comp+"/f"); err != nil {
		t.Fatalf("rename shared/ → computers/: %v", err)
	}
	if err := os.Rename(comp+"/g", e.Path("shared", "g")); err != nil {
		t.Fatalf("rename computers/ → shared/: %v", err)
	}
	if got := readFile(t, comp+"/f"); got != "from shared" {
		t.Errorf("computers/Workstation/f reads %q", got)
	}
	if got := readFile(t, e.Path("shared", "g")); got != "from the computer" {
		t.Errorf("shared/g reads %q", got)
	}
	e.settle()
	if got := string(e.serviceBytes("g")); got != "from the computer" {
		t.Errorf("shared/g on the service: %q", got)
	}
	if _, ok := e.serviceFile("f"); ok {
		t.Errorf("shared/f is still on the service")
	}
	files, err := e.Client.MachineFiles(t.Context(), machine, api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		names[f.Name] = true
	}
	if !names["f"] || names["g"] {
		t.Errorf("the computer's storage on the service has %v, want f and not g", names)
	}

	// Folders: EXDEV, both left where they were.
	if err := os.Mkdir(e.Path("shared", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.Path("shared", "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path("shared", "full", "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	for _, d := range []string{"empty", "full"} {
		expectErrno(t, "rename of folder "+d+" to a computer", os.Rename(e.Path("shared", d), comp+"/"+d), syscall.EXDEV)
		if st, err := os.Stat(e.Path("shared", d)); err != nil || !st.IsDir() {
			t.Errorf("shared/%s after the refused rename: %v", d, err)
		}
		if _, err := os.Stat(comp + "/" + d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("computers/Workstation/%s after the refused rename: %v", d, err)
		}
	}
}

// A rename of a file another writer replaced since this mount listed it:
// the content seen here goes up under the new name, and the other writer's
// version stays under the old name (the delete is by id).
func TestRenameOfAFileReplacedElsewhere(t *testing.T) {
	e := newEnv(t, envOptions{}) // listings kept a minute
	e.put(0, e.root(0), "f", []byte("seen here"))
	if got := readFile(t, e.Path("shared", "f")); got != "seen here" {
		t.Fatalf("f reads %q", got)
	}
	e.apiReplace("f", "theirs") // a new id; the listing here still has the old
	if err := os.Rename(e.Path("shared", "f"), e.Path("shared", "g")); err != nil {
		t.Fatalf("rename: %v", err)
	}
	e.settle()
	if got := string(e.serviceBytes("g")); got != "seen here" {
		t.Errorf("g on the service: %q, want the content seen here", got)
	}
	if got := string(e.serviceBytes("f")); got != "theirs" {
		t.Errorf("f on the service: %q, want the other writer's version", got)
	}
}
