package fs

// What the kernel keeps. A file's entry and attributes, when they come from
// a listing, are kept by the kernel as long as that listing is fresh
// (--dir-cache-time from its fetch; at least Options.AttrTimeout): until then the
// daemon would answer from the same listing anyway, so a lookup or getattr
// is a round trip for nothing (git status, make, rsync and find stat every
// file). When a listing fetched anew shows a file changed or gone
// (listingChanged), or every listing is dropped (ForgetKernelEntries:
// SIGHUP, .ctl/refresh), the kernel is told to forget what it kept, so no
// change is seen later than with the short timeouts.
//
// Folders and negative lookups keep Options.AttrTimeout (1 s): a folder's
// entry, which a shell may be in, is invalidated only when the folder is
// gone or replaced.

import (
	"context"
	"sync/atomic"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
)

// listedTimeout is how long the kernel may keep the entry and attributes of
// a file listed at listedAt: while the listing is fresh. 0 (the mount's
// AttrTimeout) when that is no longer than AttrTimeout.
func (f *FS) listedTimeout(listedAt time.Time) time.Duration {
	if listedAt.IsZero() {
		return 0
	}
	if t := f.store.Dirs.FreshFor(listedAt); t > f.opts.AttrTimeout {
		return t
	}
	return 0
}

// keepEntry has the kernel keep a file's entry and attributes, fresh as of
// asOf, as long as a listing fetched then would be fresh.
func (f *FS) keepEntry(out *fuse.EntryOut, asOf time.Time) {
	if t := f.listedTimeout(asOf); t > 0 {
		out.SetEntryTimeout(t)
		out.SetAttrTimeout(t)
	}
}

// listingChanged tells the kernel what a listing of the folder fetched
// anew (cur) changed of what it keeps: each entry it holds is compared with
// the listing (tellKernel). Sent outside the request that loaded the
// listing: the kernel may hold the folder's lock for it.
func (n *dirNode) listingChanged(cur *dirView) {
	listedAt, seq := cur.listing.Fetched, cur.listing.Seq
	go func() {
		// A goroutine that runs late must not tell the kernel records older
		// than the mount's since (an edit of the listing, a newer fetch):
		// the newest the cache holds are told instead (it once undid an
		// edit's news: a file's size went back to the listing's before),
		// and a file node refuses a record older than its own (update: an
		// edit landing while this runs).
		if l, ok := n.fsys.store.Dirs.Cached(n.dirKey()); ok && l != cur.listing && !l.Fetched.Before(listedAt) {
			if l.Fetched.After(listedAt) {
				n.setView(l) // a newer fetch: the folder's view takes it, and tells its news
				return
			}
			cur, seq = n.setView(l), l.Seq // this fetch, edited since: the view, derived where it can be
		}
		for name := range n.Children() {
			f := api.File{Name: name} // gone
			if x, ok := cur.lookup(name); ok {
				f = x
			}
			n.tellKernel(name, f, listedAt, seq)
		}
	}()
}

func sameRecord(a, b api.File) bool {
	return a.ID == b.ID && a.Size == b.Size && a.LastModified.Equal(b.LastModified)
}

// tellKernel brings what the kernel keeps of name up to date with the
// service's record f (ID 0: the name is gone): the entry of a name gone or
// holding another file or folder is invalidated; a file that kept its inode
// (this mount's own upload) takes the new record, its attributes invalidated
// when they changed. A pending file shows its staging copy: left alone.
func (n *dirNode) tellKernel(name string, f api.File, listedAt time.Time, seq uint64) {
	ch := n.GetChild(name)
	if ch == nil {
		return // the kernel holds no entry of it
	}
	switch op := ch.Operations().(type) {
	case *fileNode:
		if op.refreshStaged() != nil {
			return
		}
		if f.ID == 0 || f.IsDir() || n.fsys.inoOf(f.ID) != ch.StableAttr().Ino {
			n.NotifyEntry(name)
			return
		}
		op.mu.Lock()
		same := sameRecord(op.file, f)
		op.mu.Unlock()
		if !same && op.update(n.dirKey(), f, listedAt, seq) {
			ch.NotifyContent(-1, 0) // its attributes (update drops the pages of changed content)
		}
	case *dirNode:
		if f.ID == 0 || !f.IsDir() || n.fsys.inoOf(f.ID) != ch.StableAttr().Ino {
			n.NotifyEntry(name)
		}
	}
}

