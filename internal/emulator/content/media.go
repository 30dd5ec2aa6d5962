package content

// Seed content of the binary formats that have a structure: pictures (PNG,
// JPEG), PDF, and Office Open XML packages (DOCX, XLSX). See content.go.

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	stdimage "image"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// shapes draws a picture of w×h pixels of size bytes each (pix, stride) a
// row at a time: a diagonal gradient (the colors of grad: w+h pixels, row y
// shows grad[y:y+w]) with discs and bars of the colors of solid (a row of
// w pixels of one color per shape). Every write is a copy of a span.
func shapes(rng *rand.Rand, pix []byte, stride, w, h, size int, grad []byte, solid func(k int) []byte) {
	for y := range h {
		copy(pix[y*stride:y*stride+w*size], grad[y*size:(y+w)*size])
	}
	span := func(x0, x1, y int, c []byte) {
		if x0, x1 = max(x0, 0), min(x1, w); x0 < x1 {
			copy(pix[y*stride+x0*size:y*stride+x1*size], c)
		}
	}
	for k := range 3 + rng.IntN(4) {
		c := solid(k)
		cx, cy := rng.IntN(w), rng.IntN(h)
		if rng.IntN(2) == 0 { // a disc
			r := 1 + rng.IntN(max(1, min(w, h)/3))
			for y := max(cy-r, 0); y < min(cy+r, h); y++ {
				d := int(math.Sqrt(float64(r*r - (y-cy)*(y-cy))))
				span(cx-d, cx+d, y, c)
			}
			continue
		}
		bw, bh := 1+rng.IntN(max(1, w/2)), 1+rng.IntN(max(1, h/4))
		for y := cy; y < min(cy+bh, h); y++ {
			span(cx, cx+bw, y, c)
		}
	}
}

func randomRGB(rng *rand.Rand) [3]int { return [3]int{rng.IntN(256), rng.IntN(256), rng.IntN(256)} }

// blend is the color t/n of the way from a to b.
func blend(a, b [3]int, t, n int) [3]int {
	var c [3]int
	for i := range c {
		c[i] = (a[i]*(n-t) + b[i]*t) / max(n, 1)
	}
	return c
}

// rgbaPicture is a w×h picture in RGBA.
func rgbaPicture(rng *rand.Rand, w, h int) *stdimage.RGBA {
	img := stdimage.NewRGBA(stdimage.Rect(0, 0, w, h))
	c1, c2 := randomRGB(rng), randomRGB(rng)
	grad := make([]byte, 0, (w+h)*4)
	for i := range w + h {
		c := blend(c1, c2, i, w+h-1)
		grad = append(grad, uint8(c[0]), uint8(c[1]), uint8(c[2]), 255)
	}
	shapes(rng, img.Pix, img.Stride, w, h, 4, grad, func(k int) []byte {
		c := randomRGB(rng)
		return bytes.Repeat([]byte{uint8(c[0]), uint8(c[1]), uint8(c[2]), 255}, w)
	})
	return img
}

// pngContent is a PNG of exactly size bytes: a picture of 256 colors (192
// of a gradient, 64 of shapes; at most maxPNGPixels), its rows stored
// without compression, and a tEXt chunk making up the size. It is written
// straight into place rather than through image/png: moving megabytes of
// pixels around is what the seed cannot afford under the race detector.
func pngContent(rng *rand.Rand, title string, size int64) []byte {
	const (
		keyword      = "Comment\x00"
		maxPNGPixels = 1 << 20
		block        = 65535 // the most a stored deflate block holds
	)
	// Everything but the rows and their framing: signature, IHDR, PLTE,
	// tEXt with its keyword, IEND, the zlib header and checksum.
	const fixed = 8 + 12 + 13 + 12 + 768 + 12 + len(keyword) + 12 + 2 + 4
	framing := func(raw int) int { n := max(1, (raw+block-1)/block); return n * (12 + 5) }
	if size < 1024 || size > 1<<30 {
		return nil
	}
	px := min(int(size)-fixed-64, maxPNGPixels)
	w := min(max(1, int(math.Sqrt(float64(px)*4/3))), 4096)
	h := max(1, px/w)
	for ; h > 1 && fixed+h*(w+1)+framing(h*(w+1)) > int(size); h-- {
	}
	raw := make([]byte, h*(w+1)) // rows, each after its filter type (0: none)
	if fixed+len(raw)+framing(len(raw)) > int(size) {
		return nil
	}
	grad := make([]byte, w+h)
	for i := range grad {
		grad[i] = byte(i * 191 / max(w+h-1, 1))
	}
	shapes(rng, raw[1:], w+1, w, h, 1, grad, func(int) []byte { return bytes.Repeat([]byte{byte(192 + rng.IntN(64))}, w) })

	out := make([]byte, 0, size)
	chunk := func(typ string, parts ...[]byte) {
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(n))
		start := len(out)
		out = append(out, typ...)
		for _, p := range parts {
			out = append(out, p...)
		}
		out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
	}
	out = append(out, "\x89PNG\r\n\x1a\n"...)
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(w)), uint32(h))
	chunk("IHDR", ihdr, []byte{8, 3, 0, 0, 0}) // 8 bits, indexed color
	pal := make([]byte, 0, 768)
	c1, c2 := randomRGB(rng), randomRGB(rng)
	for i := range 256 {
		c := blend(c1, c2, i, 191)
		if i >= 192 {
			c = randomRGB(rng)
		}
		pal = append(pal, byte(c[0]), byte(c[1]), byte(c[2]))
	}
	chunk("PLTE", pal)
	room, label := int(size)-fixed-len(raw)-framing(len(raw)), asciiOnly(title)+": "
	text := fillerWords(rng, room)
	if len(label) <= room {
		text = label + fillerWords(rng, room-len(label))
	}
	chunk("tEXt", []byte(keyword), []byte(text))
	sum := adler32.Checksum(raw)
	for i := 0; i == 0 || i < len(raw); i += block {
		data := raw[i:min(i+block, len(raw))]
		final := i+block >= len(raw)
		var head, tail []byte
		if i == 0 {
			head = []byte{0x78, 0x01} // zlib: deflate, 32K window, no dictionary
		}
		bh := []byte{0, byte(len(data)), byte(len(data) >> 8), ^byte(len(data)), ^byte(len(data) >> 8)}
		if final {
			bh[0] = 1
			tail = binary.BigEndian.AppendUint32(nil, sum)
		}
		chunk("IDAT", head, bh, data, tail)
	}
	chunk("IEND")
	return out
}

