package fs

// The test env: an emulator with a mount of one of its organizations, and
// the helpers the mount tests share.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// testEnv is an emulator with a mount of one of its organizations.
type testEnv struct {
	t        *testing.T
	srv      *emulator.Server
	emu      *emulator.Emulator
	org      string
	client   *api.Client
	dir      string // the mount point
	cacheDir string
	opts     envOptions
	hooks    *hookTransport // the client's requests, as a test may watch and hold them

	server  *fuse.Server
	fsys    *FS
	store   *cache.Store
	content *cache.Content
	fetcher *cache.Fetcher
	bundler *cache.Bundler
	staging *cache.Staging
	dirs    *cache.Dirs
}

type envOptions struct {
	org        string        // default org-a
	seed       string        // default empty
	dirTTL     time.Duration // default 1 minute
	cacheMax   int64
	perPage    int // listing page size; default 1000
	emu        emulator.Options
	bundle     cache.BundleOptions // tuning of the bundler (client, content and dir are filled in)
	readOnly   bool
	writeBack  time.Duration  // default 50ms
	stagingDir string         // default CACHE/staging
	log        *logrus.Logger // the mount's log; default testkit.Log
}

// newEnv starts an emulator and mounts it. Everything is undone at the end
// of the test, whatever happens.
func newEnv(t *testing.T, o envOptions) *testEnv {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("FUSE is not available (%v): the mount tests need /dev/fuse", err)
	}
	if o.org == "" {
		o.org = emulator.OrgA
	}
	if o.seed == "" {
		o.seed = emulator.SeedEmpty
	}
	if o.dirTTL == 0 {
		o.dirTTL = time.Minute
	}
	if o.perPage == 0 {
		o.perPage = 1000
	}
	o.emu.Seed = o.seed
	srv := emutest.Start(t, o.emu)
	// The client signs with the service's clock, so a test may move it.
	hooks := &hookTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	client := testkit.Client(t, srv, o.org, api.Options{PerPage: o.perPage, Clock: o.emu.Now, Transport: hooks})
	e := &testEnv{t: t, srv: srv, emu: srv.Emulator, org: o.org, client: client, cacheDir: t.TempDir(), opts: o, hooks: hooks}
	e.mount()
	return e
}

// hookTransport is the client's transport: a test may set a hook that sees
// every request (API and object storage) before it is sent (answered false)
// and again once its answer's header is in, before the client gets it
// (answered true; the service has acted and its answer is fixed). A hook may
// block, to hold a request at either point.
type hookTransport struct {
	base http.RoundTripper
	hook atomic.Pointer[func(r *http.Request, answered bool)]
}

func (h *hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f := h.hook.Load(); f != nil {
		(*f)(r, false)
	}
	resp, err := h.base.RoundTrip(r)
	if f := h.hook.Load(); f != nil && err == nil {
		(*f)(r, true)
	}
	return resp, err
}

// setHook sets the hook (nil: none); it is removed at the end of the test.
func (e *testEnv) setHook(f func(r *http.Request, answered bool)) {
	if f == nil {
		e.hooks.hook.Store(nil)
		return
	}
	e.hooks.hook.Store(&f)
	e.t.Cleanup(func() { e.hooks.hook.Store(nil) })
}

// isListing reports whether r lists folder parent of shared/.
func isListing(r *http.Request, parent int64) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/files") &&
		r.URL.Query().Get("parent_id") == fmt.Sprint(parent)
}

// isComplete reports whether r completes an upload.
func isComplete(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/complete")
}

// mount mounts the tree on a new mount point, with the env's cache dir.
func (e *testEnv) mount() {
	t := e.t
	t.Helper()
	bo := e.opts.bundle
	if bo.PollInterval == 0 {
		bo.PollInterval = 20 * time.Millisecond
	}
	store, err := cache.OpenStore(cache.StoreOptions{
		Dir: e.cacheDir, StagingDir: e.opts.stagingDir, Client: e.client, MaxSize: e.opts.cacheMax,
		DirCacheTime: e.opts.dirTTL, WriteBack: cmp.Or(e.opts.writeBack, 50*time.Millisecond),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, ReadOnly: e.opts.readOnly,
		Bundle: bo, Log: testkit.Log(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.store, e.content, e.bundler, e.fetcher, e.dirs, e.staging = store, store.Content, store.Bundler, store.Fetcher, store.Dirs, store.Staging
	log := e.opts.log
	if log == nil {
		log = testkit.Log(t)
	}
	fsys := New(Deps{Store: store, Admin: e.client, Log: log},
		Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Umask: 0o022, ReadOnly: e.opts.readOnly, DirCacheTime: e.opts.dirTTL})
	e.dir = t.TempDir()
	e.fsys = fsys
	e.server, err = Mount(e.dir, fsys, MountOptions{})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	server, dir := e.server, e.dir
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			exec.Command("fusermount3", "-u", "-z", dir).Run()
			testkit.Detach(dir)
		}
		store.Close()
	})
}

