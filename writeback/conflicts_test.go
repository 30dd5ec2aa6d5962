package writeback

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

func TestConflictName(t *testing.T) {
	when := time.Date(2026, 11, 25, 14, 32, 7, 0, time.UTC)
	for _, c := range []struct {
		name, desk string
		try        int
		want       string
	}{
		{"report.docx", "desk-a", 0, "report (conflict 2026-11-25 1432 desk-a).docx"},
		{"notes", "desk-a", 0, "notes (conflict 2026-11-25 1432 desk-a)"},
		{".bashrc", "", 0, ".bashrc (conflict 2026-11-25 1432)"},
		{"a.tar.gz", "b", 2, "a.tar (conflict 2026-11-25 1432 b 2).gz"},
		{strings.Repeat("é", 120) + ".txt", "d", 0, strings.Repeat("é", 111) + " (conflict 2026-11-25 1432 d).txt"},
	} {
		got := ConflictName(c.name, when, c.desk, c.try)
		if got != c.want || len(got) > 255 {
			t.Errorf("ConflictName(%q, %q, %d) = %q (%d bytes), want %q", c.name, c.desk, c.try, got, len(got), c.want)
		}
	}
}

// conflictCopy returns the one file of the root whose name is a conflict
// copy of name's stem, with its content.
func (e *stagingEnv) conflictCopy(stem string) (string, []byte) {
	e.t.Helper()
	var found []string
	for n := range e.list(place.Area{Kind: place.Shared}, 0) {
		if strings.HasPrefix(n, stem+" (conflict ") {
			found = append(found, n)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("conflict copies of %q on the service: %q, want one", stem, found)
	}
	f := e.list(place.Area{Kind: place.Shared}, 0)[found[0]]
	return found[0], e.content(f)
}

// wantConflict checks that the staging recorded exactly one conflict, of
// path p, with the copy named copyName.
func wantConflict(t *testing.T, s *Staging, name, copyName string, base int64) {
	t.Helper()
	cs, n := s.Conflicts()
	if n != 1 || len(cs) != 1 || s.Stats().Conflicts != 1 {
		t.Fatalf("conflicts: %d %+v (stats %d), want 1", n, cs, s.Stats().Conflicts)
	}
	c := cs[0]
	if !strings.HasSuffix(c.Path, name) || !strings.HasSuffix(c.Copy, copyName) || c.Base != base || c.Theirs == 0 || c.Ours == 0 {
		t.Fatalf("conflict %+v, want %s kept as %s from %d", c, name, copyName, base)
	}
}

// A new file whose name another writer created meanwhile: theirs stays under
// the name, ours goes up beside it as a conflict copy (last writer won
// before, silently losing theirs).
func TestStagingNameTakenMeanwhileKeepsBoth(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: time.Hour, Desk: "desk-b"})
	tg := stagingShared("race.txt")
	data := testkit.RandBytes(3000, 10)
	st := e.create(s, tg, 0, data)
	// Someone else creates the name before the upload.
	e.serviceFile(tg, []byte("theirs"))
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	e.want(tg, []byte("theirs"))
	name, got := e.conflictCopy("race")
	if string(got) != string(data) || !strings.Contains(name, " desk-b).txt") {
		t.Fatalf("conflict copy %q holds %d bytes, want ours (%d)", name, len(got), len(data))
	}
	wantConflict(t, s, "race.txt", name, 0)
	e.wantNothingStaged(s)
}

// A change of a service file that another writer replaced meanwhile (a
// stale listing, an edit left open): both versions survive.
func TestStagingReplacedMeanwhileKeepsBoth(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: time.Hour, Desk: "desk-b"})
	tg := stagingShared("f.txt")
	orig := e.serviceFile(tg, []byte("orig"))
	st := e.create(s, tg, orig, []byte("orig+x"))
	// Another desk replaces it (overwrite: a new id), and our change,
	// started from orig, must not silently revert theirs.
	if err := e.emu.DeleteFile(emulator.OrgA, orig); err != nil {
		t.Fatal(err)
	}
	e.serviceFile(tg, []byte("replaced"))
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	e.want(tg, []byte("replaced"))
	name, got := e.conflictCopy("f")
	if string(got) != "orig+x" {
		t.Fatalf("conflict copy %q holds %q", name, got)
	}
	wantConflict(t, s, "f.txt", name, orig)

	// A second one the same minute takes a numbered name.
	st2 := e.create(s, tg, orig, []byte("second"))
	if err := s.Flush(context.Background(), st2); err != nil {
		t.Fatal(err)
	}
	e.want(tg, []byte("replaced"))
	if _, n := s.Conflicts(); n != 2 {
		t.Fatalf("%d conflicts, want 2", n)
	}
}

