// Package logging sets up orgfs's logrus logger from the command line.
package logging

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
)

// Options are the logging flags shared by every subcommand.
type Options struct {
	Level  string // debug, info, warn, error
	Format string // text or json
	File   string // "" = standard error
}

// Levels and Formats are the values --log-level and --log-format take.
var (
	Levels  = []string{"debug", "info", "warn", "error"}
	Formats = []string{"text", "json"}
)

// Defaults returns the options a user gets without flags.
func Defaults() Options { return Options{Level: "info", Format: "text"} }

// AddFlags registers the logging flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Level, "log-level", o.Level, "log level: debug, info, warn or error")
	fs.StringVar(&o.Format, "log-format", o.Format, "log format: text or json")
	fs.StringVar(&o.File, "log-file", o.File, "write the log to this file instead of standard error")
}

// Validate checks the options.
func (o *Options) Validate() error {
	if !slices.Contains(Levels, o.Level) {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.Level)
	}
	if !slices.Contains(Formats, o.Format) {
		return fmt.Errorf("--log-format %q: want text or json", o.Format)
	}
	return nil
}

// New builds a logger from validated options. The returned closer closes the
// log file, if any.
func (o *Options) New() (*logrus.Logger, io.Closer, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	log := logrus.New()
	lvl, _ := logrus.ParseLevel(o.Level)
	log.SetLevel(lvl)
	// Milliseconds: a request takes tens of them, and a log read to see
	// where the time went needs them.
	const stamp = "2006-01-02T15:04:05.000Z07:00"
	if o.Format == "json" {
		log.SetFormatter(&logrus.JSONFormatter{TimestampFormat: stamp})
	} else {
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: stamp})
	}
	var closer io.Closer = io.NopCloser(nil)
	log.SetOutput(os.Stderr)
	if o.File != "" {
		f, err := os.OpenFile(o.File, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		log.SetOutput(f)
		closer = f
	}
	return log, closer, nil
}

// Discard returns a logger that writes nothing.
func Discard() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// OrDiscard returns l, or a logger that writes nothing when l is nil: the
// default of every component's Log option.
func OrDiscard(l logrus.FieldLogger) logrus.FieldLogger {
	if l == nil {
		return Discard()
	}
	return l
}
