package cli

// orgfs status: the upload queue with progress, failures, cache and request
// counters, read from .ctl/stats and .ctl/uploads.json.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/fs/ctl"
	"github.com/orgfs/orgfs/internal/units"
	"github.com/orgfs/orgfs/writeback"
)

const statusSynopsis = ` [MOUNTPOINT]

Shows a mount's upload queue (a bar per file, a total with rate and time
left), failed uploads with their reason, the latest conflict copies (changes
that met another writer's), cache use and hit rate, requests and errors by
code. It reads .ctl/stats, .ctl/uploads.json and .ctl/conflicts.json. Without
MOUNTPOINT, the only orgfs mount there is.`

// status is what orgfs status shows: the stats and the queue.
type status struct {
	Stats     ctl.Stats            `json:"stats"`
	Uploads   []ctl.Upload         `json:"uploads"`
	Conflicts []writeback.Conflict `json:"conflicts"`
	Pins      []cache.PinState     `json:"pins"`
}

func readStatus(mnt string) (status, error) {
	var st status
	if err := readCtl(mnt, "stats", &st.Stats); err != nil {
		return st, err
	}
	if err := readCtl(mnt, "uploads.json", &st.Uploads); err != nil {
		return st, err
	}
	if err := readCtl(mnt, "conflicts.json", &st.Conflicts); err != nil {
		return st, err
	}
	return st, readCtl(mnt, "pins.json", &st.Pins)
}

// shownConflicts is how many of the latest conflicts orgfs status lists.
const shownConflicts = 5

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
	fmt.Fprintf(w, "  service   %s\n", serviceLine(s))
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
	fmt.Fprintf(w, "  bundles   %d jobs, %d files", s.Bundles.Jobs, s.Bundles.Files)
	if s.Bundles.Completed > 0 {
		fmt.Fprintf(w, " (%s of ZIPs; waiting for the service %.1fs, fetching %.1fs, unpacking %.1fs)", units.FormatSize(s.Bundles.Bytes),
			s.Bundles.JobSeconds, s.Bundles.TransferSeconds, s.Bundles.UnpackSeconds)
	}
	fmt.Fprintln(w)
	for _, p := range st.Pins {
		fmt.Fprintf(w, "  pinned    %s (%s): %s\n", p.Path, units.FormatSize(p.Bytes), p.Summary())
	}
	if s.Passthrough.Mode != "" {
		fmt.Fprintf(w, "  kernel    passthrough %s; opens read without the daemon: %d\n", s.Passthrough.Mode, s.Passthrough.Opens)
	}
	fmt.Fprintf(w, "  uploads   %d pending, %d in flight, %d failed; %d sent since the mount (%s)\n",
		s.Uploads.Pending, s.Uploads.InFlight, s.Uploads.Failed, s.Uploads.Uploaded, units.FormatSize(s.Uploads.Bytes))
	for _, u := range st.Uploads {
		if u.State == "failed" {
			fmt.Fprintf(w, "  FAILED    %s: %s (echo retry > .ctl/uploads)\n", u.Path, u.Error)
		}
	}
	if s.Uploads.Conflicts > 0 {
		fmt.Fprintf(w, "  conflicts %d since the mount: another writer changed these files meanwhile; theirs kept the name (cat .ctl/conflicts)\n", s.Uploads.Conflicts)
		for _, c := range st.Conflicts[max(0, len(st.Conflicts)-shownConflicts):] {
			fmt.Fprintf(w, "  CONFLICT  %s: yours is %s\n", c.Path, c.Copy)
		}
	}
}

// serviceLine says whether the service can be reached: "online", or
// "offline since 14:02:11: connection refused; 3 changes waiting".
func serviceLine(s ctl.Stats) string {
	if s.Service.Online || s.Service.OfflineSince == nil {
		return "online"
	}
	changes := "changes"
	if s.Service.ChangesWaiting == 1 {
		changes = "change"
	}
	return fmt.Sprintf("offline since %s: %s; %d %s waiting (what is cached answers; changes go up when it is back)",
		s.Service.OfflineSince.Local().Format("15:04:05"), s.Service.OfflineReason, s.Service.ChangesWaiting, changes)
}

