package fs

// Symbolic links, kept on the service as link files (NAME.rclonelink
// holding the target), on a real mount of the emulator. The suffix is
// written out, not taken from linkSuffix: it is rclone's convention, which
// the service's other clients read and write, not the code's to choose.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orgfs/orgfs/fs/fstest"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// checkLink checks that path is a symlink to target, as lstat, readlink and
// the folder's listing show it, and that the link file's own name shows
// nothing.
func checkLink(t *testing.T, path, target string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("lstat %s: %v", path, err)
	}
	if fi.Mode()&os.ModeSymlink == 0 || fi.Mode().Perm() != 0o777 || fi.Size() != int64(len(target)) {
		t.Errorf("lstat %s: mode %v size %d, want a symlink 0777 of %d bytes", path, fi.Mode(), fi.Size(), len(target))
	}
	if got, err := os.Readlink(path); err != nil || got != target {
		t.Errorf("readlink %s = %q, %v; want %q", path, got, err, target)
	}
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ents, func(d os.DirEntry) bool { return d.Name() == filepath.Base(path) })
	if i < 0 || ents[i].Type() != os.ModeSymlink {
		t.Errorf("the listing of %s does not show %s as a symlink (%v)", filepath.Dir(path), filepath.Base(path), ents)
	}
	if slices.ContainsFunc(ents, func(d os.DirEntry) bool { return strings.HasSuffix(d.Name(), ".rclonelink") && !d.IsDir() }) {
		t.Errorf("the listing of %s shows a link file by its own name (%v)", filepath.Dir(path), ents)
	}
	if _, err := os.Lstat(path + ".rclonelink"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("lstat of the link file's own name %s.rclonelink: %v, want ENOENT", path, err)
	}
}

// wantGone checks that shared/PATH is not on the service.
func (e *testEnv) wantGone(path string) {
	e.T.Helper()
	if _, ok := e.serviceFile(path); ok {
		e.T.Errorf("shared/%s is still on the service", path)
	}
}

// drain uploads every pending file now.
func (e *testEnv) drain() {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(e.T.Context(), time.Minute)
	defer cancel()
	if err := e.Store.Staging.Drain(ctx); err != nil {
		e.T.Fatal(err)
	}
}

