package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const readMD = `
orgfs read benchmark: 1.0G file, latency 20ms, 2 cores, files on tmpfs

| figure | orgfs | baseline | ratio | target |
| --- | --- | --- | --- | --- |
| 1. cold sequential read | 1.342 s | 8-stream ranged fetch 1.393 s | 1.04x | >= 0.8x: met |
`

const fioMD = `
orgfs fio benchmark: 1.0G file, latency 20ms, 2 cores, files on tmpfs

| figure | orgfs | baseline | ratio | target |
| --- | --- | --- | --- | --- |
| 2. fio random 4 KiB read | 294 IOPS | 358 IOPS | 0.82x | >= 0.7x: met |
| 2b. bytes fetched / bytes read | 277.0 MiB / 1.0 MiB | | 277.00x | <= 8x: NOT met |
`

const benchDoc = `# orgfs: benchmarks

How to run them.

## Results

<!-- bench:start 2-core -->
old table
| a | b |
<!-- bench:end 2-core -->

After the tables.
`

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var testMeta = meta{Date: time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), Cores: 2, GoVersion: "go1.99", Platform: "linux/amd64"}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		// fio before read in the dir's order: the report puts read first.
		"results/fio.md":  fioMD,
		"results/fio.tsv": "fio random 4 KiB read IOPS\t0.82\t0.7\thigher\nfio bytes fetched / read\t277.00\t8\tlower\n",
		"results/read.md": readMD,
		"results/read.tsv": "cold sequential read <8 streams>\t1.04\t0.8\thigher\n" +
			"ls -l requests\t1.5\t1\tlower\n",
		"results/notes.txt":  "ignored",
		"docs/BENCHMARKS.md": benchDoc,
	})
	docPath := filepath.Join(dir, "docs", "BENCHMARKS.md")
	svgPath := filepath.Join(dir, "docs", "bench-%dcore.svg")
	if err := run(filepath.Join(dir, "results"), docPath, svgPath, testMeta); err != nil {
		t.Fatal(err)
	}

	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	want := `# orgfs: benchmarks

How to run them.

## Results

<!-- bench:start 2-core -->

### 2 cores

Measured on 2026-11-25 by ` + "`make bench`" + `, on a 2-core linux/amd64 machine, with go1.99.

![orgfs against its baselines](bench-2core.svg)
` + readMD + fioMD + `
<!-- bench:end 2-core -->

After the tables.
`
	if string(got) != want {
		t.Errorf("the document:\n%s\nwant:\n%s", got, want)
	}

	// Run again: the same document (the markers stay, nothing piles up).
	if err := run(filepath.Join(dir, "results"), docPath, svgPath, testMeta); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(docPath); string(again) != want {
		t.Errorf("second run changed the document:\n%s", again)
	}

	svg, err := os.ReadFile(filepath.Join(dir, "docs", "bench-2core.svg"))
	if err != nil {
		t.Fatal(err)
	}
	type bar struct{ fill, title string }
	var bars []bar
	var texts []string
	targets := 0
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var inBar *bar
	var inText *strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range tok.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch {
			case tok.Name.Local == "rect" && attr["class"] == "bar":
				bars = append(bars, bar{fill: attr["fill"]})
				inBar = &bars[len(bars)-1]
			case tok.Name.Local == "line" && attr["class"] == "target":
				targets++
			case tok.Name.Local == "text":
				inText = &strings.Builder{}
			}
		case xml.CharData:
			if inText != nil {
				inText.Write(tok)
			} else if inBar != nil {
				inBar.title += string(tok)
			}
		case xml.EndElement:
			switch tok.Name.Local {
			case "rect":
				inBar = nil
			case "text":
				texts = append(texts, inText.String())
				inText = nil
			}
		}
	}
	wantBars := []struct{ fill, text string }{
		{colorMet, "cold sequential read <8 streams>: 1.04x (target >= 0.8x)"},
		{colorMissed, "ls -l requests: 1.5x (target <= 1x)"},
		{colorMet, "fio random 4 KiB read IOPS: 0.82x (target >= 0.7x)"},
		{colorMissed, "fio bytes fetched / read: 277.00x (target <= 8x)"},
	}
	if len(bars) != len(wantBars) {
		t.Fatalf("%d bars, want %d:\n%s", len(bars), len(wantBars), svg)
	}
	for i, w := range wantBars {
		if bars[i].fill != w.fill || bars[i].title != w.text {
			t.Errorf("bar %d: %q %q, want %q %q", i, bars[i].fill, bars[i].title, w.fill, w.text)
		}
		found := false
		for _, tx := range texts {
			found = found || tx == w.text
		}
		if !found {
			t.Errorf("no text %q on the chart; texts: %q", w.text, texts)
		}
	}
	if targets != 1 {
		t.Errorf("%d target lines, want 1", targets)
	}
}

