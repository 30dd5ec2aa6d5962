package writeback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// These tests run the staging and its upload queue against a service, and
// check what it holds, byte for byte: the in-process emulator where the HTTP
// answers matter (errors, overwrites, faults, content types), the in-memory
// fake client where only the queue's states and files do.

// stagingEnv is a service (the emulator or the fake), a client of it and a
// staging directory.
type stagingEnv struct {
	t      *testing.T
	emu    *emulator.Emulator // the emulator's org-a; nil with the fake
	fake   *fakeclient.Client // nil with the emulator
	client Client
	dir    string

	mu       sync.Mutex
	uploaded []api.File     // OnUploaded calls
	failed   []error        // OnFailed calls
	targets  []place.Target // targets of the OnFailed calls
}

// newStagingEnv starts an emulator (empty) for the test.
func newStagingEnv(t *testing.T, opts emulator.Options) *stagingEnv {
	t.Helper()
	opts.Seed = emulator.SeedEmpty
	if opts.Log == nil {
		opts.Log = testkit.Log(t)
	}
	srv := emutest.Start(t, opts)
	client := testkit.Client(t, srv, emulator.OrgA, api.Options{BaseBackoff: 2 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxAttempts: 10})
	return &stagingEnv{t: t, emu: srv.Emulator, client: client, dir: filepath.Join(t.TempDir(), "staging")}
}

// newFakeStagingEnv makes an empty fake service for the test.
func newFakeStagingEnv(t *testing.T) *stagingEnv {
	t.Helper()
	fake := fakeclient.New(t)
	return &stagingEnv{t: t, fake: fake, client: fake, dir: filepath.Join(t.TempDir(), "staging")}
}

// serviceFile puts a file with data at t on the service, as another client
// would, and returns its id.
func (e *stagingEnv) serviceFile(t place.Target, data []byte) int64 {
	e.t.Helper()
	if e.fake != nil {
		return e.fake.Put(t.Area, t.ParentID, t.Name, data).ID
	}
	id, err := e.emu.CreateFile(emulator.OrgA, t.Area.MachineID, t.ParentID, t.Name, bytes.NewReader(data))
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// open opens a Staging on the env's directory, closed when the test ends.
// Zero fields of opts get test values (write-back 50ms, short backoff).
func (e *stagingEnv) open(opts StagingOptions) *Staging {
	e.t.Helper()
	opts.Dir, opts.Client = e.dir, e.client
	if opts.WriteBack == 0 {
		opts.WriteBack = 50 * time.Millisecond
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = testkit.Log(e.t)
	}
	opts.OnUploaded = func(t place.Target, f api.File, _ time.Time) {
		e.mu.Lock()
		e.uploaded = append(e.uploaded, f)
		e.mu.Unlock()
	}
	opts.OnFailed = func(t place.Target, err error) {
		e.mu.Lock()
		e.failed = append(e.failed, err)
		e.targets = append(e.targets, t)
		e.mu.Unlock()
	}
	s, err := OpenStaging(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}

func (e *stagingEnv) onUploaded() []api.File {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.uploaded)
}

func (e *stagingEnv) onFailed() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.failed)
}

// create stages a new file at t with data, as the mount does for
// open(O_CREAT)+write+close.
func (e *stagingEnv) create(s *Staging, t place.Target, replaces int64, data []byte) *Staged {
	e.t.Helper()
	st, err := s.Create(t, replaces)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.CloseWriter()
	e.writeOpen(st, data)
	return st
}

// write replaces st's content with data, between OpenWriter and CloseWriter.
func (e *stagingEnv) write(st *Staged, data []byte) {
	e.t.Helper()
	st.OpenWriter()
	defer st.CloseWriter()
	e.writeOpen(st, data)
}

// writeOpen replaces st's content with data, the file being open.
func (e *stagingEnv) writeOpen(st *Staged, data []byte) {
	e.t.Helper()
	if err := st.File().Truncate(0); err != nil {
		e.t.Fatal(err)
	}
	if _, err := st.File().WriteAt(data, 0); err != nil {
		e.t.Fatal(err)
	}
	st.Touch()
}

func stagingShared(name string) place.Target {
	return place.Target{Area: place.Area{Kind: place.Shared}, Name: name}
}

// list returns the files of a folder of the service, by name.
func (e *stagingEnv) list(area place.Area, parentID int64) map[string]api.File {
	e.t.Helper()
	req := api.ListFilesRequest{ParentID: parentID}
	var l *api.FileList
	if area.Kind == place.Machine {
		l = e.client.MachineFiles(context.Background(), area.MachineID, req)
	} else {
		l = e.client.SharedFiles(context.Background(), req)
	}
	files, err := l.Collect()
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]api.File{}
	for _, f := range files {
		if _, dup := out[f.Name]; dup {
			e.t.Fatalf("two files named %q", f.Name)
		}
		out[f.Name] = f
	}
	return out
}