// ln -s on the mount: a symlink at once (pending), then on the service as
// NAME.rclonelink holding the target; times set with lutimes and the owner
// with lchown stay; a name of the link files' own form is refused.
func TestSymlinkMadeHere(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: time.Hour}) // pending until drained
	sh := func(parts ...string) string { return e.Path(append([]string{"shared"}, parts...)...) }
	if err := os.Symlink("../docs/a file.txt", sh("ln")); err != nil {
		t.Fatal(err)
	}
	checkLink(t, sh("ln"), "../docs/a file.txt")
	if out := run(t, "ls", "-l", sh()); !strings.Contains(out, "ln -> ../docs/a file.txt") {
		t.Errorf("ls -l shows no link:\n%s", out)
	}
	e.wantGone("ln.rclonelink") // pending: not uploaded yet

	long := strings.Repeat("d/", 2047) + "x" // 4095 bytes, the longest target
	if err := os.Symlink(long, sh("long")); err != nil {
		t.Fatalf("a link of 4095 bytes: %v", err)
	}
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := []unix.Timespec{unix.NsecToTimespec(when.UnixNano()), unix.NsecToTimespec(when.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, sh("ln"), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatalf("lutimes: %v", err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 1234, 5678 // root may give it away
	}
	if err := os.Lchown(sh("ln"), uid, gid); err != nil {
		t.Fatalf("lchown: %v", err)
	}
	expectErrno(t, "a link whose link file's name is over 255 bytes", os.Symlink("x", sh(strings.Repeat("n", 256-len(".rclonelink")))), syscall.ENAMETOOLONG)
	if err := os.Symlink("x", sh(strings.Repeat("n", 255-len(".rclonelink")))); err != nil {
		t.Errorf("a link whose link file's name is 255 bytes: %v", err)
	}
	expectErrno(t, "symlink over an existing link", os.Symlink("x", sh("ln")), syscall.EEXIST)
	expectErrno(t, "a file named as a link file", os.WriteFile(sh("f.rclonelink"), nil, 0o644), syscall.EINVAL)
	expectErrno(t, "a folder named as a link file", os.Mkdir(sh("d.rclonelink"), 0o755), syscall.EINVAL)

	e.drain()
	if got := string(e.serviceBytes("ln.rclonelink")); got != "../docs/a file.txt" {
		t.Errorf("ln.rclonelink on the service holds %q", got)
	}
	if got := string(e.serviceBytes("long.rclonelink")); got != long {
		t.Errorf("long.rclonelink on the service holds %d bytes, want %d", len(got), len(long))
	}
	e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	checkLink(t, sh("ln"), "../docs/a file.txt")
	checkLink(t, sh("long"), long)
	fi, err := os.Lstat(sh("ln"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); !fi.ModTime().Equal(when) || st.Uid != uint32(uid) || st.Gid != uint32(gid) {
		t.Errorf("the link after its upload: time %v owner %d:%d, want %v %d:%d", fi.ModTime(), st.Uid, st.Gid, when, uid, gid)
	}
}

// A link moved over a pending file, and a pending file over a pending link:
// the one displaced is never uploaded.
func TestLinkRenameOverPending(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: time.Hour}) // pending until drained
	sh := func(name string) string { return e.Path("shared", name) }
	for _, err := range []error{
		os.WriteFile(sh("p"), []byte("file p"), 0o644), os.Symlink("tq", sh("q")),
		os.Rename(sh("q"), sh("p")), // a link over a pending file
		os.Symlink("ts", sh("s")), os.WriteFile(sh("r"), []byte("file r"), 0o644),
		os.Rename(sh("r"), sh("s")), // a file over a pending link
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkLink(t, sh("p"), "tq")
	if b, err := os.ReadFile(sh("s")); err != nil || string(b) != "file r" {
		t.Errorf("s: %q %v", b, err)
	}
	e.drain()
	if got := string(e.serviceBytes("p.rclonelink")); got != "tq" {
		t.Errorf("p.rclonelink on the service: %q", got)
	}
	if got := string(e.serviceBytes("s")); got != "file r" {
		t.Errorf("s on the service: %q", got)
	}
	for _, path := range []string{"p", "q.rclonelink", "r", "s.rclonelink"} {
		e.wantGone(path)
	}
}

// A link file put on the service (by rclone, or another desk) shows as a
// symlink; its own name shows nothing. Beside a real entry of the name the
// link shows, the real one shows, with one warning however often the folder
// is listed. A folder named like a link file is a folder.
func TestLinkFileFromTheServiceShowsAsSymlink(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	e.put(0, root, "ln.rclonelink", []byte("/etc/hostname"))
	e.put(0, root, "both", []byte("real"))
	e.put(0, root, "both.rclonelink", []byte("elsewhere"))
	e.mkdir(0, root, "dir.rclonelink")
	dir, hook := e.mountLogged()
	sh := func(name string) string { return filepath.Join(dir, "shared", name) }
	checkLink(t, sh("ln"), "/etc/hostname")
	if fi, err := os.Lstat(sh("both")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("both: %v %v, want the real file", fi, err)
	}
	if fi, err := os.Lstat(sh("dir.rclonelink")); err != nil || !fi.IsDir() {
		t.Errorf("dir.rclonelink: %v %v, want a folder", fi, err)
	}
	for range 2 {
		e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
		if got, want := fstest.ListNames(t, filepath.Join(dir, "shared")), []string{"both", "dir.rclonelink", "ln"}; !slices.Equal(got, want) {
			t.Errorf("shared/ lists %q, want %q", got, want)
		}
	}
	warned := 0
	for _, en := range hook.AllEntries() {
		if strings.Contains(en.Message, "both.rclonelink") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings of the link beside the real file, want 1", warned)
	}
}

// Rename and unlink of links, pending and uploaded: within a folder, into
// another, a link over a file and a file over a link (the displaced one
// leaves the service), a folder with a link in it; unlink removes the link
// file.
func TestLinkRenameAndUnlink(t *testing.T) {
	e := newEnv(t, envOptions{})
	sh := func(parts ...string) string { return e.Path(append([]string{"shared"}, parts...)...) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("t1", sh("a")))
	must(os.Rename(sh("a"), sh("b"))) // pending
	checkLink(t, sh("b"), "t1")
	must(os.Mkdir(sh("sub"), 0o755))
	must(os.WriteFile(sh("f"), []byte("file f"), 0o644))
	must(os.Symlink("t2", sh("g")))
	must(os.Symlink("t3", sh("gone")))
	e.settle()
	must(os.Rename(sh("b"), sh("sub", "c"))) // uploaded, into another folder
	checkLink(t, sh("sub", "c"), "t1")
	must(os.Rename(sh("sub", "c"), sh("f"))) // a link over a file
	checkLink(t, sh("f"), "t1")
	must(os.WriteFile(sh("h"), []byte("file h"), 0o644))
	must(os.Rename(sh("h"), sh("g"))) // a file over a link
	if b, err := os.ReadFile(sh("g")); err != nil || string(b) != "file h" {
		t.Errorf("g after the file was moved over the link: %q %v", b, err)
	}
	must(os.Remove(sh("gone")))
	must(os.Mkdir(sh("tree"), 0o755))
	must(os.Symlink("../f", sh("tree", "ln")))
	must(os.WriteFile(sh("tree", "x"), []byte("x"), 0o644))
	e.settle()
	must(os.Rename(sh("tree"), sh("tree2"))) // a folder with content
	checkLink(t, sh("tree2", "ln"), "../f")
	e.settle()

	for path, want := range map[string]string{"f.rclonelink": "t1", "g": "file h", "tree2/ln.rclonelink": "../f"} {
		if got := string(e.serviceBytes(path)); got != want {
			t.Errorf("shared/%s on the service: %q, want %q", path, got, want)
		}
	}
	for _, path := range []string{"a.rclonelink", "b.rclonelink", "sub/c.rclonelink", "f", "g.rclonelink", "gone.rclonelink"} {
		e.wantGone(path)
	}
	testkit.WaitFor(t, 20*time.Second, "the old folder's deletion", func() bool {
		_, ok := e.serviceFile("tree")
		return !ok
	})
	must(os.Remove(sh("f")))
	if _, err := os.Lstat(sh("f")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("lstat of a link removed: %v", err)
	}
	e.wantGone("f.rclonelink")
}

// Links last across a remount: the one uploaded, read back from the service
// by a new mount.
func TestLinksAfterRemount(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := os.Mkdir(e.Path("shared", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../target", e.Path("shared", "d", "ln")); err != nil {
		t.Fatal(err)
	}
	e.unmount() // uploads what is pending
	e.Mount()
	checkLink(t, e.Path("shared", "d", "ln"), "../target")
}

// shell runs a shell command line with args ($0, $1...): programs run from
// the system, files on the mount only as arguments.
func shell(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh -c %q %q: %v\n%s", script, args, err, out)
	}
	return string(out)
}

// git clone of a repository holding symlinks into the mount succeeds, the
// links are links, and git status is clean right away and once uploaded.
func TestGitCloneWithSymlinks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	e := newEnv(t, envOptions{})
	home := t.TempDir()
	env := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	src := filepath.Join(t.TempDir(), "src")
	shell(t, env, `mkdir -p "$0/lib" "$0/bin" && cd "$0" && git init -q && echo 'echo hi' > lib/tool.sh &&
		ln -s ../lib/tool.sh bin/tool && ln -s lib libs && git add -A && git commit -qm one`, src)
	clone := e.Path("shared", "clone")
	shell(t, env, `git clone -q --no-hardlinks "$0" "$1"`, src, clone)
	checkLink(t, filepath.Join(clone, "bin", "tool"), "../lib/tool.sh")
	checkLink(t, filepath.Join(clone, "libs"), "lib")
	if out := shell(t, env, `cd "$0" && git status --porcelain`, clone); out != "" {
		t.Errorf("git status after the clone:\n%s", out)
	}
	e.settle()
	if out := shell(t, env, `cd "$0" && git status --porcelain && cat bin/tool`, clone); out != "echo hi\n" {
		t.Errorf("git status, then the file through the link, once uploaded:\n%s", out)
	}
	if got := string(e.serviceBytes("clone/bin/tool.rclonelink")); got != "../lib/tool.sh" {
		t.Errorf("the link file on the service: %q", got)
	}
}