func TestScore(t *testing.T) {
	for _, c := range []struct {
		r    row
		want float64
		met  bool
	}{
		{row{ratio: 1.5, target: 1.5}, 1, true},
		{row{ratio: 3, target: 1.5}, 2, true},
		{row{ratio: 0.75, target: 1.5}, 0.5, false},
		{row{ratio: 4, target: 8, Lower: true}, 2, true},
		{row{ratio: 16, target: 8, Lower: true}, 0.5, false},
	} {
		if got := c.r.Score(); got != c.want || c.r.Met() != c.met {
			t.Errorf("%+v: score %v met %v, want %v %v", c.r, got, c.r.Met(), c.want, c.met)
		}
	}
}

func TestNoMarkers(t *testing.T) {
	dir := t.TempDir()
	const doc = "# orgfs\n\n## Benchmarks\n\nno markers here\n"
	writeFiles(t, dir, map[string]string{
		"results/fio.md":  fioMD,
		"results/fio.tsv": "x\t1\t1\thigher\n",
		"BENCHMARKS.md":   doc,
	})
	docPath := filepath.Join(dir, "BENCHMARKS.md")
	svgPath := filepath.Join(dir, "bench.svg")
	err := run(filepath.Join(dir, "results"), docPath, svgPath, testMeta)
	if err == nil || !strings.Contains(err.Error(), "<!-- bench:start 2-core -->") {
		t.Fatalf("error %v, want one naming the markers", err)
	}
	if got, _ := os.ReadFile(docPath); string(got) != doc {
		t.Errorf("the document changed:\n%s", got)
	}
	if _, err := os.Stat(svgPath); err == nil {
		t.Errorf("the chart was written though the document could not be")
	}
}

func TestBadInput(t *testing.T) {
	for name, c := range map[string]struct {
		files map[string]string
		doc   string
	}{
		"no results":       {map[string]string{"results/x.txt": "x"}, benchDoc},
		"bad tsv":          {map[string]string{"results/fio.tsv": "label\tfast\t1\thigher\n"}, benchDoc},
		"bad direction":    {map[string]string{"results/fio.tsv": "label\t1\t1\tbigger\n"}, benchDoc},
		"ratio inf":        {map[string]string{"results/fio.tsv": "label\tinf\t1\thigher\n"}, benchDoc},
		"ratio negative":   {map[string]string{"results/fio.tsv": "label\t-1\t1\tlower\n"}, benchDoc},
		"ratio empty":      {map[string]string{"results/fio.tsv": "label\t\t1\thigher\n"}, benchDoc},
		"end before start": {map[string]string{"results/fio.md": fioMD}, "<!-- bench:end 2-core -->\n<!-- bench:start 2-core -->\n"},
		"start alone":      {map[string]string{"results/fio.md": fioMD}, "<!-- bench:start 2-core -->\n<!-- bench:end 16-core -->\n"},
		"old markers":      {map[string]string{"results/fio.md": fioMD}, "<!-- bench:start -->\n<!-- bench:end -->\n"},
		"bad machine":      {map[string]string{"results/fio.md": fioMD, "results/machine.txt": "cores=many\n"}, benchDoc},
		"bad date":         {map[string]string{"results/fio.md": fioMD, "results/machine.txt": "date=today\n"}, benchDoc},
		"twice":            {map[string]string{"results/fio.md": fioMD}, benchDoc + benchDoc},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c.files["BENCHMARKS.md"] = c.doc
			writeFiles(t, dir, c.files)
			m := testMeta
			err := m.read(filepath.Join(dir, "results", "machine.txt"))
			if err == nil {
				err = run(filepath.Join(dir, "results"), filepath.Join(dir, "BENCHMARKS.md"), filepath.Join(dir, "b.svg"), m)
			}
			if err == nil {
				t.Error("no error")
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "BENCHMARKS.md")); string(got) != c.doc {
				t.Errorf("the document changed:\n%s", got)
			}
		})
	}
}

