package fs

// Tests of statfs (statfs.go): the quota and use of each storage area.

import (
	"os"
	"syscall"
	"testing"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
)

// TestStatfsShowsTheStorageQuota: df of a path shows the quota and use of
// the storage area it is in, as the area root's record has them.
func TestStatfsShowsTheStorageQuota(t *testing.T) {
	e := newEnv(t, envOptions{Seed: emulator.SeedDemo})
	fx := e.Emu.Fixtures(e.Org)
	rootRecord := func(l func(parent int64) *api.FileList, root int64) (size, used int64) {
		fl := l(root)
		if _, err := fl.Collect(); err != nil {
			t.Fatal(err)
		}
		cur := fl.Current()
		if cur == nil || cur.FileStorageSize == nil || cur.FileStorageUsage == nil {
			t.Fatalf("root %d has no storage record: %+v", root, cur)
		}
		return *cur.FileStorageSize, *cur.FileStorageUsage
	}
	var seat api.Seat
	seats, _ := api.Collect(e.Client.Seats(t.Context(), ""))
	for _, s := range seats {
		if s.ID == fx.RunningMachine {
			seat = s
		}
	}
	for _, c := range []struct {
		path string
		list func(parent int64) *api.FileList
		root int64
	}{
		{e.Path("shared"), func(p int64) *api.FileList {
			return e.Client.SharedFiles(t.Context(), api.ListFilesRequest{ParentID: p})
		}, e.root(0)},
		{e.Path(), func(p int64) *api.FileList {
			return e.Client.SharedFiles(t.Context(), api.ListFilesRequest{ParentID: p})
		}, e.root(0)},
		{e.Path("computers", seat.Name), func(p int64) *api.FileList {
			return e.Client.MachineFiles(t.Context(), fx.RunningMachine, api.ListFilesRequest{ParentID: p})
		}, e.root(fx.RunningMachine)},
	} {
		size, used := rootRecord(c.list, c.root)
		var st syscall.Statfs_t
		if err := syscall.Statfs(c.path, &st); err != nil {
			t.Fatal(err)
		}
		bsize := int64(st.Bsize)
		gotSize, gotFree := int64(st.Blocks)*bsize, int64(st.Bavail)*bsize
		if gotSize != size/bsize*bsize || gotFree != (size-used)/bsize*bsize {
			t.Errorf("statfs %s: size %d free %d; the service: size %d used %d", c.path, gotSize, gotFree, size, used)
		}
	}
	if n := e.Requests("GET /files"); n > 10 {
		t.Errorf("statfs made %d listing requests; the values are kept like listings", n)
	}
}

// statfs of an area with no entry yet (its quota cannot be learnt) shows a
// free 4 TiB disk.
func TestStatfsOfAnEmptyAreaIsALargeFreeDisk(t *testing.T) {
	e := newEnv(t, envOptions{}) // the empty seed: shared/ and the computer's storage hold nothing
	for _, p := range []string{e.Path("shared"), e.Path("computers", "Workstation")} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(p, &st); err != nil {
			t.Fatal(err)
		}
		if size := st.Blocks * uint64(st.Bsize); size != 4<<40 || st.Bavail != st.Blocks || st.Bfree != st.Blocks {
			t.Errorf("statfs %s: %d blocks of %d (%d free, %d available), want a free 4 TiB", p, st.Blocks, st.Bsize, st.Bfree, st.Bavail)
		}
	}
}

// statfs of an area with entries whose quota the service does not tell (the
// listing that carries it fails) shows a large, free disk (4 TiB), and the
// quota once the service tells it.
func TestStatfsWithAnUnknownQuotaIsALargeFreeDisk(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "entry.txt", []byte("an area with an entry\n"))
	if _, err := os.ReadDir(e.Path("shared")); err != nil {
		t.Fatal(err)
	}
	statfs := func() (size, free int64) {
		t.Helper()
		var st syscall.Statfs_t
		if err := syscall.Statfs(e.Path("shared"), &st); err != nil {
			t.Fatal(err)
		}
		return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize) // Bsize: int64 on Linux, uint32 on macOS
	}
	// The root's own record, which carries the quota, is listed by the
	// root's id: that listing is refused.
	e.Emu.InjectError("GET /files", api.CodeForbidden, 1)
	if size, free := statfs(); size != 4<<40 || free != 4<<40 {
		t.Errorf("statfs with the quota unknown: size %d, free %d; want a free 4 TiB disk", size, free)
	}
	if n := e.Emu.Stats().Injected; n != 1 {
		t.Fatalf("%d refusals answered, want the one listing of the root's record", n)
	}
	quota := int64(1 << 30)
	if err := e.Emu.SetStorageQuota(e.Org, 0, quota); err != nil {
		t.Fatal(err)
	}
	if size, _ := statfs(); size != quota {
		t.Errorf("statfs once the service tells the quota: size %d, want %d", size, quota)
	}
}
