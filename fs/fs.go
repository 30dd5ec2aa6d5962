package fs

// The FS of a mount (its options, dependencies and state) and the mounting
// of its tree. The package's lock order is in docs/ARCHITECTURE.md.

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
)

// Options shape the mounted tree.
type Options struct {
	UID, GID    uint32        // owner of every file; default: the daemon's
	Umask       uint32        // taken from 0777 (dirs) and 0666 (files); default 022
	ReadOnly    bool          // refuse every change (recordings/ always does)
	AttrTimeout time.Duration // how long the kernel keeps folders, negative lookups, and files at least (kernel.go); default 1s
	// RenameFetchMax is the most content not in the cache that a folder
	// rename downloads before it returns; past it, EXDEV (rename_tree.go).
	// Default DefaultRenameFetchMax.
	RenameFetchMax int64
	// NoLinks turns symbolic links off: symlink answers ENOTSUP and link
	// files (NAME.rclonelink, links.go) show as the plain files they are on
	// the service. The zero value keeps links on.
	NoLinks bool
	// NoPassthrough keeps reads of cached files in the daemon, also where
	// the kernel allows FUSE passthrough (passthrough.go).
	NoPassthrough bool
	// ColdDirectIO reads a large file opened before its content is all in
	// the cache with direct I/O (file.go's directColdMin), where the kernel
	// allows a shared map of such a file.
	ColdDirectIO bool
}

// DefaultRenameFetchMax is Options.RenameFetchMax's default.
const DefaultRenameFetchMax = 256 << 20

// Deps are the parts of the daemon a mount uses.
type Deps struct {
	// Store holds the caches (its Staging is nil on a read-only mount) and
	// makes every change through them; it is the mount's only way to the
	// service.
	Store *cache.Store
	Log   logrus.FieldLogger
}

// FS is what every node of the mount shares.
type FS struct {
	// Dependencies
	store *cache.Store // the caches, and every change through them; no staging on a read-only mount (Store.Writable)
	log   logrus.FieldLogger

	// Constants
	opts  Options
	start time.Time // the mount's start: the times of what has none

	// Mutable state
	inos        *lru.Cache[int64, uint64] // inode numbers kept across the mount's own uploads, by the new version's id; safe for concurrent use
	pendingInos *lru.Cache[int64, uint64] // inode numbers kept by staged copies (edits, renames), by their number; safe for concurrent use
	local       localFiles                // desktop litter and special nodes, kept in memory (local.go, special.go)
	open        openFiles                 // read handles per service file; files unlinked while open (unlinked.go)
	shadowed    sync.Map                  // ids of link files hidden by an entry of their name, warned of once (links.go); safe for concurrent use
	root        *rootNode                 // set by Mount, before the kernel asks anything (kernel.go)
	dirNodes    sync.Map                  // cache.DirKey -> *dirNode: the folders the kernel knows (kernel.go); safe for concurrent use
	asked       kernelCounters            // what the kernel asked (kernel.go)
	pt          passthrough               // FUSE passthrough (passthrough.go)
	directCold  atomic.Bool               // large files opened cold are read with direct I/O (Options.ColdDirectIO, file.go); set by Mount
}

// New makes the tree of a mount.
func New(deps Deps, opts Options) *FS {
	if opts.RenameFetchMax == 0 {
		opts.RenameFetchMax = DefaultRenameFetchMax
	}
	if opts.AttrTimeout <= 0 {
		opts.AttrTimeout = time.Second
	}
	inos, err := lru.New[int64, uint64](keptInos)
	if err != nil {
		panic(err) // only for a size below 1
	}
	pending, err := lru.New[int64, uint64](keptInos)
	if err != nil {
		panic(err)
	}
	f := &FS{store: deps.Store, log: deps.Log, opts: opts, start: time.Now(), inos: inos, pendingInos: pending}
	f.pt.chosen, f.pt.live, f.pt.writers = make(map[<-chan struct{}]int32), make(map[fileKey]int), make(map[*stagedHandle]struct{})
	deps.Store.SetLive(f.liveFile)
	deps.Store.SetFolderMade(f.folderMade)
	f.watchDirs()
	return f
}

// keptInos is how many inode numbers of files the mount uploaded it keeps
// for their new versions.
const keptInos = 1 << 16

// MountOptions are how the tree is mounted, and what its root holds besides
// the storage.
type MountOptions struct {
	AllowOther bool
	Debug      bool   // log every FUSE request
	FsName     string // shown by mount(8) and df; default "orgfs"
	// Ctl is the control tree shown as .ctl in the root (package fs/ctl's,
	// made over this FS); nil: no .ctl.
	Ctl gofs.InodeEmbedder
}

// maxWrite is the largest WRITE the kernel sends.
const maxWrite = 1 << 20

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
			MaxWrite:      maxWrite,
			MaxBackground: 64,
			// O_TRUNC comes with the open, which truncates: without it the
			// kernel truncates after the open, with no handle, and the
			// write-back could upload the empty file before the first
			// write (an empty version, or an empty conflict copy).
			// DIRECT_IO_ALLOW_MMAP lets a file opened with direct I/O be
			// mapped shared (file.go's cold reads).
			ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_DIRECT_IO_ALLOW_MMAP,
			Debug:             mo.Debug,
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
	f.root = &rootNode{node: node{fsys: f}, ctl: mo.Ctl}
	raw := &ptRaw{RawFileSystem: gofs.NewNodeFS(f.root, opts), pt: &f.pt}
	server, err := fuse.NewServer(raw, dir, &opts.MountOptions)
	if err != nil {
		return nil, err
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return nil, err
	}
	f.probePassthrough(server)
	// Without the kernel's DIRECT_IO_ALLOW_MMAP (Linux 6.6+), a file opened
	// with direct I/O cannot be mapped shared: cold reads keep the page cache.
	f.directCold.Store(f.opts.ColdDirectIO && server.KernelSettings().Flags64()&fuse.CAP_DIRECT_IO_ALLOW_MMAP != 0)
	return server, nil
}

// writable reports whether changes may be made in an area.
func (f *FS) writable(a place.Area) bool {
	return !f.opts.ReadOnly && f.store.Writable() && a.Kind != place.Recordings
}