// A second machine's results get a part of their own after the first's, which
// stays as it was; a run on the first again leaves the second's alone.
func TestSecondMachine(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"results/read.md":     readMD,
		"results/read.tsv":    "cold read\t1.04\t0.8\thigher\n",
		"results/machine.txt": "cores = 16\nmem_gib=125\nkernel=6.18.44\ndate=2026-11-27\n",
		"docs/BENCHMARKS.md":  benchDoc,
	})
	docPath := filepath.Join(dir, "docs", "BENCHMARKS.md")
	svgPath := filepath.Join(dir, "docs", "bench-%dcore.svg")
	m := testMeta
	if err := m.read(filepath.Join(dir, "results", "machine.txt")); err != nil {
		t.Fatal(err)
	}
	if err := run(filepath.Join(dir, "results"), docPath, svgPath, m); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(docPath)
	want := strings.Replace(benchDoc, "<!-- bench:end 2-core -->\n", `<!-- bench:end 2-core -->

<!-- bench:start 16-core -->

### 16 cores

Measured on 2026-11-27 by `+"`make bench`"+`, on a 16-core linux/amd64 machine, 125 GiB, kernel 6.18.44, with go1.99.

![orgfs against its baselines](bench-16core.svg)
`+readMD+`
<!-- bench:end 16-core -->
`, 1)
	if string(got) != want {
		t.Fatalf("the document:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "docs", "bench-16core.svg")); err != nil {
		t.Errorf("no chart of its own: %v", err)
	}

	// The first machine again: its part replaced, the second's kept.
	if err := run(filepath.Join(dir, "results"), docPath, svgPath, testMeta); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(docPath)
	if !strings.Contains(string(got), "### 16 cores") || strings.Contains(string(got), "old table") ||
		strings.Count(string(got), "### 2 cores") != 1 || strings.Count(string(got), "<!-- bench:start") != 2 {
		t.Errorf("after a run on the first machine:\n%s", got)
	}
}

// Markers shown in a fenced code block are text: the real part is replaced,
// the block left as it is; a CRLF document gets CRLF lines.
func TestFencedMarkersAndCRLF(t *testing.T) {
	fenced := "```\n<!-- bench:start 2-core -->\n<!-- bench:end 16-core -->\n```\n"
	doc := "# orgfs\n\n" + fenced + "\n<!-- bench:start 2-core -->\nold\n<!-- bench:end 2-core -->\n"
	out, err := replaceBetween(doc, "2-core", "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# orgfs\n\n" + fenced + "\n<!-- bench:start 2-core -->\n\nnew\n\n<!-- bench:end 2-core -->\n"; out != want {
		t.Errorf("got:\n%q\nwant:\n%q", out, want)
	}
	// A second machine goes after the real part, not the fenced end.
	if out, err = replaceBetween(out, "16-core", "more\n"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out, "<!-- bench:end 2-core -->\n\n<!-- bench:start 16-core -->\n\nmore\n\n<!-- bench:end 16-core -->\n") {
		t.Errorf("second machine's part:\n%s", out)
	}

	crlf := strings.ReplaceAll(doc, "\n", "\r\n")
	out, err = replaceBetween(crlf, "16-core", "a\nb\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "\n") != strings.Count(out, "\r\n") {
		t.Errorf("a line without CR in a CRLF document:\n%q", out)
	}
	if !strings.Contains(out, "<!-- bench:start 16-core -->\r\n\r\na\r\nb\r\n\r\n<!-- bench:end 16-core -->\r\n") {
		t.Errorf("the new part:\n%q", out)
	}
}
