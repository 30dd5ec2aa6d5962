// Command benchreport puts the results of the benchmarks into
// docs/BENCHMARKS.md and draws them as a chart: the last step of make bench.
//
//	go run ./scripts/benchreport -results DIR -doc docs/BENCHMARKS.md -svg 'docs/bench-%dcore.svg'
//
// DIR holds what save_results of scripts/bench-lib.sh wrote: NAME.md (a
// benchmark's table as printed) and NAME.tsv (one line per chart row: label,
// ratio, target, and "higher" or "lower" for which side of the target is
// better), for the names read, write and fio (in that order, then any other),
// and machine.txt (cores=, mem_gib=, kernel=, date=: where and when they were
// measured; without it, this machine and today).
//
// Each machine measured keeps its own part of the document, between the lines
// <!-- bench:start N-core --> and <!-- bench:end N-core --> (N its cores: two
// machines of as many cores share one), so that a run on one machine leaves
// another's figures as they were. That part is replaced with when and where
// the figures were measured, the chart, and each table. A machine not
// measured before gets a new part after the last one; a document with no such
// part at all is an error, never appended to. The
// chart (-svg, %d there is the cores) has a bar per TSV line, its length the
// ratio over the target (the target over the ratio when lower is better) so
// that the target is at one marked line and longer is always better; green
// when the target is met, red when not.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The document's markers, each a line of its own: a machine's are the prefix,
// its key ("16-core") and the suffix.
const (
	startPrefix  = "<!-- bench:start "
	endPrefix    = "<!-- bench:end "
	markerSuffix = " -->"
)

// The bars' colours.
const (
	colorMet    = "#2e9e44"
	colorMissed = "#d1352b"
)

// order is the place of the known benchmarks; others follow by name.
var order = []string{"read", "write", "fio"}

func main() {
	results := flag.String("results", "", "dir of the NAME.md and NAME.tsv files of save_results (scripts/bench-lib.sh)")
	doc := flag.String("doc", "docs/BENCHMARKS.md", "the document whose part between "+startPrefix+"N-core"+markerSuffix+" and "+endPrefix+"N-core"+markerSuffix+" is replaced (N: the cores)")
	svg := flag.String("svg", "docs/bench-%dcore.svg", "where to write the chart, %d the machine's cores (the document links it relative to itself)")
	flag.Parse()
	if *results == "" || flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "usage: benchreport -results DIR [-doc docs/BENCHMARKS.md] [-svg docs/bench-%%dcore.svg]\n")
		os.Exit(2)
	}
	m := meta{Date: time.Now(), Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if err := m.read(filepath.Join(*results, "machine.txt")); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	if err := run(*results, *doc, *svg, m); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// meta is when and where the figures were measured.
type meta struct {
	Date      time.Time
	Cores     int
	MemGiB    int    // 0: not known
	Kernel    string // "": not known
	GoVersion string
	Platform  string
}

// key names the machine's part of the document.
func (m meta) key() string { return fmt.Sprintf("%d-core", m.Cores) }

// read takes what path (a machine.txt of save_results) says of the machine
// over m's own; a missing file changes nothing.
func (m *meta) read(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for i, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s:%d: %q: want key=value", path, i+1, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "cores", "mem_gib":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("%s:%d: %s=%q: want a number above 0", path, i+1, k, v)
			}
			if k == "cores" {
				m.Cores = n
			} else {
				m.MemGiB = n
			}
		case "kernel":
			m.Kernel = v
		case "date":
			d, err := time.Parse(time.DateOnly, v)
			if err != nil {
				return fmt.Errorf("%s:%d: date=%q: want YYYY-MM-DD", path, i+1, v)
			}
			m.Date = d
		}
	}
	return nil
}

// bench is one benchmark's results.
type bench struct {
	Name  string
	Table string // the table as printed, trimmed
	Rows  []row  // chart rows, from NAME.tsv
}

// row is one chart row.
type row struct {
	Label         string
	Ratio, Target string  // as written
	ratio, target float64 // parsed
	Lower         bool    // lower is better
}

// Met reports whether the row's target is met.
func (r row) Met() bool {
	if r.Lower {
		return r.ratio <= r.target
	}
	return r.ratio >= r.target
}

// Score is the ratio over the target, the target over the ratio when lower
// is better: 1 at the target, more is better.
func (r row) Score() float64 {
	if r.Lower {
		if r.ratio == 0 {
			return math.Inf(1)
		}
		return r.target / r.ratio
	}
	return r.ratio / r.target
}

