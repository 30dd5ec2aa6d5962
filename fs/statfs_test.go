package fs

// Tests of statfs (statfs.go): the quota and use of each storage area.

import (
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
