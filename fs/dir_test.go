package fs

// Tests of folders (dir.go): listings, names, lookups, and the changes made
// in a folder: create, mkdir, unlink, rmdir, rename.

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/testkit"
)

func TestTreeMatchesListings(t *testing.T) {
	e := newEnv(t, envOptions{Seed: emulator.SeedDemo, PerPage: 7})
	// shared/: every page of the root listing, with sizes and times.
	want, err := e.Client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= 7 {
		t.Fatalf("the demo root has %d entries; the test needs more than a page", len(want))
	}
	ents, err := os.ReadDir(e.Path("shared"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Fatalf("shared/ has %d entries, the service %d", len(ents), len(want))
	}
	for i, f := range want {
		st, err := os.Stat(e.Path("shared", f.Name))
		if err != nil {
			t.Fatalf("entry %d %q: %v", i, f.Name, err)
		}
		if st.IsDir() != f.IsDir() || (!f.IsDir() && st.Size() != f.Size) || !st.ModTime().Equal(f.LastModified) {
			t.Errorf("%q: dir %v size %d mtime %v; service: dir %v size %d mtime %v", f.Name, st.IsDir(), st.Size(), st.ModTime(), f.IsDir(), f.Size, f.LastModified)
		}
		if f.IsDir() && st.Mode().Perm() != 0o755 || !f.IsDir() && st.Mode().Perm() != 0o644 {
			t.Errorf("%q: mode %v", f.Name, st.Mode())
		}
	}
	// small-files/ has 300 entries: many pages of 7.
	sf := fstest.ListNames(t, e.Path("shared", "small-files"))
	if len(sf) != 300 {
		t.Fatalf("small-files/ lists %d entries, want 300", len(sf))
	}
	// computers/: clashing names get their id; unicode and '#' stay.
	seats, err := api.Collect(e.Client.Seats(t.Context(), ""))
	if err != nil {
		t.Fatal(err)
	}
	names := fstest.ListNames(t, e.Path("computers"))
	if len(names) != len(seats) {
		t.Fatalf("computers/ has %q, the service %d computers", names, len(seats))
	}
	joined := strings.Join(names, "|")
	for _, s := range seats {
		if !strings.Contains(joined, s.Name) {
			t.Errorf("computer %q missing from %q", s.Name, names)
		}
	}
	if !strings.Contains(joined, "Build Box (") || !strings.Contains(joined, "Café Render") || !strings.Contains(joined, "Design Studio #1") {
		t.Errorf("computer names %q lack the clash suffix, unicode or '#'", names)
	}
	// A computer's storage and recordings list what the service has.
	for _, s := range seats {
		files, err := e.Client.MachineFiles(t.Context(), s.ID, api.ListFilesRequest{}).Collect()
		if err != nil {
			t.Fatal(err)
		}
		var dirName string
		for _, n := range names {
			if n == s.Name || n == fmt.Sprintf("%s (%d)", s.Name, s.ID) {
				dirName = n
			}
		}
		if got := fstest.ListNames(t, e.Path("computers", dirName)); len(got) != len(files) {
			t.Errorf("computers/%s has %d entries, the service %d", dirName, len(got), len(files))
		}
	}
	recs, err := e.Client.Recordings(t.Context(), api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if got := fstest.ListNames(t, e.Path("recordings")); len(got) != len(recs) || len(recs) == 0 {
		t.Errorf("recordings/ has %d entries, the service %d", len(got), len(recs))
	}
}

func TestNamesWithSpacesUnicodeAndHash(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	names := []string{"with space.txt", "ünïcødé ✓.txt", "#hash #1.md", "50% off?.txt", "quote's \"q\".txt"}
	for i, n := range names {
		e.put(0, root, n, []byte(n+fmt.Sprint(i)))
	}
	for i, n := range names {
		local := safeName(n)
		b, err := os.ReadFile(e.Path("shared", local))
		if err != nil || string(b) != n+fmt.Sprint(i) {
			t.Errorf("%q read as %q (%v)", local, b, err)
		}
	}
}

func TestListingUsesOnlyListRequests(t *testing.T) {
	e := newEnv(t, envOptions{PerPage: 1000})
	root := e.root(0)
	big := e.mkdir(0, root, "big")
	for i := 0; i < 2500; i++ {
		e.put(0, big, fmt.Sprintf("file-%04d.txt", i), []byte(fmt.Sprint(i)))
	}
	before := e.Emu.Stats().Requests
	out, err := exec.Command("ls", "-l", e.Path("shared", "big")).CombinedOutput()
	if err != nil {
		t.Fatalf("ls -l: %v: %s", err, out)
	}
	if lines := strings.Count(string(out), "\n"); lines != 2501 { // "total" and 2500 entries
		t.Fatalf("ls -l printed %d lines", lines)
	}
	after := e.Emu.Stats().Requests
	for route, n := range after {
		d := n - before[route]
		if d == 0 {
			continue
		}
		if route != "GET /files" {
			t.Errorf("ls -l made %d requests of %s", d, route)
		}
	}
	// 2 listings: shared/ (to find big) and big/ in 3 pages of 1000.
	if d := after["GET /files"] - before["GET /files"]; d > 4 {
		t.Errorf("ls -l made %d list requests", d)
	}
	total := e.apiRequests()
	if _, err := exec.Command("ls", "-l", e.Path("shared", "big")).CombinedOutput(); err != nil {
		t.Fatal(err)
	}
	for _, probe := range []string{".DS_Store", "._big", "desktop.ini", "Thumbs.db", ".Trash-0", ".hidden", "autorun.inf", ".xdg-volume-info"} {
		if _, err := os.Stat(e.Path("shared", "big", probe)); !os.IsNotExist(err) {
			t.Errorf("probe %s: %v", probe, err)
		}
	}
	if d := e.apiRequests() - total; d != 0 {
		t.Errorf("a second ls and probe names made %d requests within the TTL", d)
	}
}

func TestServiceChangesAppearAfterTTLOrRefresh(t *testing.T) {
	e := newEnv(t, envOptions{DirTTL: 500 * time.Millisecond})
	root := e.root(0)
	e.put(0, root, "a.txt", []byte("one"))
	if b, _ := os.ReadFile(e.Path("shared", "a.txt")); string(b) != "one" {
		t.Fatalf("a.txt = %q", b)
	}
	e.put(0, root, "a.txt", []byte("two, longer"))
	e.put(0, root, "b.txt", []byte("new"))
	testkit.WaitFor(t, 5*time.Second, "a.txt's new content and b.txt after the TTL", func() bool {
		b, _ := os.ReadFile(e.Path("shared", "a.txt"))
		_, errB := os.Stat(e.Path("shared", "b.txt"))
		return string(b) == "two, longer" && errB == nil
	})
	// A deletion shows at once after a refresh (what SIGHUP does).
	ids, _ := e.Client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	for _, f := range ids {
		if f.Name == "b.txt" {
			if err := e.Emu.DeleteFile(e.Org, f.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.Store.Dirs.DropAll()
	time.Sleep(1100 * time.Millisecond) // the kernel's own entry cache (1s)
	if _, err := os.Stat(e.Path("shared", "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt after refresh: %v", err)
	}
}

func TestProbeNameTheServiceHoldsIsServed(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "desktop.ini", []byte("[.ShellClassInfo]"))
	sub := e.mkdir(0, e.root(0), "fresh")
	e.put(0, sub, ".DS_Store", []byte("finder"))
	os.ReadDir(e.Path("shared"))
	b, err := os.ReadFile(e.Path("shared", "desktop.ini"))
	if err != nil || string(b) != "[.ShellClassInfo]" {
		t.Fatalf("desktop.ini that the service holds: %q, %v", b, err)
	}
	// In a folder not listed yet, the first lookup lists it.
	b, err = os.ReadFile(e.Path("shared", "fresh", ".DS_Store"))
	if err != nil || string(b) != "finder" {
		t.Fatalf(".DS_Store that the service holds, in a folder not listed: %q, %v", b, err)
	}
}

func TestFoldersAndMoves(t *testing.T) {
	e := newEnv(t, envOptions{})
	deep := e.Path("shared", "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatalf("mkdir -p: %v", err)
	}
	os.WriteFile(filepath.Join(deep, "f.txt"), []byte("x"), 0o644)
	e.settle()
	if got := string(e.serviceBytes("a/b/c/f.txt")); got != "x" {
		t.Fatalf("a/b/c/f.txt = %q", got)
	}
	// rmdir of a non-empty folder: ENOTEMPTY, nothing deleted
	if err := syscall.Rmdir(e.Path("shared", "a", "b")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir a/b: %v, want ENOTEMPTY", err)
	}
	if _, ok := e.serviceFile("a/b/c/f.txt"); !ok {
		t.Fatal("rmdir of a non-empty folder deleted content")
	}
	// mv of an uploaded file, of a pending one, and of a folder
	if err := os.Rename(filepath.Join(deep, "f.txt"), e.Path("shared", "moved.txt")); err != nil {
		t.Fatalf("mv uploaded: %v", err)
	}
	os.WriteFile(e.Path("shared", "pending.txt"), []byte("p"), 0o644)
	if err := os.Rename(e.Path("shared", "pending.txt"), e.Path("shared", "a", "pending-moved.txt")); err != nil {
		t.Fatalf("mv pending: %v", err)
	}
	run(t, "mv", e.Path("shared", "a"), e.Path("shared", "z")) // a folder with content (rename_tree.go)
	e.settle()
	if got := string(e.serviceBytes("moved.txt")); got != "x" {
		t.Fatalf("moved.txt = %q", got)
	}
	if got := string(e.serviceBytes("z/pending-moved.txt")); got != "p" {
		t.Fatalf("z/pending-moved.txt = %q", got)
	}
	// The old folder goes once its files are up at the new place.
	testkit.WaitFor(t, 10*time.Second, "the old folder's deletion", func() bool {
		_, ok := e.serviceFile("a")
		return !ok
	})
	for _, gone := range []string{"pending.txt", "a/b/c/f.txt"} {
		if _, ok := e.serviceFile(gone); ok {
			t.Errorf("%s is still on the service", gone)
		}
	}
	// rm -r works because it empties first
	run(t, "rm", "-r", e.Path("shared", "z"))
	if _, ok := e.serviceFile("z"); ok {
		t.Fatal("rm -r left the folder")
	}
	// recordings stay read-only
	if err := os.WriteFile(e.Path("recordings", "x"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("writing in recordings/: %v", err)
	}
}

// TestDesktopLitterIsLocalOnly: what Finder and Explorer write beside files
// (AppleDouble ._*, .DS_Store, Thumbs.db) is kept in memory, readable,
// writable, listed, renamed and removed like a file, and never uploaded; a
// copy with it succeeds.
func TestDesktopLitterIsLocalOnly(t *testing.T) {
	e := newEnv(t, envOptions{})
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "report.pdf"), []byte("%PDF-1.4 report"), 0o644)
	ad := bytes.Repeat([]byte{0, 5, 22, 7}, 1024) // an AppleDouble header and resource fork
	os.WriteFile(filepath.Join(src, "._report.pdf"), ad, 0o644)
	os.WriteFile(filepath.Join(src, ".DS_Store"), []byte("Bud1"), 0o644)
	run(t, "cp", "-a", src+"/.", e.Path("shared", "copy"))
	e.settle()
	if b, err := os.ReadFile(e.Path("shared", "copy", "._report.pdf")); err != nil || !bytes.Equal(b, ad) {
		t.Fatalf("reading the AppleDouble file back: %v", err)
	}
	if names := fstest.ListNames(t, e.Path("shared", "copy")); !slices.Equal(names, []string{".DS_Store", "._report.pdf", "report.pdf"}) {
		t.Errorf("the copy lists %v", names)
	}
	if _, ok := e.serviceFile("copy/report.pdf"); !ok {
		t.Error("the real file was not uploaded")
	}
	for _, name := range []string{".DS_Store", "._report.pdf"} {
		if _, ok := e.serviceFile("copy/" + name); ok {
			t.Errorf("%s was uploaded", name)
		}
	}
	// Overwrite, append, rename among litter names, and remove.
	p := e.Path("shared", "copy", "Thumbs.db")
	os.WriteFile(p, []byte("one"), 0o644)
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("two")
	f.Close()
	if b, _ := os.ReadFile(p); string(b) != "onetwo" {
		t.Errorf("Thumbs.db reads %q", b)
	}
	if err := os.Rename(p, e.Path("shared", "copy", "._Thumbs.db")); err != nil {
		t.Errorf("renaming litter: %v", err)
	}
	if err := os.Rename(e.Path("shared", "copy", "._Thumbs.db"), e.Path("shared", "copy", "real.db")); !errors.Is(err, syscall.EXDEV) {
		t.Errorf("renaming litter to a real name: %v, want EXDEV (mv copies)", err)
	}
	run(t, "rm", "-r", e.Path("shared", "copy"))
	if _, ok := e.serviceFile("copy"); ok {
		t.Error("rm -r left the folder")
	}
	if n := e.Requests("POST /files (file)") + e.Requests("POST /files"); n > 2 {
		t.Errorf("%d creations on the service; want the folder and report.pdf only", n)
	}
}

// Review findings 1 and 1b (fixed): mv of an uploaded file, then append to
// the new name at once; in 1b the node has seen its uploaded record (stat)
// before the mv.
func TestWriteReviewRenameUploadedThenAppend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		statFirst bool
	}{{"fresh node", false}, {"stat before mv", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			os.WriteFile(e.Path("shared", "a.txt"), []byte("one\n"), 0o644)
			e.settle()
			if tc.statFirst {
				os.Stat(e.Path("shared", "a.txt"))
			}
			if err := os.Rename(e.Path("shared", "a.txt"), e.Path("shared", "b.txt")); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(e.Path("shared", "b.txt"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("two\n")
			f.Close()
			e.settle()
			if _, ok := e.serviceFile("a.txt"); ok {
				t.Errorf("a.txt resurrected on the service: %q", e.serviceBytes("a.txt"))
			}
			if got := string(e.serviceBytes("b.txt")); got != "one\ntwo\n" {
				t.Errorf("b.txt = %q, want one two", got)
			}
		})
	}
}

// Review finding 5 (fixed): mv of a pending file into another folder, fd kept; after upload fstat.
func TestWriteReviewMovePendingAcrossDirs(t *testing.T) {
	e := newEnv(t, envOptions{})
	os.Mkdir(e.Path("shared", "d"), 0o755)
	f, err := os.Create(e.Path("shared", "p.txt"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hello")
	if err := os.Rename(e.Path("shared", "p.txt"), e.Path("shared", "d", "q.txt")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e.settle()
	// same inode via the kernel (within the entry timeout) and via the fd
	b, err := os.ReadFile(e.Path("shared", "d", "q.txt"))
	t.Logf("read: %q %v", b, err)
	g, _ := os.Open(e.Path("shared", "d", "q.txt"))
	if g != nil {
		fi, _ := g.Stat()
		t.Logf("fstat size %d", fi.Size())
		g.Close()
	}
	if string(b) != "hello" {
		t.Errorf("read back after move+upload: %q %v", b, err)
	}
}

// Review finding 6 (fixed): a failed rename of an uploaded file over a pending one destroys the pending one.
func TestWriteReviewFailedRenameOverPending(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: 3 * time.Second})
	id := e.put(0, 0, "a.txt", []byte("service"))
	os.ReadDir(e.Path("shared")) // listing cached with a.txt
	os.WriteFile(e.Path("shared", "b.txt"), []byte("precious"), 0o644)
	if err := e.Client.DeleteFile(t.Context(), id); err != nil { // someone else deleted a.txt meanwhile
		t.Fatal(err)
	}
	// The source is gone from the service: the rename fails with ENOENT
	// (its content cannot be fetched), and the pending file it would have
	// replaced is untouched, here and once uploaded.
	err := os.Rename(e.Path("shared", "a.txt"), e.Path("shared", "b.txt"))
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("rename of a file deleted on the service meanwhile: %v, want ENOENT", err)
	}
	if b, err := os.ReadFile(e.Path("shared", "b.txt")); err != nil || string(b) != "precious" {
		t.Fatalf("b.txt after the failed rename: %q %v", b, err)
	}
	e.settle()
	if got := string(e.serviceBytes("b.txt")); got != "precious" {
		t.Errorf("b.txt holds %q on the service, want its pending content", got)
	}
	if _, ok := e.serviceFile("a.txt"); ok {
		t.Error("a.txt is on the service again")
	}
}

// Review finding 3 (fixed): recreate a name whose old inode is still held open; read it back.
func TestWriteReviewRecreateWhileOldHeld(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: 5 * time.Second})
	p := e.Path("shared", "x.txt")
	os.WriteFile(p, []byte("first"), 0o644)
	old, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("second!"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the entry timeout
	var st syscall.Stat_t
	serr := syscall.Stat(p, &st)
	t.Logf("stat: %v size %d", serr, st.Size)
	b, err := os.ReadFile(p)
	t.Logf("read back: %q %v", b, err)
	if string(b) != "second!" || st.Size != 7 {
		t.Errorf("pending file not readable / wrong size")
	}
}

// rmdir checks a fresh listing of the folder, then deletes it on the
// service, which deletes folders whole: a file another client adds between
// that listing and the delete goes with the folder. The file is put at the
// emulator while the listing's answer is held.
func TestRmdirDeletesAFileAddedAfterItsListing(t *testing.T) {
	e := newEnv(t, envOptions{})
	folder := e.mkdir(0, e.root(0), "emptied")
	if _, err := os.ReadDir(e.Path("shared", "emptied")); err != nil { // listed (empty) before
		t.Fatal(err)
	}
	var once sync.Once
	type result struct {
		id  int64
		err error
	}
	added := make(chan result, 1)
	e.setHook(func(r *http.Request, answered bool) {
		if answered && isListing(r, folder) {
			once.Do(func() {
				id, err := e.Emu.CreateFile(e.Org, 0, folder, "added meanwhile.txt", strings.NewReader("another client's file\n"))
				added <- result{id, err}
			})
		}
	})
	if err := syscall.Rmdir(e.Path("shared", "emptied")); err != nil {
		t.Fatalf("rmdir: %v", err)
	}
	e.setHook(nil)
	var file int64
	select {
	case r := <-added:
		if r.err != nil {
			t.Fatalf("adding a file to the folder: %v", r.err)
		}
		file = r.id
	default:
		t.Fatal("rmdir did not list the folder afresh")
	}
	if _, ok := e.serviceFile("emptied"); ok {
		t.Error("the folder is still on the service")
	}
	if _, err := e.Client.FileURL(t.Context(), file); !api.IsNotFound(err) {
		t.Errorf("the file added between the listing and the delete: %v, want not found (deleted with the folder)", err)
	}
}
