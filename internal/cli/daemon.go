package cli

// Running in the background: orgfs mount --daemon starts itself again as a
// child and returns once the child's mount answers.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// daemonEnv marks the child of orgfs mount --daemon; its value is the fd of
// the pipe to tell the parent "ready" (or the error) on.
const daemonEnv = "ORGFS_DAEMON_CHILD"

// daemonize starts orgfs mount again in the background with the same
// arguments and returns once its mount answers (or with its error).
func daemonize(args []string, dir string, o mountOptions, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logFile := o.Log.File
	if logFile == "" {
		base, err := cacheHome()
		if err != nil {
			return fmt.Errorf("no place for the log (give --log-file): %w", err)
		}
		abs, _ := filepath.Abs(dir)
		logFile = filepath.Join(base, "orgfs", "logs", strings.Trim(strings.ReplaceAll(abs, "/", "-"), "-")+".log")
		if err := os.MkdirAll(filepath.Dir(logFile), 0o700); err != nil {
			return err
		}
		args = append([]string{"--log-file", logFile}, args...)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, append([]string{"mount"}, args...)...)
	cmd.Env = append(os.Environ(), daemonEnv+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "ready" {
		fmt.Fprintf(stdout, "orgfs: mounted at %s in the background (pid %d, log %s); 'orgfs unmount %s' ends it\n", dir, cmd.Process.Pid, logFile, dir)
		cmd.Process.Release()
		return nil
	}
	state, _ := cmd.Process.Wait()
	msg := strings.TrimPrefix(line, "error: ")
	if msg == "" {
		msg = fmt.Sprintf("the daemon ended (%v) before the mount answered; see %s", state, logFile)
	}
	return errors.New(msg)
}

// daemonChild reports to the parent of orgfs mount --daemon, once: "ready"
// when err is nil, else the error. It does nothing in a foreground mount.
func daemonChild(err error) {
	fd := os.Getenv(daemonEnv)
	if fd == "" {
		return
	}
	os.Unsetenv(daemonEnv)
	f := os.NewFile(3, "daemon-pipe")
	if f == nil || fd != "3" {
		return
	}
	defer f.Close()
	if err != nil {
		fmt.Fprintf(f, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	fmt.Fprintln(f, "ready")
}