// printQueue lists the files waiting to upload, a line each, with a bar.
func printQueue(w io.Writer, ups []ctl.Upload) {
	var size, done int64
	for _, u := range ups {
		if u.State == "uploaded" {
			continue
		}
		if ctl.Journaled(u.State) {
			fmt.Fprintf(w, "  %-9s %s (made offline; waits for the service)\n", u.State, u.Path)
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
//
// Every bar is made with no total (0): mpb ignores SetTotal on a bar made
// with one, so the total's would stay at its first value ("1.0 b / 1.0 b"
// while a big file was at 71%). The first line, the queue's counters from
// .ctl/stats, is read again at every poll too.
func showQueue(ctx context.Context, w io.Writer, mnt string, untilEmpty bool) error {
	var q *queueView // made at the first file to show: nothing to send draws nothing
	tick := time.NewTicker(time.Second / 2)
	defer tick.Stop()
	for {
		var ups []ctl.Upload
		if err := readCtl(mnt, "uploads.json", &ups); err != nil {
			if q != nil {
				q.p.Shutdown()
			}
			return err
		}
		// Changes made offline have no bytes to show: orgfs status lists them.
		ups = slices.DeleteFunc(ups, func(u ctl.Upload) bool { return ctl.Journaled(u.State) })
		waiting := slices.ContainsFunc(ups, func(u ctl.Upload) bool { return u.State != "uploaded" })
		if q == nil && !waiting && untilEmpty {
			return nil
		}
		if q == nil && waiting {
			q = newQueueView(w)
		}
		if q != nil {
			var s ctl.Stats
			if err := readCtl(mnt, "stats", &s); err == nil {
				q.setCounters(fmt.Sprintf("uploads %d pending, %d in flight, %d failed; %d sent since the mount (%s)",
					s.Uploads.Pending, s.Uploads.InFlight, s.Uploads.Failed, s.Uploads.Uploaded, units.FormatSize(s.Uploads.Bytes)))
			}
			q.update(ups)
			if untilEmpty && len(q.bars) == 0 {
				q.total.SetTotal(-1, true)
				q.head.SetTotal(-1, true)
				q.p.Wait()
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if q != nil {
				for _, b := range q.bars {
					b.Abort(false)
				}
				q.total.Abort(false)
				q.head.Abort(false)
				q.p.Wait()
			}
			return nil
		case <-tick.C:
		}
	}
}

// queueView is what showQueue draws: the counters line, the total, a bar
// per file.
type queueView struct {
	p           *mpb.Progress
	head, total *mpb.Bar

	mu       sync.Mutex
	counters string            // guarded by mu
	states   map[string]string // guarded by mu; the state each bar shows

	bars  map[string]*mpb.Bar
	sizes map[string]int64
	sent  int64 // bytes of the files that left the queue since the start
	last  time.Time
}

func newQueueView(w io.Writer) *queueView {
	q := &queueView{states: map[string]string{}, bars: map[string]*mpb.Bar{}, sizes: map[string]int64{}, last: time.Now()}
	q.p = mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(250*time.Millisecond), mpb.PopCompletedMode(),
		mpb.WithAutoRefresh()) // also when the output is not a terminal (a pipe, a log)
	q.head = q.p.New(0, mpb.NopStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.counters
	})))
	q.total = q.p.AddBar(0, mpb.BarWidth(32),
		mpb.PrependDecorators(decor.Name("total", decor.WCSyncSpaceR), decor.CountersKibiByte("% .1f / % .1f", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.EwmaSpeed(decor.SizeB1024(0), "% .1f", 5), decor.Name(" "), decor.EwmaETA(decor.ET_STYLE_GO, 5)))
	return q
}

func (q *queueView) setCounters(s string) {
	q.mu.Lock()
	q.counters = s
	q.mu.Unlock()
}

// update shows the queue ups: a bar per file not uploaded yet, the total.
func (q *queueView) update(ups []ctl.Upload) {
	var size, done int64
	seen := map[string]bool{}
	for _, u := range ups {
		if u.State == "uploaded" {
			continue
		}
		seen[u.Path] = true
		q.mu.Lock()
		q.states[u.Path] = u.State
		q.mu.Unlock()
		b := q.bars[u.Path]
		if b == nil {
			path := u.Path
			b = q.p.AddBar(0, mpb.BarWidth(32),
				mpb.PrependDecorators(decor.Name(path, decor.WCSyncSpaceR), decor.Any(func(decor.Statistics) string {
					q.mu.Lock()
					defer q.mu.Unlock()
					return q.states[path]
				}, decor.WCSyncSpace)),
				mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace)))
			q.bars[u.Path] = b
		}
		cur := u.Done
		if u.State != "uploading" {
			cur = 0
		}
		b.SetTotal(max(u.Size, 1), false)
		b.SetCurrent(min(cur, max(u.Size, 1)))
		q.sizes[u.Path] = u.Size
		size += u.Size
		done += cur
	}
	for path, b := range q.bars {
		if !seen[path] {
			q.sent += q.sizes[path]
			b.SetTotal(-1, true)
			delete(q.bars, path)
			delete(q.sizes, path)
		}
	}
	now := time.Now()
	q.total.SetTotal(max(q.sent+size, 1), false)
	q.total.EwmaSetCurrent(q.sent+done, now.Sub(q.last))
	q.last = now
}
