package fs

// Many writers: two desks (two mounts of one organization, each with its own
// cache dir) and a script writing through the API, on one emulator. Every
// write acknowledged by close and fsync is on the service, as the current
// content or as a conflict copy; nothing read is a mix of versions; a file
// keeps its identity through its own upload.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// twoDesks mounts desk A (the env) and desk B on one emulator.
func twoDesks(t *testing.T) (a, b *testEnv) {
	a = newEnv(t, envOptions{Desk: "desk-a"})
	b = &testEnv{hooks: a.hooks}
	b.Env = a.Another("desk-b", nil, func(env *fstest.Env, dir string) (*fuse.Server, error) {
		b.fsys = New(Deps{Store: env.Store, Log: env.Log},
			Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Umask: 0o022})
		return Mount(dir, b.fsys, MountOptions{})
	})
	return a, b
}

// writeSync writes data to p (flags as open(2) takes them), fsyncs and
// closes: the write is acknowledged, on the service or reported.
func writeSync(t *testing.T, p string, flags int, data string) {
	t.Helper()
	f, err := os.OpenFile(p, flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", p, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// apiReplace replaces shared/name through the API, as a script or the web
// console does (overwrite: the file gets a new id).
func (e *testEnv) apiReplace(name, data string) int64 {
	e.T.Helper()
	res, err := e.Client.Upload(e.T.Context(), api.UploadRequest{Name: name, Size: int64(len(data)),
		Overwrite: true, Body: bytes.NewReader([]byte(data))})
	if err != nil {
		e.T.Fatal(err)
	}
	return res.ID
}

// conflictCopies returns the contents of the conflict copies of shared/stem*
// on the service, by name.
func (e *testEnv) conflictCopies(stem string) map[string]string {
	e.T.Helper()
	files, err := e.Client.SharedFiles(e.T.Context(), api.ListFilesRequest{}).Collect()
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasPrefix(f.Name, stem+" (conflict ") {
			out[f.Name] = string(e.serviceBytes(f.Name))
		}
	}
	return out
}

// wantConflicts checks that the desk recorded n conflicts.
func (e *testEnv) wantConflicts(n int64) {
	e.T.Helper()
	if cs, got := e.Store.Staging.Conflicts(); got != n {
		e.T.Fatalf("%d conflicts recorded, want %d: %+v", got, n, cs)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reading %s: %v", p, err)
	}
	return string(b)
}

// A writes f; B reads it; A replaces it; B appends to the version it read.
// A's change stays under the name, B's append goes up beside it as a
// conflict copy, with B's desk in its name (it reverted A's change
// silently before).
func TestManyWritersAppendToAReplacedFileKeepsBoth(t *testing.T) {
	a, b := twoDesks(t)
	writeSync(t, a.Path("shared", "f.txt"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, "orig\n")
	if got := readFile(t, b.Path("shared", "f.txt")); got != "orig\n" {
		t.Fatalf("B reads %q", got)
	}
	writeSync(t, a.Path("shared", "f.txt"), os.O_WRONLY|os.O_TRUNC, "replaced\n")
	writeSync(t, b.Path("shared", "f.txt"), os.O_WRONLY|os.O_APPEND, "x\n")

	if got := string(a.serviceBytes("f.txt")); got != "replaced\n" {
		t.Fatalf("the service holds %q under the name, want A's %q", got, "replaced\n")
	}
	copies := a.conflictCopies("f")
	if len(copies) != 1 {
		t.Fatalf("conflict copies %v, want one", copies)
	}
	for name, got := range copies {
		if got != "orig\nx\n" || !strings.HasSuffix(name, " desk-b).txt") {
			t.Fatalf("conflict copy %q holds %q, want B's %q", name, got, "orig\nx\n")
		}
	}
	b.wantConflicts(1)
	a.wantConflicts(0)
	// B shows both once its listing is read again (at once: the conflict
	// dropped it).
	names := fstest.ListNames(t, b.Path("shared"))
	if len(names) != 2 {
		t.Fatalf("B lists %q, want f.txt and its conflict copy", names)
	}
	waitContent(t, b.Path("shared", "f.txt"), "replaced\n")
}

// waitContent waits (past the kernel's 1 s attribute time) until p
// reads want.
func waitContent(t *testing.T, p, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(p)
		if err == nil && string(b) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s reads %q (%v), want %q", p, b, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// B, whose listing predates A's overwrite, overwrites with O_TRUNC: both
// survive (B's silently replaced A's before).
func TestManyWritersOverwriteOfAReplacedFileKeepsBoth(t *testing.T) {
	a, b := twoDesks(t)
	writeSync(t, a.Path("shared", "r.txt"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, "v1")
	if _, err := os.Stat(b.Path("shared", "r.txt")); err != nil {
		t.Fatal(err)
	}
	writeSync(t, a.Path("shared", "r.txt"), os.O_WRONLY|os.O_TRUNC, "v2 from A")
	writeSync(t, b.Path("shared", "r.txt"), os.O_WRONLY|os.O_TRUNC, "v2 from B")
	if got := string(a.serviceBytes("r.txt")); got != "v2 from A" {
		t.Fatalf("the service holds %q under the name", got)
	}
	copies := a.conflictCopies("r")
	if len(copies) != 1 {
		t.Fatalf("conflict copies %v, want one", copies)
	}
	for _, got := range copies {
		if got != "v2 from B" {
			t.Fatalf("conflict copy holds %q", got)
		}
	}
	b.wantConflicts(1)
}

// The same new name made on two desks: the first up keeps it, the second
// goes beside it.
func TestManyWritersSameNewNameOnTwoDesks(t *testing.T) {
	a, b := twoDesks(t)
	if _, err := os.ReadDir(b.Path("shared")); err != nil { // B lists the folder empty
		t.Fatal(err)
	}
	writeSync(t, a.Path("shared", "n.txt"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, "from A")
	writeSync(t, b.Path("shared", "n.txt"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, "from B")
	if got := string(a.serviceBytes("n.txt")); got != "from A" {
		t.Fatalf("the service holds %q under the name", got)
	}
	copies := a.conflictCopies("n")
	if len(copies) != 1 {
		t.Fatalf("conflict copies %v, want one", copies)
	}
	b.wantConflicts(1)
}

// A file replaced on the service after the desk listed it reads as the
// current version, at once (it answered ENOENT for --dir-cache-time before);
// a descriptor that read the old version answers ESTALE once that is no
// longer in the cache, never the other version's bytes. A new version
// longer than the one listed is not cut at the old size, a shorter one not
// padded to it: the kernel is told the new size, and the descriptor reads
// with direct I/O.
func TestManyWritersReplacedFileIsReadable(t *testing.T) {
	e := newEnv(t, envOptions{})
	// Listed, never read: the first read finds the listed version gone,
	// lists the folder once and reads the current one.
	e.apiReplace("listed.txt", "old")
	oldID := e.apiReplace("doc.txt", "the first version")
	const shorter = 6 // folders for the files replaced by shorter versions, below
	var dirs [shorter]int64
	for i := range dirs {
		dirs[i] = e.mkdir(0, e.root(0), fmt.Sprintf("s%d", i))
	}
	if _, err := os.Stat(e.Path("shared", "listed.txt")); err != nil {
		t.Fatal(err)
	}
	lists := e.Requests("GET /files")
	e.apiReplace("listed.txt", "the new content")
	time.Sleep(1100 * time.Millisecond) // past the kernel's attribute time
	if got := readFile(t, e.Path("shared", "listed.txt")); got != "the new content" {
		t.Fatalf("a listed file replaced since reads %q", got)
	}
	if n := e.Requests("GET /files") - lists; n != 1 {
		t.Fatalf("%d listings to find the new version, want 1", n)
	}

	if got := readFile(t, e.Path("shared", "doc.txt")); got != "the first version" {
		t.Fatalf("reads %q", got)
	}
	_, ptBefore := e.fsys.PassthroughMode()
	f, err := os.Open(e.Path("shared", "doc.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, ptAfter := e.fsys.PassthroughMode()
	passthrough := ptAfter > ptBefore // the kernel reads the cache file itself (passthrough.go)
	buf := make([]byte, 3)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "the" {
		t.Fatalf("read %q %v", buf, err)
	}

	newID := e.apiReplace("doc.txt", "the second version, longer")
	if newID == oldID {
		t.Fatal("the overwrite kept the id")
	}
	e.Store.Fetcher.Forget(oldID) // the old version is no longer in the cache
	dropKernelCache(t, e.Path("shared", "doc.txt"))
	time.Sleep(1100 * time.Millisecond) // past the kernel's attribute time

	// The descriptor that read the old one gets ESTALE, not the new bytes;
	// in passthrough, it reads the version it opened to its end (its file
	// is the kernel's).
	_, err = f.ReadAt(buf, 4)
	switch {
	case passthrough && (err != nil || string(buf) != "fir"):
		t.Fatalf("the old descriptor read %q: %v, want the old version's %q", buf, err, "fir")
	case !passthrough && !errors.Is(err, syscall.ESTALE):
		t.Fatalf("the old descriptor read %q: %v, want ESTALE", buf, err)
	}
	// A new open reads the current version.
	if got := readFile(t, e.Path("shared", "doc.txt")); got != "the second version, longer" {
		t.Fatalf("after the replacement, reads %q", got)
	}

	// Shorter versions, of files listed, never read: the kernel holds the
	// size listed, as long as the listing is fresh (a minute). The open
	// that finds the new version has the kernel told its size and reads it
	// with direct I/O: the descriptor reads the short content, nothing past
	// it. Each file is in a folder of its own, listed once, so that the
	// listing that finds its new version finds no other's.
	const long, short = "the first version, the longer of the two", "v2"
	for i, dir := range dirs {
		e.put(0, dir, "f.txt", []byte(long))
		if fi, err := os.Stat(e.Path("shared", fmt.Sprintf("s%d", i), "f.txt")); err != nil || fi.Size() != int64(len(long)) {
			t.Fatalf("s%d/f.txt listed: %v %v", i, fi, err)
		}
	}
	for _, dir := range dirs {
		e.put(0, dir, "f.txt", []byte(short))
	}
	open := func(i int) *os.File {
		t.Helper()
		g, err := os.Open(e.Path("shared", fmt.Sprintf("s%d", i), "f.txt"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}
	readShort := func(i int, g *os.File) {
		t.Helper()
		got := make([]byte, len(long))
		n, err := g.ReadAt(got, 0)
		if string(got[:n]) != short || !errors.Is(err, io.EOF) {
			t.Fatalf("s%d/f.txt: the shorter version reads %q: %v, want %q", i, got[:n], err, short)
		}
	}
	// Read at once. Without direct I/O, a read whose answer comes after the
	// kernel was told the new size is padded with zeros to the old one (a
	// race: each file is a chance of it).
	for i := 1; i < shorter; i++ {
		readShort(i, open(i))
	}
	// Without the race: the kernel is told the new size (fstat of the
	// descriptor, before any read, shows it within seconds, not the old one
	// for a minute; a read with direct I/O would have the kernel ask for the
	// attributes again), then the descriptor reads, with direct I/O: the
	// kernel keeps none of the content in its page cache.
	g := open(0)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		fi, err := g.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() == int64(len(short)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("s0/f.txt: fstat of the open file shows %d bytes, the old version's size; want the new %d", fi.Size(), len(short))
		}
	}
	readShort(0, g)
	node := e.fsys.root.EmbeddedInode()
	for _, name := range []string{"shared", "s0", "f.txt"} {
		if node = node.GetChild(name); node == nil {
			t.Fatalf("s0/f.txt: no node at %s", name)
		}
	}
	if fi, err := g.Stat(); err != nil || node.StableAttr().Ino != fi.Sys().(*syscall.Stat_t).Ino {
		t.Fatalf("s0/f.txt: the node found is not the open file's (%v)", err)
	}
	if n, errno := node.ReadCache(0, make([]byte, 4096)); errno != 0 || n != 0 {
		t.Fatalf("s0/f.txt: the kernel's page cache holds %d bytes of it (%v): the read was not direct I/O", n, errno)
	}
}

// A file keeps its inode number and modification time through its own
// upload and the listings after it (make, git and rsync compare them), and
// is not downloaded again to be read.
func TestOwnUploadKeepsIdentity(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "target.o")
	if err := os.WriteFile(p, []byte("built"), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	before := stat(t, p)
	e.settle()
	e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}}) // the next lookup lists the service
	time.Sleep(1100 * time.Millisecond)                                   // past the kernel's attribute time
	after := stat(t, p)
	if after.Ino != before.Ino || !after.Mtim.Equal(before.Mtim) || after.Size != before.Size {
		t.Fatalf("after the upload and a listing: ino %d→%d, mtime %v→%v, size %d→%d",
			before.Ino, after.Ino, before.Mtim, after.Mtim, before.Size, after.Size)
	}

	// An edit in place (a new version, uploaded) keeps the number too; the
	// time is the edit's.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(" again")
	f.Close()
	edited := stat(t, p)
	e.settle()
	e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	time.Sleep(1100 * time.Millisecond)
	last := stat(t, p)
	if last.Ino != before.Ino || !last.Mtim.Equal(edited.Mtim) || last.Size != int64(len("built again")) {
		t.Fatalf("after an edit: ino %d→%d, mtime %v→%v, size %d", before.Ino, last.Ino, edited.Mtim, last.Mtim, last.Size)
	}
	// What was uploaded is the cache's: read (for the first time) after a
	// remount on the same cache dir (the kernel's pages gone with the
	// mount), it downloads nothing.
	e.unmount()
	e.Mount()
	gets := e.objectGets()
	if got := readFile(t, e.Path("shared", "target.o")); got != "built again" {
		t.Fatalf("after a remount, reads %q", got)
	}
	if n := e.objectGets() - gets; n != 0 {
		t.Fatalf("reading a file this mount uploaded made %d object GETs, want none", n)
	}
}

// identity is what make, rsync and git compare of a file.
type identity struct {
	Ino  uint64
	Mtim time.Time
	Size int64
}

func stat(t *testing.T, p string) identity {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return identity{Ino: uint64(fi.Sys().(*syscall.Stat_t).Ino), Mtim: fi.ModTime(), Size: fi.Size()}
}

// An editor's save (rename to file~, write file) and mv f g; echo > f are
// the mount's own: no conflict, no copy.
func TestOwnRenamesRaiseNoConflict(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "notes.txt")
	writeSync(t, p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, "v1")
	if err := os.Rename(p, p+"~"); err != nil {
		t.Fatal(err)
	}
	writeSync(t, p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, "v2")
	if err := os.Rename(p, e.Path("shared", "moved.txt")); err != nil {
		t.Fatal(err)
	}
	writeSync(t, p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, "v3")
	e.settle()
	for name, want := range map[string]string{"notes.txt": "v3", "notes.txt~": "v1", "moved.txt": "v2"} {
		if got := string(e.serviceBytes(name)); got != want {
			t.Errorf("%s holds %q on the service, want %q", name, got, want)
		}
	}
	if copies := e.conflictCopies("notes"); len(copies) != 0 {
		t.Fatalf("conflict copies %v", copies)
	}
	e.wantConflicts(0)
}

// A delete of a file another writer replaced meanwhile deletes only the
// version the desk saw: theirs stays.
func TestManyWritersDeleteKeepsTheVersionNotSeen(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.apiReplace("d.txt", "seen")
	if got := readFile(t, e.Path("shared", "d.txt")); got != "seen" {
		t.Fatalf("reads %q", got)
	}
	e.apiReplace("d.txt", "not seen")
	if err := os.Remove(e.Path("shared", "d.txt")); err != nil {
		t.Fatal(err)
	}
	if got := string(e.serviceBytes("d.txt")); got != "not seen" {
		t.Fatalf("the service holds %q", got)
	}
}

// make decides through uploads as on a local disk: a target built here is up
// to date after its upload and a new listing, and out of date once its
// source is edited (a target uploaded after its source was edited looked up
// to date before: its time jumped to the upload's end).
func TestMakeAcrossUploads(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed")
	}
	e := newEnv(t, envOptions{})
	dir := e.Path("shared")
	if err := os.WriteFile(e.Path("shared", "Makefile"), []byte("out: in\n\tcp in out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path("shared", "in"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	makeExit := func(args ...string) int {
		t.Helper()
		err := exec.Command("make", append([]string{"-s", "-C", dir}, args...)...).Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	relist := func() {
		e.settle()
		e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
		time.Sleep(1100 * time.Millisecond) // past the kernel's attribute time
	}
	if code := makeExit(); code != 0 {
		t.Fatalf("make: exit %d", code)
	}
	relist()
	if code := makeExit("-q"); code != 0 {
		t.Fatalf("make -q after the uploads: exit %d, want 0 (up to date)", code)
	}
	if err := os.WriteFile(e.Path("shared", "in"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	relist()
	if code := makeExit("-q"); code != 1 {
		t.Fatalf("make -q after the source was edited and uploaded: exit %d, want 1 (out of date)", code)
	}
	if code := makeExit(); code != 0 {
		t.Fatalf("make: exit %d", code)
	}
	if got := readFile(t, e.Path("shared", "out")); got != "b" {
		t.Fatalf("out holds %q", got)
	}
}

// A folder another desk deletes while this desk writes into it is made
// again for what this desk wrote: the upload finds its folder gone, the
// folders of its path are made anew, and the file goes there, readable
// through the mount; nothing written here is lost with the folder.
func TestManyWritersFolderDeletedElsewhereIsMadeAgain(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := os.MkdirAll(e.Path("shared", "work", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path("shared", "work", "deep", "notes.txt"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	work, ok := e.serviceFile("work")
	if !ok {
		t.Fatal("shared/work is not on the service")
	}
	if err := e.Emu.DeleteFile(e.Org, work.ID); err != nil { // another desk, with what it held
		t.Fatal(err)
	}
	// This desk, whose listings still show the folder, writes on.
	if err := os.WriteFile(e.Path("shared", "work", "deep", "notes.txt"), []byte("v2, written after the folder went\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path("shared", "work", "deep", "more.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if got := string(e.serviceBytes("work/deep/notes.txt")); got != "v2, written after the folder went\n" {
		t.Errorf("shared/work/deep/notes.txt on the service: %q", got)
	}
	if got := string(e.serviceBytes("work/deep/more.txt")); got != "new\n" {
		t.Errorf("shared/work/deep/more.txt on the service: %q", got)
	}
	if made, _ := e.serviceFile("work"); made.ID == work.ID {
		t.Errorf("shared/work has the id of the folder deleted: %d", made.ID)
	}
	testkit.WaitFor(t, 5*time.Second, "the folder made again to read through the mount", func() bool {
		b, err := os.ReadFile(e.Path("shared", "work", "deep", "notes.txt"))
		return err == nil && string(b) == "v2, written after the folder went\n"
	})
}
