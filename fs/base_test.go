package fs

// Tests of what every node shares (base.go): inode numbers.

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// A service file's inode number comes from its id: the same on two desks
// and after a remount; another writer's new version (a new id) is a new
// number. (A file this mount uploads keeps the number it had while
// pending: TestOwnUploadKeepsIdentity.)
func TestInodeNumbersFollowTheServiceID(t *testing.T) {
	a, b := twoDesks(t)
	a.put(0, a.root(0), "f", []byte("v1"))
	ino := func(p string) uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	first := ino(a.Path("shared", "f"))
	if other := ino(b.Path("shared", "f")); other != first {
		t.Errorf("desk B shows inode %d, desk A %d", other, first)
	}
	a.unmount()
	a.Mount()
	if again := ino(a.Path("shared", "f")); again != first {
		t.Errorf("after a remount inode %d, was %d", again, first)
	}
	a.apiReplace("f", "v2")
	a.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	// The folder is listed again and the kernel told, in the background.
	testkit.WaitFor(t, 5*time.Second, "the replacement to read", func() bool {
		b, err := os.ReadFile(a.Path("shared", "f"))
		return err == nil && string(b) == "v2"
	})
	if next := ino(a.Path("shared", "f")); next == first {
		t.Errorf("another writer's new version kept inode %d", first)
	}
}
