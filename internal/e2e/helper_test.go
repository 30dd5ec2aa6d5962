package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// TestMountHelperAndFstab mounts through mount -t fuse.orgfs and through an
// fstab line, both in the background, as mount(8) runs the helper.
func TestMountHelperAndFstab(t *testing.T) {
	if _, err := exec.LookPath("mount"); err != nil {
		t.Fatal("mount(8) is needed")
	}
	const link = "/sbin/mount.fuse.orgfs"
	if old, err := os.Readlink(link); err == nil {
		t.Cleanup(func() { os.Remove(link); os.Symlink(old, link) })
	} else if _, err := os.Lstat(link); err == nil {
		t.Fatalf("%s exists and is not a link; the test will not replace it", link)
	}
	os.Remove(link)
	if err := os.Symlink(binary, link); err != nil {
		t.Fatalf("the test needs to install %s (as root): %v", link, err)
	}
	t.Cleanup(func() { os.Remove(link) })

	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedDemo})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir := t.TempDir()
	opts := "credentials=" + creds + ",cache_dir=" + t.TempDir() + ",log_file=" + filepath.Join(t.TempDir(), "log") + ",_netdev,x-systemd.requires=network-online.target"
	t.Cleanup(func() { exec.Command("fusermount3", "-u", "-z", dir).Run() })

	check := func(how string, cmd *exec.Cmd) {
		t.Helper()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "mounted at") {
			t.Fatalf("%s: %v: %s", how, err, out)
		}
		// It returned once the mount answers, and serves in the background.
		if b, err := os.ReadFile(filepath.Join(dir, "shared", "Welcome.txt")); err != nil || len(b) == 0 {
			t.Fatalf("%s: reading through the mount: %v", how, err)
		}
		if code, out := orgfsCmd(t, "unmount", dir); code != 0 {
			t.Fatalf("%s: unmount: %d %s", how, code, out)
		}
		if mounted(dir) {
			t.Fatalf("%s: still mounted", how)
		}
	}
	check("mount -t fuse.orgfs", exec.Command("mount", "-t", "fuse.orgfs", "-o", opts, "orgfs", dir))
	fstab := filepath.Join(t.TempDir(), "fstab")
	os.WriteFile(fstab, []byte("# a test fstab\norgfs "+dir+" fuse.orgfs "+opts+",noauto 0 0\n"), 0o644)
	check("an fstab line", exec.Command("mount", "-T", fstab, dir))

	// A mount that cannot come up says why, and mount(8) fails.
	out, err := exec.Command("mount", "-t", "fuse.orgfs", "-o", "credentials=/nonexistent.json", "orgfs", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "nonexistent.json") {
		t.Errorf("mount with missing credentials: %v: %s", err, out)
	}
}

// TestSystemdNotify: under Type=notify the daemon says READY once the mount
// answers, STATUS with the queue, STOPPING while it drains.
func TestSystemdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	t.Setenv("NOTIFY_SOCKET", sock)
	dir := t.TempDir()
	d := startDaemon(t, dir)
	next := func(want string, within time.Duration) string {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case m := <-msgs:
				if strings.Contains(m, want) {
					return m
				}
			case <-deadline:
				t.Fatalf("no %q from the daemon within %v: %s", want, within, d.out)
			}
		}
	}
	if m := next("READY=1", 5*time.Second); !strings.Contains(m, "STATUS=mounted at "+dir) {
		t.Errorf("READY without status: %q", m)
	}
	os.WriteFile(filepath.Join(dir, "shared", "n.txt"), []byte("n"), 0o644)
	next("uploads: ", 10*time.Second)
	d.cmd.Process.Signal(os.Interrupt)
	next("STOPPING=1", 10*time.Second)
	d.wait()
}

// TestNonRootMount mounts as an unprivileged user (nobody) where the machine
// lets users use FUSE, and otherwise checks the one-line reason and fix.
func TestNonRootMount(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed to run orgfs as another user")
	}
	// A place nobody can reach: the binary and the mount point.
	base, err := os.MkdirTemp("", "orgfs-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("fusermount3", "-u", "-z", filepath.Join(base, "mnt")).Run(); os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	exe, mnt := filepath.Join(base, "orgfs"), filepath.Join(base, "mnt")
	data, _ := os.ReadFile(binary)
	os.WriteFile(exe, data, 0o755)
	home := filepath.Join(base, "home")
	for _, d := range []string{mnt, home} {
		os.Mkdir(d, 0o777)
		os.Chmod(d, 0o777)
	}
	asNobody := func(args ...string) *exec.Cmd {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", exe}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		return cmd
	}
	f, err := openAs65534("/dev/fuse")
	if err != nil {
		out, err := asNobody("mount", "--demo", mnt).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "may not open /dev/fuse") || !strings.Contains(string(out), "chmod 0666 /dev/fuse") {
			t.Fatalf("a user without /dev/fuse: %v: %s", err, out)
		}
		return
	}
	f.Close()
	out, err := asNobody("mount", "--demo", "--daemon", mnt).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mounted at") {
		t.Fatalf("mount as nobody: %v: %s", err, out)
	}
	if out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "cat", filepath.Join(mnt, "shared", "Welcome.txt")).CombinedOutput(); err != nil || len(out) == 0 {
		t.Errorf("reading as nobody: %v: %s", err, out)
	}
	if out, err := asNobody("unmount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("unmount as nobody: %v: %s", err, out)
	}
	if conf, _ := os.ReadFile("/etc/fuse.conf"); !strings.Contains(string(conf), "\nuser_allow_other") && !strings.HasPrefix(string(conf), "user_allow_other") {
		out, err := asNobody("mount", "--demo", "--allow-other", mnt).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "user_allow_other in /etc/fuse.conf") {
			t.Errorf("--allow-other without user_allow_other: %v: %s", err, out)
		}
	}
}

// openAs65534 tells whether user 65534 may open a file for reading and
// writing, by its mode and owner.
func openAs65534(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o006 != 0o006 {
		return nil, os.ErrPermission
	}
	return os.OpenFile(path, os.O_RDWR, 0)
}