// A change of a service file that another writer deleted meanwhile puts it
// back, with no conflict: nothing of theirs is lost.
func TestStagingDeletedMeanwhileComesBack(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: time.Hour})
	tg := stagingShared("gone.txt")
	orig := e.serviceFile(tg, []byte("orig"))
	st := e.create(s, tg, orig, []byte("mine"))
	if err := e.emu.DeleteFile(emulator.OrgA, orig); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	e.want(tg, []byte("mine"))
	if _, n := s.Conflicts(); n != 0 {
		t.Fatalf("%d conflicts, want none", n)
	}
}

// An editor's save (rename to file~, write file) meets a 451 while the
// rename's delete waits: the version at the name is the mount's own, so it
// is overwritten with no conflict and no warning.
func TestStagingOwnRenameIsNoConflict(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: time.Hour})
	tg, backup := stagingShared("doc.txt"), stagingShared("doc.txt~")
	old := e.serviceFile(tg, []byte("v1"))
	bak := e.create(s, backup, 0, []byte("v1"))
	bak.DeleteAfterUpload(old)
	st := e.create(s, tg, 0, []byte("v2"))
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background(), bak); err != nil {
		t.Fatal(err)
	}
	e.want(tg, []byte("v2"))
	e.want(backup, []byte("v1"))
	if _, n := s.Conflicts(); n != 0 {
		t.Fatalf("%d conflicts, want none", n)
	}
	if n := e.emu.Stats().Codes[451]; n == 0 {
		t.Fatal("no 451 was met: the test did not play the editor's order")
	}
}

// The name holds this file's own content under an id the staging does not
// know (its upload completed just before a crash, the record not yet
// saved): compared byte for byte, no conflict. The same size with other
// bytes is one.
func TestStagingOwnContentIsNoConflict(t *testing.T) {
	e := newStagingEnv(t, emulator.Options{})
	s := e.open(StagingOptions{WriteBack: time.Hour})
	tg := stagingShared("done.txt")
	orig := e.serviceFile(tg, []byte("v1"))
	st := e.create(s, tg, orig, []byte("mine"))
	if err := e.emu.DeleteFile(emulator.OrgA, orig); err != nil {
		t.Fatal(err)
	}
	e.serviceFile(tg, []byte("mine")) // what the lost attempt had sent
	if err := s.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	e.want(tg, []byte("mine"))
	if _, n := s.Conflicts(); n != 0 {
		t.Fatalf("%d conflicts for the file's own content, want none", n)
	}

	tg2 := stagingShared("same size.txt")
	orig2 := e.serviceFile(tg2, []byte("v1"))
	st2 := e.create(s, tg2, orig2, []byte("ours"))
	if err := e.emu.DeleteFile(emulator.OrgA, orig2); err != nil {
		t.Fatal(err)
	}
	e.serviceFile(tg2, []byte("them")) // another writer's, of the same size
	if err := s.Flush(context.Background(), st2); err != nil {
		t.Fatal(err)
	}
	e.want(tg2, []byte("them"))
	if _, n := s.Conflicts(); n != 1 {
		t.Fatalf("%d conflicts for another writer's bytes of the same size, want 1", n)
	}
}

// A version this mount deleted as replaced (a rename's old name, once the
// new one is up) stays known: an upload that looked the name up just before
// the deletion, while the renamed file still listed it, is no conflict (the
// model test met one: a new file at a renamed file's old name went up as a
// conflict copy, and the name was then left empty).
func TestStagingDeletedAsReplacedStaysKnown(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour})
	old := e.serviceFile(stagingShared("f1"), []byte("v1"))
	if got, _ := s.deleteReplaced("shared/f1", []int64{old}); len(got) != 1 {
		t.Fatalf("deleted %v", got)
	}
	s.mu.Lock()
	known := s.knownLocked(old)
	s.mu.Unlock()
	if !known {
		t.Error("a version deleted as replaced is not known")
	}
}