// refetch lists the folder anew when its listing was dropped (a read found
// a file changed, a conflict, a fresh listing asked for): the kernel is told
// what changed (listingChanged), as a lookup that listed it would. Errors
// are left to the next lookup.
func (n *dirNode) refetch() {
	ctx, cancel := n.fsys.bound(context.Background())
	defer cancel()
	if l, err := n.fsys.store.Dirs.List(ctx, n.dirKey()); err == nil {
		n.setView(l)
	}
}

// watchDirs has the listing cache tell the kernel, through the folders the
// kernel knows (dirNodes), what it forgot or was told without a fetch.
func (f *FS) watchDirs() {
	f.store.Dirs.Watch(&cache.DirsWatcher{
		Dropped: func(key place.DirKey) {
			if n := f.dirNode(key); n != nil {
				go n.refetch()
			}
		},
		DroppedAll: f.ForgetKernelEntries,
		Shown: func(ids []int64) {
			// Its number may have gone with it to a new name (a rename,
			// its staged copy's node): shown again, it is another inode.
			for _, id := range ids {
				f.inos.Add(id, movedIno(id))
			}
		},
		Put: func(key place.DirKey, file api.File, seq uint64) {
			if n := f.dirNode(key); n != nil {
				go n.tellKernel(shownName(file, !f.opts.NoLinks), file, time.Time{}, seq)
			}
		},
	})
}

// dirNode is the node of folder key the kernel knows, if any.
func (f *FS) dirNode(key place.DirKey) *dirNode {
	if v, ok := f.dirNodes.Load(key); ok {
		return v.(*dirNode)
	}
	return nil
}

// setKey makes key the folder's (a new node, a rename), registered in
// f.dirNodes.
func (n *dirNode) setKey(key place.DirKey) {
	if old := n.keyv.Swap(&key); old != nil {
		n.fsys.dirNodes.CompareAndDelete(*old, n)
	}
	n.fsys.dirNodes.Store(key, n)
}

// folderMade is the store's hook (cache.Store.SetFolderMade): a folder
// made offline is on the service now, as made. Its node stands for the
// folder made, with its inode number.
func (f *FS) folderMade(provisional, made place.DirKey) {
	f.local.moveDir(provisional, made) // its desktop files and special nodes go with it
	v, ok := f.dirNodes.Load(provisional)
	if !ok {
		return // the kernel forgot it: a lookup makes it anew
	}
	n := v.(*dirNode)
	f.inos.Add(made.ID, n.StableAttr().Ino)
	n.setKey(made)
}

// OnForget takes the folder out of f.dirNodes: the kernel forgot it.
func (n *dirNode) OnForget() { n.fsys.dirNodes.CompareAndDelete(n.dirKey(), n) }

var _ = (gofs.NodeOnForgetter)((*dirNode)(nil))

// ForgetKernelEntries has the kernel forget every file entry it keeps (every
// listing was dropped: SIGHUP, .ctl/refresh), so that the next access of
// each looks it up in a new listing. Folders' entries stay (1 s).
// It returns at once; the kernel is told in the background.
func (f *FS) ForgetKernelEntries() {
	root := f.root
	if root == nil {
		return
	}
	go func() {
		stack := []*gofs.Inode{root.EmbeddedInode()}
		for len(stack) > 0 {
			in := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for name, ch := range in.Children() {
				switch op := ch.Operations().(type) {
				case *fileNode:
					if op.refreshStaged() == nil {
						in.NotifyEntry(name)
					}
				case *dirNode, *rootNode, *computersNode:
					stack = append(stack, ch)
				}
			}
		}
	}()
}

// KernelRequests count what the kernel asked the daemon for files: lookups
// of names in storage folders (each entry of a listing read with its
// attributes, readdirplus, counts as one), getattrs, opens, reads and writes of
// files. What the kernel answers from what it keeps is not counted
// (.ctl/stats "kernel").
type KernelRequests struct {
	Lookups, Getattrs, Opens, Reads, Writes int64
}

type kernelCounters struct{ lookups, getattrs, opens, reads, writes atomic.Int64 }

// KernelRequests returns the counters now.
func (f *FS) KernelRequests() KernelRequests {
	c := &f.asked
	return KernelRequests{Lookups: c.lookups.Load(), Getattrs: c.getattrs.Load(), Opens: c.opens.Load(), Reads: c.reads.Load(), Writes: c.writes.Load()}
}
