package cli

// orgfs mount: its options, the steps of a mount's life (credentials, cache
// dir, stores, tree, serving), signals and the drain of the uploads at exit.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	orgfs "github.com/orgfs/orgfs/fs"
	"github.com/orgfs/orgfs/fs/ctl"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/logging"
	"github.com/orgfs/orgfs/internal/units"
	"github.com/orgfs/orgfs/writeback"
)

// mountOptions are the flags of "orgfs mount".
type mountOptions struct {
	Credentials  string
	Demo         bool
	CacheDir     string
	CacheMaxSize units.Size
	DirCacheTime time.Duration
	PinRefresh   time.Duration
	DirReadAhead int
	ReadAhead    units.Size
	RenameFetch  units.Size
	Transfers    int
	WriteBack    time.Duration
	DrainTimeout time.Duration
	IOTimeout    time.Duration
	ReadOnly     bool
	Links        bool
	Passthrough  bool
	ColdDirectIO bool
	UID, GID     uint32
	Umask        uint32
	AllowOther   bool
	Daemon       bool
	MetricsAddr  string
	DeskName     string
	DebugFUSE    bool
	GCPercent    int
	CPUProfile   string
	Log          logging.Options
}

func defaultMountOptions() mountOptions {
	return mountOptions{
		CacheMaxSize: 10 << 30,
		DirCacheTime: 30 * time.Second,
		DirReadAhead: 64,
		RenameFetch:  orgfs.DefaultRenameFetchMax,
		Transfers:    16,
		WriteBack:    2 * time.Second,
		DrainTimeout: 5 * time.Minute,
		IOTimeout:    time.Minute,
		Links:        true,
		Passthrough:  true,
		UID:          uint32(os.Geteuid()),
		GID:          uint32(os.Getegid()),
		Umask:        0o022,
		DeskName:     hostName(),
		GCPercent:    defaultGCPercent,
		Log:          logging.Defaults(),
	}
}

// hostName is the machine's short name: the default --desk-name.
func hostName() string {
	h, _ := os.Hostname()
	h, _, _ = strings.Cut(h, ".")
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '(' || r == ')' || r < ' ' {
			return '-'
		}
		return r
	}, h)
}

const mountSynopsis = ` MOUNTPOINT

Mounts the organization's storage at MOUNTPOINT: shared/, computers/<name>/ and
recordings/. Credentials come from --credentials FILE (JSON: endpoint, key,
secret) or from ORGFS_ENDPOINT, ORGFS_API_KEY and ORGFS_API_SECRET; never from
the command line. --demo needs none: it runs the emulator in-process with demo
data. Runs in the foreground; Ctrl-C, SIGTERM or 'fusermount3 -u MOUNTPOINT'
unmounts (after pending uploads, up to --drain-timeout); SIGHUP drops the
cached listings; SIGUSR1 logs the upload queue and retries failed uploads.`

