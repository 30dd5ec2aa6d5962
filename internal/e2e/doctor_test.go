package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// doctorChecks are the lines of a read-only run of orgfs doctor, in order;
// doctorWriteChecks follow them with --write.
var (
	doctorChecks      = []string{"signing", "clock", "usage", "software", "computers", "images", "files", "recordings", "logs", "range", "bundles"}
	doctorWriteChecks = []string{"scratch", "small file", "multi-part", "attributes", "cleanup"}
)

// doctorCase is one emulator configuration orgfs doctor runs against, and
// what it must say there. A dialect of the service is one more row.
type doctorCase struct {
	name  string
	opts  emulator.Options                                     // the emulator's configuration (the seed defaults to demo)
	org   string                                               // whose credentials (default org-a)
	setup func(t *testing.T, srv *emulator.Server)             // before the run: refusals to inject
	creds func(c *api.Credentials)                             // what is wrong with the credentials
	args  []string                                             // more arguments
	code  int                                                  // the exit status
	lines map[string]string                                    // check → verdict; the checks not named say ok
	text  []string                                             // what the output must also say
	after func(t *testing.T, srv *emulator.Server, out string) // checks on the service after the run
}

// TestDoctor runs the built binary's doctor against the emulator in each
// configuration: every check prints one line with its verdict, a failure
// exits 1 and names the fix, no secret is printed.
func TestDoctor(t *testing.T) {
	for _, tt := range []doctorCase{
		{name: "clean", code: 0},
		{name: "without multiple_file_download", org: emulator.OrgB,
			lines: map[string]string{"bundles": "degraded"}, text: []string{"4710", "one file (one URL) at a time", "fix: ask the service to enable multiple_file_download"}},
		{name: "logs refused", setup: func(t *testing.T, srv *emulator.Server) {
			srv.Emulator.InjectError("GET /user-action-logs", api.CodePermissionRequired, 1)
		}, lines: map[string]string{"logs": "degraded"}, text: []string{"4710", ".ctl/logs/ answers EACCES", "fix: ask an administrator of the organization for the log permission"}},
		{name: "bad secret", creds: func(c *api.Credentials) { c.Secret = "not-the-secret-0123456789abcdef" },
			code: 1, lines: map[string]string{"signing": "failed"}, text: []string{"401 invalid signature", "fix: the key or the secret is refused: check both in", "1 check failed"}},
		{name: "unreachable endpoint", creds: func(c *api.Credentials) { c.Endpoint = "http://127.0.0.1:1" },
			code: 1, lines: map[string]string{"signing": "failed"}, text: []string{"connection refused", "fix: no answer from http://127.0.0.1:1: check the endpoint in"}},
		{name: "clock 10 minutes off", opts: emulator.Options{ClockOffset: 10 * time.Minute},
			lines: map[string]string{"clock": "degraded"}, text: []string{"this desk's clock is 10m0s behind the service's", "orgfs signs with the service's time instead", "fix: set the clock right"}},
		{name: "write", args: []string{"--write", "shared/Projects"}, text: []string{"12,200,000 bytes sent in 2 parts of 6,291,456 bytes, read back identical", "chunk_size in MiB", "x-orgfs-mode, x-orgfs-mtime) come back from the listing"},
			after: checkScratchRemoved},
		// The other reading of every ambiguity of the contract (docs/DIALECTS.md):
		// every check still passes, the write finds the other chunk unit,
		// and a content type's parameters dropped (type-no-params).
		{name: "other dialect", opts: emulator.Options{Dialect: emulator.OtherDialect()}},
		{name: "other dialect, write", opts: emulator.Options{Dialect: emulator.OtherDialect()}, args: []string{"--write", "shared/Projects"},
			lines: map[string]string{"attributes": "degraded"},
			text:  []string{"12,200,000 bytes sent in 3 parts", "read back identical", "decimal MB", `lists with content_type "application/octet-stream", without the mode and time`}, after: checkScratchRemoved},
	} {
		t.Run(tt.name, func(t *testing.T) { runDoctorCase(t, tt) })
	}
}

