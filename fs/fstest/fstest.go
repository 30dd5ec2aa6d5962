// Package fstest mounts trees of package fs for the tests of fs and fs/ctl:
// an emulator, a client of one of its organizations, the caches over it and
// a real FUSE mount of a tree the test builds over them, all undone at the
// end of the test. It imports neither fs nor fs/ctl (the tests of fs
// itself use it): the test builds and mounts its tree in a MountFunc.
package fstest

// Locks: none; an Env belongs to its test's goroutine.

import (
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// Options shape an Env; the zero value is a mount of an empty organization.
type Options struct {
	Org        string        // default org-a
	Seed       string        // default empty
	DirTTL     time.Duration // the listing cache time; default 1 minute
	IOTimeout  time.Duration // how long an operation waits on the service (--io-timeout); default: no limit
	CacheMax   int64         // the content cache's budget; default the cache's
	ReadAhead  int64         // how far sequential reading fetches ahead (--read-ahead); default the cache's
	DirAhead   int           // the most folders listed ahead of a reader listing folders (--dir-read-ahead); default 0, none
	PerPage    int           // listing page size; default 1000
	Emu        emulator.Options
	Bundle     cache.BundleOptions // tuning of the bundler (client, content and dir are filled in)
	ReadOnly   bool
	WriteBack  time.Duration  // default 50ms
	StagingDir string         // default CACHE/staging
	Desk       string         // the desk's name in conflict copies' names
	Log        *logrus.Logger // the mount's log; default testkit.Log
	StoreLog   *logrus.Logger // the caches' log (package cache); default testkit.Log
	// Client tunes the API client (a transport that watches requests); its
	// PerPage and Clock are filled in.
	Client api.Options

	ColdDirectIO bool // --cold-direct-io: large files opened cold are read with direct I/O
}

// A MountFunc builds a tree over the env's store (e.Store, e.Log) and mounts
// it at dir.
type MountFunc func(e *Env, dir string) (*fuse.Server, error)

// Env is an emulator with a mount of one of its organizations.
type Env struct {
	T        *testing.T
	Srv      *emulator.Server
	Emu      *emulator.Emulator
	Org      string
	Client   *api.Client
	CacheDir string
	Opts     Options
	Log      *logrus.Logger // the mount's log

	// Set by each Mount.
	Dir    string // the mount point
	Server *fuse.Server
	Store  *cache.Store

	mount MountFunc
}

// Start starts an emulator and mounts it with mount. Everything is undone at
// the end of the test, whatever happens.
func Start(t *testing.T, o Options, mount MountFunc) *Env {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("FUSE is not available (%v): the mount tests need /dev/fuse", err)
	}
	o.Org = cmp.Or(o.Org, emulator.OrgA)
	o.Seed = cmp.Or(o.Seed, emulator.SeedEmpty)
	o.DirTTL = cmp.Or(o.DirTTL, time.Minute)
	o.PerPage = cmp.Or(o.PerPage, 1000)
	o.Emu.Seed = o.Seed
	srv := emutest.Start(t, o.Emu)
	// The client signs with the service's clock, so a test may move it.
	co := o.Client
	co.PerPage, co.Clock = o.PerPage, o.Emu.Now
	client := testkit.Client(t, srv, o.Org, co)
	log := o.Log
	if log == nil {
		log = testkit.Log(t)
	}
	e := &Env{T: t, Srv: srv, Emu: srv.Emulator, Org: o.Org, Client: client, CacheDir: t.TempDir(), Opts: o, Log: log, mount: mount}
	e.Mount()
	return e
}

// Mount opens the caches in the env's cache dir and mounts a new tree on a
// new mount point (after Unmount, or beside the mount still there).
func (e *Env) Mount() {
	t := e.T
	t.Helper()
	bo := e.Opts.Bundle
	if bo.PollInterval == 0 {
		bo.PollInterval = 20 * time.Millisecond
	}
	store, err := cache.OpenStore(cache.StoreOptions{
		Dir: e.CacheDir, StagingDir: e.Opts.StagingDir, Client: e.Client, MaxSize: e.Opts.CacheMax,
		DirCacheTime: e.Opts.DirTTL, WriteBack: cmp.Or(e.Opts.WriteBack, 50*time.Millisecond),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, ReadOnly: e.Opts.ReadOnly,
		Bundle: bo, Log: cmp.Or(e.Opts.StoreLog, testkit.Log(t)), Desk: e.Opts.Desk, IOTimeout: e.Opts.IOTimeout, ReadAhead: e.Opts.ReadAhead,
		DirReadAhead: e.Opts.DirAhead,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.Store = store
	e.Dir = t.TempDir()
	e.Server, err = e.mount(e, e.Dir)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	server, dir := e.Server, e.Dir
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			exec.Command("fusermount3", "-u", "-z", dir).Run()
			testkit.Detach(dir)
		}
		store.Close()
	})
}

// Another is a second desk of the env's organization: a mount of the same
// emulator with its own client, cache dir and tree (mount), named desk in
// its conflict copies. It is undone at the end of the test.
func (e *Env) Another(desk string, log *logrus.Logger, mount MountFunc) *Env {
	e.T.Helper()
	co := e.Opts.Client
	co.PerPage, co.Clock = e.Opts.PerPage, e.Opts.Emu.Now
	o := e.Opts
	o.Desk, o.Log = desk, log
	if log == nil {
		log = testkit.Log(e.T)
	}
	b := &Env{T: e.T, Srv: e.Srv, Emu: e.Emu, Org: e.Org, Client: testkit.Client(e.T, e.Srv, e.Org, co),
		CacheDir: e.T.TempDir(), Opts: o, Log: log, mount: mount}
	b.Mount()
	return b
}

// Unmount ends the current mount (a later Mount makes a new one): ended
// runs once the mount ended (as orgfs mount deletes the files unlinked while
// open), then the uploads drain and the caches close. A file left staged
// fails the test (UnmountLeaving allows it).
func (e *Env) Unmount(ended func()) {
	e.T.Helper()
	if left := e.UnmountLeaving(ended); left != nil {
		e.T.Fatalf("drain: %v", left)
	}
}

// UnmountLeaving is Unmount that returns the drain's word on the files it
// left staged (offline: they wait for the next start) instead of failing.
func (e *Env) UnmountLeaving(ended func()) error {
	e.T.Helper()
	if err := e.Server.Unmount(); err != nil {
		e.T.Fatalf("unmount: %v", err)
	}
	if ended != nil {
		ended()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var left error
	if e.Store.Writable() {
		left = e.Store.Drain(ctx)
	}
	e.Store.Close()
	return left
}

func (e *Env) Path(parts ...string) string {
	return filepath.Join(append([]string{e.Dir}, parts...)...)
}

// Requests is how many API requests of a route the emulator answered.
func (e *Env) Requests(route string) int64 { return e.Emu.Stats().Requests[route] }

// ListNames are the names in dir, as os.ReadDir gives them.
func ListNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// CannotRemove checks that op (rmdir, rm or mv) of path p answers EPERM and
// leaves p where it is: an entry of a folder whose entries are fixed.
func CannotRemove(t *testing.T, op, p string) {
	t.Helper()
	var err error
	switch op {
	case "rmdir":
		err = syscall.Rmdir(p)
	case "rm":
		err = syscall.Unlink(p)
	case "mv":
		err = syscall.Rename(p, p+".moved")
	default:
		t.Fatalf("CannotRemove: no operation %q", op)
	}
	if !errors.Is(err, syscall.EPERM) {
		t.Errorf("%s %s: %v, want EPERM", op, p, err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("%s is gone after %s: %v", p, op, err)
	}
}
