package cache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

func u32(v uint32) *uint32 { return &v }

// What is set lasts across a reopen of the journal, until the service's
// record changes; a torn line is skipped; the journal is compacted.
func TestAttrsJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), AttrsFile)
	m, err := OpenAttrs(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	set := time.Date(2020, 6, 7, 8, 9, 10, 0, time.UTC)
	f := api.File{ID: 7, Name: "run.sh", LastModified: listed}
	m.SetFile(f, Attr{Mode: u32(0o755)})
	m.SetFile(f, TimeAttr(set)) // merged with the mode
	pend := place.Target{Area: place.Area{Kind: place.Machine, MachineID: 3}, ParentID: 9, Name: "new"}
	m.SetPending(pend, Attr{UID: u32(1000)})
	dir := place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 11}
	m.SetDir(dir, Attr{Mode: u32(0o700)})
	gone := place.DirKey{Area: place.Area{Kind: place.Shared}, ID: 12}
	m.SetDir(gone, Attr{Mode: u32(0o711)})
	m.ForgetDir(gone)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A torn last line, as a crash mid-write leaves.
	j, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	j.WriteString(`{"file":99,"attr":{"mo`)
	j.Close()

	m, err = OpenAttrs(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Shown(f)
	if got.Mode == nil || *got.Mode != 0o755 || !got.ModTime(listed).Equal(set) {
		t.Fatalf("after a reopen the file shows %+v", got)
	}
	if a := m.Pending(pend); a.UID == nil || *a.UID != 1000 {
		t.Fatalf("after a reopen the pending file shows %+v", a)
	}
	if a := m.Dir(dir); a.Mode == nil || *a.Mode != 0o700 {
		t.Fatalf("after a reopen the folder shows %+v", a)
	}
	if a := m.Dir(gone); !a.IsZero() {
		t.Fatalf("a forgotten folder shows %+v", a)
	}
	// Another writer's version (a new time on the service): the defaults.
	if a := m.Shown(api.File{ID: 7, LastModified: listed.Add(time.Second)}); !a.IsZero() {
		t.Fatalf("a changed record shows %+v", a)
	}
	if a := m.Shown(f); !a.IsZero() {
		t.Fatalf("what was set is not forgotten once the record changed: %+v", a)
	}
	// Many changes to one folder: the journal is rewritten, not grown.
	for i := range 10000 {
		m.SetDir(dir, Attr{Mode: u32(uint32(i % 0o777))})
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() > 1<<20 {
		t.Fatalf("journal after 10,000 changes of one folder: %v %v", fi.Size(), err)
	}
	m.Close()
	m, err = OpenAttrs(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := m.Dir(dir); a.Mode == nil || *a.Mode != 9999%0o777 {
		t.Fatalf("after compactions the folder shows %+v", a)
	}
}

// What is set on a pending file goes to its service id at the upload, with
// the writer's time, and survives the service's first listing of it.
func TestAttrsFollowTheUpload(t *testing.T) {
	m := NewAttrs()
	pend := place.Target{Name: "a"}
	m.SetPending(pend, Attr{Mode: u32(0o700)})
	m.Move(pend, place.Target{Name: "b"})
	prov, wrote := time.Now(), time.Now().Add(-time.Hour)
	m.Uploaded(place.Target{Name: "b"}, 5, prov, wrote)
	// While the staging still holds it (the upload ending), the pending
	// file shows what its version uploaded has.
	if a := m.Pending(place.Target{Name: "b"}); a.Mode == nil || *a.Mode != 0o700 {
		t.Fatalf("as its upload ends the pending file shows %+v", a)
	}
	for _, listed := range []time.Time{prov, prov.Add(time.Millisecond), prov.Add(time.Millisecond)} {
		a := m.Shown(api.File{ID: 5, LastModified: listed})
		if a.Mode == nil || *a.Mode != 0o700 || !a.ModTime(listed).Equal(wrote) || a.CTime == nil {
			t.Fatalf("listed at %v the upload shows %+v", listed, a)
		}
	}
}

// A chmod that finds the file pending but lands after its upload ended goes
// to the version uploaded, not to a pending file that is no more.
func TestAttrsSetAsTheUploadEnds(t *testing.T) {
	m := NewAttrs()
	pend := place.Target{Name: "run.sh"}
	prov := time.Now()
	m.Uploaded(pend, 8, prov, prov)
	m.SetPending(pend, Attr{Mode: u32(0o755)})
	if a := m.Shown(api.File{ID: 8, LastModified: prov}); a.Mode == nil || *a.Mode != 0o755 {
		t.Fatalf("the uploaded version shows %+v", a)
	}
	// A new file made there later starts afresh.
	m.ResetPending(pend, Attr{})
	m.SetPending(pend, Attr{Mode: u32(0o600)})
	if a := m.Pending(pend); a.Mode == nil || *a.Mode != 0o600 {
		t.Fatalf("the new pending file shows %+v", a)
	}
}

// A file uploaded again while staged (a mode or time set after its upload
// began, or a write) keeps what was set on the version before: the owner,
// which travels with no upload, and a later chmod laid over it.
func TestAttrsFollowAnUploadAgain(t *testing.T) {
	m := NewAttrs()
	pend := place.Target{Name: "f"}
	m.SetPending(pend, Attr{Mode: u32(0o700), UID: u32(4242)})
	prov := time.Now()
	m.Uploaded(pend, 10, prov, prov)
	m.SetPending(pend, Attr{Mode: u32(0o750)}) // as the first upload ended: on version 10
	m.Uploaded(pend, 11, prov, prov)
	if a := m.Shown(api.File{ID: 11, LastModified: prov}); a.UID == nil || *a.UID != 4242 || a.Mode == nil || *a.Mode != 0o750 {
		t.Fatalf("uploaded again, the file shows %+v; want the owner 4242 and mode 0750", a)
	}
}

// A rename racing the upload's end keeps what was set (the owner, here).
func TestAttrsMoveAsTheUploadEnds(t *testing.T) {
	m := NewAttrs()
	from, to := place.Target{Name: "a"}, place.Target{Name: "b"}
	m.SetPending(from, Attr{UID: u32(65534)})
	m.Uploaded(from, 9, time.Now(), time.Now())
	m.Move(from, to)
	if a := m.Pending(to); a.UID == nil || *a.UID != 65534 {
		t.Fatalf("renamed as its upload ended, the file shows %+v", a)
	}
}

// The attribute store names the organization's files: it is written 0600,
// also over one an earlier version wrote 0644.
func TestAttrsStoreIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), AttrsFile)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := OpenAttrs(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, %v; want 0600", AttrsFile, fi.Mode(), err)
	}
}