// cp -a of a tree holding a relative symlink: the link is made as a link,
// and reads through it reach the file it points at.
func TestCpATreeWithARelativeSymlink(t *testing.T) {
	e := newEnv(t, envOptions{})
	src := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("content a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a.txt", filepath.Join(src, "sub", "ln")); err != nil {
		t.Fatal(err)
	}
	shell(t, nil, `cp -a "$0" "$1"`, src, e.Path("shared"))
	checkLink(t, e.Path("shared", "tree", "sub", "ln"), "../a.txt")
	if b, err := os.ReadFile(e.Path("shared", "tree", "sub", "ln")); err != nil || string(b) != "content a" {
		t.Errorf("reading through the link: %q %v", b, err)
	}
	e.settle()
	if got := string(e.serviceBytes("tree/sub/ln.rclonelink")); got != "../a.txt" {
		t.Errorf("the link file on the service: %q", got)
	}
}

// mountWith mounts the env's store a second time, with opts (the owner
// and umask of the env's mount).
func (e *testEnv) mountWith(opts Options) string {
	t := e.T
	t.Helper()
	opts.UID, opts.GID, opts.Umask = uint32(os.Getuid()), uint32(os.Getgid()), 0o022
	dir := t.TempDir()
	server, err := Mount(dir, New(Deps{Store: e.Store, Log: e.Log}, opts), MountOptions{})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			testkit.Detach(dir)
		}
	})
	return dir
}