// content reads a service file's bytes back through a presigned URL.
func (e *stagingEnv) content(f api.File) []byte {
	e.t.Helper()
	if f.Size == 0 {
		return []byte{}
	}
	link, err := e.client.FileURL(context.Background(), f.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	rc, err := e.client.ReadRange(context.Background(), link.URL, 0, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// want checks that the service holds exactly data at t, and returns the file.
func (e *stagingEnv) want(t place.Target, data []byte) api.File {
	e.t.Helper()
	f, ok := e.list(t.Area, t.ParentID)[t.Name]
	if !ok {
		e.t.Fatalf("%s is not on the service", t)
	}
	if f.Size != int64(len(data)) {
		e.t.Fatalf("%s: size %d on the service, want %d", t, f.Size, len(data))
	}
	if got := e.content(f); !bytes.Equal(got, data) {
		e.t.Fatalf("%s: the service's %d bytes differ from the %d written", t, len(got), len(data))
	}
	return f
}

// absent checks that the service has nothing at t.
func (e *stagingEnv) absent(t place.Target) {
	e.t.Helper()
	if f, ok := e.list(t.Area, t.ParentID)[t.Name]; ok {
		e.t.Fatalf("%s is on the service (id %d, %d bytes)", t, f.ID, f.Size)
	}
}

// stagedNames lists the staging directory.
func (e *stagingEnv) stagedNames() []string {
	e.t.Helper()
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range ents {
		out = append(out, d.Name())
	}
	return out
}

func (e *stagingEnv) wantNothingStaged(s *Staging) {
	e.t.Helper()
	if names := e.stagedNames(); len(names) != 0 {
		e.t.Fatalf("left in the staging dir: %v", names)
	}
	if st := s.Stats(); st.Pending+st.Uploading+st.Failed != 0 || st.StagedBytes != 0 {
		e.t.Fatalf("stats %+v after the queue drained", st)
	}
	if ents := s.Entries(); len(ents) != 0 {
		e.t.Fatalf("entries left: %v", ents)
	}
}

// retryAndWant calls Retry and checks that st's upload then succeeds (the
// uploads since the start reach uploaded): the service holds data at its
// target, st has no error left, and nothing is staged any more.
func (e *stagingEnv) retryAndWant(s *Staging, st *Staged, uploaded int64, data []byte) {
	e.t.Helper()
	s.Retry()
	testkit.WaitFor(e.t, 10*time.Second, "the retried upload", func() bool { return s.Stats().Uploaded == uploaded })
	e.want(st.Target(), data)
	if err := st.Err(); err != nil {
		e.t.Fatalf("Err() = %v after the upload", err)
	}
	e.wantNothingStaged(s)
}

func stagingDrain(t *testing.T, s *Staging, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStagingWriteBackUploadsExactBytes(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: 8 * time.Second})
	text := stagingShared("notes.txt")
	data := testkit.RandBytes(100_000, 1)
	st := e.create(s, text, 0, data)
	odd := stagingShared("blob.unknownext")
	e.create(s, odd, 0, testkit.RandBytes(10, 2))
	empty := stagingShared("empty")
	e.create(s, empty, 0, nil)
	var machine place.Target
	if m := e.emu.Fixtures(emulator.OrgA).StoppedMachine; m != 0 {
		machine = place.Target{Area: place.Area{Kind: place.Machine, MachineID: m}, Name: "report.pdf"}
		e.create(s, machine, 0, testkit.RandBytes(7000, 3))
	}

	// Closed, but within the write-back delay: staged, listed, not uploaded.
	if got := s.Lookup(text); got != st || got.Size() != int64(len(data)) {
		t.Fatalf("Lookup %v", got)
	}
	if p := s.Pending(place.Area{Kind: place.Shared}, 0); len(p) != 3 || p[0].Target().Name != "blob.unknownext" {
		t.Fatalf("pending %v", p)
	}
	if n := len(e.list(place.Area{Kind: place.Shared}, 0)); n != 0 {
		t.Fatalf("%d files uploaded before the write-back delay", n)
	}
	if ents := s.Entries(); len(ents) == 0 || ents[0].State != "waiting" || ents[0].Size != int64(len(data)) {
		t.Fatalf("entries %v", ents)
	}

	testkit.WaitFor(t, 10*time.Second, "the uploads", func() bool { return s.Stats().Uploaded == int64(3+min(1, len(machine.Name))) })
	f := e.want(text, data)
	if !strings.HasPrefix(f.Details.ContentType, "text/plain") {
		t.Errorf("content type %q", f.Details.ContentType)
	}
	// The MIME type, with the file's modification time (api.WithTypeAttrs).
	if g := e.want(odd, testkit.RandBytes(10, 2)); !strings.HasPrefix(g.Details.ContentType, "application/octet-stream; x-orgfs-mtime=") || g.Written.Attrs().MTime == nil {
		t.Errorf("content type %q", g.Details.ContentType)
	}
	e.want(empty, nil)
	if machine.Name != "" {
		e.want(machine, testkit.RandBytes(7000, 3))
	}
	var up *api.File
	for _, u := range e.onUploaded() {
		if u.Name == text.Name {
			up = &u
		}
	}
	if up == nil || up.ID != f.ID || up.Size != int64(len(data)) || up.LastModified.IsZero() {
		t.Fatalf("OnUploaded file %+v, listed %+v", up, f)
	}
	if s.Lookup(text) != nil || st.Err() != nil {
		t.Fatal("still staged after the upload")
	}
	if s.Stats().Bytes < int64(len(data)) {
		t.Fatalf("stats %+v", s.Stats())
	}
	e.wantNothingStaged(s)
}

func TestStagingOpenWriterCancelsTheWait(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: 6 * time.Second})
	tg := stagingShared("draft.bin")
	first := testkit.RandBytes(5000, 4)
	st := e.create(s, tg, 0, first)
	time.Sleep(100 * time.Millisecond)
	st.OpenWriter() // reopened within the delay: the wait is cancelled
	time.Sleep(900 * time.Millisecond)
	if st := s.Stats(); st.Uploaded != 0 || st.Uploading != 0 {
		t.Fatalf("uploaded while open: %+v", st)
	}
	e.absent(tg)
	if ents := s.Entries(); len(ents) != 1 || ents[0].State != "open" {
		t.Fatalf("entries %v", ents)
	}
	second := append(first, testkit.RandBytes(3000, 5)...)
	if _, err := st.File().WriteAt(second[len(first):], int64(len(first))); err != nil { // append
		t.Fatal(err)
	}
	st.Touch()
	st.CloseWriter()
	testkit.WaitFor(t, 10*time.Second, "the upload", func() bool { return s.Stats().Uploaded == 1 })
	e.want(tg, second)
	e.wantNothingStaged(s)
}

