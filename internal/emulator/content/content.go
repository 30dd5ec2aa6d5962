// Package content generates the emulator's seed content: every seeded file
// holds content of its type, exactly as many bytes as the seed gives it, the
// same for the same name and size (New):
//
//   - text (.txt, .md, .csv, .log, .html, .css, .js): lines of words, UTF-8,
//     in the shape of the type (paragraphs, headings and lists, rows of
//     consistent columns, time-stamped log lines, a page, rules, functions);
//   - .json: an object that parses;
//   - .png, .jpg: a generated picture that decodes (the size is made up with
//     a text chunk or comment segments);
//   - .pdf: a PDF of pages of text with a correct cross-reference table;
//   - .docx, .xlsx: a minimal Office Open XML package (a ZIP of XML parts);
//   - .webm, .blend: the format's header, then random bytes;
//   - anything else (.bin, .dat): pseudo-random bytes, generated as read.
//
// Typed content is built in memory (the demo's largest is a few MiB); random
// content is streamed, so a file of any size costs no memory.
//
// Package contenttest checks content of every type.
//
// Its files are in docs/ARCHITECTURE.md.
package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// New returns size bytes of deterministic content for a file name.
func New(name string, size int64) io.Reader {
	h := fnv.New64a()
	h.Write([]byte(name))
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, uint64(size)))
	title := strings.TrimSuffix(name, path.Ext(name))
	var b []byte
	switch strings.ToLower(path.Ext(name)) {
	case ".txt":
		b = textContent(rng, title, size)
	case ".md":
		b = markdownContent(rng, title, size)
	case ".csv":
		b = csvContent(rng, title, size)
	case ".log":
		b = logContent(rng, title, size)
	case ".html", ".htm":
		b = htmlContent(rng, title, size)
	case ".css":
		b = cssContent(rng, name, size)
	case ".js":
		b = jsContent(rng, name, size)
	case ".json":
		b = jsonContent(rng, name, size)
	case ".png":
		b = pngContent(rng, title, size)
	case ".jpg", ".jpeg":
		b = jpegContent(rng, title, size)
	case ".pdf":
		b = pdfContent(rng, title, size)
	case ".docx":
		b = docxContent(rng, title, size)
	case ".xlsx":
		b = xlsxContent(rng, title, size)
	case ".webm":
		return headedContent(webmHeader(size), seed, size)
	case ".blend":
		return headedContent([]byte("BLENDER-v300"), seed, size)
	}
	if b == nil { // binary, or too small for its format
		return randomContent(seed, size)
	}
	if int64(len(b)) != size {
		panic(fmt.Sprintf("emulator: seed content of %q is %d bytes, want %d", name, len(b), size))
	}
	return bytes.NewReader(b)
}

