package ctl

// The control tree acts inside write(2), not at close.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/orgfs/orgfs/api"
)

// A complete input acts inside write(2): the service has the request, and
// the folder's result its outcome, before the descriptor is closed; a
// refusal by the service is the write's own errno; close then has nothing
// left to do (0, and no second request).
func TestCtlActionRunsInWrite(t *testing.T) {
	e := ctlEnv(t, envOptions{})
	fx := e.Emu.Fixtures(e.Org)
	f, err := os.OpenFile(e.ctl("images", "new"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, `{"machine_id": %d, "name": "made in write"}`, fx.StoppedMachine); err != nil {
		t.Fatalf("write: %v (%s)", err, e.read("images", "result"))
	}
	if n := e.Requests("POST /images"); n != 1 {
		t.Errorf("after the write, before close: %d requests, want the action's one", n)
	}
	if r := e.result("images"); !r.OK || !strings.Contains(fmt.Sprint(r.Record), "made in write") {
		t.Errorf("result after the write, before close: %+v", r)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close after the action: %v", err)
	}
	if n := e.Requests("POST /images"); n != 1 {
		t.Errorf("after close: %d requests, want the write's one", n)
	}

	e.Emu.InjectError("POST /images", api.CodeImageBeingCreated, 1)
	g, err := os.OpenFile(e.ctl("images", "new"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, err = fmt.Fprintf(g, `{"machine_id": %d, "name": "refused"}`, fx.StoppedMachine)
	if !errors.Is(err, syscall.EBUSY) {
		t.Errorf("write refused by the service: %v, want EBUSY from write(2) itself", err)
	}
	if n := e.Requests("POST /images"); n != 2 {
		t.Errorf("after the refused write, before close: %d requests, want 2", n)
	}
	if r := e.result("images"); r.OK || r.Errno != "EBUSY" {
		t.Errorf("result after the refused write, before close: %+v", r)
	}
	if err := g.Close(); err != nil {
		t.Errorf("close after a refused write: %v, want 0 (nothing left to act on)", err)
	}
	if n := e.Requests("POST /images"); n != 2 {
		t.Errorf("after close: %d requests, want 2", n)
	}
}