func TestStagingStorageFullKeepsTheStagedCopy(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	if err := e.emu.SetStorageQuota(emulator.OrgA, 0, 1000); err != nil {
		t.Fatal(err)
	}
	s := e.open(StagingOptions{WriteBack: 100 * time.Millisecond})
	tg := stagingShared("big.dat")
	data := testkit.RandBytes(5000, 6)
	st := e.create(s, tg, 0, data)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.Flush(ctx, st)
	if !api.IsStorageFull(err) {
		t.Fatalf("Flush: %v, want 450", err)
	}
	if !api.IsStorageFull(st.Err()) {
		t.Fatalf("Err() = %v", st.Err())
	}
	if f := e.onFailed(); len(f) != 1 || !api.IsStorageFull(f[0]) || e.failedTarget(0) != tg {
		t.Fatalf("OnFailed calls %v", f)
	}
	ents := s.Entries()
	if len(ents) != 1 || ents[0].State != "failed" || !strings.Contains(ents[0].Err, "450") || ents[0].Size != 5000 {
		t.Fatalf("entries %v", ents)
	}
	if !strings.HasPrefix(ents[0].String(), "failed shared/0/big.dat 5000 bytes") {
		t.Fatalf("line %q", ents[0].String())
	}
	if st := s.Stats(); st.Failed != 1 || st.Pending != 0 {
		t.Fatalf("stats %+v", st)
	}
	e.absent(tg)
	// The staged copy stays, and its record says failed.
	if got, err := os.ReadFile(filepath.Join(e.dir, "1.data")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("staged copy: %v", err)
	}
	var rec map[string]any
	if b, err := os.ReadFile(filepath.Join(e.dir, "1.json")); err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("record: %v", err)
	}
	if rec["state"] != "failed" || !strings.Contains(fmt.Sprint(rec["last_error"]), "450") || rec["name"] != "big.dat" {
		t.Fatalf("record %v", rec)
	}
	// Drain does not wait for it, and says it is left.
	if err := s.Drain(ctx); err == nil {
		t.Fatal("Drain reported nothing left")
	}
	time.Sleep(200 * time.Millisecond) // no retry on its own
	if st := s.Stats(); st.Failed != 1 || st.Uploaded != 0 {
		t.Fatalf("stats %+v", st)
	}

	// More room, Retry: uploaded.
	if err := e.emu.SetStorageQuota(emulator.OrgA, 0, 1<<30); err != nil {
		t.Fatal(err)
	}
	e.retryAndWant(s, st, 1, data)

	// A file changed after a failure is queued again without Retry.
	if err := e.emu.SetStorageQuota(emulator.OrgA, 0, 6000); err != nil {
		t.Fatal(err)
	}
	tg2 := stagingShared("second.dat")
	st2 := e.create(s, tg2, 0, testkit.RandBytes(3000, 7))
	if err := s.Flush(ctx, st2); !api.IsStorageFull(err) {
		t.Fatalf("Flush: %v, want 450", err)
	}
	small := testkit.RandBytes(500, 8)
	e.write(st2, small) // Touch + CloseWriter
	testkit.WaitFor(t, 10*time.Second, "the changed file's upload", func() bool { return s.Stats().Uploaded == 2 })
	e.want(tg2, small)
	e.wantNothingStaged(s)
}

func TestStagingRemovedParentFails(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: time.Hour})
	dir, err := e.emu.CreateDir(emulator.OrgA, 0, 0, "gone")
	if err != nil {
		t.Fatal(err)
	}
	tg := place.Target{Area: place.Area{Kind: place.Shared}, ParentID: dir, Name: "orphan.txt"}
	st := e.create(s, tg, 0, []byte("hello"))
	if err := e.emu.DeleteFile(emulator.OrgA, dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Flush(ctx, st); err == nil || api.Temporary(err) {
		t.Fatalf("Flush into a removed folder: %v", err)
	}
	if ents := s.Entries(); len(ents) != 1 || ents[0].State != "failed" {
		t.Fatalf("entries %v", ents)
	}
	if len(e.stagedNames()) != 2 {
		t.Fatalf("staged files %v", e.stagedNames())
	}
	// Renamed to an existing folder, it goes up.
	if err := s.Rename(st, stagingShared("orphan.txt")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx, st); err != nil {
		t.Fatal(err)
	}
	e.want(stagingShared("orphan.txt"), []byte("hello"))
	e.wantNothingStaged(s)
}

func TestStagingReplacesOverwrites(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: time.Hour})
	tg := stagingShared("doc.txt")
	old := e.serviceFile(tg, []byte("old content"))
	data := testkit.RandBytes(20_000, 9)
	st := e.create(s, tg, old, data)
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	f := e.want(tg, data)
	if f.ID == old {
		t.Fatal("the replaced file's id was kept")
	}
	if n := e.emu.Stats().Codes[451]; n != 0 {
		t.Fatalf("%d answers 451: the upload did not overwrite", n)
	}
	e.wantNothingStaged(s)
}

