package fs

// computers/: one folder per computer of the organization, each its storage
// area, named as ComputerNames (names.go) has it.
//
// Locks: computersNode.mu guards the list the names were made from (a
// node's mu, docs/ARCHITECTURE.md).

import (
	"context"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// computersNode is computers/: one folder per computer, its storage area.
type computersNode struct {
	node

	mu    sync.Mutex
	seats []api.Seat // guarded by mu; the list names was made from
	names []string   // guarded by mu
}

var (
	_ = (gofs.NodeGetattrer)((*computersNode)(nil))
	_ = (gofs.NodeLookuper)((*computersNode)(nil))
	_ = (gofs.NodeReaddirer)((*computersNode)(nil))
	_ = (gofs.NodeMkdirer)((*computersNode)(nil))
)

// load returns the computers and the folder names they show under, from the
// cache while it is fresh.
func (n *computersNode) load(ctx context.Context) ([]api.Seat, []string, syscall.Errno) {
	seats, err := n.fsys.store.Dirs.Seats(ctx)
	if err != nil {
		return nil, nil, n.fsys.errno(ctx, "listing computers", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.names == nil || len(seats) != len(n.seats) || (len(seats) > 0 && &seats[0] != &n.seats[0]) {
		n.seats, n.names = seats, ComputerNames(seats)
	}
	return n.seats, n.names, 0
}

func (n *computersNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fsys.setDirAttr(&out.Attr, time.Time{})
	return 0
}

func (n *computersNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if len(name) > maxName {
		return nil, syscall.ENAMETOOLONG
	}
	if probeName(name) {
		return nil, syscall.ENOENT
	}
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	seats, names, errno := n.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	for i, nm := range names {
		if nm == name {
			id := seats[i].ID
			area := place.Area{Kind: place.Machine, MachineID: id}
			ch := n.NewInode(ctx, n.fsys.newDirNode(place.DirKey{Area: area}, time.Time{}),
				gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: machineIno(id)})
			n.fsys.setDirAttr(&out.Attr, time.Time{})
			return ch, 0
		}
	}
	return nil, syscall.ENOENT
}

func (n *computersNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ctx, cancel := n.fsys.bound(ctx)
	defer cancel()
	seats, names, errno := n.load(ctx)
	if errno != 0 {
		return nil, errno
	}
	entries := make([]fuse.DirEntry, len(seats))
	for i, s := range seats {
		entries[i] = fuse.DirEntry{Name: names[i], Mode: syscall.S_IFDIR, Ino: machineIno(s.ID)}
	}
	return gofs.NewListDirStream(entries), 0
}

// Mkdir refuses: computers are made on the service, not by a folder here.
func (n *computersNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

var _ = (gofs.NodeFsyncer)((*computersNode)(nil))

// Fsync of computers/ has nothing to make durable: success.
func (n *computersNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return 0
}
