package main

// The desk commands that talk to a running mount through its control tree
// (no second channel): orgfs sync, orgfs status, orgfs unmount.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	orgfs "github.com/orgfs/orgfs/fs"
	"github.com/orgfs/orgfs/internal/units"
)

// orgfsMounts lists the mount points of orgfs mounts (/proc/mounts).
func orgfsMounts() []string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && (f[2] == "fuse.orgfs" || f[0] == "orgfs") {
			out = append(out, unescapeMount(f[1]))
		}
	}
	return out
}

// unescapeMount undoes /proc/mounts' octal escapes (\040 for a space).
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// mountOf finds the orgfs mount holding path (the mount point itself, or a
// path below one); with no path, the only orgfs mount there is.
func mountOf(path string) (string, error) {
	mounts := orgfsMounts()
	if path == "" {
		switch len(mounts) {
		case 0:
			return "", errors.New("no orgfs mount here (name the mount point)")
		case 1:
			return mounts[0], nil
		}
		return "", fmt.Errorf("%d orgfs mounts (%s): name one", len(mounts), strings.Join(mounts, ", "))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	best := ""
	for _, m := range mounts {
		if (abs == m || strings.HasPrefix(abs, strings.TrimSuffix(m, "/")+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		// Not in /proc/mounts (another namespace): a folder with .ctl/README is one.
		for dir := abs; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, ".ctl", "README")); err == nil {
				return dir, nil
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
		return "", fmt.Errorf("%s is not in an orgfs mount", path)
	}
	return best, nil
}

// readCtl decodes a control file of the mount at mnt.
func readCtl(mnt, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(mnt, ".ctl", name))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// writeCtl writes one input to a control file and returns the error of the
// write or the close with the folder's result.
func writeCtl(mnt, name, input string) (orgfs.Result, error) {
	p := filepath.Join(mnt, ".ctl", name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return orgfs.Result{}, err
	}
	_, werr := f.WriteString(input)
	cerr := f.Close()
	var r orgfs.Result
	if err := readCtl(mnt, filepath.Join(filepath.Dir(name), "result"), &r); err != nil && werr == nil && cerr == nil {
		return r, err
	}
	return r, errors.Join(werr, cerr)
}

const syncSynopsis = ` MOUNTPOINT [PATH...]

Returns once everything written before it (under the PATHs given, files or
folders, or in the whole mount) is on the service; exit status 1, with the
files and their errors, when some could not be sent. 'sync -f' on the mount
does not wait for uploads; this does.`

func runSync(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sync", syncSynopsis, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return usagef("sync needs the mount point (see 'orgfs sync --help')")
	}
	mnt, err := mountOf(fs.Arg(0))
	if err != nil {
		return err
	}
	var lines []string
	for _, p := range fs.Args()[1:] {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(mnt, abs)
		if err != nil || strings.HasPrefix(rel, "..") {
			return usagef("%s is not in the mount at %s", p, mnt)
		}
		lines = append(lines, filepath.ToSlash(rel))
	}
	start := time.Now()
	r, err := writeCtl(mnt, "sync", strings.Join(lines, "\n")+"\n")
	if err != nil {
		return fmt.Errorf("%s (%v)", r.Message, err)
	}
	rec, _ := r.Record.(map[string]any)
	fmt.Fprintf(stdout, "orgfs: %v files on the service (%s)\n", rec["files"], time.Since(start).Round(time.Millisecond))
	return nil
}

const statusSynopsis = ` [MOUNTPOINT]

Shows a mount's upload queue (a bar per file, a total with rate and time
left), failed uploads with their reason, cache use and hit rate, requests and
errors by code. It reads .ctl/stats and .ctl/uploads.json. Without
MOUNTPOINT, the only orgfs mount there is.`

// status is what orgfs status shows: the stats and the queue.
type status struct {
	Stats   orgfs.Stats    `json:"stats"`
	Uploads []orgfs.Upload `json:"uploads"`
}

func readStatus(mnt string) (status, error) {
	var st status
	if err := readCtl(mnt, "stats", &st.Stats); err != nil {
		return st, err
	}
	return st, readCtl(mnt, "uploads.json", &st.Uploads)
}

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", statusSynopsis, stdout)
	watch := fs.Bool("watch", false, "keep showing the queue until interrupted (or, with --until-empty, until it is empty)")
	asJSON := fs.Bool("json", false, "print the stats and the queue as JSON")
	untilEmpty := fs.Bool("until-empty", false, "with --watch: stop once nothing waits to upload")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	mnt, err := mountOf(fs.Arg(0))
	if err != nil {
		return err
	}
	st, err := readStatus(mnt)
	if err != nil {
		return fmt.Errorf("reading %s/.ctl: %w", mnt, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	printSummary(stdout, mnt, st)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !*watch {
		printQueue(stdout, st.Uploads)
		return nil
	}
	return showQueue(ctx, stdout, mnt, *untilEmpty)
}

// printSummary writes the counters of .ctl/stats in a few lines.
func printSummary(w io.Writer, mnt string, st status) {
	s := st.Stats
	var requests, failures int64
	for _, o := range s.Requests {
		requests, failures = requests+o.Requests, failures+o.Failures
	}
	fmt.Fprintf(w, "orgfs at %s\n", mnt)
	fmt.Fprintf(w, "  cache     %s of %s in %d files, listing hit rate %.0f%%\n",
		units.FormatSize(s.Cache.Bytes), units.FormatSize(s.Cache.MaxBytes), s.Cache.Files, 100*s.Cache.HitRate)
	fmt.Fprintf(w, "  traffic   %s up, %s down, %d requests, %d failed", units.FormatSize(s.BytesUp), units.FormatSize(s.BytesDown), requests, failures)
	if len(s.Errors) > 0 {
		codes := make([]string, 0, len(s.Errors))
		for c, n := range s.Errors {
			codes = append(codes, fmt.Sprintf("%s×%d", c, n))
		}
		sort.Strings(codes)
		fmt.Fprintf(w, " (%s)", strings.Join(codes, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  bundles   %d jobs, %d files\n", s.Bundles.Jobs, s.Bundles.Files)
	fmt.Fprintf(w, "  uploads   %d pending, %d in flight, %d failed; %d sent since the mount (%s)\n",
		s.Uploads.Pending, s.Uploads.InFlight, s.Uploads.Failed, s.Uploads.Uploaded, units.FormatSize(s.Uploads.Bytes))
	for _, u := range st.Uploads {
		if u.State == "failed" {
			fmt.Fprintf(w, "  FAILED    %s: %s (echo retry > .ctl/uploads)\n", u.Path, u.Error)
		}
	}
}

// printQueue lists the files waiting to upload, a line each, with a bar.
func printQueue(w io.Writer, ups []orgfs.Upload) {
	var size, done int64
	for _, u := range ups {
		if u.State == "uploaded" {
			continue
		}
		cur := int64(0)
		if u.State == "uploading" {
			cur = u.Done
		}
		size, done = size+u.Size, done+cur
		fmt.Fprintf(w, "  %-9s %s %s %s\n", u.State, textBar(cur, u.Size), units.FormatSize(u.Size), u.Path)
	}
	if size > 0 {
		fmt.Fprintf(w, "  %-9s %s %s of %s\n", "total", textBar(done, size), units.FormatSize(done), units.FormatSize(size))
	}
}

// textBar is a 20-character bar with the percentage, for output that is not
// redrawn (orgfs status without --watch).
func textBar(done, total int64) string {
	const width = 20
	pct := int64(100)
	if total > 0 {
		pct = min(done*100/total, 100)
	}
	n := int(pct * width / 100)
	return "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + fmt.Sprintf("] %3d%%", pct)
}

// showQueue draws a bar per file waiting to upload and a total with rate and
// time left, polling .ctl/uploads.json until ctx ends (or the queue is empty,
// when untilEmpty).
func showQueue(ctx context.Context, w io.Writer, mnt string, untilEmpty bool) error {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(32), mpb.WithRefreshRate(250*time.Millisecond), mpb.PopCompletedMode())
	total := p.AddBar(1,
		mpb.PrependDecorators(decor.Name("total", decor.WCSyncSpaceR), decor.CountersKibiByte("% .1f / % .1f", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.EwmaSpeed(decor.SizeB1024(0), "% .1f", 5), decor.Name(" "), decor.EwmaETA(decor.ET_STYLE_GO, 5)))
	var mu sync.Mutex
	states := map[string]string{} // guarded by mu; the state each bar shows
	bars := map[string]*mpb.Bar{}
	sizes := map[string]int64{}
	var sent int64 // bytes of the files that left the queue since the start
	last := time.Now()
	tick := time.NewTicker(time.Second / 2)
	defer tick.Stop()
	for {
		var ups []orgfs.Upload
		if err := readCtl(mnt, "uploads.json", &ups); err != nil {
			p.Shutdown()
			return err
		}
		var size, done int64
		seen := map[string]bool{}
		for _, u := range ups {
			if u.State == "uploaded" {
				continue
			}
			seen[u.Path] = true
			mu.Lock()
			states[u.Path] = u.State
			mu.Unlock()
			b := bars[u.Path]
			if b == nil {
				path := u.Path
				b = p.AddBar(max(u.Size, 1),
					mpb.PrependDecorators(decor.Name(path, decor.WCSyncSpaceR), decor.Any(func(decor.Statistics) string {
						mu.Lock()
						defer mu.Unlock()
						return states[path]
					}, decor.WCSyncSpace)),
					mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace)))
				bars[u.Path] = b
			}
			cur := u.Done
			if u.State != "uploading" {
				cur = 0
			}
			b.SetTotal(max(u.Size, 1), false)
			b.SetCurrent(min(cur, max(u.Size, 1)))
			sizes[u.Path] = u.Size
			size += u.Size
			done += cur
		}
		for path, b := range bars {
			if !seen[path] {
				sent += sizes[path]
				b.SetTotal(-1, true)
				delete(bars, path)
				delete(sizes, path)
			}
		}
		now := time.Now()
		total.SetTotal(max(sent+size, 1), false)
		total.EwmaSetCurrent(sent+done, now.Sub(last))
		last = now
		if untilEmpty && len(bars) == 0 {
			total.SetTotal(-1, true)
			p.Wait()
			return nil
		}
		select {
		case <-ctx.Done():
			for _, b := range bars {
				b.Abort(false)
			}
			total.Abort(false)
			p.Wait()
			return nil
		case <-tick.C:
		}
	}
}

const unmountSynopsis = ` MOUNTPOINT

Sends what waits to upload, showing its progress, then unmounts. Exit
status 0 when everything written is on the service, 3 when files were left
(they stay staged and upload at the next mount), 1 when the unmount failed.`

func runUnmount(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("unmount", unmountSynopsis, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("unmount needs the mount point (see 'orgfs unmount --help')")
	}
	mnt, err := mountOf(fs.Arg(0))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	type outcome struct {
		r   orgfs.Result
		err error
	}
	synced := make(chan outcome, 1)
	go func() {
		r, err := writeCtl(mnt, "sync", "\n")
		synced <- outcome{r, err}
	}()
	qctx, cancel := context.WithCancel(ctx)
	shown := make(chan error, 1)
	go func() { shown <- showQueue(qctx, stdout, mnt, false) }()
	var o outcome
	select {
	case o = <-synced:
	case <-ctx.Done():
		o.err = errors.New("interrupted")
	}
	cancel()
	<-shown
	if err := unmountPath(mnt); err != nil {
		return err
	}
	if o.err != nil {
		return &exitError{code: 3, msg: fmt.Sprintf("unmounted %s with files not uploaded: %s (%v); they stay staged and upload at the next mount of this organization with the same cache dir", mnt, o.r.Message, o.err)}
	}
	fmt.Fprintf(stdout, "orgfs: everything written is on the service; %s unmounted\n", mnt)
	return nil
}

// unmountPath unmounts an orgfs mount.
func unmountPath(mnt string) error {
	if err := userUnmount(mnt); err != nil {
		return fmt.Errorf("unmounting %s: %w (programs still use it? close them, or detach it: fusermount3 -u -z %s)", mnt, err, mnt)
	}
	return nil
}