func TestStagingRenamePending(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: 200 * time.Millisecond})
	root := place.Area{Kind: place.Shared}

	// rsync: a temp file renamed into place before the write-back delay.
	tmp, final := stagingShared(".f.Xy12"), stagingShared("f")
	fData := testkit.RandBytes(4000, 11)
	st := e.create(s, tmp, 0, fData)
	if err := s.Rename(st, final); err != nil {
		t.Fatal(err)
	}
	if s.Lookup(tmp) != nil || s.Lookup(final) != st || st.Target() != final {
		t.Fatal("lookup after the rename")
	}

	// Renamed over another pending file: it replaces it.
	x, y := stagingShared("x"), stagingShared("y")
	e.create(s, x, 0, []byte("xxxx"))
	sty := e.create(s, y, 0, []byte("yyyyyy"))
	if err := s.Rename(sty, x); err != nil {
		t.Fatal(err)
	}
	if s.Lookup(x) != sty || s.Lookup(y) != nil || len(s.Pending(root, 0)) != 2 {
		t.Fatalf("pending after the rename over: %v", s.Pending(root, 0))
	}

	// A file overwriting a service file, renamed: the old name goes.
	oldT, newT := stagingShared("old.txt"), stagingShared("new.txt")
	oldID := e.serviceFile(oldT, []byte("before"))
	stOld := e.create(s, oldT, oldID, []byte("after"))
	if err := s.Rename(stOld, newT); err != nil {
		t.Fatal(err)
	}

	// Rename of an uploaded file: the content staged under the new name,
	// the old file deleted once it is up.
	p, q := stagingShared("p"), stagingShared("q")
	pID := e.serviceFile(p, []byte("pppp"))
	stq := e.create(s, q, 0, []byte("pppp"))
	stq.DeleteAfterUpload(pID)

	stagingDrain(t, s, 10*time.Second)
	e.want(final, fData)
	e.absent(tmp)
	e.want(x, []byte("yyyyyy"))
	e.absent(y)
	e.want(newT, []byte("after"))
	e.absent(oldT)
	e.want(q, []byte("pppp"))
	e.absent(p)
	if n := len(e.list(root, 0)); n != 4 {
		t.Fatalf("%d files on the service, want 4", n)
	}
	e.wantNothingStaged(s)
}

func TestStagingRemoveCancels(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{ObjectLatency: 500 * time.Millisecond})
	s := e.open(StagingOptions{WriteBack: 200 * time.Millisecond})
	tg := stagingShared("scratch")
	st := e.create(s, tg, 0, testkit.RandBytes(1000, 12))
	if err := s.Remove(st); err != nil {
		t.Fatal(err)
	}
	if s.Lookup(tg) != nil {
		t.Fatal("still staged")
	}
	time.Sleep(400 * time.Millisecond) // past the write-back delay
	e.absent(tg)
	e.wantNothingStaged(s)

	// Removed while its upload is in flight.
	tg2 := stagingShared("scratch2")
	st2 := e.create(s, tg2, 0, testkit.RandBytes(1000, 13))
	done := make(chan error, 1)
	go func() { done <- s.Flush(context.Background(), st2) }()
	testkit.WaitFor(t, 5*time.Second, "the upload to start", func() bool { return s.Stats().Uploading == 1 })
	if err := s.Remove(st2); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Flush of a removed file: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the removed file to be gone", func() bool {
		_, ok := e.list(place.Area{Kind: place.Shared}, 0)[tg2.Name]
		return !ok && s.Stats().Uploading == 0
	})
	time.Sleep(100 * time.Millisecond)
	e.absent(tg2)
	e.wantNothingStaged(s)
}

func TestStagingResumesAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close bool // Close, else abandon (SIGKILL: nothing runs at the end)
	}{{"close", true}, {"abandon", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFakeStagingEnv(t)
			s1 := e.open(StagingOptions{WriteBack: time.Hour})
			sizes := []int{0, 1, 4096, 300_000, 6 << 20}
			want := map[place.Target][]byte{}
			for i, n := range sizes {
				tg := stagingShared(fmt.Sprintf("file-%d", i))
				want[tg] = testkit.RandBytes(n, int64(100+i))
				e.create(s1, tg, 0, want[tg])
			}
			// One still open for writing at the crash: uploaded as it is.
			open := stagingShared("open-at-crash")
			want[open] = testkit.RandBytes(70_000, 200)
			st, err := s1.Create(open, 0)
			if err != nil {
				t.Fatal(err)
			}
			e.writeOpen(st, want[open])
			if len(e.stagedNames()) != 2*len(want) {
				t.Fatalf("staged files %v", e.stagedNames())
			}
			if tc.close {
				if err := s1.Close(); err != nil {
					t.Fatal(err)
				}
			}
			e.absent(open)

			// The restart itself queues every staged file, at once: the
			// uploads are waited for, not drained (a drain uploads whatever
			// is staged, queued or not), under a write-back delay that
			// would hold a file merely staged again for an hour.
			s2 := e.open(StagingOptions{WriteBack: time.Hour})
			testkit.WaitFor(t, 30*time.Second, "the uploads the restart resumes", func() bool {
				return len(e.onUploaded()) >= len(want)
			})
			if got := len(e.onUploaded()); got != len(want) {
				t.Fatalf("%d staged files uploaded after the restart, want %d", got, len(want))
			}
			for tg, data := range want {
				e.want(tg, data)
			}
			if n := len(e.list(place.Area{Kind: place.Shared}, 0)); n != len(want) {
				t.Fatalf("%d files on the service, want %d", n, len(want))
			}
			testkit.WaitFor(t, 10*time.Second, "the uploaded files to leave the staging", func() bool {
				st := s2.Stats()
				return st.Pending+st.Uploading == 0 && len(e.stagedNames()) == 0
			})
			e.wantNothingStaged(s2)
		})
	}
}