// jpegContent is a JPEG of a generated picture (at most 240×180: encoding
// is slow), made up to size with comment (COM) segments after the start of
// image.
func jpegContent(rng *rand.Rand, title string, size int64) []byte {
	if size < 2048 || size > 1<<30 {
		return nil
	}
	w, h := 240, 180
	if size < 32<<10 {
		w, h = 80, 60
	}
	img := rgbaPicture(rng, w, h)
	var buf bytes.Buffer
	for {
		buf.Reset()
		if err := jpeg.Encode(&buf, img.SubImage(stdimage.Rect(0, 0, w, h)), &jpeg.Options{Quality: 90}); err != nil {
			return nil
		}
		r := int(size) - buf.Len()
		if r == 0 || r >= 4 {
			break
		}
		if w <= 16 || h <= 16 {
			return nil
		}
		w, h = w*7/8, h*7/8 // too big, or a remainder no segment can take
	}
	enc := buf.Bytes()
	out := make([]byte, 0, size)
	out = append(out, enc[:2]...) // SOI
	first := true
	for r := int(size) - len(enc); r > 0; {
		n := min(r, 65537) // a segment: FF FE, a length of at most 65535 counting itself, text
		if rest := r - n; rest > 0 && rest < 4 {
			n -= 4
		}
		label := asciiOnly(title) + ": "
		text := fillerWords(rng, n-4)
		if first && len(label) <= n-4 {
			text = label + fillerWords(rng, n-4-len(label))
		}
		first = false
		out = append(out, 0xff, 0xfe)
		out = binary.BigEndian.AppendUint16(out, uint16(n-2))
		out = append(out, text...)
		r -= n
	}
	return append(out, enc[2:]...)
}

// asciiOnly spells text in ASCII for the PDF's standard font.
func asciiOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 128 && r != '(' && r != ')' && r != '\\':
			b.WriteRune(r)
		case strings.ContainsRune("éèêë", r):
			b.WriteByte('e')
		case strings.ContainsRune("üúù", r):
			b.WriteByte('u')
		case strings.ContainsRune("Üö", r):
			b.WriteString(map[rune]string{'Ü': "U", 'ö': "o"}[r])
		case strings.ContainsRune("áàâä", r):
			b.WriteByte('a')
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// pdfContent is a PDF 1.4 of A4 pages of text in Helvetica, made up to size
// with a comment after the header (offsets in the cross-reference table
// account for it).
func pdfContent(rng *rand.Rand, title string, size int64) []byte {
	const linesPerPage = 56
	if size < 1024 || size > 1<<30 {
		return nil
	}
	var para []string
	nextLine := func() string { // paragraphs, a blank line after each
		if para == nil {
			para = append(pick(rng, prose().ascii), "")
		}
		l := para[0]
		if para = para[1:]; len(para) == 0 {
			para = nil
		}
		return l
	}
	pages := [][]string{{asciiOnly(title), ""}}
	est := 900 + len(title)*2
	for {
		l := nextLine()
		cost := len(l) + 10 // "(...) Tj T*\n"
		if len(pages[len(pages)-1]) == linesPerPage {
			cost += 270 // a page and its content stream, their xref entries
		}
		if est+cost > int(size)-16 {
			break
		}
		est += cost
		if len(pages[len(pages)-1]) == linesPerPage {
			pages = append(pages, nil)
		}
		pages[len(pages)-1] = append(pages[len(pages)-1], l)
	}
	for {
		pad := 0
		out := assemblePDF(rng, title, pages, pad)
		for range 4 { // the startxref offset may gain a digit
			pad += int(size) - len(out)
			if pad < 0 || pad == 1 {
				break
			}
			out = assemblePDF(rng, title, pages, pad)
			if len(out) == int(size) {
				return out
			}
		}
		// Too long: drop a line and try again.
		last := len(pages) - 1
		if len(pages[last]) <= 1 {
			if last == 0 {
				return nil
			}
			pages = pages[:last]
		} else {
			pages[last] = pages[last][:len(pages[last])-1]
		}
	}
}

