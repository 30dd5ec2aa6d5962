package fs

// The test env: an emulator with a mount of the data tree of one of its
// organizations (package fstest), and the helpers the mount tests share.

import (
	"bytes"
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

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/writeback"
)

// testEnv is an emulator with a mount of one of its organizations (the
// data tree alone: .ctl is package ctl's).
type testEnv struct {
	*fstest.Env
	hooks *hookTransport // the client's requests, as a test may watch and hold them
	fsys  *FS            // the current mount's
}

// envOptions shape a testEnv.
type envOptions = fstest.Options

// newEnv starts an emulator and mounts it. Everything is undone at the end
// of the test, whatever happens.
func newEnv(t *testing.T, o envOptions) *testEnv {
	t.Helper()
	return newEnvMounted(t, o, MountOptions{})
}

// newEnvMounted is newEnv with the mount's options given (--allow-other).
func newEnvMounted(t *testing.T, o envOptions, mo MountOptions) *testEnv {
	t.Helper()
	e := &testEnv{hooks: &hookTransport{base: http.DefaultTransport.(*http.Transport).Clone()}}
	o.Client.Transport = e.hooks
	e.Env = fstest.Start(t, o, func(env *fstest.Env, dir string) (*fuse.Server, error) {
		e.fsys = New(Deps{Store: env.Store, Log: env.Log},
			Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Umask: 0o022, ReadOnly: env.Opts.ReadOnly, ColdDirectIO: env.Opts.ColdDirectIO})
		return Mount(dir, e.fsys, mo)
	})
	return e
}

// hookTransport is the client's transport: a test may set a hook that sees
// every request (API and object storage) before it is sent (answered false)
// and again once its answer's header is in, before the client gets it
// (answered true; the service has acted and its answer is fixed). A hook may
// block, to hold a request at either point; a caller that gave up while its
// answer was held gets its context's error, as the client does when it gives
// up with the answer on its way.
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
		if cerr := r.Context().Err(); cerr != nil {
			resp.Body.Close()
			return nil, cerr
		}
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
	e.T.Cleanup(func() { e.hooks.hook.Store(nil) })
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

// unmount ends the current mount (a later Mount makes a new one).
func (e *testEnv) unmount() {
	e.T.Helper()
	e.Unmount(e.fsys.DeleteUnlinked) // as orgfs mount does once the mount ended
}

func (e *testEnv) root(machineID int64) int64 {
	id, err := e.Emu.RootID(e.Org, machineID)
	if err != nil {
		e.T.Fatal(err)
	}
	return id
}

// put creates (or replaces) a file on the service, server-side.
func (e *testEnv) put(machineID, parent int64, name string, data []byte) int64 {
	e.T.Helper()
	id, err := e.Emu.CreateFile(e.Org, machineID, parent, name, bytes.NewReader(data))
	if err != nil {
		e.T.Fatal(err)
	}
	return id
}

func (e *testEnv) mkdir(machineID, parent int64, name string) int64 {
	e.T.Helper()
	id, err := e.Emu.CreateDir(e.Org, machineID, parent, name)
	if err != nil {
		e.T.Fatal(err)
	}
	return id
}

// apiRequests is the total of API requests answered.
func (e *testEnv) apiRequests() int64 {
	var n int64
	for _, v := range e.Emu.Stats().Requests {
		n += v
	}
	return n
}

func (e *testEnv) objectGets() int64 { return e.Emu.Stats().Objects.Gets }

func (e *testEnv) allRequests() int64 {
	st := e.Emu.Stats()
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
	names := fstest.ListNames(t, dir)
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
	e.T.Helper()
	var st writeback.StagingStats
	testkit.WaitFor(e.T, 60*time.Second, "the uploads to finish", func() bool {
		st = e.Store.Staging.Stats()
		return st.Pending == 0 && st.Uploading == 0
	})
	if st.Failed > 0 {
		e.T.Fatalf("uploads failed: %+v %+v", st, e.Store.Staging.Entries())
	}
}

// serviceFile finds shared/PATH on the service through the API.
func (e *testEnv) serviceFile(path string) (api.File, bool) {
	e.T.Helper()
	parent := int64(0)
	var cur api.File
	for _, name := range strings.Split(path, "/") {
		found := false
		files, err := e.Client.SharedFiles(e.T.Context(), api.ListFilesRequest{ParentID: parent}).Collect()
		if err != nil {
			e.T.Fatal(err)
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
	e.T.Helper()
	f, ok := e.serviceFile(path)
	if !ok {
		e.T.Fatalf("shared/%s is not on the service", path)
	}
	if f.Size == 0 {
		return []byte{}
	}
	link, err := e.Client.FileURL(e.T.Context(), f.ID)
	if err != nil {
		e.T.Fatal(err)
	}
	r, err := e.Client.ReadRange(e.T.Context(), link.URL, 0, -1)
	if err != nil {
		e.T.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		e.T.Fatal(err)
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

// closeOnce closes c unless it is closed.
func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}