func TestStagingUnderFaults(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{FaultRate: 0.1, FaultSeed: 7})
	s := e.open(StagingOptions{Transfers: 4})
	want := map[place.Target][]byte{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range 32 {
		n := 1 + (i*7919)%20_000
		if i >= 30 {
			n = 12 << 20
		}
		tg := stagingShared(fmt.Sprintf("f%02d.bin", i))
		data := testkit.RandBytes(n, int64(300+i))
		mu.Lock()
		want[tg] = data
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.Create(tg, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer st.CloseWriter()
			if _, err := st.File().WriteAt(data, 0); err != nil {
				t.Error(err)
			}
			st.Touch()
		}()
	}
	wg.Wait()
	stagingDrain(t, s, 60*time.Second)
	e.emu.SetFaultRate(0)
	if faults := e.emu.Stats().Faults; len(faults) == 0 {
		t.Fatal("no fault was injected")
	}
	for tg, data := range want {
		e.want(tg, data)
	}
	if n := len(e.list(place.Area{Kind: place.Shared}, 0)); n != len(want) {
		t.Fatalf("%d files on the service, want %d", n, len(want))
	}
	if st := s.Stats(); st.Uploaded < int64(len(want)) {
		t.Fatalf("stats %+v", st)
	}
	e.wantNothingStaged(s)
}

func TestStagingDrainWaitsForTheQueue(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour, Transfers: 2})
	want := map[place.Target][]byte{}
	for i := range 5 {
		tg := stagingShared(fmt.Sprintf("d%d", i))
		want[tg] = testkit.RandBytes(50_000+i, int64(400+i))
		e.create(s, tg, 0, want[tg])
	}
	if st := s.Stats(); st.Pending != 5 {
		t.Fatalf("stats %+v", st)
	}
	stagingDrain(t, s, 20*time.Second)
	for tg, data := range want {
		e.want(tg, data)
	}
	e.wantNothingStaged(s)

	// A Drain cut short leaves the rest staged, for the next start.
	slow := newFakeStagingEnv(t)
	release := slow.fake.Hold("Upload")
	defer release()
	s2 := slow.open(StagingOptions{WriteBack: time.Hour})
	slow.create(s2, stagingShared("late"), 0, []byte("late"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s2.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain: %v", err)
	}
	s2.Close()
	if len(slow.stagedNames()) != 2 {
		t.Fatalf("staged files %v", slow.stagedNames())
	}
}

// TestStagingFlushWaitsAndUploadsAgain: a change made while an upload is in
// flight is uploaded after it (the first upload never marks it uploaded).
func TestStagingFlushWaitsAndUploadsAgain(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour})
	release := e.fake.Hold("Upload")
	defer release()
	tg := stagingShared("edited")
	v1 := testkit.RandBytes(1<<20, 14)
	st := e.create(s, tg, 0, v1)
	first := make(chan error, 1)
	go func() { first <- s.Flush(context.Background(), st) }()
	testkit.WaitFor(t, 5*time.Second, "the upload to start", func() bool { return s.Stats().Uploading == 1 })
	v2 := testkit.RandBytes(1<<20+10, 15)
	e.write(st, v2)
	release()
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	e.want(tg, v2)
	if n := s.Stats().Uploaded; n != 2 {
		t.Fatalf("%d uploads, want 2", n)
	}
	e.wantNothingStaged(s)
}

// A new file comes back from Create with its creator's writer open: with a
// write-back delay far shorter than the gap before the first write, nothing
// is uploaded until the close, and then the content, once. (Counted after
// Create, the writer raced the write-back timer: the empty file went up and
// its staging copy was closed under the write, "file already closed".)
func TestStagingCreateHoldsItsCreatorsWriter(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Microsecond})
	tg := stagingShared("new.txt")
	st, err := s.Create(tg, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // 500,000 write-back delays of a small file
	if got := e.onUploaded(); len(got) != 0 {
		t.Fatalf("uploaded before its creator closed it: %+v", got)
	}
	e.writeOpen(st, []byte("content"))
	st.CloseWriter()
	testkit.WaitFor(t, 5*time.Second, "the upload", func() bool { return len(e.onUploaded()) == 1 })
	e.want(tg, []byte("content"))
	time.Sleep(20 * time.Millisecond)
	if got := e.onUploaded(); len(got) != 1 {
		t.Fatalf("%d uploads, want 1", len(got))
	}
}

// TestStagingOpenFileOutlivesItsUpload: an upload while a writer has the file
// open (fsync) keeps it staged; a later change is uploaded over it.
func TestStagingOpenFileOutlivesItsUpload(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: 50 * time.Millisecond})
	tg := stagingShared("log.txt")
	st, err := s.Create(tg, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.writeOpen(st, []byte("line 1\n"))
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	e.want(tg, []byte("line 1\n"))
	if s.Lookup(tg) != st {
		t.Fatal("an open file was dropped from the staging after its upload")
	}
	if _, err := st.File().WriteAt([]byte("line 2\n"), 7); err != nil {
		t.Fatal(err)
	}
	st.Touch()
	time.Sleep(200 * time.Millisecond) // still open: not uploaded
	e.want(tg, []byte("line 1\n"))
	st.CloseWriter()
	testkit.WaitFor(t, 10*time.Second, "the second upload", func() bool { return s.Stats().Uploaded == 2 })
	e.want(tg, []byte("line 1\nline 2\n"))
	e.wantNothingStaged(s)
	if n := e.emu.Stats().Codes[451]; n != 0 {
		t.Fatalf("%d answers 451: the second upload did not overwrite the first", n)
	}
}

