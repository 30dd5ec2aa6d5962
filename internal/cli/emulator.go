package cli

// orgfs emulator: the service emulator on loopback, with demo data or empty,
// its state kept in --data-dir and credentials files for scripts.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/logging"
	"github.com/orgfs/orgfs/internal/units"
)

// emulatorOptions are the flags of "orgfs emulator".
type emulatorOptions struct {
	Listen         string
	ObjectsListen  string
	DataDir        string
	Seed           string
	CredentialsDir string
	StepDelay      time.Duration
	Latency        time.Duration
	ObjectLatency  time.Duration
	StreamRate     units.Rate
	FaultRate      float64
	FaultSeed      int64
	ClockOffset    time.Duration
	BenchFileSize  units.Size
	BenchHuge      int
	BenchTree      int
	Dialect        string
	Log            logging.Options
}

func defaultEmulatorOptions() emulatorOptions {
	return emulatorOptions{
		Listen:        "127.0.0.1:8080",
		ObjectsListen: "127.0.0.1:0",
		Seed:          "demo",
		StepDelay:     2 * time.Second,
		Dialect:       emulator.DialectDefault,
		Log:           logging.Defaults(),
	}
}

func runEmulator(args []string, stdout, stderr io.Writer) error {
	o := defaultEmulatorOptions()
	fs := newFlagSet("emulator", "", stdout)
	o.addFlags(fs)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		printDialectSwitches(stdout)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see 'orgfs emulator --help')", fs.Arg(0))
	}
	if err := o.validate(); err != nil {
		return err
	}
	dialect, err := emulator.ParseDialect(o.Dialect)
	if err != nil {
		return usagef("--dialect: %v", err)
	}
	log, closer, err := o.Log.New()
	if err != nil {
		return usagef("%v", err)
	}
	defer closer.Close()

	// Without --data-dir the emulator makes a temporary directory of its
	// own, removed (with the credentials written into it) when it closes.
	srv, err := emulator.Listen(emulator.Options{
		DataDir:        o.DataDir,
		Seed:           o.Seed,
		StepDelay:      o.StepDelay,
		Latency:        o.Latency,
		ObjectLatency:  o.ObjectLatency,
		StreamRate:     int64(o.StreamRate),
		FaultRate:      o.FaultRate,
		FaultSeed:      o.FaultSeed,
		ClockOffset:    o.ClockOffset,
		BenchFileSize:  int64(o.BenchFileSize),
		BenchHugeFiles: o.BenchHuge,
		BenchTreeFiles: o.BenchTree,
		Dialect:        dialect,
		Log:            log,
	}, o.Listen, o.ObjectsListen)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Close(); err != nil {
			log.WithError(err).Error("closing the emulator")
		}
	}()
	credDir := o.CredentialsDir
	if credDir == "" {
		credDir = filepath.Join(srv.Emulator.DataDir(), "credentials")
	}
	if err := srv.WriteCredentials(credDir); err != nil {
		return err
	}
	o.printBanner(stdout, srv, credDir)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("stopping the emulator")
	return nil
}

// addFlags adds the emulator's flags to fs.
func (o *emulatorOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "address of the API (port 0 picks a free port)")
	fs.StringVar(&o.ObjectsListen, "objects-listen", o.ObjectsListen, "address of the object store behind presigned URLs (port 0 picks a free port)")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "keep the organizations' state (DIR/state.json) and file contents (DIR/objects) here across restarts (default: a temporary directory, removed at exit)")
	fs.StringVar(&o.Seed, "seed", o.Seed, "initial content: demo (a populated organization), empty, or bench (empty plus the benchmarks' data in org-a's shared/bench); not applied when --data-dir holds a saved state")
	fs.Var(&o.BenchFileSize, "bench-file-size", "size of bench/big.bin with --seed bench (default 1G)")
	fs.IntVar(&o.BenchHuge, "bench-huge", 0, "with --seed bench, a folder bench/huge of this many entries (the scale benchmark)")
	fs.IntVar(&o.BenchTree, "bench-tree", 0, "with --seed bench, a tree bench/tree of this many files, 100 a folder (the scale benchmark)")
	fs.StringVar(&o.CredentialsDir, "credentials-dir", o.CredentialsDir, "write one credentials file per organization here: org-a.json, org-b.json (default: DATA-DIR/credentials)")
	fs.Var((*units.Duration)(&o.StepDelay), "step-delay", "time each step of an asynchronous job takes (image builds, computer power, download bundles)")
	fs.Var((*units.Duration)(&o.Latency), "latency", "delay added to every API request")
	fs.Var((*units.Duration)(&o.ObjectLatency), "object-latency", "delay before the first byte of every object transfer")
	fs.Var(&o.StreamRate, "stream-rate", "bandwidth of one object connection, e.g. 100MB/s (0: unlimited)")
	fs.Float64Var(&o.FaultRate, "fault-rate", o.FaultRate, "fraction (0..1) of requests that fail: 500/503 answers, connections reset mid-body, answers dropped")
	fs.Int64Var(&o.FaultSeed, "fault-seed", o.FaultSeed, "seed of the fault sequence (the same seed gives the same faults)")
	fs.Var((*units.Duration)(&o.ClockOffset), "clock-offset", "run the emulator's clock this far off the machine's, e.g. 10m or -10m (signatures outside ±5m of it are refused: a desk with a wrong clock)")
	fs.StringVar(&o.Dialect, "dialect", o.Dialect, "how to read the contract where it is ambiguous: default, other (every switch below flipped), or switches separated by commas, alone or after other (other,four-digit-200)")
	o.Log.AddFlags(fs)
}

