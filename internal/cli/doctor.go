package cli

// orgfs doctor: a first contact with an endpoint. One line per check: the
// signature and the clock, every list, a ranged read through a presigned
// URL, bundles (multiple_file_download) and the action logs; read-only. With
// --write, a round trip of files in a scratch folder (doctor_write.go).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/logging"
)

const doctorSynopsis = `

Checks what a mount needs of the service, one line per check, before a first
mount (credentials from --credentials FILE, else from ORGFS_ENDPOINT,
ORGFS_API_KEY and ORGFS_API_SECRET, as for orgfs mount; never from the
command line): that the service accepts the signature, and how far this
desk's clock is off the service's; that every list answers and decodes
(usage, software, computers, images, files, recordings, action logs); that a
presigned URL answers a Range request; the multiple_file_download feature
(a download job of two files, aborted at once); the permission to read
action logs. Nothing else is changed on the service.

--write PATH also sends a small file and a multi-part file (12.2 MB) into a
scratch folder it makes under PATH (shared[/FOLDER...] or
computers/NAME[/FOLDER...], as in the mount), reads them back, compares,
deletes them and the folder, says which unit the service reads
chunk_size in (MiB or decimal MB), and whether the mode and time sent as
parameters of a file's content type come back from the listing (degraded
when not: each desk then shows its own).

Each line starts with ok, degraded (it works, and the line says what orgfs
does instead), skipped (nothing to check it with) or failed (with the
service's code and message and the fix). No key or secret is printed.
Exit status: 0 when no check failed, 1 when one did (or no credentials were
found), 2 for a mistake on the command line.`

// doctorTimeout bounds each read-only check; doctorWriteTimeout each step
// of --write.
const (
	doctorTimeout      = time.Minute
	doctorWriteTimeout = 5 * time.Minute
)

// verdict is the outcome of one check.
type verdict int

const (
	checkOK verdict = iota
	checkSkipped
	checkDegraded
	checkFailed
)

var verdictWords = [...]string{"ok", "skipped", "degraded", "failed"}

// doctor runs the checks against one client and prints their lines.
type doctor struct {
	// dependencies
	client *api.Client
	out    io.Writer
	// constants
	endpoint string
	source   string // where the credentials came from, for the fixes
	// state, filled as the checks run
	counts [len(verdictWords)]int
	usage  *api.AccountUsage
	seats  []api.Seat
	files  []foundFile // files of the shared storage, for the range and bundle checks
	// rangeChecked: a ranged read was tried (else --write tries one)
	rangeChecked bool
}

// foundFile is a file met while listing, with its path in the mount.
type foundFile struct {
	api.File
	path string
}

func runDoctor(args []string, stdout, stderr io.Writer) error {
	var credFile, writePath string
	fs := newFlagSet("doctor", doctorSynopsis, stdout)
	fs.StringVar(&credFile, "credentials", "", "credentials `FILE` (JSON: endpoint, key, secret); default: the ORGFS_* environment")
	fs.StringVar(&writePath, "write", "", "also round-trip a small and a multi-part file in a scratch folder made (and removed) under `PATH`: shared[/FOLDER...] or computers/NAME[/FOLDER...]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see 'orgfs doctor --help')", fs.Arg(0))
	}
	if writePath != "" {
		if _, _, err := splitWritePath(writePath); err != nil {
			return usagef("--write %s: %v", writePath, err)
		}
	}
	warn := logrus.New() // a credentials file others may read is warned of
	warn.SetOutput(stderr)
	warn.SetLevel(logrus.WarnLevel)
	creds, err := loadCredentials(credFile, warn)
	if err != nil {
		return err
	}
	client, err := api.New(creds, api.Options{Logger: logging.Discard(), MaxAttempts: 3, MaxRetryTime: 20 * time.Second, IOTimeout: 30 * time.Second})
	if err != nil {
		return err
	}
	d := &doctor{client: client, out: stdout, endpoint: creds.Endpoint, source: "the ORGFS_* environment"}
	if credFile != "" {
		d.source = credFile
	}
	fmt.Fprintf(stdout, "orgfs doctor: %s (credentials from %s)\n", creds.Endpoint, d.source)
	if d.checkSigning() {
		d.checkClock()
		d.checkLists()
		d.checkRange()
		d.checkBundles()
		if writePath != "" {
			d.checkWrite(writePath)
		}
	}
	fmt.Fprintf(stdout, "orgfs doctor: %d ok, %d degraded, %d skipped, %d failed\n",
		d.counts[checkOK], d.counts[checkDegraded], d.counts[checkSkipped], d.counts[checkFailed])
	if n := d.counts[checkFailed]; n > 0 {
		return &exitError{code: 1, msg: plural(n, "check") + " failed"}
	}
	return nil
}

// report prints one check's line.
func (d *doctor) report(v verdict, check, format string, args ...any) {
	d.counts[v]++
	fmt.Fprintf(d.out, "%-9s %-11s %s\n", verdictWords[v], check, fmt.Sprintf(format, args...))
}