// unmount ends the current mount (a later mount() makes a new one).
func (e *testEnv) unmount() {
	e.t.Helper()
	if err := e.server.Unmount(); err != nil {
		e.t.Fatalf("unmount: %v", err)
	}
	e.fsys.DeleteUnlinked() // as orgfs mount does once the mount ended
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e.staging != nil {
		if err := e.staging.Drain(ctx); err != nil {
			e.t.Fatalf("drain: %v", err)
		}
	}
	e.store.Close()
}

func (e *testEnv) path(parts ...string) string {
	return filepath.Join(append([]string{e.dir}, parts...)...)
}

func (e *testEnv) root(machineID int64) int64 {
	id, err := e.emu.RootID(e.org, machineID)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// put creates (or replaces) a file on the service, server-side.
func (e *testEnv) put(machineID, parent int64, name string, data []byte) int64 {
	e.t.Helper()
	id, err := e.emu.CreateFile(e.org, machineID, parent, name, bytes.NewReader(data))
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *testEnv) mkdir(machineID, parent int64, name string) int64 {
	e.t.Helper()
	id, err := e.emu.CreateDir(e.org, machineID, parent, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// requests is how many API requests of a route the emulator answered.
func (e *testEnv) requests(route string) int64 { return e.emu.Stats().Requests[route] }

// apiRequests is the total of API requests answered.
func (e *testEnv) apiRequests() int64 {
	var n int64
	for _, v := range e.emu.Stats().Requests {
		n += v
	}
	return n
}

func (e *testEnv) objectGets() int64 { return e.emu.Stats().Objects.Gets }

func (e *testEnv) allRequests() int64 {
	st := e.emu.Stats()
	var n int64
	for _, v := range st.Requests {
		n += v
	}
	return n + st.Objects.Gets + st.Objects.Denied
}

// smallFolder creates a folder of n small files and returns their contents by name.
func (e *testEnv) smallFolder(name string, n int) map[string][]byte {
	dir := e.mkdir(0, e.root(0), name)
	files := map[string][]byte{}
	for i := 0; i < n; i++ {
		fn := fmt.Sprintf("note %03d #%d.txt", i, i%7)
		files[fn] = testkit.RandBytes(1000+i*37, int64(i))
		e.put(0, dir, fn, files[fn])
	}
	return files
}

// checkCopy compares a copied folder with the expected contents.
func checkCopy(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	names := listNames(t, dir)
	if len(names) != len(want) {
		t.Fatalf("the copy has %d files, want %d", len(names), len(want))
	}
	for name, data := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("copy of %q differs (%v)", name, err)
		}
	}
}

// settle waits until nothing is staged: every write reached the service.
func (e *testEnv) settle() {
	e.t.Helper()
	var st cache.StagingStats
	testkit.WaitFor(e.t, 60*time.Second, "the uploads to finish", func() bool {
		st = e.staging.Stats()
		return st.Pending == 0 && st.Uploading == 0
	})
	if st.Failed > 0 {
		e.t.Fatalf("uploads failed: %+v %+v", st, e.staging.Entries())
	}
}

// serviceFile finds shared/PATH on the service through the API.
func (e *testEnv) serviceFile(path string) (api.File, bool) {
	e.t.Helper()
	parent := int64(0)
	var cur api.File
	for _, name := range strings.Split(path, "/") {
		found := false
		files, err := e.client.SharedFiles(e.t.Context(), api.ListFilesRequest{ParentID: parent}).Collect()
		if err != nil {
			e.t.Fatal(err)
		}
		for _, f := range files {
			if f.Name == name {
				cur, parent, found = f, f.ID, true
			}
		}
		if !found {
			return api.File{}, false
		}
	}
	return cur, true
}

// serviceBytes downloads shared/PATH through the API.
func (e *testEnv) serviceBytes(path string) []byte {
	e.t.Helper()
	f, ok := e.serviceFile(path)
	if !ok {
		e.t.Fatalf("shared/%s is not on the service", path)
	}
	if f.Size == 0 {
		return []byte{}
	}
	link, err := e.client.FileURL(e.t.Context(), f.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := e.client.ReadRange(e.t.Context(), link.URL, 0, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func sum(b []byte) string { h := sha256.Sum256(b); return fmt.Sprintf("%x", h) }

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func listNames(t *testing.T, dir string) []string {
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

// dropKernelCache asks the kernel to forget a file's cached pages.
func dropKernelCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fadviseDontNeed(f); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
