package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/orgfs/orgfs/internal/fakeclient"
	"github.com/orgfs/orgfs/internal/testkit"
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