// fail prints a failed check: what was asked, the service's code and
// message (or why no answer came), and the fix.
func (d *doctor) fail(check string, err error) {
	d.report(checkFailed, check, "%s; fix: %s", errText(err), d.fixFor(err))
}

// errText is err without the package's prefix.
func errText(err error) string { return strings.TrimPrefix(err.Error(), "api: ") }

// fixFor says what to do about a failed call.
func (d *doctor) fixFor(err error) string {
	var e *api.Error
	switch {
	case api.IsUnauthorized(err):
		return "the key or the secret is refused: check both in " + d.source + " (a key of another endpoint or organization, a secret cut short or with spaces); the clock is not the cause, orgfs corrects it"
	case api.IsPermission(err):
		return "these credentials lack the permission: ask an administrator of the organization for it"
	case errors.Is(err, api.ErrMalformedResponse):
		return "the answer is not the interface orgfs speaks: check that the endpoint in " + d.source + " is the organization-management service's; if it is, report the message with 'orgfs version'"
	case errors.As(err, &e) && e.HTTPStatus == 0:
		return "no answer from " + d.endpoint + ": check the endpoint in " + d.source + ", the network, a proxy or a firewall"
	case api.Temporary(err):
		return "the service is failing now: try again later"
	case api.IsNotFound(err):
		return "the endpoint answers, but not this path: check the endpoint in " + d.source
	}
	return "see the service's message above"
}