// assemblePDF writes the PDF of pages with a comment of pad bytes (0 or at
// least 2) after the header.
func assemblePDF(rng *rand.Rand, title string, pages [][]string, pad int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	for pad > 0 {
		n := min(pad, 76)
		if rest := pad - n; rest == 1 {
			n--
		}
		b.WriteString("%" + fillerWords(rng, n-2) + "\n")
		pad -= n
	}
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 5+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	obj(fmt.Sprintf("<< /Title (%s) /Producer (orgfs emulator) /CreationDate (D:20250101120000Z) >>", asciiOnly(title)))
	for i, lines := range pages {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 6+2*i))
		var s strings.Builder
		s.WriteString("BT\n/F1 11 Tf\n14 TL\n56 800 Td\n")
		for _, l := range lines {
			fmt.Fprintf(&s, "(%s) Tj T*\n", l)
		}
		s.WriteString("ET")
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", s.Len(), s.String()))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// ooxmlPart is a fixed part of an Office Open XML package.
type ooxmlPart struct{ name, content string }

const xmlHeader = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

// ooxmlContent is a ZIP of the fixed parts and of part main (head, as many
// chunks as fit, tail), all stored (uncompressed, so the size is known in
// advance), made up to size with the archive's comment.
func ooxmlContent(rng *rand.Rand, size int64, parts []ooxmlPart, main, head, tail string, chunk func() string) []byte {
	if size > 1<<30 {
		return nil
	}
	build := func(body, comment string) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		mod := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
		for _, p := range append(parts, ooxmlPart{main, head + body + tail}) {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: p.name, Method: zip.Store, Modified: mod})
			if err != nil {
				return nil
			}
			w.Write([]byte(p.content))
		}
		if zw.SetComment(comment) != nil || zw.Close() != nil {
			return nil
		}
		return buf.Bytes()
	}
	empty := build("", "")
	if empty == nil || int64(len(empty)) > size {
		return nil
	}
	room := int(size) - len(empty)
	var body strings.Builder
	for {
		c := chunk()
		if body.Len()+len(c) > room {
			break
		}
		body.WriteString(c)
	}
	if room-body.Len() > 65535 { // more than the archive comment can take
		return nil
	}
	out := build(body.String(), fillerWords(rng, room-body.Len()))
	if int64(len(out)) != size {
		return nil
	}
	return out
}

func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// docxContent is a Word document of paragraphs.
func docxContent(rng *rand.Rand, title string, size int64) []byte {
	const ns = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	parts := []ooxmlPart{
		{"[Content_Types].xml", xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
	}
	para := func(s string) string {
		return `<w:p><w:r><w:t xml:space="preserve">` + xmlText(s) + "</w:t></w:r></w:p>\n"
	}
	head := xmlHeader + "<w:document " + ns + "><w:body>\n" + `<w:p><w:r><w:rPr><w:b/></w:rPr><w:t>` + xmlText(title) + "</w:t></w:r></w:p>\n"
	return ooxmlContent(rng, size, parts, "word/document.xml", head, "</w:body></w:document>\n", func() string {
		return para(sentences(rng, 2+rng.IntN(5)))
	})
}

// xlsxContent is a workbook of one sheet of rows.
func xlsxContent(rng *rand.Rand, title string, size int64) []byte {
	const main = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`
	const rel = `xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	parts := []ooxmlPart{
		{"[Content_Types].xml", xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`},
		{"_rels/.rels", xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", xmlHeader + "<workbook " + main + " " + rel + `><sheets><sheet name="` + xmlText(title) + `" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
	}
	str := func(ref, s string) string {
		return `<c r="` + ref + `" t="inlineStr"><is><t>` + xmlText(s) + "</t></is></c>"
	}
	n := func(ref string, v int) string { return fmt.Sprintf(`<c r="%s"><v>%d</v></c>`, ref, v) }
	head := xmlHeader + "<worksheet " + main + "><sheetData>\n" +
		`<row r="1">` + str("A1", "Item") + str("B1", "Owner") + str("C1", "Quantity") + str("D1", "Price") + "</row>\n"
	row := 1
	return ooxmlContent(rng, size, parts, "xl/worksheets/sheet1.xml", head, "</sheetData></worksheet>\n", func() string {
		row++
		r := fmt.Sprint(row)
		return `<row r="` + r + `">` + str("A"+r, capitalize(pick(rng, seedAdjectives)+" "+pick(rng, seedNouns))) + str("B"+r, pick(rng, seedNames)) +
			n("C"+r, 1+rng.IntN(500)) + n("D"+r, 1+rng.IntN(10000)) + "</row>\n"
	})
}
