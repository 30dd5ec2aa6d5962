package fs

// Lock order, outermost first:
//
//	fileNode.stageMu
//	  → a node's mu (fileNode.mu, dirNode.mu or computersNode.mu; never two nodes' at once)
//	    → package cache's locks (Staging.mu, Dirs.mu, Times.mu, the fetcher's
//	      and the content cache's), taken inside the cache calls; their order
//	      is in cache/doc.go
//
// A node's mu guards that node's fields. It is held for memory only, and for
// cache calls that answer from memory under the cache's own lock:
// fileNode.refreshStaged and fileNode.target call Staging.Lookup,
// Staged.Target, Staged.Uploaded and Dirs.Cached with fileNode.mu held, and
// dirNode.load builds its view (Staged.Target) with dirNode.mu held. A
// node's mu is never held across a request, disk I/O, or a call into go-fuse
// (GetChild, NewInode and Path are called without it; NotifyContent is sent
// from a goroutine).
//
// fileNode.stageMu is held across I/O, on purpose. While a file is first
// staged for writing (fileNode.stageForWriting, from open for writing and
// truncate) it is held across the listing request that finds the service's
// record, the fetch of the whole content over the network, and the copy of it
// to local disk. It serializes the making of staging copies per file: a
// second writer of the same file waits for the first's copy and then opens
// that copy, filled, instead of making another from the service. Only opens
// for writing and truncations of that one file wait on it; reads, lookups and
// other files never take it.
//
// Package cache never calls back into the mount (after an upload the Store
// updates its own caches), and go-fuse calls the nodes with none of ours
// held.

import (
	"os"
	"strings"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/cache"
)

// Options shape the mounted tree.
type Options struct {
	UID, GID    uint32        // owner of every file; default: the daemon's
	Umask       uint32        // taken from 0777 (dirs) and 0666 (files); default 022
	ReadOnly    bool          // refuse every change (recordings/ always does)
	AttrTimeout time.Duration // how long the kernel keeps entries and attributes; default 1s
	// DirCacheTime is how long the values control files show are kept
	// (like listings); default 30s.
	DirCacheTime time.Duration
}

// Deps are the parts of the daemon a mount uses.
type Deps struct {
	// Store holds the caches (its Staging is nil on a read-only mount) and
	// makes every change through them.
	*cache.Store
	// Admin is the service's management interface behind .ctl (nil: no .ctl).
	Admin Admin
	Log   logrus.FieldLogger
}

// FS is what every node of the mount shares.
type FS struct {
	Deps
	opts  Options
	start time.Time
	ctl   *ctlState
	root  *rootNode  // set by Root
	local localFiles // desktop litter, kept in memory (local.go)
	open  openFiles  // read handles per service file; files unlinked while open (unlinked.go)
}

// New makes the tree of a mount.
func New(deps Deps, opts Options) *FS {
	if opts.AttrTimeout <= 0 {
		opts.AttrTimeout = time.Second
	}
	if opts.DirCacheTime <= 0 {
		opts.DirCacheTime = 30 * time.Second
	}
	return &FS{Deps: deps, opts: opts, start: time.Now(), ctl: newCtlState(opts.DirCacheTime)}
}

// Root returns the root node of the mount.
func (f *FS) Root() gofs.InodeEmbedder {
	f.root = &rootNode{node: node{fsys: f}}
	return f.root
}

// forgetPath tells the kernel to drop its entry of the mount's path p (as
// "shared/a/b.txt"), when the kernel has one. It is sent at once, from inside the request that
// removed the file (one on another folder, whose lock that request does not hold).
func (f *FS) forgetPath(p string) {
	if f.root == nil {
		return
	}
	dir := &f.root.Inode
	parts := strings.Split(p, "/")
	for _, name := range parts[:len(parts)-1] {
		if dir = dir.GetChild(name); dir == nil {
			return
		}
	}
	dir.NotifyEntry(parts[len(parts)-1])
}

// MountOptions are how the tree is mounted.
type MountOptions struct {
	AllowOther bool
	Debug      bool   // log every FUSE request
	FsName     string // shown by mount(8) and df; default "orgfs"
}

// Mount mounts the tree at dir. As root it mounts directly; otherwise through
// fusermount3.
func Mount(dir string, f *FS, mo MountOptions) (*fuse.Server, error) {
	if mo.FsName == "" {
		mo.FsName = "orgfs"
	}
	t := f.opts.AttrTimeout
	opts := &gofs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:    mo.AllowOther,
			FsName:        mo.FsName,
			Name:          "orgfs",
			DirectMount:   os.Geteuid() == 0,
			MaxReadAhead:  1 << 20,
			MaxWrite:      1 << 20,
			MaxBackground: 64,
			Debug:         mo.Debug,
		},
		EntryTimeout:    &t,
		AttrTimeout:     &t,
		NegativeTimeout: &t,
		UID:             f.opts.UID,
		GID:             f.opts.GID,
		RootStableAttr:  &gofs.StableAttr{Ino: inoRoot},
		NullPermissions: true, // a mode of 0 (a write-only control file on a read-only mount) stays 0
	}
	// The kernel checks permissions against the modes and owners shown, so
	// --allow-other does not open every file to every user.
	opts.MountOptions.Options = append(opts.MountOptions.Options, "default_permissions")
	opts.MountOptions.Options = append(opts.MountOptions.Options, platformOptions(mo)...)
	if f.opts.ReadOnly {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "ro")
	}
	return gofs.Mount(dir, f.Root(), opts)
}

// writable reports whether changes may be made in an area.
func (f *FS) writable(a cache.Area) bool {
	return !f.opts.ReadOnly && f.Staging != nil && a.Kind != cache.Recordings
}