func (e *stagingEnv) failedTarget(i int) place.Target {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.targets[i]
}

// TestStagingRetriesTransientAndGivesUpOnRepeated452: a transient failure the
// client gave up on is retried by the queue (Flush waits through it); a size
// mismatch (452) is retried a few times, then kept as failed.
func TestStagingRetriesTransientAndGivesUpOnRepeated452(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	tg := stagingShared("flaky")
	data := testkit.RandBytes(10_000, 16)
	st := e.create(s, tg, 0, data)
	e.emu.InjectError("POST /files", 503, 12) // more than the client's 10 attempts
	if err := s.Flush(ctx, st); err != nil {
		t.Fatal(err)
	}
	e.want(tg, data)
	if n := e.emu.Stats().Codes[503]; n != 12 {
		t.Fatalf("%d answers 503, want 12", n)
	}

	tg2 := stagingShared("mismatch")
	st2 := e.create(s, tg2, 0, data)
	e.emu.InjectError("POST /files/{id}/complete", 452, sizeMismatchAttempts)
	if err := s.Flush(ctx, st2); !api.IsSizeMismatch(err) {
		t.Fatalf("Flush: %v, want 452", err)
	}
	if ents := s.Entries(); len(ents) != 1 || ents[0].State != "failed" || ents[0].Attempts != sizeMismatchAttempts {
		t.Fatalf("entries %v", ents)
	}
	e.absent(tg2)
	e.retryAndWant(s, st2, 2, data)
}

// TestStagingLoadCleansUp: what a crash can leave in the staging directory.
func TestStagingLoadCleansUp(t *testing.T) {
	e := newFakeStagingEnv(t)
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(name, content string) {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(name, state string, saved time.Time) string {
		b, _ := json.Marshal(map[string]any{"area": "shared", "parent_id": 0, "name": name, "state": state, "saved": saved})
		return string(b)
	}
	now := time.Now()
	put("1.json", rec("a", "pending", now.Add(-time.Minute))) // replaced by 5 (a crash in a rename over it)
	put("1.data", "old a")
	put("2.json", "{not json")
	put("2.data", "kept for a person")
	put("3.data", "no record: Create did not finish")
	put("4.json", rec("done", "uploaded", now))
	put("4.data", "already on the service")
	put("5.json", rec("a", "pending", now))
	put("5.data", "new a")
	put("6.json.tmp", "half written")
	put("7.json", rec("nodata", "pending", now))
	put("8.json", rec("failed", "failed", now))
	put("8.data", "failed before")

	s := e.open(StagingOptions{WriteBack: time.Hour})
	if fi, err := os.Stat(e.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("staging dir mode %v", fi.Mode())
	}
	stagingDrain(t, s, 10*time.Second)
	e.want(stagingShared("a"), []byte("new a"))
	e.want(stagingShared("failed"), []byte("failed before"))
	e.absent(stagingShared("done"))
	e.absent(stagingShared("nodata"))
	if got := e.stagedNames(); !slices.Equal(got, []string{"2.data", "2.json.bad"}) {
		t.Fatalf("staging dir %v", got)
	}

	// New files are numbered after every file found, records are JSON.
	st, err := s.Create(place.Target{Area: place.Area{Kind: place.Machine, MachineID: 42}, ParentID: 7, Name: "n.txt"}, 99)
	if err != nil {
		t.Fatal(err)
	}
	st.CloseWriter()
	st.DeleteAfterUpload(98)
	var r stagedRecord
	b, err := os.ReadFile(filepath.Join(e.dir, "9.json"))
	if err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("record of the new file: %v", err)
	}
	if r.Area != "machine" || r.MachineID != 42 || r.ParentID != 7 || r.Name != "n.txt" || r.Replaces != 99 ||
		r.State != "pending" || !slices.Equal(r.DeleteAfter, []int64{98}) || r.Saved.IsZero() {
		t.Fatalf("record %s", b)
	}
	for _, name := range []string{"9.json", "9.data"} {
		if fi, err := os.Stat(filepath.Join(e.dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", name, fi.Mode(), err)
		}
	}
	if _, err := s.Create(place.Target{Area: place.Area{Kind: place.Recordings}, Name: "x"}, 0); err == nil {
		t.Fatal("created a file in the recordings")
	}
	if err := s.Remove(st); err != nil {
		t.Fatal(err)
	}
}

// Uploaded tells what a staged file became once retired: the file of its
// last upload (while it is staged, and once removed, nothing), so that the
// mount shows the right size where the folder's listing is not cached.
func TestStagedUploadedOnceRetired(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour})
	tg := stagingShared("f")
	data := testkit.RandBytes(3000, 21)
	st := e.create(s, tg, 0, data)
	if _, ok := st.Uploaded(); ok {
		t.Fatal("Uploaded while pending")
	}
	st.OpenReader() // kept staged after its upload while read
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Flush(ctx, st); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Uploaded(); ok || s.Lookup(tg) != st {
		t.Fatal("Uploaded while still staged (open)")
	}
	st.CloseReader() // retired now
	f, ok := st.Uploaded()
	want := e.want(tg, data)
	if !ok || s.Lookup(tg) != nil || f.ID != want.ID || f.Size != int64(len(data)) || f.Name != "f" {
		t.Fatalf("Uploaded after retirement: %+v %v; the service has id %d", f, ok, want.ID)
	}

	// Removed, not uploaded: nothing.
	gone := e.create(s, stagingShared("g"), 0, data)
	if err := s.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if _, ok := gone.Uploaded(); ok {
		t.Fatal("Uploaded of a removed file")
	}
}

