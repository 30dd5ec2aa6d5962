package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// The end-to-end core under the emulator's dialects (docs/DIALECTS.md): the
// readings of the contract the real service may have chosen the other way.

// inDialects runs piece under the default dialect and under the dialect
// other (every switch flipped), as subtests named by the dialect. When other
// fails, piece runs again under each of its switches alone (subtests
// other-alone/<switch>), and the failure names the switches that break it
// alone, or says that none does (a combination does).
func inDialects(t *testing.T, piece func(t *testing.T, d emulator.Dialect)) {
	t.Run(emulator.DialectDefault, func(t *testing.T) { piece(t, emulator.Dialect{}) })
	other := emulator.OtherDialect()
	if t.Run(emulator.DialectOther, func(t *testing.T) {
		t.Logf("dialect other: %s", strings.Join(other.Switches(), ","))
		piece(t, other)
	}) {
		return
	}
	var broke []string
	for _, sw := range other.Switches() {
		d, err := emulator.DialectOf(sw)
		if err != nil {
			t.Fatal(err)
		}
		if !t.Run("other-alone/"+sw, func(t *testing.T) { piece(t, d) }) {
			broke = append(broke, sw)
		}
	}
	if len(broke) == 0 {
		t.Errorf("fails under the dialect other, under none of its switches alone: a combination of %s", strings.Join(other.Switches(), ","))
		return
	}
	t.Errorf("fails under the dialect other; the switches that break it alone: %s (orgfs emulator --dialect %s shows it)", strings.Join(broke, ", "), strings.Join(broke, ","))
}

// TestCoreInDialects: a mount reads, writes, renames in the shared storage
// and a computer's, sends a file of several parts, all through faults (10%
// of the API requests and object transfers fail: 500 or 503 answers, resets
// mid-body, answers lost), and unmounts with everything on the service,
// which a new mount with an empty cache reads back.
func TestCoreInDialects(t *testing.T) {
	inDialects(t, func(t *testing.T, d emulator.Dialect) {
		srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedDemo, Dialect: d})
		creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
		dir := t.TempDir()
		dm := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "20ms")
		if b, err := os.ReadFile(filepath.Join(dir, "shared", "Welcome.txt")); err != nil || len(b) == 0 {
			t.Fatalf("reading shared/Welcome.txt: %d bytes, %v", len(b), err)
		}
		computers, err := os.ReadDir(filepath.Join(dir, "computers"))
		if err != nil || len(computers) == 0 {
			t.Fatalf("computers/: %v, %v", computers, err)
		}
		comp := filepath.Join("computers", computers[0].Name())
		if _, err := os.ReadDir(filepath.Join(dir, comp)); err != nil {
			t.Fatalf("listing %s: %v", comp, err)
		}

		srv.Emulator.SetFaultRate(0.1)
		// And for certain, each way an upload can fail and be retried.
		srv.Emulator.InjectError("POST /files", 503, 1)
		srv.Emulator.InjectError("POST /files/{id}/complete", 500, 1)
		srv.Emulator.InjectDrop("POST /files/{id}/complete", 1)
		// 16.5 MB: two parts of 8 MiB, or three of 8 MB (chunk-mb).
		want := map[string][]byte{
			"shared/dialect/big.bin":         testkit.RandBytes(16_500_000, 1),
			"shared/dialect/renamed.txt":     []byte("renamed\n"),
			filepath.Join(comp, "notes.txt"): []byte("a computer's storage\n"),
		}
		if err := os.Mkdir(filepath.Join(dir, "shared", "dialect"), 0o755); err != nil {
			t.Fatal(err)
		}
		for p, b := range want {
			src := p
			if strings.HasSuffix(p, "renamed.txt") {
				src = "shared/dialect/first.txt"
			}
			if err := os.WriteFile(filepath.Join(dir, src), b, 0o644); err != nil {
				t.Fatalf("writing %s: %v", src, err)
			}
		}
		testkit.WaitFor(t, 60*time.Second, "the three files on the service", func() bool {
			return srv.Emulator.Stats().Requests["POST /files/{id}/complete"] >= 3
		})
		if err := os.Rename(filepath.Join(dir, "shared/dialect/first.txt"), filepath.Join(dir, "shared/dialect/renamed.txt")); err != nil {
			t.Fatal(err)
		}
		for p, b := range want {
			if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || !bytes.Equal(got, b) {
				t.Fatalf("reading back %s through the mount: %d bytes, %v", p, len(got), err)
			}
		}
		dm.cmd.Process.Signal(os.Interrupt)
		if code := dm.wait(); code != 0 {
			t.Fatalf("unmount: exit status %d", code)
		}
		srv.Emulator.SetFaultRate(0)
		st := srv.Emulator.Stats()
		t.Logf("faults: %v at random, %d injected; object store: %+v", st.Faults, st.Injected, st.Objects)
		if st.Injected < 3 {
			t.Errorf("%d of the 3 upload faults injected", st.Injected)
		}

		// What the service holds, through a new mount with an empty cache.
		dm = startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--read-only")
		for p, b := range want {
			if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || !bytes.Equal(got, b) {
				t.Errorf("%s on the service: %d bytes, %v; want the %d written", p, len(got), err, len(b))
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "shared/dialect/first.txt")); !os.IsNotExist(err) {
			t.Errorf("the old name of a renamed file: %v, want it gone", err)
		}
		dm.cmd.Process.Signal(os.Interrupt)
		if code := dm.wait(); code != 0 {
			t.Fatalf("unmount of the read-only mount: exit status %d", code)
		}
	})
}