// printBanner says where the emulator listens, where its state is kept and
// where the credentials files are.
func (o *emulatorOptions) printBanner(stdout io.Writer, srv *emulator.Server, credDir string) {
	fmt.Fprintf(stdout, "orgfs emulator: API at %s, object store at %s, counters at %s%s\n", srv.APIURL, srv.ObjectsURL, srv.APIURL, emulator.StatsPath)
	switch state := srv.Emulator.StateFile(); {
	case state == "":
		fmt.Fprintf(stdout, "  state: seed %s, not kept (no --data-dir)\n", o.Seed)
	case srv.Emulator.Restored():
		fmt.Fprintf(stdout, "  state: restored from %s (--seed not applied)\n", state)
	default:
		fmt.Fprintf(stdout, "  state: seed %s, kept in %s\n", o.Seed, state)
	}
	if off := o.ClockOffset; off > 0 {
		fmt.Fprintf(stdout, "  clock: %s ahead of this machine's (--clock-offset)\n", units.FormatDuration(off))
	} else if off < 0 {
		fmt.Fprintf(stdout, "  clock: %s behind this machine's (--clock-offset)\n", units.FormatDuration(-off))
	}
	if d := srv.Emulator.Dialect(); d != (emulator.Dialect{}) {
		fmt.Fprintf(stdout, "  dialect: %s (%s)\n", d, strings.Join(d.Switches(), ", "))
	}
	for _, c := range srv.Credentials() {
		fmt.Fprintf(stdout, "  %s credentials: %s\n", c.Name, filepath.Join(credDir, c.Name+".json"))
	}
	fmt.Fprintf(stdout, "  network play: GET/POST %s%s with the token in %s\n", srv.APIURL, emulator.PlayPath, filepath.Join(credDir, emulator.AdminTokenFile))
	fmt.Fprintln(stdout, "Press Ctrl-C to stop.")
}

func (o *emulatorOptions) validate() error {
	switch {
	case o.Seed != emulator.SeedDemo && o.Seed != emulator.SeedEmpty && o.Seed != emulator.SeedBench:
		return usagef("--seed %q: want demo, empty or bench", o.Seed)
	case o.FaultRate < 0 || o.FaultRate > 1:
		return usagef("--fault-rate %v: want a fraction between 0 and 1", o.FaultRate)
	case o.StepDelay < 0 || o.Latency < 0 || o.ObjectLatency < 0:
		return usagef("delays cannot be negative")
	case o.StreamRate < 0:
		return usagef("--stream-rate cannot be negative")
	}
	return nil
}

// printDialectSwitches lists the switches of --dialect, in the order of the
// service notes (docs/DIALECTS.md says more of each).
func printDialectSwitches(w io.Writer) {
	fmt.Fprintf(w, "\nDialect switches (--dialect NAME,NAME...; --dialect other turns them all on, of two\nalternatives the first; docs/DIALECTS.md):\n")
	for _, s := range emulator.DialectSwitches() {
		fmt.Fprintf(w, "  %-20s %s (default: %s)\n", s.Name, s.Help, s.Default)
	}
}