// TestStagingSmallFilesGoSoonerAndBeside: a small file waits a tenth of the
// write-back delay, and small files upload beside the Transfers big ones.
func TestStagingSmallFilesGoSoonerAndBeside(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: 3 * time.Second, Transfers: 1})
	big, small := stagingShared("big.bin"), stagingShared("small.txt")
	bigData := testkit.RandBytes(smallFile+1, 1)
	e.create(s, big, 0, bigData)
	e.create(s, small, 0, []byte("small"))
	testkit.WaitFor(t, 2*time.Second, "the small file's upload", func() bool { return s.Stats().Uploaded == 1 })
	e.want(small, []byte("small"))
	e.absent(big) // still within its delay
	testkit.WaitFor(t, 10*time.Second, "the big file's upload", func() bool { return s.Stats().Uploaded == 2 })
	e.want(big, bigData)

	// Uploads held: one big file goes (Transfers), the other waits; the
	// small ones go beside it.
	release := e.fake.Hold("Upload")
	defer release()
	want := map[place.Target][]byte{}
	for i := range 2 {
		tg := stagingShared(fmt.Sprintf("big%d.bin", i))
		want[tg] = testkit.RandBytes(smallFile+100, int64(10+i))
		e.create(s, tg, 0, want[tg])
	}
	for i := range 3 {
		tg := stagingShared(fmt.Sprintf("small%d.txt", i))
		want[tg] = testkit.RandBytes(1000, int64(20+i))
		e.create(s, tg, 0, want[tg])
	}
	before := e.fake.Count("Upload")
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(context.Background()) }()
	testkit.WaitFor(t, 5*time.Second, "4 uploads in flight", func() bool { return e.fake.Count("Upload")-before == 4 })
	time.Sleep(200 * time.Millisecond)
	if n := e.fake.Count("Upload") - before; n != 4 {
		t.Fatalf("%d uploads in flight, want 1 big and 3 small", n)
	}
	release()
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	for tg, data := range want {
		e.want(tg, data)
	}
	e.wantNothingStaged(s)
}

// A file a staged file supersedes (mv a b) whose deletion after the upload
// meets the service offline is journaled, not shown again, and deleted when
// the service answers again (Resume).
func TestStagingSupersededDeletionOfflineIsJournaled(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour})
	old := e.serviceFile(stagingShared("a.txt"), []byte("v1"))
	st := e.create(s, stagingShared("b.txt"), 0, []byte("v1"))
	st.SetPath("shared/b.txt")
	st.DeleteAfterUpload(old)
	off := &api.OfflineError{Since: time.Now(), Reason: "connection refused"}
	e.fake.FailNext("DeleteFile", off, off) // the deletion, and the journal's first try
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the deletion journaled", func() bool { return len(s.Journal()) == 1 })
	if d := s.Journal()[0]; d.ID != old || !d.ByID || !e.fake.Has(old) {
		t.Fatalf("journaled %+v; the service has it: %v", d, e.fake.Has(old))
	}
	s.Resume()
	testkit.WaitFor(t, 5*time.Second, "the journaled deletion made", func() bool { return len(s.Journal()) == 0 && !e.fake.Has(old) })
}

// Folders made offline are made in order at the service's return, one
// moved into another made after it too (after that one), and the files
// staged in them go into the folders made; one removed before is never
// made. The journal and the provisional ids last across a restart.
func TestStagingFoldersMadeOffline(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour})
	off := &api.OfflineError{Since: time.Now(), Reason: "connection refused"}
	e.fake.FailNext("CreateDirectory", off, off, off, off, off, off)
	root := place.DirKey{Area: place.Area{Kind: place.Shared}}
	outer, err := s.MakeLater(root, "outer", "shared/outer")
	if err != nil || outer >= 0 {
		t.Fatalf("MakeLater: %d, %v; want a provisional id below zero", outer, err)
	}
	inner, _ := s.MakeLater(root, "inner", "shared/inner")
	gone, _ := s.MakeLater(root, "gone", "shared/gone")
	if inner >= outer || gone >= inner {
		t.Fatalf("provisional ids %d %d %d: want each below the one before", outer, inner, gone)
	}
	st := e.create(s, place.Target{Area: root.Area, ParentID: outer, Name: "f.txt"}, 0, []byte("in a folder made offline"))
	st.SetPath("shared/outer/f.txt")
	if _, err := s.MoveMade(place.DirKey{Area: root.Area, ID: outer}, place.DirKey{Area: root.Area, ID: inner}, "outer", "shared/inner/outer"); err != nil {
		t.Fatal(err)
	}
	if made, err := s.Unmake(place.DirKey{Area: root.Area, ID: gone}); err != nil || made.ID != gone {
		t.Fatalf("Unmake: %v, %v", made, err)
	}
	if got := s.Entries()[0].Path; got != "shared/inner/outer/f.txt" {
		t.Errorf("the staged file's path after its folder moved: %q", got)
	}
	// A restart: the journal is read back, and new ids go below the old.
	s.Close()
	s = e.open(StagingOptions{WriteBack: time.Hour})
	j := s.Journal() // in either order: a try before the restart may have put outer after inner
	if i := slices.IndexFunc(j, func(c Change) bool { return c.ID == outer }); len(j) != 2 || i < 0 || j[i].Parent.ID != inner || j[1-i].ID != inner {
		t.Fatalf("the journal after a restart: %+v", j)
	}
	testkit.WaitFor(t, 10*time.Second, "the folders made", func() bool {
		s.Resume()
		return len(s.Journal()) == 0
	})
	in, ok := e.list(root.Area, 0)["inner"]
	if !ok || !in.IsDir() {
		t.Fatalf("inner on the service: %+v, %v", in, ok)
	}
	out, ok := e.list(root.Area, in.ID)["outer"]
	if !ok || !out.IsDir() {
		t.Fatalf("inner/outer on the service: %+v, %v", out, ok)
	}
	if _, ok := e.list(root.Area, 0)["gone"]; ok {
		t.Error("a folder removed before the service had it was made")
	}
	if r := s.Resolve(place.DirKey{Area: root.Area, ID: outer}); r.ID != out.ID {
		t.Errorf("Resolve(outer) = %d, want %d", r.ID, out.ID)
	}
	// Staged before the restart, it was queued at the start and waited for its folder.
	testkit.WaitFor(t, 10*time.Second, "the file in the folder made", func() bool {
		_, ok := e.list(root.Area, out.ID)["f.txt"]
		return ok
	})
	e.want(place.Target{Area: root.Area, ParentID: out.ID, Name: "f.txt"}, []byte("in a folder made offline"))
}