// run does the work of main.
func run(resultsDir, docPath, svgPath string, m meta) error {
	svgPath = strings.ReplaceAll(svgPath, "%d", strconv.Itoa(m.Cores))
	benches, err := load(resultsDir)
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	link, err := filepath.Rel(filepath.Dir(docPath), svgPath)
	if err != nil {
		link = svgPath
	}
	out, err := replaceBetween(string(doc), m.key(), section(benches, m, filepath.ToSlash(link)))
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	var rows []row
	for _, b := range benches {
		rows = append(rows, b.Rows...)
	}
	if err := os.MkdirAll(filepath.Dir(svgPath), 0o755); err != nil {
		return err
	}
	if err := writeFile(svgPath, chart(rows)); err != nil {
		return err
	}
	return writeFile(docPath, []byte(out))
}

// load reads the results of dir, in their order.
func load(dir string) ([]bench, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	byName := map[string]*bench{}
	var names []string
	for _, e := range ents {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".md" && ext != ".tsv") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ext)
		b := byName[name]
		if b == nil {
			b = &bench{Name: name}
			byName[name] = b
			names = append(names, name)
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if ext == ".md" {
			b.Table = strings.Trim(string(data), "\n")
		} else if b.Rows, err = parseTSV(data); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), err)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no results (NAME.md, NAME.tsv): run the benchmarks with BENCH_RESULTS=%s", dir, dir)
	}
	rank := func(n string) int {
		if i := slices.Index(order, n); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	benches := make([]bench, len(names))
	for i, n := range names {
		benches[i] = *byName[n]
	}
	return benches, nil
}

// parseTSV reads chart rows: label, ratio, target, higher|lower.
func parseTSV(data []byte) ([]row, error) {
	var rows []row
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: %d fields, want 4 (label, ratio, target, higher|lower)", i+1, len(f))
		}
		r := row{Label: f[0], Ratio: strings.TrimSpace(f[1]), Target: strings.TrimSpace(f[2])}
		var err1, err2 error
		r.ratio, err1 = strconv.ParseFloat(r.Ratio, 64)
		r.target, err2 = strconv.ParseFloat(r.Target, 64)
		if err := errors.Join(err1, err2); err != nil || math.IsNaN(r.ratio) || math.IsInf(r.ratio, 0) || r.ratio < 0 || r.target <= 0 || math.IsInf(r.target, 0) {
			// A ratio of inf comes from a figure that failed (a baseline
			// of 0), never from a real run; 0 can be real (a share).
			return nil, fmt.Errorf("line %d: ratio %q, target %q: want finite numbers, the target above 0", i+1, f[1], f[2])
		}
		switch strings.TrimSpace(f[3]) {
		case "higher":
		case "lower":
			r.Lower = true
		default:
			return nil, fmt.Errorf("line %d: %q: want higher or lower", i+1, f[3])
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// section is what goes between the document's markers.
func section(benches []bench, m meta, svgLink string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %d cores\n\n", m.Cores)
	var more string
	if m.MemGiB > 0 {
		more += fmt.Sprintf(", %d GiB", m.MemGiB)
	}
	if m.Kernel != "" {
		more += ", kernel " + m.Kernel
	}
	fmt.Fprintf(&b, "Measured on %s by `make bench`, on a %d-core %s machine%s, with %s.\n\n",
		m.Date.Format("2006-01-02"), m.Cores, m.Platform, more, m.GoVersion)
	fmt.Fprintf(&b, "![orgfs against its baselines](%s)\n", svgLink)
	for _, be := range benches {
		if be.Table == "" {
			continue
		}
		b.WriteString("\n")
		b.WriteString(be.Table)
		b.WriteString("\n")
	}
	return b.String()
}

// replaceBetween replaces the lines between the markers of key (each a line
// of its own, the start before the end, once each) with body. Where key has
// no markers but other machines have, a new part for key goes after the last
// of theirs. Markers inside fenced code blocks (the document showing them) are
// text, not markers; the lines written end as the document's do (LF or CRLF).
func replaceBetween(doc, key, body string) (string, error) {
	startMarker, endMarker := startPrefix+key+markerSuffix, endPrefix+key+markerSuffix
	nl := "\n"
	if strings.Contains(doc, "\r\n") {
		nl = "\r\n"
	}
	body = strings.ReplaceAll(strings.ReplaceAll(strings.TrimRight(body, "\r\n"), "\r\n", "\n"), "\n", nl)
	lines := strings.SplitAfter(doc, "\n")
	start, end, lastEnd := -1, -1, -1
	fenced := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") {
			fenced = !fenced
		}
		if fenced {
			continue
		}
		switch {
		case t == startMarker:
			if start >= 0 {
				return "", fmt.Errorf("%s is there twice (lines %d and %d)", startMarker, start+1, i+1)
			}
			start = i
		case t == endMarker:
			if end >= 0 {
				return "", fmt.Errorf("%s is there twice (lines %d and %d)", endMarker, end+1, i+1)
			}
			end = i
		}
		if len(t) > len(endPrefix+markerSuffix) && strings.HasPrefix(t, endPrefix) && strings.HasSuffix(t, markerSuffix) {
			lastEnd = i // another machine's end (a key of one character at least)
		}
	}
	switch {
	case start < 0 && end < 0 && lastEnd >= 0:
		// A machine not measured before: a part of its own after the others'.
		if !strings.HasSuffix(lines[lastEnd], "\n") {
			lines[lastEnd] += nl
		}
		part := []string{nl, startMarker + nl, endMarker + nl}
		lines = slices.Insert(lines, lastEnd+1, part...)
		start, end = lastEnd+2, lastEnd+3
	case start < 0 || end < 0:
		return "", fmt.Errorf("no lines %s and %s (nor those of another machine) to put the results between: add them, each on a line of its own, where the tables go", startMarker, endMarker)
	case end < start:
		return "", fmt.Errorf("%s (line %d) comes before %s (line %d)", endMarker, end+1, startMarker, start+1)
	}
	var out strings.Builder
	for _, l := range lines[:start+1] {
		out.WriteString(l)
	}
	if !strings.HasSuffix(lines[start], "\n") {
		out.WriteString(nl)
	}
	out.WriteString(nl)
	out.WriteString(body)
	out.WriteString(nl + nl)
	for _, l := range lines[end:] {
		out.WriteString(l)
	}
	return out.String(), nil
}