func runMount(args []string, stdout, stderr io.Writer) error {
	o := defaultMountOptions()
	fs := newFlagSet("mount", mountSynopsis, stdout)
	fs.StringVar(&o.Credentials, "credentials", o.Credentials, "credentials file (JSON: endpoint, key, secret); default: the ORGFS_* environment")
	fs.BoolVar(&o.Demo, "demo", o.Demo, "start the emulator in-process with demo data and mount it")
	fs.StringVar(&o.CacheDir, "cache-dir", o.CacheDir, "where content is cached (default: the user's cache dir, one subfolder per endpoint and key)")
	fs.Var(&o.CacheMaxSize, "cache-max-size", "byte budget of the content cache, e.g. 10G (files open are never evicted)")
	fs.Var((*units.Duration)(&o.DirCacheTime), "dir-cache-time", "how long folder listings are cached")
	fs.Var((*units.Duration)(&o.PinRefresh), "pin-refresh", "how often what is pinned (orgfs pin) is listed again while online, when longer than --dir-cache-time (a large pinned tree lists a folder per request); 0: --dir-cache-time")
	fs.IntVar(&o.DirReadAhead, "dir-read-ahead", o.DirReadAhead, "listing read-ahead: when a folder is listed, its subfolders (and theirs) are listed in the background, up to this many folders ahead of the reader, 16 at once; 0: off")
	fs.Var(&o.ReadAhead, "read-ahead", "how far ahead of a sequential reader content is fetched; default (0): as far as a file's 2x --transfers requests of 8M at once reach, 256M at --transfers 16, 512M at most")
	fs.Var(&o.RenameFetch, "rename-fetch-max", "the most content not in the cache a folder rename downloads before it returns; a larger folder answers EXDEV, so mv copies it with progress")
	fs.IntVar(&o.Transfers, "transfers", o.Transfers, "parallel transfers: files uploaded at once (files of 1M or less: 4x as many), a big file in up to as many parts at once, 4 at least (4x as many parts in all); reads use 4x as many range requests")
	fs.Var((*units.Duration)(&o.WriteBack), "write-back", "wait after a written file's last close before uploading it (a new open cancels the wait); files of 1M or less wait a tenth")
	fs.Var((*units.Duration)(&o.DrainTimeout), "drain-timeout", "at unmount, how long to wait for pending uploads (what is left stays staged for the next mount)")
	fs.Var((*units.Duration)(&o.IOTimeout), "io-timeout", "the longest a file operation waits on the service: EIO when no answer (or, for a read, no byte of content) came for this long, while uploads and shared fetches retry in the background; also cuts a request or transfer that moves no byte for this long")
	fs.BoolVar(&o.ReadOnly, "read-only", o.ReadOnly, "mount read-only")
	fs.BoolVar(&o.Links, "links", o.Links, "symbolic links: ln -s makes NAME.rclonelink on the service holding the target, and such files show as links (rclone's --links); --links=false: ln -s answers ENOTSUP and those files show as they are")
	fs.BoolVar(&o.ColdDirectIO, "cold-direct-io", o.ColdDirectIO, "read a file of 16 MiB or more opened before it is all in the cache with direct I/O (Linux 6.6+): each read goes from the cache file straight into the program's buffer, for less CPU per byte on large reads (cat, cp, dd bs=1M), but every read(2) is a request to the daemon, so programs reading in small pieces (tar, 8-32 KiB reads) are slower")
	fs.BoolVar(&o.Passthrough, "passthrough", o.Passthrough, "FUSE passthrough, where the kernel allows it (Linux 6.9+, as root; orgfs status says): reads of files whose content is whole in the cache go from the cache's files to the program without the daemon; --passthrough=false: every read through the daemon")
	fs.Uint32Var(&o.UID, "uid", o.UID, "owner of every file")
	fs.Uint32Var(&o.GID, "gid", o.GID, "group of every file")
	fs.Var((*octal)(&o.Umask), "umask", "permission bits taken from 0777 (folders) and 0666 (files), octal")
	fs.BoolVar(&o.AllowOther, "allow-other", o.AllowOther, "let other users see the mount (needs user_allow_other in /etc/fuse.conf when not root)")
	fs.BoolVar(&o.Daemon, "daemon", o.Daemon, "serve in the background: return once the mount answers (the log goes to --log-file, by default in the user's cache dir)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "serve Prometheus metrics (the counters of .ctl/stats) at http://ADDR/metrics, e.g. 127.0.0.1:9464")
	fs.StringVar(&o.DeskName, "desk-name", o.DeskName, "this desk's name in the names of conflict copies: \"report (conflict 2026-11-25 1432 NAME).docx\" is this desk's version of a file another writer changed meanwhile")
	fs.BoolVar(&o.DebugFUSE, "debug-fuse", o.DebugFUSE, "log every FUSE request")
	fs.IntVar(&o.GCPercent, "gc-percent", o.GCPercent, "how far the daemon's heap may grow past what it holds before Go collects it, in percent (Go's GOGC, 100 by default in Go): lower keeps the memory down for more CPU; the GOGC environment variable, when set, is the default")
	fs.StringVar(&o.CPUProfile, "cpu-profile", "", "write a CPU profile of the daemon to this file (development)")
	fs.MarkHidden("cpu-profile")
	o.Log.AddFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if fs.NArg() != 1 {
		return usagef("want one MOUNTPOINT (see 'orgfs mount --help')")
	}
	if o.Transfers < 1 {
		return usagef("--transfers %d: want at least 1", o.Transfers)
	}
	if o.IOTimeout <= 0 {
		return usagef("--io-timeout %v: want a positive duration, e.g. 60s", o.IOTimeout)
	}
	if o.DirReadAhead < 0 {
		return usagef("--dir-read-ahead %d: want 0 (off) or more", o.DirReadAhead)
	}
	if o.GCPercent < 1 {
		return usagef("--gc-percent %d: want 1 or more", o.GCPercent)
	}
	setGCPercent(o.GCPercent, fs.Changed("gc-percent"), os.Getenv("GOGC"))
	if o.Demo && o.Credentials != "" {
		return usagef("--demo and --credentials exclude each other")
	}
	if o.Daemon && os.Getenv(daemonEnv) == "" {
		return daemonize(args, fs.Arg(0), o, stdout)
	}
	log, closer, err := o.Log.New()
	if err != nil {
		daemonChild(err)
		return usagef("%v", err)
	}
	defer closer.Close()
	err = mount(fs.Arg(0), o, log, stdout)
	daemonChild(err) // a daemon that never came up says why to its parent
	return err
}

// defaultGCPercent is --gc-percent's default. A mount holds a record for
// every entry of the folders listed and every file node the kernel keeps
// (after a find over 200,000 files, about 160 MB), and Go lets its heap
// grow to twice what it holds before collecting (GOGC=100): the daemon's
// peak RSS was 355-400 MiB after that find, 147-162 MiB after ls -l of
// 100,000 entries. At 40 they are 263-276 and 125-135 MiB (at 50, 290-300
// after the find), for about a fifth more of the daemon's CPU while it
// lists; a cold read of 1 GiB took as long.
const defaultGCPercent = 40

// setGCPercent sets the daemon's GOGC to --gc-percent's value, unless the
// flag was not given and the GOGC environment variable was, which the Go
// runtime applied already.
func setGCPercent(flag int, given bool, env string) {
	if !given && env != "" {
		return
	}
	debug.SetGCPercent(flag)
}

// octal is a pflag.Value of an octal number (a umask).
type octal uint32

func (v *octal) String() string { return fmt.Sprintf("%03o", uint32(*v)) }
func (v *octal) Type() string   { return "octal" }
func (v *octal) Set(s string) error {
	var n uint32
	if _, err := fmt.Sscanf(s, "%o", &n); err != nil || n > 0o777 {
		return fmt.Errorf("want an octal number up to 777")
	}
	*v = octal(n)
	return nil
}

// mount serves the organization's storage at dir until it is unmounted, in
// the steps of a mount's life: credentials, the cache dir, the stores, the
// tree, then serving. What a step opens is closed at exit in the reverse
// order (the uploads drained first).
func mount(dir string, o mountOptions, log *logrus.Logger, stdout io.Writer) error {
	// Signals are caught from the start: a Ctrl-C just after the mount comes
	// up must unmount, not leave a dead mount behind.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	// A closed stdout or stderr (orgfs mount ... | head, a terminal gone)
	// must not kill the mount at its next log line: a write there fails
	// with EPIPE instead of raising SIGPIPE, and the mount serves on.
	signal.Ignore(syscall.SIGPIPE)
	var atExit exitStack
	defer atExit.run()

	creds, err := resolveCredentials(o, log, stdout, &atExit)
	if err != nil {
		return err
	}
	if err := checkMountpoint(dir, log); err != nil {
		return err
	}
	if err := checkFUSE(o.AllowOther); err != nil {
		return err
	}
	client, err := api.New(creds, api.Options{Logger: log, PerPage: 1000, IOTimeout: o.IOTimeout})
	if err != nil {
		return err
	}
	unreachable := probe(creds, log)
	if unreachable != nil && !api.IsOffline(unreachable) {
		return unreachable
	}
	cacheDir, err := openCacheDir(o, creds, &atExit)
	if err != nil {
		return err
	}
	if err := startOffline(unreachable, cacheDir, creds, o.DirCacheTime > 0, log); err != nil {
		return err
	}
	client.Unreachable(unreachable) // offline from the start, when it is
	st, err := openStores(client, cacheDir, creds, unreachable != nil, o, log, &atExit)
	if err != nil {
		return err
	}
	server, fsys, tree, err := mountTree(dir, st, client, o, log)
	if err != nil {
		return err
	}
	if o.MetricsAddr != "" {
		stop, err := serveMetrics(o.MetricsAddr, tree, log)
		if err != nil {
			server.Unmount()
			return fmt.Errorf("--metrics-addr %s: %w", o.MetricsAddr, err)
		}
		atExit.add(stop)
	}
	fmt.Fprintf(stdout, "orgfs: mounted at %s (cache %s). Ctrl-C to unmount.\n", dir, cacheDir)
	log.WithField("mountpoint", dir).WithField("cache", cacheDir).Info("mounted")
	daemonChild(nil)
	sdNotify("READY=1\nSTATUS=mounted at " + dir)
	client.WatchReach(func(api.Reachability) { sdNotify("STATUS=" + statusLine(dir, tree.Stats())) }) // at once, each change
	if err := serve(server, dir, st, tree, sigs, log); err != nil {
		return err
	}
	fsys.DeleteUnlinked()
	if st.Staging != nil {
		ss := st.Staging.Stats()
		sdNotify(fmt.Sprintf("STOPPING=1\nSTATUS=unmounted; sending %d files before exit", ss.Pending+ss.Uploading))
	}
	if st.Staging == nil {
		return nil
	}
	fsys.NotePassthroughWriters() // files still open for writing in passthrough, as they are
	return drainUploads(st.Staging, o, log)
}

// exitError ends a command with a status of its own.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// ExitUploadsLeft is the exit status of a mount that ended with files not
// uploaded (kept staged for the next mount).
const ExitUploadsLeft = 3

// exitStack holds what mount undoes when it returns: the functions run in
// the reverse order of their adding, each as a deferred call of its own.
type exitStack []func()

// add has f run at exit, before everything added earlier.
func (s *exitStack) add(f func()) { *s = append(*s, f) }

func (s *exitStack) run() {
	for _, f := range *s {
		defer f()
	}
}

// resolveCredentials returns the credentials of the service to mount: those
// of the --credentials file or of the environment, or, with --demo, of an
// emulator started in-process (closed at exit).
func resolveCredentials(o mountOptions, log logrus.FieldLogger, stdout io.Writer, atExit *exitStack) (api.Credentials, error) {
	if !o.Demo {
		return loadCredentials(o.Credentials, log)
	}
	srv, err := emulator.Listen(emulator.Options{Seed: emulator.SeedDemo, StepDelay: 2 * time.Second, Log: log.WithField("component", "emulator")}, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		return api.Credentials{}, fmt.Errorf("starting the emulator: %w", err)
	}
	atExit.add(func() { srv.Close() })
	c := srv.Credentials()[0]
	fmt.Fprintf(stdout, "orgfs: demo organization %s served by the in-process emulator at %s\n", c.Name, c.Endpoint)
	return api.Credentials{Endpoint: c.Endpoint, Key: c.Key, Secret: c.Secret}, nil
}

// loadCredentials reads credentials as every command that talks to the
// service does: from the --credentials file when one is given, else from
// ORGFS_ENDPOINT, ORGFS_API_KEY and ORGFS_API_SECRET; never from the
// command line.
func loadCredentials(file string, log logrus.FieldLogger) (api.Credentials, error) {
	if file != "" {
		return api.LoadCredentialsWithLogger(file, log)
	}
	return api.CredentialsFromEnv()
}

// openCacheDir returns the cache dir of this organization, locked for this
// mount until exit: a subfolder, named by the endpoint and key, of
// --cache-dir, else of a temporary dir for a demo (removed at exit), else of
// the user's cache dir. What a mount keeps (content, pending uploads) is
// bound to the identity it was written under: another organization mounted
// with the same --cache-dir never sees nor sends it.
func openCacheDir(o mountOptions, creds api.Credentials, atExit *exitStack) (string, error) {
	base := o.CacheDir
	if base == "" && o.Demo {
		// Each demo run is a new endpoint: a cache kept for it would never be reused.
		d, err := os.MkdirTemp("", "orgfs-demo-cache-")
		if err != nil {
			return "", err
		}
		atExit.add(func() { os.RemoveAll(d) })
		base = d
	}
	if base == "" {
		userCache, err := cacheHome()
		if err != nil {
			return "", fmt.Errorf("no cache dir (give --cache-dir): %w", err)
		}
		base = filepath.Join(userCache, "orgfs")
	}
	sum := sha256.Sum256([]byte(creds.Endpoint + "\x00" + creds.Key))
	cacheDir := filepath.Join(base, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	// Whose it is, for a person looking at the folder (never the secret).
	os.WriteFile(filepath.Join(cacheDir, "endpoint"), []byte(creds.Endpoint+"\n"), 0o600)
	lock, err := lockCacheDir(cacheDir)
	if err != nil {
		return "", err
	}
	atExit.add(func() { lock.Close() })
	return cacheDir, nil
}

// openStores opens the caches in cacheDir and has them closed at exit, the
// pending uploads drained first. Uploads of an earlier run (a crash, a drain
// cut short) resume at once.
func openStores(client *api.Client, cacheDir string, creds api.Credentials, offline bool, o mountOptions, log logrus.FieldLogger, atExit *exitStack) (*cache.Store, error) {
	store, err := cache.OpenStore(cache.StoreOptions{
		Dir: cacheDir, Client: client, MaxSize: int64(o.CacheMaxSize), DirCacheTime: o.DirCacheTime, PinRefresh: o.PinRefresh,
		ReadAhead: int64(o.ReadAhead), Transfers: o.Transfers, WriteBack: o.WriteBack, ReadOnly: o.ReadOnly, Log: log,
		Desk: o.DeskName, IOTimeout: o.IOTimeout, DirReadAhead: o.DirReadAhead,
		Account: cache.AccountOf(creds.Endpoint, creds.Key), StartOffline: offline,
	})
	if err != nil {
		return nil, err
	}
	atExit.add(func() {
		if err := store.Close(); err != nil {
			log.WithError(err).Warn("closing the caches")
		}
	})
	return store, nil
}

// drainUploads waits up to --drain-timeout for the pending uploads. Files
// left (failed, or the time ran out) stay staged: the mount then ends with
// ExitUploadsLeft and says where they are and how they resume. A demo's are
// discarded with its organization, on purpose, and it says so.
func drainUploads(staging *writeback.Staging, o mountOptions, log logrus.FieldLogger) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	if st := staging.Stats(); st.Pending+st.Uploading > 0 {
		log.WithField("pending", st.Pending+st.Uploading).Info("waiting for pending uploads")
	}
	if staging.Drain(ctx) == nil {
		return nil
	}
	left := len(staging.Entries())
	if o.Demo && o.CacheDir == "" {
		log.WithField("files", left).Warn("demo: files not uploaded are discarded with the demo organization")
		return nil
	}
	return &exitError{code: ExitUploadsLeft, msg: fmt.Sprintf(
		"%d files not uploaded (listed in the log above) stay staged in %s; they upload at the next mount of this organization with the same cache dir (SIGUSR1 or the next mount retries failed ones)",
		left, staging.Dir())}
}

// mountTree builds the tree over the stores and mounts it at dir.
func mountTree(dir string, st *cache.Store, client *api.Client, o mountOptions, log logrus.FieldLogger) (*fuse.Server, *orgfs.FS, *ctl.Tree, error) {
	fsys := orgfs.New(orgfs.Deps{Store: st, Log: log},
		orgfs.Options{UID: o.UID, GID: o.GID, Umask: o.Umask, ReadOnly: o.ReadOnly, RenameFetchMax: int64(o.RenameFetch), NoLinks: !o.Links, NoPassthrough: !o.Passthrough, ColdDirectIO: o.ColdDirectIO})
	tree := ctl.New(ctl.Deps{Mount: fsys, Store: st, Admin: client, Log: log}, ctl.Options{DirCacheTime: o.DirCacheTime})
	server, err := orgfs.Mount(dir, fsys, orgfs.MountOptions{AllowOther: o.AllowOther, Debug: o.DebugFUSE, Ctl: tree.Root()})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mounting %s: %w", dir, err)
	}
	return server, fsys, tree, nil
}