// madeOffline opens a staging that retries soon, and makes folder "later"
// in shared/ while the service refuses connections: the staging, the root,
// the folder's provisional id and the refusal, once its first try failed.
func madeOffline(t *testing.T) (*stagingEnv, *Staging, place.DirKey, int64, *api.OfflineError) {
	t.Helper()
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	root := place.DirKey{Area: place.Area{Kind: place.Shared}}
	off := &api.OfflineError{Since: time.Now(), Reason: "connection refused"}
	e.fake.FailNext("CreateDirectory", off)
	id, err := s.MakeLater(root, "later", "shared/later")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the first try offline", func() bool { return e.fake.Count("CreateDirectory") == 1 })
	return e, s, root, id, off
}

// A folder made offline whose making meets a 5xx at the return is tried
// again after a backoff, with no Resume: its file goes up. Offline, a
// flush of a file in it answers at once; one in a folder the service
// refuses fails for good, and stays staged.
func TestStagingFoldersMadeOfflineRetriesAndFailures(t *testing.T) {
	e, s, root, id, off := madeOffline(t)
	st := e.create(s, place.Target{Area: root.Area, ParentID: id, Name: "f.txt"}, 0, []byte("f"))
	start := time.Now()
	if err := s.Flush(context.Background(), st); !errors.Is(err, errFolderWaits) || time.Since(start) > time.Second {
		t.Fatalf("flush of a file in a folder made offline, offline: %v after %v", err, time.Since(start))
	}
	unavailable := &api.Error{Op: "POST /files", HTTPStatus: 503, Code: 503, Message: "unavailable"}
	e.fake.FailNext("CreateDirectory", unavailable, unavailable)
	s.Resume() // the service is back, and answers 503 twice
	testkit.WaitFor(t, 5*time.Second, "the folder made after the 5xx", func() bool {
		d, ok := e.list(root.Area, 0)["later"]
		return ok && e.list(root.Area, d.ID)["f.txt"].Name == "f.txt"
	})
	// Listed once its upload completed; its entry leaves the queue just after.
	testkit.WaitFor(t, 5*time.Second, "f.txt's entry to leave the queue", func() bool { return len(s.Entries()) == 0 })

	refused := &api.Error{Op: "POST /files", HTTPStatus: 400, Code: api.CodeBadRequest, Message: "no"}
	e.fake.FailNext("CreateDirectory", off)
	lost, _ := s.MakeLater(root, "refused", "shared/refused")
	st = e.create(s, place.Target{Area: root.Area, ParentID: lost, Name: "g.txt"}, 0, []byte("g"))
	e.fake.FailNext("CreateDirectory", refused)
	s.Resume()
	if err := s.Flush(context.Background(), st); !errors.Is(err, errFolderLost) {
		t.Fatalf("flush of a file in a folder the service refused: %v", err)
	}
	if infos := s.Entries(); len(infos) != 1 || infos[0].State != "failed" {
		t.Fatalf("the file in a folder refused: %+v, want staged, failed", infos)
	}
}

// An fsync of a file held open (an editor fsyncs before it closes) in a
// folder made offline, begun while the journal makes the folder at the
// return, ends once the folder is made: the upload resumes though a writer
// holds the file. It waited forever when only files nobody held resumed.
func TestStagingFlushOfAnOpenFileInAFolderMadeOffline(t *testing.T) {
	e, s, root, id, _ := madeOffline(t)
	st := e.create(s, place.Target{Area: root.Area, ParentID: id, Name: "f.txt"}, 0, []byte("saved by an editor"))
	if err := s.Flush(context.Background(), st); !errors.Is(err, errFolderWaits) {
		t.Fatalf("flush offline: %v, want errFolderWaits", err)
	}
	st.OpenWriter()
	defer st.CloseWriter()
	release := e.fake.Hold("CreateDirectory")
	s.Resume() // the service is back: the journal makes the folder (held)
	testkit.WaitFor(t, 5*time.Second, "the folder's making", func() bool { return e.fake.Count("CreateDirectory") == 2 })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.Flush(ctx, st)
	}()
	time.Sleep(50 * time.Millisecond) // the flush waits while the folder is made
	release()
	if err := <-done; err != nil {
		t.Fatalf("flush of a file held open once its folder was made: %v", err)
	}
	made, ok := e.list(root.Area, 0)["later"]
	if !ok {
		t.Fatal("the folder was not made")
	}
	e.want(place.Target{Area: root.Area, ParentID: made.ID, Name: "f.txt"}, []byte("saved by an editor"))
}