// fit builds exactly size bytes: head, as many lines as fit, a filler of the
// exact remaining length (at least minFiller bytes: it is always written, so
// that it may close what the lines leave open), and tail. nil when head,
// tail and the smallest filler do not fit.
func fit(size int64, head, tail string, line func() string, filler func(n int) string, minFiller int) []byte {
	n := int(size)
	if len(head)+minFiller+len(tail) > n {
		return nil
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(head)
	for {
		l := line()
		if b.Len()+len(l)+minFiller+len(tail) > n {
			break
		}
		b.WriteString(l)
	}
	b.WriteString(filler(n - b.Len() - len(tail)))
	b.WriteString(tail)
	return b.Bytes()
}

// Word lists of the generated prose. fillerWords are ASCII only: a filler
// is cut to an exact length anywhere.
var (
	seedNouns = strings.Fields(`report budget render frame menu café schedule team session recording image
		template computer folder file upload download backup dataset sensor invoice contract draft review
		meeting plan campaign logo palette scene texture build release checklist inventory price visitor
		protocol sample measurement shortcut moodboard storyboard summary übersicht résumé deadline`)
	seedAdjectives = strings.Fields(`new final shared quarterly nightly weekly urgent small large blue green
		clean updated archived spare local remote careful quick detailed rough`)
	seedVerbs = strings.Fields(`needs covers replaces follows updates describes lists checks includes
		moves renames supports`)
	seedNames  = strings.Fields(`Alex Bea Chen Dana Eli Farid Greta Hana Ivo Jonas Kim Lea`)
	seedDays   = strings.Fields(`Monday Tuesday Wednesday Thursday Friday`)
	fillerText = strings.Fields(`the of and to in on for with as at by from cloud computer storage file
		folder render frame menu budget team report plan data sensor shared upload download zip image
		template seat machine session recording note idea draft final review`)
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// prose is generated once and picked from by every file: making words is
// slow next to copying them (notably under the race detector), and the seed
// writes megabytes of text.
type prosePool struct {
	sentences  []string   // "The weekly report needs the final logo."
	paragraphs []string   // 2 to 5 sentences wrapped at 72 columns
	ascii      [][]string // paragraphs in lines of at most 88 bytes, ASCII (for the PDF font)
	phrases    []string   // 2 to 6 whole ASCII words
	filler     string     // ASCII words, to cut anywhere
	starts     []int      // offsets of the words in filler
	dates      []string   // the days of 2024, "2024-01-01"...
}

var prose = sync.OnceValue(func() *prosePool {
	rng := rand.New(rand.NewPCG(11, 13))
	p := &prosePool{}
	for range 1024 {
		p.sentences = append(p.sentences, makeSentence(rng))
	}
	for range 256 {
		p.paragraphs = append(p.paragraphs, wrap(p.join(rng, 2+rng.IntN(4)), 72))
	}
	for range 256 {
		p.ascii = append(p.ascii, strings.Split(wrap(asciiOnly(p.join(rng, 3+rng.IntN(4))), 88), "\n"))
	}
	for range 256 {
		words := make([]string, 2+rng.IntN(5))
		for i := range words {
			words[i] = pick(rng, fillerText)
		}
		p.phrases = append(p.phrases, strings.Join(words, " "))
	}
	var f strings.Builder
	for f.Len() < 64<<10 {
		if f.Len() > 0 {
			f.WriteByte(' ')
		}
		p.starts = append(p.starts, f.Len())
		f.WriteString(pick(rng, fillerText))
	}
	p.filler = f.String()
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 366 {
		p.dates = append(p.dates, day.AddDate(0, 0, i).Format("2006-01-02"))
	}
	return p
})

func (p *prosePool) join(rng *rand.Rand, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = pick(rng, p.sentences)
	}
	return strings.Join(parts, " ")
}

// makeSentence makes a short English sentence.
func makeSentence(rng *rand.Rand) string {
	var s string
	switch rng.IntN(5) {
	case 0:
		s = fmt.Sprintf("the %s %s %s the %s %s", pick(rng, seedAdjectives), pick(rng, seedNouns), pick(rng, seedVerbs), pick(rng, seedAdjectives), pick(rng, seedNouns))
	case 1:
		s = fmt.Sprintf("%s %s the %s for the %s %s", pick(rng, seedNames), pick(rng, seedVerbs), pick(rng, seedNouns), pick(rng, seedAdjectives), pick(rng, seedNouns))
	case 2:
		s = fmt.Sprintf("please check the %s before %s", pick(rng, seedNouns), pick(rng, seedDays))
	case 3:
		s = fmt.Sprintf("we keep %d copies of the %s %s in the shared folder", 2+rng.IntN(9), pick(rng, seedAdjectives), pick(rng, seedNouns))
	default:
		s = fmt.Sprintf("%s asked whether the %s %s the %s", pick(rng, seedNames), pick(rng, seedNouns), pick(rng, seedVerbs), pick(rng, seedNouns))
	}
	return capitalize(s) + "."
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// sentence picks a sentence; sentences joins n.
func sentence(rng *rand.Rand) string         { return pick(rng, prose().sentences) }
func sentences(rng *rand.Rand, n int) string { return prose().join(rng, n) }

// wrap breaks text into lines of at most width bytes (a longer word stays whole).
func wrap(text string, width int) string {
	var b strings.Builder
	col := 0
	for _, w := range strings.Fields(text) {
		if col > 0 && col+1+len(w) > width {
			b.WriteByte('\n')
			col = 0
		} else if col > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// fillerWords returns exactly n bytes of ASCII words (no leading or trailing
// space), pieces of the filler text.
func fillerWords(rng *rand.Rand, n int) string {
	if n <= 0 {
		return ""
	}
	p := prose()
	b := make([]byte, 0, n)
	for len(b) < n {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		from := pick(rng, p.starts[:len(p.starts)/2])
		b = append(b, p.filler[from:from+min(n-len(b), len(p.filler)-from)]...)
	}
	if b[n-1] == ' ' {
		b[n-1] = '.'
	}
	return string(b)
}

// tinyText is the content of a text file too small for its format: words
// and a newline.
func tinyText(rng *rand.Rand, size int64) []byte {
	if size == 0 {
		return []byte{}
	}
	return []byte(fillerWords(rng, int(size)-1) + "\n")
}

// textContent: a title, paragraphs wrapped at 72 columns.
func textContent(rng *rand.Rand, title string, size int64) []byte {
	head := title + "\n" + strings.Repeat("=", min(utf8.RuneCountInString(title), 72)) + "\n\n"
	if strings.EqualFold(title, "welcome") {
		head += wrap("Welcome to the shared storage of the organization. Everything here is "+
			"visible to every member: put project files under Projects, brand material under "+
			"Marketing and large data under Datasets. Files in a computer's storage belong to "+
			"that computer; session recordings are kept apart.", 72) + "\n\n"
	}
	b := fit(size, head, "", func() string {
		return pick(rng, prose().paragraphs) + "\n\n"
	}, func(n int) string { return fillerWords(rng, n-1) + "\n" }, 1)
	if b == nil {
		b = tinyText(rng, size)
	}
	return b
}

// markdownContent: a title, sections, paragraphs, lists and tables.
func markdownContent(rng *rand.Rand, title string, size int64) []byte {
	b := fit(size, "# "+title+"\n\n", "", func() string {
		switch rng.IntN(6) {
		case 0:
			return "## " + capitalize(pick(rng, seedAdjectives)+" "+pick(rng, seedNouns)) + "\n\n"
		case 1:
			var s strings.Builder
			for range 2 + rng.IntN(4) {
				fmt.Fprintf(&s, "- %s\n", sentence(rng))
			}
			return s.String() + "\n"
		case 2:
			var s strings.Builder
			s.WriteString("| Item | Owner | Due |\n|------|-------|-----|\n")
			for range 2 + rng.IntN(3) {
				fmt.Fprintf(&s, "| %s | %s | %s |\n", pick(rng, seedNouns), pick(rng, seedNames), pick(rng, seedDays))
			}
			return s.String() + "\n"
		default:
			return sentences(rng, 2+rng.IntN(4)) + "\n\n"
		}
	}, func(n int) string { return fillerWords(rng, n-1) + "\n" }, 1)
	if b == nil {
		b = tinyText(rng, size)
	}
	return b
}

// csvTable is the shape of a CSV file: its header and the fields of a row
// after the first (a date or a number), ending with the comma before the
// last field, free text without commas.
func csvTable(rng *rand.Rand, title string) (header string, first func(i int) string, rest func() string) {
	date := func(i int) string { return prose().dates[i%366] }
	t := strings.ToLower(title)
	switch {
	case strings.Contains(t, "sales"):
		regions := []string{"north", "south", "east", "west"}
		return "date,region,product,units,unit_price,total,note", date, func() string {
			u, p := 1+rng.IntN(40), 5+rng.IntN(95)
			return fmt.Sprintf(",%s,%s,%d,%d.%02d,%d.%02d,", pick(rng, regions), pick(rng, seedNouns), u, p, rng.IntN(100), u*p, rng.IntN(100))
		}
	case strings.Contains(t, "contact") || strings.Contains(t, "visitor"):
		return "date,name,email,company,note", date, func() string {
			n := pick(rng, seedNames)
			return fmt.Sprintf(",%s,%s.%d@example.com,%s GmbH,", n, strings.ToLower(n), rng.IntN(100), capitalize(pick(rng, seedNouns)))
		}
	case strings.Contains(t, "price"):
		return "item,category,price_eur,note", func(i int) string { return capitalize(pick(rng, seedNouns)) + " " + strconv.Itoa(i) }, func() string {
			return fmt.Sprintf(",%s,%d.%02d,", pick(rng, seedAdjectives), 2+rng.IntN(30), rng.IntN(100))
		}
	default:
		return "id,date,name,value,unit,note", strconv.Itoa, func() string {
			return fmt.Sprintf(",%s,%s,%d.%d,%s,", date(rng.IntN(366)), pick(rng, seedNouns), rng.IntN(1000), rng.IntN(10), pick(rng, []string{"kg", "m", "s", "°C", "%"}))
		}
	}
}

// csvContent: a header and rows with the same number of fields (the rows'
// middle fields come from a pool made per file).
func csvContent(rng *rand.Rand, title string, size int64) []byte {
	header, first, rest := csvTable(rng, title)
	pool := make([]string, 64)
	for i := range pool {
		pool[i] = rest()
	}
	i := 0
	last := first(0) + pool[0] // the filler row's fields
	b := fit(size, header+"\n", "", func() string {
		i++
		return first(i) + pick(rng, pool) + pick(rng, prose().phrases) + "\n"
	}, func(n int) string { return last + fillerWords(rng, n-len(last)-1) + "\n" }, len(last)+1)
	if b == nil {
		b = tinyText(rng, size)
	}
	return b
}

// logContent: time-stamped lines of a render or build log.
func logContent(rng *rand.Rand, title string, size int64) []byte {
	at := time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)
	stamp := func() string {
		at = at.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		return at.Format("2006-01-02 15:04:05.000")
	}
	frame := 0
	b := fit(size, stamp()+" INFO  "+title+": started\n", "", func() string {
		switch rng.IntN(8) {
		case 0:
			return fmt.Sprintf("%s WARN  cache: %s %s is stale, reloading\n", stamp(), pick(rng, seedAdjectives), pick(rng, seedNouns))
		case 1:
			return fmt.Sprintf("%s DEBUG worker %d: %d MiB in use\n", stamp(), rng.IntN(8), 100+rng.IntN(3000))
		default:
			frame++
			return fmt.Sprintf("%s INFO  step %04d done in %d.%03ds\n", stamp(), frame, rng.IntN(9), rng.IntN(1000))
		}
	}, func(n int) string {
		p := stamp() + " INFO  "
		return p + fillerWords(rng, n-len(p)-1) + "\n"
	}, 32)
	if b == nil {
		b = tinyText(rng, size)
	}
	return b
}

// htmlContent: a page of headings, paragraphs and lists.
func htmlContent(rng *rand.Rand, title string, size int64) []byte {
	head := "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + title +
		"</title>\n<link rel=\"stylesheet\" href=\"style.css\">\n</head>\n<body>\n<h1>" + capitalize(title) + "</h1>\n"
	tail := "<script src=\"app.js\"></script>\n</body>\n</html>\n"
	b := fit(size, head, tail, func() string {
		switch rng.IntN(5) {
		case 0:
			return "<h2>" + capitalize(pick(rng, seedAdjectives)+" "+pick(rng, seedNouns)) + "</h2>\n"
		case 1:
			return "<ul>\n<li>" + sentence(rng) + "</li>\n<li>" + sentence(rng) + "</li>\n</ul>\n"
		default:
			return "<p>" + sentences(rng, 1+rng.IntN(4)) + "</p>\n"
		}
	}, func(n int) string { return "<p>" + fillerWords(rng, n-8) + "</p>\n" }, 8)
	if b == nil {
		b = tinyText(rng, size)
	}
	return b
}

// cssContent: rules.
func cssContent(rng *rand.Rand, name string, size int64) []byte {
	i := 0
	b := fit(size, "/* "+name+" */\n:root { --accent: #2a6fdb; }\n\n", "", func() string {
		i++
		return fmt.Sprintf(".%s-%d {\n  color: #%06x;\n  margin: %dpx %dpx;\n  padding: %dpx;\n}\n\n",
			pick(rng, []string{"card", "menu", "frame", "button", "panel"}), i, rng.IntN(1<<24), rng.IntN(32), rng.IntN(32), rng.IntN(16))
	}, func(n int) string { return "/* " + fillerWords(rng, n-7) + " */\n" }, 7)
	if b == nil {
		b = tinyText(rng, size)
	}
	return b
}

// jsContent: functions and constants.
func jsContent(rng *rand.Rand, name string, size int64) []byte {
	i := 0
	b := fit(size, "// "+name+"\n'use strict';\n\n", "", func() string {
		i++
		if rng.IntN(3) == 0 {
			return fmt.Sprintf("const %s%d = { retries: %d, label: '%s' };\n\n", pick(rng, []string{"config", "limits", "labels"}), i, rng.IntN(9), pick(rng, fillerText))
		}
		return fmt.Sprintf("function %s%d(items) {\n  return items.filter((x) => x.size > %d).map((x) => x.name);\n}\n\n",
			pick(rng, []string{"render", "select", "sort", "show"}), i, rng.IntN(4096))
	}, func(n int) string { return "// " + fillerWords(rng, n-4) + "\n" }, 4)
	if b == nil {
		b = tinyText(rng, size)
	}
	return b
}

// jsonContent: an object with a few fields and a map of entries of a kind
// that suits the name (readings, events, settings), ending with a note.
func jsonContent(rng *rand.Rand, name string, size int64) []byte {
	q := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	lname := strings.ToLower(name)
	kind, entry := "settings", func(i int) any {
		return map[string]any{"enabled": rng.IntN(2) == 0, "value": rng.IntN(1000), "label": pick(rng, seedNouns)}
	}
	switch {
	case strings.Contains(lname, "sensor"):
		kind, entry = "sensors", func(i int) any {
			readings := make([]float64, 8)
			for k := range readings {
				readings[k] = float64(150+rng.IntN(150)) / 10
			}
			return map[string]any{"location": pick(rng, []string{"roof", "lab", "hall", "café"}), "unit": "°C", "readings": readings}
		}
	case strings.Contains(lname, "log"):
		kind, entry = "events", func(i int) any {
			return map[string]any{"t_ms": rng.IntN(600000), "type": pick(rng, []string{"key", "click", "scroll"}), "x": rng.IntN(1920), "y": rng.IntN(1080)}
		}
	}
	head := "{\n  \"name\": " + q(name) + ",\n  \"version\": " + q(1+rng.IntN(5)) + ",\n  \"generated_by\": \"orgfs emulator\",\n  \"" + kind + "\": {\n"
	pool := make([]string, 64) // entries made per file, picked from
	for i := range pool {
		pool[i] = q(entry(i))
	}
	i, key := 0, "    \""+strings.TrimSuffix(kind, "s")+"-"
	b := fit(size, head, "  }\n}\n", func() string {
		i++
		n := strconv.Itoa(i)
		return key + strings.Repeat("0", max(0, 4-len(n))) + n + "\": " + pick(rng, pool) + ",\n"
	}, func(n int) string { return "    \"note\": \"" + fillerWords(rng, n-15) + "\"\n" }, 15)
	if b == nil && size >= 2 { // a JSON string is a JSON document too
		b = []byte("\"" + fillerWords(rng, int(size)-2) + "\"")
	}
	return b
}

// randomContent streams size pseudo-random bytes.
func randomContent(seed uint64, size int64) io.Reader {
	var key [32]byte
	for i := range 4 {
		v := seed + uint64(i)*0x9e3779b97f4a7c15
		for j := range 8 {
			key[i*8+j] = byte(v >> (8 * j))
		}
	}
	return io.LimitReader(rand.NewChaCha8(key), size)
}

// headedContent is a format's header followed by random bytes, size in all
// (random bytes only when the header does not fit).
func headedContent(header []byte, seed uint64, size int64) io.Reader {
	if int64(len(header)) > size {
		return randomContent(seed, size)
	}
	return io.MultiReader(bytes.NewReader(header), randomContent(seed, size-int64(len(header))))
}

// webmHeader is the EBML header of a WebM file and the start of a segment
// holding one Void element that spans the rest of the file.
func webmHeader(size int64) []byte {
	ebml := []byte{0x1a, 0x45, 0xdf, 0xa3, 0x9f, // EBML, 31 bytes of children
		0x42, 0x86, 0x81, 0x01, // EBMLVersion 1
		0x42, 0xf7, 0x81, 0x01, // EBMLReadVersion 1
		0x42, 0xf2, 0x81, 0x04, // EBMLMaxIDLength 4
		0x42, 0xf3, 0x81, 0x08, // EBMLMaxSizeLength 8
		0x42, 0x82, 0x84, 'w', 'e', 'b', 'm', // DocType webm
		0x42, 0x87, 0x81, 0x04, // DocTypeVersion 4
		0x42, 0x85, 0x81, 0x02, // DocTypeReadVersion 2
	}
	size8 := func(n int64) []byte { // an 8-byte EBML size
		b := []byte{0x01, 0, 0, 0, 0, 0, 0, 0}
		for i := 7; i >= 1; i-- {
			b[i] = byte(n)
			n >>= 8
		}
		return b
	}
	const segHead, voidHead = 4 + 8, 1 + 8
	rest := size - int64(len(ebml)) - segHead
	if rest < voidHead {
		return nil
	}
	h := append(ebml, 0x18, 0x53, 0x80, 0x67) // Segment
	h = append(h, size8(rest)...)
	h = append(h, 0xec) // Void
	return append(h, size8(rest-voidHead)...)
}