// Chart geometry, in pixels: the bars start at barX; the target line is at
// barX + targetW, and a bar is at most maxScore times as long (an arrow
// marks one cut there).
const (
	chartW   = 860
	barX     = 20
	targetW  = 360
	maxScore = 2.2
	titleH   = 58
	rowH     = 34
	barH     = 24
	bottomH  = 16
)

// chart draws the rows as a horizontal bar chart, hand-written SVG.
func chart(rows []row) []byte {
	h := titleH + len(rows)*rowH + bottomH
	w := chartW
	for _, r := range rows {
		// about 7.5 pixels a character at 13 px
		w = max(w, barX+6+int(float64(len([]rune(r.Label+": "+r.text())))*7.5)+20)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">orgfs against its baselines</text>`+"\n", barX)
	fmt.Fprintf(&b, `<text x="%d" y="40" fill="#555555">bar: ratio / target (target / ratio where lower is better), longer is better; green: target met, red: not met</text>`+"\n", barX)
	tx := barX + targetW
	for i, r := range rows {
		y := titleH + i*rowH
		s := r.Score()
		cut := s > maxScore
		s = min(s, maxScore)
		bw := max(2, int(math.Round(s*targetW)))
		color := colorMissed
		if r.Met() {
			color = colorMet
		}
		fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%d" width="%d" height="%d" rx="3" fill="%s"><title>%s</title></rect>`+"\n",
			barX, y, bw, barH, color, esc(r.Label+": "+r.text()))
		if cut {
			ax := barX + bw
			fmt.Fprintf(&b, `<path d="M%d %d L%d %d L%d %d Z" fill="%s"/>`+"\n", ax, y, ax+10, y+barH/2, ax, y+barH, color)
		}
		// The text is dark with a white halo: readable on the bar and past it.
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#111111" stroke="#ffffff" stroke-width="3" paint-order="stroke">%s: <tspan font-weight="bold">%s</tspan></text>`+"\n",
			barX+6, y+barH/2+5, esc(r.Label), esc(r.text()))
	}
	fmt.Fprintf(&b, `<line class="target" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333" stroke-width="1.5" stroke-dasharray="4 3"/>`+"\n",
		tx, titleH-8, tx, titleH+len(rows)*rowH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333333" font-size="11">target</text>`+"\n", tx, titleH-11)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// text is the row's figure: "1.56x (target >= 1.5x)".
func (r row) text() string {
	op := ">="
	if r.Lower {
		op = "<="
	}
	return fmt.Sprintf("%sx (target %s %sx)", r.Ratio, op, r.Target)
}

// esc escapes s for XML text and attributes.
func esc(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// writeFile writes data to path through a temporary file beside it, so a
// failed write leaves the old file whole.
func writeFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Chmod(mode), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