// statusLine is what systemd shows of the mount (STATUS=): where, whether
// the service can be reached, the upload queue.
func statusLine(dir string, s *ctl.Stats) string {
	return fmt.Sprintf("mounted at %s; %s; uploads: %d pending, %d in flight, %d failed",
		dir, serviceLine(*s), s.Uploads.Pending, s.Uploads.InFlight, s.Uploads.Failed)
}

// statusEvery is how often systemd is told the upload queue (STATUS=).
var statusEvery = 5 * time.Second

// serve answers signals until the mount ends: SIGHUP drops the cached
// listings and control values (as .ctl/refresh), SIGUSR1 logs the upload
// queue and retries failed uploads (as .ctl/uploads), any other unmounts
// (and, asked again while a detached mount is in use, ends).
func serve(server *fuse.Server, dir string, st *cache.Store, tree *ctl.Tree, sigs <-chan os.Signal, log logrus.FieldLogger) error {
	done := make(chan struct{})
	go func() { server.Wait(); close(done) }()
	detached := false
	status := time.NewTicker(statusEvery)
	defer status.Stop()
	for {
		select {
		case <-status.C:
			sdNotify("STATUS=" + statusLine(dir, tree.Stats()))
		case <-done:
			log.WithField("fetch", fmt.Sprintf("%+v", st.Fetcher.Stats())).Info("unmounted")
			return nil
		case s := <-sigs:
			switch s {
			case syscall.SIGHUP:
				tree.Refresh()
				log.Info("SIGHUP: cached listings and control values dropped")
			case syscall.SIGUSR1:
				logUploadQueue(st.Staging, log)
			default:
				if detached {
					// Asked again while programs still hold files in the detached
					// mount: end now (their next access fails).
					log.WithField("signal", s.String()).Warn("ending while the detached mount is still in use")
					return nil
				}
				log.WithField("signal", s.String()).Info("unmounting")
				detached = unmount(server, dir, log)
			}
		}
	}
}

// logUploadQueue answers SIGUSR1 (as .ctl/uploads shows the queue and takes
// retry): it logs every file in it and retries the failed ones.
func logUploadQueue(staging *writeback.Staging, log logrus.FieldLogger) {
	if staging == nil {
		return
	}
	for _, e := range staging.Entries() {
		log.WithField("upload", e.String()).Info("SIGUSR1: upload queue")
	}
	staging.Retry()
	log.WithField("queue", fmt.Sprintf("%+v", staging.Stats())).Info("SIGUSR1: failed uploads retried")
}

// unmount ends the mount. When programs still use it (EBUSY) it detaches it
// lazily: the path is free at once, and the daemon serves the programs still
// inside until they leave, or until asked to stop again. It reports whether
// it detached.
func unmount(server *fuse.Server, dir string, log logrus.FieldLogger) bool {
	err := server.Unmount()
	if err == nil {
		return false
	}
	if err := lazyUnmount(dir); err != nil {
		log.WithError(err).Error("unmount failed")
		return false
	}
	log.WithError(err).Warn("the mount is in use: detached it; serving the programs still inside until they leave (Ctrl-C again to end now)")
	return true
}