// The same for a rename's copy removed before its upload (mv f g; rm g):
// the old version is deleted in the background, and a new file at the old
// name that goes up while that deletion is on its way is no conflict (the
// model test met one under load: the new file went up as a conflict copy,
// the deletion then took the name's version, and the name was left empty).
func TestStagingRemovedRenameCopyThenRecreateIsNoConflict(t *testing.T) {
	e := newFakeStagingEnv(t)
	s := e.open(StagingOptions{WriteBack: time.Hour})
	tg, moved := stagingShared("doc.txt"), stagingShared("moved.txt")
	old := e.serviceFile(tg, []byte("v1"))
	cp := e.create(s, moved, 0, []byte("v1"))
	cp.DeleteAfterUpload(old) // mv doc.txt moved.txt
	release := e.fake.Hold("DeleteFile")
	defer release()
	if err := s.Remove(cp); err != nil { // rm moved.txt
		t.Fatal(err)
	}
	st := e.create(s, tg, 0, []byte("new")) // echo new > doc.txt
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Flush(ctx, st); err != nil {
		t.Fatal(err)
	}
	release()
	testkit.WaitFor(t, 5*time.Second, "the old version's deletion", func() bool {
		return !e.fake.Has(old)
	})
	if c, n := s.Conflicts(); n != 0 {
		t.Fatalf("%d conflicts, want none: %+v", n, c)
	}
	e.want(tg, []byte("new"))
}

// An upload that completed as the daemon was killed (its answer never read,
// the file changed again meanwhile) is the file's own at the next start:
// its id was kept in the record when the service made it, before a byte
// was sent (Staged.sent), so the resumed upload replaces it instead of
// going up beside it as a conflict copy and leaving the older content
// under the name (the model test met it under faults).
func TestStagingUploadCompletedAtACrashIsNoConflict(t *testing.T) {
	e := newFakeStagingEnv(t)
	s1 := e.open(StagingOptions{WriteBack: time.Hour})
	tg := stagingShared("f1")
	orig := e.serviceFile(tg, []byte("v1"))
	crashDir := filepath.Join(t.TempDir(), "staging")
	e.fake.OnCompleted(func(id int64) {
		// The disk as a SIGKILL here would leave it, the file written to
		// once more meanwhile.
		if err := os.CopyFS(crashDir, os.DirFS(e.dir)); err != nil {
			t.Error(err)
		}
	})
	st := e.create(s1, tg, orig, []byte("v2, uploaded"))
	if err := s1.Flush(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	e.fake.OnCompleted(nil)
	data, err := filepath.Glob(filepath.Join(crashDir, "*.data"))
	if err != nil || len(data) != 1 {
		t.Fatalf("staged data at the crash: %v %v", data, err)
	}
	if err := os.WriteFile(data[0], []byte("v3, written after"), 0o600); err != nil {
		t.Fatal(err)
	}
	restartWithoutConflict(e, crashDir, tg, []byte("v3, written after"))
}

// restartWithoutConflict starts the staging again from dir (the disk a
// crash left), lets it upload all, and checks that tg holds want on the
// service, with no conflict copy made.
func restartWithoutConflict(e *stagingEnv, dir string, tg place.Target, want []byte) {
	e.t.Helper()
	e.dir = dir
	s := e.open(StagingOptions{})
	stagingDrain(e.t, s, 10*time.Second)
	e.want(tg, want)
	if c, n := s.Conflicts(); n != 0 {
		e.t.Fatalf("%d conflicts after the restart: %+v", n, c)
	}
}

// A file staged over one whose upload the service completed as the daemon
// was killed (an editor saving again while the last save went up) takes
// over that upload's id, recorded when the service made it: at the restart
// the name holds a version of this mount's, which the new file overwrites
// without a conflict copy (Staged.inheritLocked).
func TestStagingFileOverAnUploadCompletedAtACrashIsNoConflict(t *testing.T) {
	e := newFakeStagingEnv(t)
	s1 := e.open(StagingOptions{WriteBack: time.Hour})
	tg := stagingShared("f1")
	orig := e.serviceFile(tg, []byte("v1"))
	reached, resume := make(chan int64), make(chan struct{})
	e.fake.OnCompleted(func(id int64) {
		reached <- id
		<-resume
	})
	st := e.create(s1, tg, orig, []byte("v2, going up"))
	flushed := make(chan error, 1)
	go func() { flushed <- s1.Flush(context.Background(), st) }()
	<-reached // v2 is on the service
	e.create(s1, tg, orig, []byte("v3, saved over it"))
	// The disk as a SIGKILL now would leave it; the killed daemon deletes
	// nothing more (the upload it would drop, v2, stays on the service).
	crashDir := filepath.Join(t.TempDir(), "staging")
	if err := os.CopyFS(crashDir, os.DirFS(e.dir)); err != nil {
		t.Fatal(err)
	}
	release := e.fake.Hold("DeleteFile")
	defer release()
	e.fake.OnCompleted(nil)
	close(resume)
	<-flushed
	restartWithoutConflict(e, crashDir, tg, []byte("v3, saved over it"))
}