// ctx is a context for one check.
func (d *doctor) ctx(timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

// checkSigning makes the first request (GET /usage): the service accepts
// the signature or says why not. The other checks need it to pass.
func (d *doctor) checkSigning() bool {
	ctx, cancel := d.ctx(doctorTimeout)
	defer cancel()
	start := time.Now()
	u, err := d.client.Usage(ctx)
	if err != nil {
		d.fail("signing", err)
		fmt.Fprintln(d.out, "          (the other checks need a request the service accepts)")
		return false
	}
	d.usage = u
	took := time.Since(start).Round(time.Millisecond).String()
	if n := d.client.Stats().Retries; n > 0 {
		took += " (after " + plural(int(n), "retry") + ")"
	}
	d.report(checkOK, "signing", "GET /usage answered in %s: the key and the secret are accepted", took)
	return true
}

// checkClock reports how far this desk's clock is off the service's, as
// its answers told it.
func (d *doctor) checkClock() {
	skew, known := d.client.ClockSkew()
	switch {
	case !known:
		d.report(checkSkipped, "clock", "the service's answers tell no time (no timestamp, no Date): requests are signed with this desk's clock as it is")
	case skew.Abs() < api.SkewNotable:
		d.report(checkOK, "clock", "this desk's clock is %s", api.SkewText(skew))
	default:
		d.report(checkDegraded, "clock", "this desk's clock is %s: orgfs signs with the service's time instead (the service refuses signatures too far off); fix: set the clock right (timedatectl set-ntp true, or your system's time settings)", api.SkewText(skew))
	}
}

// checkLists lists every list endpoint once and says what came.
func (d *doctor) checkLists() {
	ctx, cancel := d.ctx(doctorTimeout)
	defer cancel()
	if mu, err := d.client.MachinesUsage(ctx); err != nil {
		d.fail("usage", err)
	} else {
		d.report(checkOK, "usage", "team balance %s minutes; usage of %s", digits(d.usage.UsageMinutes), plural(len(mu.Machines), "computer"))
	}
	if sw, err := d.client.Software(ctx); err != nil {
		d.fail("software", err)
	} else {
		d.report(checkOK, "software", "%d software, %s", len(sw.Software), plural(len(sw.BaseImages), "base image"))
	}
	seats, err := api.Collect(d.client.Seats(ctx, ""))
	if err != nil {
		d.fail("computers", err)
	} else {
		d.seats = seats
		d.report(checkOK, "computers", "%s", plural(len(seats), "computer"))
	}
	if images, err := api.Collect(d.client.Images(ctx, "")); err != nil {
		d.fail("images", err)
	} else {
		d.report(checkOK, "images", "%s", plural(len(images), "image"))
	}
	d.checkFiles(ctx)
	d.checkRecordings(ctx)
	d.checkLogs(ctx)
}

// maxDoctorListings bounds the folders of the shared storage listed to find
// files for the range and bundle checks.
const maxDoctorListings = 10

// checkFiles lists the shared storage (a few folders, breadth first, to find
// files for the later checks) and the first computer's storage.
func (d *doctor) checkFiles(ctx context.Context) {
	type folder struct {
		id   int64
		path string
	}
	queue := []folder{{0, "shared"}}
	listed, entries := 0, 0
	for len(queue) > 0 && listed < maxDoctorListings {
		f := queue[0]
		queue = queue[1:]
		list, err := d.client.SharedFiles(ctx, api.ListFilesRequest{ParentID: f.id}).Collect()
		if err != nil {
			d.fail("files", fmt.Errorf("%s/: %w", f.path, err))
			return
		}
		listed++
		entries += len(list)
		for _, e := range list {
			if e.IsDir() {
				queue = append(queue, folder{e.ID, f.path + "/" + e.Name})
			} else if e.Size > 0 {
				d.files = append(d.files, foundFile{e, f.path + "/" + e.Name})
			}
		}
	}
	what := fmt.Sprintf("shared/: %s in %s", plural(entries, "entry"), plural(listed, "folder"))
	if len(d.seats) > 0 {
		s := d.seats[0]
		list, err := d.client.MachineFiles(ctx, s.ID, api.ListFilesRequest{}).Collect()
		if err != nil {
			d.fail("files", fmt.Errorf("the storage of computer %d: %w", s.ID, err))
			return
		}
		what += fmt.Sprintf("; computer %q: %s", s.Name, plural(len(list), "entry"))
	}
	d.report(checkOK, "files", "%s", what)
}

// checkRecordings lists the session recordings.
func (d *doctor) checkRecordings(ctx context.Context) {
	list, err := d.client.Recordings(ctx, api.ListFilesRequest{}).Collect()
	switch {
	case api.IsPermission(err):
		d.report(checkDegraded, "recordings", "%s: recordings/ answers EACCES (permission denied); the rest of the mount works; fix: ask an administrator of the organization for access to recordings", errText(err))
	case err != nil:
		d.fail("recordings", err)
	default:
		d.report(checkOK, "recordings", "%s", plural(len(list), "entry"))
	}
}

// checkLogs reads the last day's action logs: the list and the permission.
func (d *doctor) checkLogs(ctx context.Context) {
	end := time.Now()
	logs, err := d.client.UserActionLogs(ctx, api.LogsRequest{Start: end.Add(-24 * time.Hour), End: end})
	switch {
	case api.IsPermission(err):
		d.report(checkDegraded, "logs", "%s: these credentials may not read action logs, so .ctl/logs/ answers EACCES; the rest of the mount works; fix: ask an administrator of the organization for the log permission", errText(err))
	case err != nil:
		d.fail("logs", err)
	default:
		d.report(checkOK, "logs", "%s in the last 24 hours", plural(len(logs.Logs), "action record"))
	}
}

// checkRange reads a few bytes from the middle of a file through its
// presigned URL with a Range request.
func (d *doctor) checkRange() {
	if len(d.files) == 0 {
		d.report(checkSkipped, "range", "no file in the shared folders listed to read from (--write checks ranged reads with a file of its own)")
		return
	}
	d.probeRange(d.files[0])
}

// probeRange checks a ranged read of f: a 206 with the bytes asked.
func (d *doctor) probeRange(f foundFile) bool {
	d.rangeChecked = true
	ctx, cancel := d.ctx(doctorTimeout)
	defer cancel()
	link, err := d.client.FileURL(ctx, f.ID)
	if err != nil {
		d.fail("range", err)
		return false
	}
	off := f.Size / 2
	n := min(f.Size-off, 1000)
	p, err := d.client.ProbeRange(ctx, link.URL, off, n)
	switch {
	case err != nil:
		d.fail("range", err)
		return false
	case int64(len(p.Data)) != n:
		d.report(checkFailed, "range", "%s: asked %d bytes at %d, got %d; fix: the object store is not answering as S3 does: report it with 'orgfs version'", f.path, n, off, len(p.Data))
		return false
	case !p.Partial:
		d.report(checkDegraded, "range", "%s: the object store ignored the Range and sent the whole object: reads work, but each block read downloads the file from its start (slow for large files)", f.path)
		return true
	}
	d.report(checkOK, "range", "%s: a presigned URL answered bytes %d-%d with 206", f.path, off, off+n-1)
	return true
}

// checkBundles asks for a download job of two small files (the bundles of
// the mount's small-file folders) and aborts it.
func (d *doctor) checkBundles() {
	if len(d.files) < 2 {
		d.report(checkSkipped, "bundles", "fewer than two files in the shared folders listed: multiple_file_download not checked")
		return
	}
	small := slices.SortedFunc(slices.Values(d.files), func(a, b foundFile) int { return cmp.Compare(a.Size, b.Size) })
	ctx, cancel := d.ctx(doctorTimeout)
	defer cancel()
	link, err := d.client.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: []int64{small[0].ID, small[1].ID}})
	switch {
	case api.IsPermission(err):
		d.report(checkDegraded, "bundles", "%s: folders of small files are read one file (one URL) at a time instead of as one ZIP; fix: ask the service to enable multiple_file_download for the organization", errText(err))
		return
	case err != nil:
		d.fail("bundles", err)
		return
	}
	if link.DownloadID != 0 {
		if err := d.client.AbortDownload(ctx, link.DownloadID); err != nil && !api.IsCode(err, api.CodeDownloadNotAbortable) {
			d.report(checkOK, "bundles", "multiple_file_download: a download job of 2 files was made (id %d; aborting it failed: %s)", link.DownloadID, errText(err))
			return
		}
	}
	d.report(checkOK, "bundles", "multiple_file_download: a download job of 2 files was made and aborted")
}

// plural is "1 image", "3 images", "2 entries".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// digits writes n with its thousands grouped: 12,200,000.
func digits[T ~int | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
