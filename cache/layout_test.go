package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// A cache dir of a newer layout is refused before anything in it is read
// or changed (what a newer orgfs staged waits for it); one without the mark
// (a release before it) opens and is marked; an unreadable mark is replaced.
func TestCacheDirLayout(t *testing.T) {
	dir := t.TempDir()
	staged := filepath.Join(dir, "staging", "a-newer-record")
	if err := os.MkdirAll(filepath.Dir(staged), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(staged, []byte("{\"format\":9}"), 0o600)
	os.WriteFile(filepath.Join(dir, LayoutFile), []byte(strconv.Itoa(Layout+1)+"\n"), 0o600)
	_, err := OpenStore(StoreOptions{Dir: dir, Client: fakeclient.New(t), Log: testkit.Log(t)})
	if !errors.Is(err, ErrNewerLayout) || !strings.Contains(err.Error(), fmt.Sprintf("layout %d; this one reads up to %d", Layout+1, Layout)) {
		t.Fatalf("a cache dir of a newer layout opened: %v; want ErrNewerLayout with the figures", err)
	}
	if b, err := os.ReadFile(staged); err != nil || string(b) != "{\"format\":9}" {
		t.Fatalf("what the newer orgfs staged: %q, %v; want it untouched", b, err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 2 {
		t.Fatalf("the refused cache dir holds %d names, want the 2 it had", len(names))
	}

	for _, mark := range []string{"", "garbage"} {
		dir := t.TempDir()
		if mark != "" {
			os.WriteFile(filepath.Join(dir, LayoutFile), []byte(mark), 0o600)
		}
		s, err := OpenStore(StoreOptions{Dir: dir, Client: fakeclient.New(t), Log: testkit.Log(t)})
		if err != nil {
			t.Fatalf("mark %q: %v", mark, err)
		}
		s.Close()
		if b, _ := os.ReadFile(filepath.Join(dir, LayoutFile)); string(b) != strconv.Itoa(Layout)+"\n" {
			t.Errorf("mark %q: the layout file holds %q after the open, want %d", mark, b, Layout)
		}
	}
}

// A cache dir an earlier release wrote (testdata/layout1: written by the
// release before the layout mark, its daemon SIGKILLed with a file staged
// under a chmod 0750 and a touch -d) opens: the staged file goes up with
// what it held, its mode and time stay on it, and the dir is marked.
func TestCacheDirOfAnEarlierRelease(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "layout1"))); err != nil {
		t.Fatal(err)
	}
	// That release kept a time set on a staged file as its staging copy's
	// own (git keeps no file times: set as it left it).
	want := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "staging", "1.data"), want, want); err != nil {
		t.Fatal(err)
	}
	fake := fakeclient.New(t)
	s, err := OpenStore(StoreOptions{Dir: dir, Client: fake, WriteBack: time.Millisecond, DirCacheTime: time.Hour, Log: testkit.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Staging.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	root := place.DirKey{Area: place.Area{Kind: place.Shared}}
	l, err := s.Dirs.List(t.Context(), root)
	if err != nil || len(l.Files) != 1 || l.Files[0].Name != "kept.txt" {
		t.Fatalf("the shared root after the start: %+v, %v; want kept.txt, the file staged", l, err)
	}
	f := l.Files[0]
	if got := fake.Data(f.ID); string(got) != "written by the release before the layout mark\n" {
		t.Fatalf("kept.txt on the service holds %q", got)
	}
	a := s.FileAttr(f)
	if a.Mode == nil || *a.Mode != 0o750 || a.MTime == nil || !a.MTime.Equal(want) {
		t.Fatalf("kept.txt's attributes %+v; want mode 0750 and the time set, %v", a, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, LayoutFile)); string(b) != strconv.Itoa(Layout)+"\n" {
		t.Errorf("the layout file holds %q, want %d", b, Layout)
	}
}