// runDoctorCase starts the row's emulator, runs orgfs doctor against it
// and checks its lines, exit status and output.
func runDoctorCase(t *testing.T, tt doctorCase) {
	if tt.opts.Seed == "" {
		tt.opts.Seed = emulator.SeedDemo
	}
	tt.opts.Log = testkit.Quiet()
	if tt.org == "" {
		tt.org = emulator.OrgA
	}
	srv := emutest.Start(t, tt.opts)
	creds := testkit.Creds(t, srv, tt.org)
	secrets := []string{creds.Secret, creds.Key}
	if tt.creds != nil {
		tt.creds(&creds)
		secrets = append(secrets, creds.Secret)
	}
	if tt.setup != nil {
		tt.setup(t, srv)
	}
	code, out := orgfsCmd(t, append([]string{"doctor", "--credentials", writeCreds(t, creds)}, tt.args...)...)
	if code != tt.code {
		t.Errorf("exit status %d, want %d", code, tt.code)
	}
	want := doctorChecks
	if tt.code != 0 && tt.lines["signing"] == "failed" {
		want = []string{"signing"} // the other checks need an accepted request
	} else if len(tt.args) > 0 {
		want = append(slices.Clone(doctorChecks), doctorWriteChecks...)
	}
	got := doctorVerdicts(out)
	for _, check := range want {
		v := tt.lines[check]
		if v == "" {
			v = "ok"
		}
		if got[check] != v {
			t.Errorf("%s: %q, want %q", check, got[check], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d check lines, want %d", len(got), len(want))
	}
	for _, s := range tt.text {
		if !strings.Contains(out, s) {
			t.Errorf("the output does not say %q", s)
		}
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the output shows a key or a secret")
		}
	}
	if tt.after != nil {
		tt.after(t, srv, out)
	}
	if t.Failed() {
		t.Logf("orgfs doctor:\n%s", out)
	}
}

// doctorVerdicts reads the check lines of doctor's output: check → verdict.
func doctorVerdicts(out string) map[string]string {
	got := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		verdict, rest, ok := strings.Cut(l, " ")
		if !ok || !slices.Contains([]string{"ok", "degraded", "skipped", "failed"}, verdict) {
			continue
		}
		rest = strings.TrimLeft(rest, " ")
		for _, c := range append(slices.Clone(doctorChecks), doctorWriteChecks...) {
			if strings.HasPrefix(rest, c+" ") {
				got[c] = verdict
			}
		}
	}
	return got
}

// checkScratchRemoved: the files went up and were deleted, and the scratch
// folder is gone from the service (through the API, not doctor's word).
func checkScratchRemoved(t *testing.T, srv *emulator.Server, out string) {
	st := srv.Emulator.Stats()
	if n := st.Requests["POST /files/{id}/complete"]; n != 2 {
		t.Errorf("%d uploads completed, want 2", n)
	}
	if n := st.Requests["DELETE /files/{id}"]; n < 3 {
		t.Errorf("%d deletes, want 3 (two files and the folder)", n)
	}
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	var projects int64
	root, err := client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	for _, f := range root {
		if f.Name == "Projects" {
			projects = f.ID
		}
	}
	if err != nil || projects == 0 {
		t.Fatalf("no shared/Projects: %v", err)
	}
	list, err := client.SharedFiles(t.Context(), api.ListFilesRequest{ParentID: projects}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range list {
		if strings.HasPrefix(f.Name, "orgfs-doctor-") {
			t.Errorf("shared/Projects/%s is left on the service", f.Name)
		}
	}
	if !strings.Contains(out, "made shared/Projects/orgfs-doctor-") {
		t.Errorf("no word of the scratch folder")
	}
}

// TestMountWithTheClockOff: with the service's clock 10 minutes off the
// desk's, a mount comes up, reads, and uploads what is written; the log
// warns once of the skew, with its size.
func TestMountWithTheClockOff(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedDemo, ClockOffset: 10 * time.Minute, Log: testkit.Quiet()})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir := t.TempDir()
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "10ms")
	if b, err := os.ReadFile(filepath.Join(dir, "shared", "Welcome.txt")); err != nil || len(b) == 0 {
		t.Fatalf("reading through the mount: %v", err)
	}
	data := testkit.RandBytes(7<<20+123, 7) // two parts
	if err := os.WriteFile(filepath.Join(dir, "shared", "skewed.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{Logger: testkit.Quiet()})
	testkit.WaitFor(t, 30*time.Second, "skewed.bin on the service", func() bool { return uploaded(client, "skewed.bin", len(data)) })
	if got := serviceBytes(t, client, "skewed.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the service holds %d bytes that differ from the %d written", len(got), len(data))
	}
	d.cmd.Process.Signal(os.Interrupt)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	if n := strings.Count(d.out.String(), "clock is off"); n != 1 || !strings.Contains(d.out.String(), "10m0s behind the service's") {
		t.Errorf("%d warnings of the skew, want one saying \"10m0s behind the service's\":\n%s", n, d.out)
	}
}

// TestDoctorHelpAndUsage: orgfs doctor --help documents the checks, the
// verdicts and the exit statuses; a --write PATH outside the mount's areas
// is a usage error (2) before any request.
func TestDoctorHelpAndUsage(t *testing.T) {
	code, out := orgfsCmd(t, "doctor", "--help")
	for _, s := range []string{"--credentials FILE", "--write PATH", "degraded", "Exit status: 0 when no check failed, 1 when one did"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("doctor --help: %d, no %q:\n%s", code, s, out)
		}
	}
	if code, out := orgfsCmd(t, "--help"); code != 0 || !strings.Contains(out, "doctor") || !strings.Contains(out, "start with 'orgfs doctor --credentials FILE'") {
		t.Errorf("orgfs --help: %d %s", code, out)
	}
	if code, out := orgfsCmd(t, "doctor", "--write", "elsewhere/x"); code != 2 || !strings.Contains(out, "shared[/FOLDER...]") {
		t.Errorf("doctor --write elsewhere/x: %d %s", code, out)
	}
}
