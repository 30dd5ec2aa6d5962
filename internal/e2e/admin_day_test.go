package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// TestAdminDayScript runs scripts/admin-day.sh (a day of administration
// through .ctl only) against a mount of the demo organization, then checks
// through the API, not through the mount, that the service ended up where
// the script says: the image it made exists and is available and is the
// computer's, and the action log holds the computer's start. It runs in the
// default dialect and in the dialect other (dialect_test.go).
func TestAdminDayScript(t *testing.T) {
	for _, tool := range []string{"bash", "jq", "fusermount3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run scripts/admin-day.sh", tool)
		}
	}
	inDialects(t, adminDay)
}

func adminDay(t *testing.T, dialect emulator.Dialect) {
	// The emulator in-process (not --demo) so that the test reaches its API;
	// short steps so that starts, stops and image builds take little time.
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedDemo, StepDelay: 200 * time.Millisecond, Dialect: dialect})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir := t.TempDir()
	began := time.Now()
	// startDaemon's cleanup kills the daemon and unmounts on every path.
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir())

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../scripts/admin-day.sh", dir)
	cmd.Env = append(os.Environ(), "ADMIN_DAY_TIMEOUT=30")
	cmd.WaitDelay = 5 * time.Second // a child left holding the output does not hang the test
	out, err := cmd.CombinedOutput()
	t.Logf("admin-day.sh (%v):\n%s", time.Since(began).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("admin-day.sh: %v (ctx: %v)", err, ctx.Err())
	}
	for _, secret := range []string{"http://", "https://"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("the script's output shows a link (%q)", secret)
		}
	}

	// The script's last line names the computer and the image.
	m := regexp.MustCompile(`admin-day: done \(computer (\d+), image (\d+)\)`).FindSubmatch(out)
	if m == nil {
		t.Fatal("no \"admin-day: done (computer N, image M)\" line in the output")
	}
	machineID, _ := strconv.ParseInt(string(m[1]), 10, 64)
	imageID, _ := strconv.ParseInt(string(m[2]), 10, 64)

	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	im, err := client.GetImage(ctx, imageID)
	if err != nil {
		t.Fatalf("GET /images/%d: %v", imageID, err)
	}
	if im.Status != api.ImageAvailable || !strings.HasPrefix(im.Name, "admin-day ") {
		t.Errorf("image %d is %q named %q, want available, named admin-day ...", imageID, im.Status, im.Name)
	}
	var seat *api.Seat
	for s, err := range client.Seats(ctx, "") {
		if err != nil {
			t.Fatalf("GET /seats: %v", err)
		}
		if s.ID == machineID {
			seat = &s
		}
	}
	switch {
	case seat == nil:
		t.Errorf("computer %d is not in the organization", machineID)
	case seat.AssignedImageID == nil || *seat.AssignedImageID != imageID:
		t.Errorf("computer %d has image %v assigned, want %d", machineID, seat.AssignedImageID, imageID)
	}
	logs, err := client.UserActionLogs(ctx, api.LogsRequest{
		Start: began.Add(-time.Second), End: time.Now(), ActionType: "machine_started", MachineID: machineID,
	})
	if err != nil {
		t.Fatalf("GET /user-action-logs: %v", err)
	}
	if len(logs.Logs) == 0 {
		t.Errorf("no machine_started record for computer %d since the test began", machineID)
	}

	// A clean end: the daemon unmounts and exits 0.
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("the daemon exited %d", code)
	}
	if mounted(dir) {
		t.Fatalf("%s is still mounted", dir)
	}
}
