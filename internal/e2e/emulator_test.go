package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// orgfs emulator --data-dir keeps the state across restarts: the second run
// does not seed (whatever --seed says), serves what the first one made with
// the same ids, and its credentials files hold the same key and secret.
func TestEmulatorDataDirKeepsState(t *testing.T) {
	data, creds := t.TempDir(), filepath.Join(t.TempDir(), "creds")
	run := func(seed string) (*exec.Cmd, *testkit.SyncBuffer) {
		t.Helper()
		out := &testkit.SyncBuffer{}
		cmd := exec.Command(binary, "emulator", "--listen", "127.0.0.1:0", "--data-dir", data, "--credentials-dir", creds, "--seed", seed)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		testkit.WaitFor(t, 20*time.Second, "the emulator to start", func() bool { return strings.Contains(out.String(), "Press Ctrl-C") })
		return cmd, out
	}
	stop := func(cmd *exec.Cmd, out *testkit.SyncBuffer) {
		t.Helper()
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("exit: %v\n%s", err, out)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("the emulator did not stop:\n%s", out)
		}
	}
	client := func() (*emutest.Client, api.Credentials) {
		t.Helper()
		c, err := api.LoadCredentials(filepath.Join(creds, "org-a.json"))
		if err != nil {
			t.Fatal(err)
		}
		return &emutest.Client{Creds: emulator.OrgCredentials{Endpoint: c.Endpoint, Key: c.Key, Secret: c.Secret}, HTTP: &http.Client{Timeout: time.Minute}}, c
	}

	cmd, out := run("empty")
	if !strings.Contains(out.String(), "state: seed empty, kept in "+filepath.Join(data, "state.json")) {
		t.Fatalf("first run:\n%s", out)
	}
	c, first := client()
	r := c.Must(t, "POST", "/files", map[string]any{"file_name": "kept", "object_type": "directory"})
	if r.Code() != 200 {
		t.Fatalf("mkdir: %s", r.Body)
	}
	id := fmt.Sprint(int64(r.JSON["id"].(float64)))
	stop(cmd, out)

	cmd, out = run("demo")
	if !strings.Contains(out.String(), "state: restored from "+filepath.Join(data, "state.json")) {
		t.Fatalf("second run:\n%s", out)
	}
	c, second := client()
	if second.Key != first.Key || second.Secret != first.Secret {
		t.Fatal("the credentials changed")
	}
	r = c.Must(t, "GET", "/files", nil)
	files, _ := r.JSON["files"].([]any)
	if r.Code() != 200 || len(files) != 1 || files[0].(map[string]any)["id"] != id {
		t.Fatalf("listing after the restart: %s", r.Body)
	}
	stop(cmd, out)
}