// With links off (--links=false), ln -s answers ENOTSUP as before, and a
// link file shows as the plain file it is on the service.
func TestLinksOff(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "ln.rclonelink", []byte("target"))
	dir := e.mountWith(Options{NoLinks: true})
	sh := func(name string) string { return filepath.Join(dir, "shared", name) }
	expectErrno(t, "symlink with links off", os.Symlink("x", sh("new")), syscall.ENOTSUP)
	if fi, err := os.Lstat(sh("ln.rclonelink")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the link file with links off: %v %v, want a plain file", fi, err)
	}
	if b, err := os.ReadFile(sh("ln.rclonelink")); err != nil || string(b) != "target" {
		t.Errorf("the link file's content with links off: %q %v", b, err)
	}
	if _, err := os.Lstat(sh("ln")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("lstat of the link's name with links off: %v, want ENOENT", err)
	}
	if err := os.WriteFile(sh("f.rclonelink"), []byte("x"), 0o644); err != nil {
		t.Errorf("a file named as a link file, with links off: %v", err)
	}
}

// A link keeps its inode number through its renames, as on a disk: moved
// itself (pending, and uploaded), and in a folder renamed with content. The
// kernel asks again at every access (a short attribute timeout), so the
// number is the mount's, not the kernel's memory of it.
func TestLinkKeepsItsInodeThroughRenames(t *testing.T) {
	e := newEnv(t, envOptions{})
	dir := e.mountWith(Options{AttrTimeout: time.Millisecond})
	sh := func(parts ...string) string { return filepath.Join(append([]string{dir, "shared"}, parts...)...) }
	ino := func(path string) uint64 {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	for _, err := range []error{os.Mkdir(sh("tree"), 0o755), os.Symlink("x", sh("tree", "ln")),
		os.WriteFile(sh("tree", "f"), []byte("f"), 0o644), os.Symlink("y", sh("a"))} {
		if err != nil {
			t.Fatal(err)
		}
	}
	a := ino(sh("a"))
	if err := os.Rename(sh("a"), sh("b")); err != nil { // pending, or uploaded meanwhile
		t.Fatal(err)
	}
	e.settle()
	if err := os.Rename(sh("b"), sh("c")); err != nil { // uploaded
		t.Fatal(err)
	}
	if got := ino(sh("c")); got != a {
		t.Errorf("the link's inode after two renames: %d, want %d", got, a)
	}
	ln := ino(sh("tree", "ln"))
	if err := os.Rename(sh("tree"), sh("tree2")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // past the kernel's attribute timeout
	if got := ino(sh("tree2", "ln")); got != ln {
		t.Errorf("the link's inode after its folder's rename: %d, want %d", got, ln)
	}
	checkLink(t, sh("tree2", "ln"), "x")
	checkLink(t, sh("c"), "y")
}

// A link file that holds no target (empty, or with a NUL) shows as a link
// whose readlink is EIO, and rm removes it; a desktop probe name cannot be a
// link (ENOTSUP); chmod through a link changes its target, and the link
// stays 0777.
func TestLinkEdges(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	e.put(0, root, "empty.rclonelink", []byte{})
	e.put(0, root, "nul.rclonelink", []byte("a\x00b"))
	sh := func(name string) string { return e.Path("shared", name) }
	for _, name := range []string{"empty", "nul"} {
		if fi, err := os.Lstat(sh(name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: %v %v, want a symlink", name, fi, err)
		}
		_, err := os.Readlink(sh(name))
		expectErrno(t, "readlink of a link file holding "+name, err, syscall.EIO)
		if err := os.Remove(sh(name)); err != nil {
			t.Errorf("rm %s: %v", name, err)
		}
	}
	e.drain()
	e.wantGone("empty.rclonelink")
	e.wantGone("nul.rclonelink")

	expectErrno(t, "a link named .DS_Store", os.Symlink("x", sh(".DS_Store")), syscall.ENOTSUP)
	expectErrno(t, "a link named ._x", os.Symlink("x", sh("._x")), syscall.ENOTSUP)

	if err := os.WriteFile(sh("target"), []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", sh("ln")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sh("ln"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sh("target")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the target after chmod through the link: %v %v, want 0600", fi, err)
	}
	checkLink(t, sh("ln"), "target")
}

// Two desks, one name: this desk made a link X (pending) while another put a
// file X on the service (and the reverse). The unlink or rename here of what
// this desk shows as X moves only its own entry: the other desk's, which
// this one never showed, stays on the service and shows here after.
func TestLinkBesideAnotherDesksFile(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: time.Hour}) // pending until drained
	sh := func(name string) string { return e.Path("shared", name) }
	root := e.root(0)
	for _, name := range []string{"rm", "mv"} {
		if err := os.Symlink("t", sh(name)); err != nil {
			t.Fatal(err)
		}
		e.put(0, root, name, []byte("another desk's "+name))
	}
	if err := os.WriteFile(sh("f"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.put(0, root, "f.rclonelink", []byte("another desk's link"))
	e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}}) // this desk lists them

	for _, name := range []string{"rm", "f"} {
		if err := os.Remove(sh(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(sh("mv"), sh("moved")); err != nil {
		t.Fatal(err)
	}
	e.drain()
	for name, want := range map[string]string{"rm": "another desk's rm", "mv": "another desk's mv", "f.rclonelink": "another desk's link", "moved.rclonelink": "t"} {
		if got := string(e.serviceBytes(name)); got != want {
			t.Errorf("%s on the service: %q, want %q", name, got, want)
		}
	}
	e.wantGone("rm.rclonelink")
	e.wantGone("f")
	e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	time.Sleep(1100 * time.Millisecond) // the kernel's attribute cache
	if b, err := os.ReadFile(sh("rm")); err != nil || string(b) != "another desk's rm" {
		t.Errorf("rm after the unlink of the link: %q %v, want the other desk's file", b, err)
	}
	checkLink(t, sh("f"), "another desk's link")
}
