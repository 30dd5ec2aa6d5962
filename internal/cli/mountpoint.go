package cli

// What a mount checks before it starts: the mount point (missing, mounted,
// not empty, a dead mount left by a crash), the cache dir's lock and default
// place, and a first probe of the service.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/logging"
)

// checkMountpoint refuses a missing, non-directory, mounted or non-empty
// mount point, and clears a dead mount left by a crashed daemon.
func checkMountpoint(dir string, log logrus.FieldLogger) error {
	names, err := firstName(dir)
	if errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) {
		// Reading the folder is what tells: a stat may be answered from the
		// kernel's cache even for a dead mount.
		log.WithField("mountpoint", dir).Warn("clearing a dead mount left by an earlier run (transport endpoint is not connected)")
		if err := lazyUnmount(dir); err != nil {
			return fmt.Errorf("mount point %s is a dead mount and clearing it failed: %w", dir, err)
		}
		names, err = firstName(dir)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mount point %s does not exist", dir)
	}
	if err != nil {
		return fmt.Errorf("mount point %s is not a usable directory: %w", dir, err)
	}
	if isMountPoint(dir) {
		return fmt.Errorf("mount point %s is already a mount (unmount it first: fusermount3 -u %s)", dir, dir)
	}
	if len(names) > 0 {
		return fmt.Errorf("mount point %s is not empty", dir)
	}
	return nil
}

// firstName reads at most one name of a folder.
func firstName(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}

// isMountPoint reports whether something is mounted at dir (it lies on another
// device than its parent).
func isMountPoint(dir string) bool {
	var st, parent syscall.Stat_t
	if syscall.Stat(dir, &st) != nil || syscall.Stat(filepath.Join(dir, ".."), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// lockCacheDir takes an exclusive lock on the cache dir, so two daemons never
// share one cache (one would evict what the other serves). The lock goes with
// the process.
func lockCacheDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("cache dir %s is in use by another orgfs mount (give this one its own --cache-dir)", dir)
	}
	return f, nil
}

// probe makes one cheap request, so bad credentials or an unreachable
// endpoint end the start with one readable line. A service that fails a few
// times (a 5xx, a reset: a blip at boot) is tried again, 5 times within 10 s
// (2 before: the model test's restarts under faults met two in a row).
func probe(creds api.Credentials, log logrus.FieldLogger) error {
	c, err := api.New(creds, api.Options{Logger: logging.Discard(), MaxAttempts: 5, MaxRetryTime: 10 * time.Second, PerPage: 1})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, err := range c.SharedFiles(ctx, api.ListFilesRequest{}).All() {
		if err == nil {
			break
		}
		if api.IsUnauthorized(err) {
			return fmt.Errorf("the service at %s refused the credentials: %w", creds.Endpoint, err)
		}
		if api.IsPermission(err) {
			return fmt.Errorf("these credentials may not list the shared storage at %s: %w", creds.Endpoint, err)
		}
		return fmt.Errorf("cannot reach the service at %s: %w", creds.Endpoint, err)
	}
	log.WithField("endpoint", creds.Endpoint).Debug("service reachable")
	return nil
}

// cacheHome is the user's cache dir; for root without a home (mount(8),
// systemd), /var/cache.
func cacheHome() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil && os.Geteuid() == 0 {
		return "/var/cache", nil
	}
	return d, err
}

// startOffline decides a start the service did not answer (unreachable,
// the probe's offline error; nil: it answered): the mount starts offline
// when the cache dir holds the listings a mount of the same service and
// credentials kept (cache.ListingsFile), and answers from them and the
// cached content until the service is back; else the start fails, in one
// line (also without a listing cache: listings).
func startOffline(unreachable error, cacheDir string, creds api.Credentials, listings bool, log logrus.FieldLogger) error {
	if unreachable == nil {
		return nil
	}
	if !listings {
		return fmt.Errorf("%w (and with --dir-cache-time 0 no listing is kept to start offline from)", unreachable)
	}
	if !cache.HasListings(filepath.Join(cacheDir, cache.ListingsFile), cache.AccountOf(creds.Endpoint, creds.Key)) {
		return fmt.Errorf("%w (and the cache dir %s holds no listings of an earlier mount to start offline from)", unreachable, cacheDir)
	}
	log.WithError(unreachable).Warn("the service cannot be reached: starting offline from the listings and content kept in the cache dir; changes go up when it is back")
	return nil
}
