package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// A mount started while the service refuses connections starts offline
// from the listings a mount of the same service and credentials kept in
// the cache dir: folders listed before list at once, cached files read,
// new files and folders are taken, orgfs status says offline; at the
// service's return they go up. Without such listings the start fails in
// one line; listings unreadable are set aside, never used.
func TestStartOffline(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	dir, cacheDir := t.TempDir(), t.TempDir()
	args := []string{"--credentials", creds, "--cache-dir", cacheDir, "--write-back", "10ms"}
	d := startDaemon(t, dir, args...)
	report := []byte("read before the restart\n")
	if err := os.MkdirAll(filepath.Join(dir, "shared", "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shared", "docs", "report.txt"), report, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := orgfsCmd(t, "sync", dir); code != 0 {
		t.Fatalf("sync: %d %s", code, out)
	}
	before := listNames(t, filepath.Join(dir, "shared", "docs"))
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	kept, _ := filepath.Glob(filepath.Join(cacheDir, "*", cache.ListingsFile)) // one cache dir per service and credentials
	if len(kept) != 1 {
		t.Fatalf("listings kept at the unmount: %v", kept)
	}
	listings := kept[0]

	srv.Emulator.SetOutage(emulator.OutageRefuse)
	t.Cleanup(func() { srv.Emulator.SetOutage(emulator.OutageNone) })
	code, _, errOut := runCmd("mount", "--credentials", creds, "--cache-dir", t.TempDir(), t.TempDir())
	if code == 0 || !strings.Contains(errOut, "cannot reach the service") || !strings.Contains(errOut, "holds no listings") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("a start offline with an empty cache dir: exit %d, %q; want a failure in one line", code, errOut)
	}

	start := time.Now()
	d = startDaemon(t, dir, args...)
	t.Logf("mounted offline in %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if got := listNames(t, filepath.Join(dir, "shared", "docs")); !slices.Equal(got, before) {
		t.Errorf("ls of a folder listed before the restart, offline: %v, want %v", got, before)
	}
	b, err := os.ReadFile(filepath.Join(dir, "shared", "docs", "report.txt"))
	if took := time.Since(start); err != nil || !bytes.Equal(b, report) || took > time.Second {
		t.Errorf("ls and cat offline after a restart: %q, %v, after %v", b, err, took)
	}
	if err := os.MkdirAll(filepath.Join(dir, "shared", "docs", "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	written := []byte("written offline after a restart\n")
	if err := os.WriteFile(filepath.Join(dir, "shared", "docs", "new", "later.txt"), written, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out := orgfsCmd(t, "status", dir); !strings.Contains(out, "offline since") {
		t.Errorf("orgfs status offline:\n%s", out)
	}
	start = time.Now()
	if code, out := orgfsCmd(t, "sync", dir); code == 0 || !strings.Contains(out, "later.txt") || time.Since(start) > 2*time.Second {
		t.Errorf("orgfs sync offline: exit %d after %v, want a failure at once naming what waits:\n%s", code, time.Since(start), out)
	}
	if out := d.out.String(); !strings.Contains(out, "starting offline") {
		t.Errorf("the log does not say the mount starts offline:\n%s", out)
	}

	srv.Emulator.SetOutage(emulator.OutageNone)
	testkit.WaitFor(t, 30*time.Second, "the file written offline on the service", func() bool {
		return bytes.Equal(serviceBytesOK(client, "docs/new/later.txt"), written)
	})
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d after the return:\n%s", code, d.out)
	}

	// Listings unreadable are set aside, never used: the start online goes
	// on, listing anew.
	if err := os.WriteFile(listings, []byte("not a listing"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, dir, args...)
	if got := listNames(t, filepath.Join(dir, "shared", "docs")); !slices.Contains(got, "report.txt") {
		t.Errorf("ls after unreadable listings were set aside: %v", got)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait()
	if _, err := os.Stat(listings + ".bad"); err != nil || !strings.Contains(d.out.String(), "set aside") {
		t.Errorf("unreadable listings are not set aside: %v\n%s", err, d.out)
	}
}

// listNames lists a folder's names, sorted.
func listNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// serviceBytesOK is shared/PATH's content on the service; nil when it is
// not there (yet).
func serviceBytesOK(client *api.Client, path string) []byte {
	parent := int64(0)
	var cur api.File
	for _, name := range strings.Split(path, "/") {
		files, err := client.SharedFiles(context.Background(), api.ListFilesRequest{ParentID: parent}).Collect()
		if err != nil {
			return nil
		}
		i := slices.IndexFunc(files, func(f api.File) bool { return f.Name == name })
		if i < 0 {
			return nil
		}
		cur, parent = files[i], files[i].ID
	}
	b, err := fileBytes(context.Background(), client, cur)
	if err != nil {
		return nil
	}
	return b
}

// orgfs pin keeps a folder on this desk: what it covers is downloaded in
// the background and not evicted by reads of three times the cache's
// budget, reads offline, follows another desk's new file and new version,
// lasts across a restart, lists and reads identical after a start offline
// (where a file never read answers EIO at once); a pin that cannot fit is
// refused with the figures; orgfs unpin ends it.
func TestPinKeepsAFolderOnThisDesk(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{})
	dir := t.TempDir()
	// Written through a first mount, read back through another cache dir:
	// nothing is cached there.
	d := startDaemon(t, dir, "--credentials", creds, "--cache-dir", t.TempDir(), "--write-back", "10ms")
	sh := func(p ...string) string { return filepath.Join(append([]string{dir, "shared"}, p...)...) }
	kept := map[string][]byte{}
	for i, name := range []string{"a.bin", "sub/b.bin", "sub/deeper/c.bin"} {
		kept[name] = testkit.RandBytes(512<<10+i, int64(i))
	}
	for name, b := range kept {
		if err := os.MkdirAll(filepath.Dir(sh("keep", name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sh("keep", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"other1.bin", "other2.bin", "other3.bin", "never-read.bin"} {
		if err := os.WriteFile(sh(name), testkit.RandBytes(3<<20, 9), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(sh("huge.bin"), testkit.RandBytes(4<<20, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := orgfsCmd(t, "sync", dir); code != 0 {
		t.Fatalf("sync: %s", out)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait()

	cacheDir := t.TempDir()
	args := []string{"--credentials", creds, "--cache-dir", cacheDir, "--cache-max-size", "3M", "--dir-cache-time", "1s"}
	d = startDaemon(t, dir, args...)
	if code, out := orgfsCmd(t, "pin", sh("keep")); code != 0 || !strings.Contains(out, "pinned shared/keep") {
		t.Fatalf("orgfs pin: %d %s", code, out)
	}
	waitPin := func(what string, ok func(p cache.PinState) bool) {
		t.Helper()
		testkit.WaitFor(t, 20*time.Second, what, func() bool {
			var pins []cache.PinState
			b, err := os.ReadFile(filepath.Join(dir, ".ctl", "pins.json"))
			return err == nil && json.Unmarshal(b, &pins) == nil && len(pins) == 1 && ok(pins[0])
		})
	}
	waitPin("the pin complete", func(p cache.PinState) bool { return p.Files == 3 && p.FilesDone == 3 })
	if code, out := orgfsCmd(t, "pin", "--list", dir); code != 0 || !strings.Contains(out, "complete") {
		t.Errorf("orgfs pin --list: %d %s", code, out)
	}
	// Reads of three times the 3 MiB budget: the LRU evicts, but not what
	// is pinned.
	for _, name := range []string{"other1.bin", "other2.bin", "other3.bin"} {
		if _, err := os.ReadFile(sh(name)); err != nil {
			t.Fatal(err)
		}
	}
	code, out := orgfsCmd(t, "pin", sh("huge.bin"))
	if code == 0 || !strings.Contains(out, "needs 4.0 MiB") || !strings.Contains(out, "--cache-max-size 3.0 MiB") {
		t.Errorf("a pin that cannot fit: exit %d, %s", code, out)
	}

	srv.Emulator.SetOutage(emulator.OutageRefuse)
	for name, want := range kept {
		start := time.Now()
		b, err := os.ReadFile(sh("keep", name))
		if err != nil || !bytes.Equal(b, want) || time.Since(start) > time.Second {
			t.Errorf("keep/%s offline: %d bytes, %v, after %v", name, len(b), err, time.Since(start))
		}
	}
	srv.Emulator.SetOutage(emulator.OutageNone)

	// Another desk's new file in the pinned folder, and its new version of
	// a pinned file, are fetched at the next pass (--dir-cache-time); the
	// pin lasts across a restart.
	theirs := testkit.RandBytes(100<<10, 11)
	keepDir, ok := serviceFolder(client, "keep")
	if !ok {
		t.Fatal("shared/keep not on the service")
	}
	if _, err := client.Upload(context.Background(), api.UploadRequest{ParentID: keepDir, Name: "theirs.bin", Size: int64(len(theirs)), Body: bytes.NewReader(theirs)}); err != nil {
		t.Fatal(err)
	}
	kept["theirs.bin"] = theirs
	changed := testkit.RandBytes(600<<10, 12)
	if _, err := client.Upload(context.Background(), api.UploadRequest{ParentID: keepDir, Name: "a.bin", Size: int64(len(changed)), Body: bytes.NewReader(changed), Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	kept["a.bin"] = changed
	waitPin("another desk's changes fetched", func(p cache.PinState) bool {
		return p.Files == 4 && p.FilesDone == 4 && p.Bytes == int64(len(changed)+len(theirs)+len(kept["sub/b.bin"])+len(kept["sub/deeper/c.bin"])) && !p.Checked.IsZero()
	})
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait()
	d = startDaemon(t, dir, args...)
	waitPin("the pin after a restart", func(p cache.PinState) bool { return p.Path == "shared/keep" && p.FilesDone == 4 })
	// A start offline: the pinned tree lists and reads, down to its last
	// folder, though other folders were listed since.
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait()
	srv.Emulator.SetOutage(emulator.OutageRefuse)
	d = startDaemon(t, dir, args...)
	if got := listNames(t, sh("keep")); !slices.Equal(got, []string{"a.bin", "sub", "theirs.bin"}) {
		t.Errorf("ls keep after a start offline: %v", got)
	}
	for name, want := range kept {
		if b, err := os.ReadFile(sh("keep", name)); err != nil || !bytes.Equal(b, want) {
			t.Errorf("keep/%s after a start offline: %d bytes, %v", name, len(b), err)
		}
	}
	start := time.Now()
	if _, err := os.ReadFile(sh("never-read.bin")); !errors.Is(err, syscall.EIO) || time.Since(start) > time.Second {
		t.Errorf("a file never read, after a start offline: %v after %v, want EIO at once", err, time.Since(start))
	}
	srv.Emulator.SetOutage(emulator.OutageNone)
	if code, out := orgfsCmd(t, "unpin", sh("keep")); code != 0 {
		t.Fatalf("orgfs unpin: %d %s", code, out)
	}
	if code, out := orgfsCmd(t, "pin", "--list", dir); code != 0 || !strings.Contains(out, "no pins") {
		t.Errorf("orgfs pin --list after unpin: %d %s", code, out)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait()
}

// serviceFolder is the id of folder shared/NAME on the service.
func serviceFolder(client *api.Client, name string) (int64, bool) {
	files, err := client.SharedFiles(context.Background(), api.ListFilesRequest{}).Collect()
	if err != nil {
		return 0, false
	}
	for _, f := range files {
		if f.Name == name && f.IsDir() {
			return f.ID, true
		}
	}
	return 0, false
}
