// Package contenttest checks that content is of the type its file name says,
// for the tests of package content (every generator) and of the emulator
// (every file of the demo seed, fetched through the API).
package contenttest

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"image/jpeg"
	"image/png"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

func ext(name string) string { return strings.ToLower(path.Ext(name)) }

// Check checks that b is content of the type its name says: JSON that
// parses, pictures that decode, text that is UTF-8 lines, CSV of consistent
// rows, a PDF whose cross-reference table and stream lengths are right,
// Office packages of well-formed XML parts, the headers of WebM and Blender
// files. Other types pass.
func Check(name string, b []byte) error {
	switch ext(name) {
	case ".json":
		if !json.Valid(b) {
			return errors.New("not valid JSON")
		}
	case ".png":
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("PNG: %w", err)
		}
		if img.Bounds().Empty() {
			return errors.New("PNG: empty picture")
		}
	case ".jpg", ".jpeg":
		if _, err := jpeg.Decode(bytes.NewReader(b)); err != nil {
			return fmt.Errorf("JPEG: %w", err)
		}
	case ".txt", ".md", ".log", ".css", ".js", ".html":
		if err := checkText(b); err != nil {
			return err
		}
		if ext(name) == ".html" && (!bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || !bytes.HasSuffix(b, []byte("</html>\n"))) {
			return errors.New("HTML: not a whole page")
		}
	case ".csv":
		if err := checkText(b); err != nil {
			return err
		}
		rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			return fmt.Errorf("CSV: %w", err)
		}
		if len(rows) < 2 {
			return fmt.Errorf("CSV: %d rows", len(rows))
		}
	case ".pdf":
		return checkPDF(b)
	case ".docx", ".xlsx":
		return checkOOXML(name, b)
	case ".webm":
		if !bytes.HasPrefix(b, []byte{0x1a, 0x45, 0xdf, 0xa3}) || !bytes.Contains(b[:min(len(b), 64)], []byte("webm")) {
			return errors.New("no WebM header")
		}
	case ".blend":
		if !bytes.HasPrefix(b, []byte("BLENDER")) {
			return errors.New("no Blender header")
		}
	}
	return nil
}

// checkText: UTF-8 lines without control characters but tabs, ending with a newline.
func checkText(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("text is not UTF-8")
	}
	for i, c := range b {
		if c < 0x20 && c != '\n' && c != '\t' {
			return fmt.Errorf("text has control character %#x at %d", c, i)
		}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return errors.New("text does not end with a newline")
	}
	return nil
}

var (
	pdfObj    = regexp.MustCompile(`^(\d+) 0 obj\n`)
	pdfStream = regexp.MustCompile(`/Length (\d+) >>\nstream\n`)
)

// checkPDF checks the header, the trailer, that every cross-reference entry
// points at its object, and every stream's length.
func checkPDF(b []byte) error {
	if !bytes.HasPrefix(b, []byte("%PDF-1.")) || !bytes.HasSuffix(b, []byte("%%EOF\n")) {
		return errors.New("PDF: no header or no %%EOF")
	}
	i := bytes.LastIndex(b, []byte("startxref\n"))
	if i < 0 {
		return errors.New("PDF: no startxref")
	}
	xref, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(string(b[i+10:]), "%%EOF\n")))
	if err != nil || xref >= len(b) || !bytes.HasPrefix(b[xref:], []byte("xref\n0 ")) {
		return fmt.Errorf("PDF: startxref %d does not point at the xref table", xref)
	}
	lines := strings.Split(string(b[xref:]), "\n")
	n, err := strconv.Atoi(strings.TrimPrefix(lines[1], "0 "))
	if err != nil || len(lines) < n+3 {
		return fmt.Errorf("PDF: bad xref header %q", lines[1])
	}
	for k := 1; k < n; k++ {
		off, err := strconv.Atoi(lines[2+k][:10])
		if err != nil || off >= len(b) {
			return fmt.Errorf("PDF: bad xref entry %q", lines[2+k])
		}
		m := pdfObj.FindSubmatch(b[off:])
		if m == nil || string(m[1]) != strconv.Itoa(k) {
			return fmt.Errorf("PDF: xref entry %d points at %.20q", k, b[off:])
		}
	}
	for _, m := range pdfStream.FindAllSubmatchIndex(b, -1) {
		l, _ := strconv.Atoi(string(b[m[2]:m[3]]))
		if end := m[1] + l; end > len(b) || !bytes.HasPrefix(b[end:], []byte("\nendstream")) {
			return fmt.Errorf("PDF: stream at %d is not %d bytes long", m[1], l)
		}
	}
	return nil
}

// checkOOXML checks that the package has its content types and main part,
// and that every part is well-formed XML.
func checkOOXML(name string, b []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("%s: %w", ext(name), err)
	}
	want := map[string]bool{"[Content_Types].xml": false, "_rels/.rels": false}
	if ext(name) == ".docx" {
		want["word/document.xml"] = false
	} else {
		want["xl/workbook.xml"], want["xl/worksheets/sheet1.xml"] = false, false
	}
	for _, f := range zr.File {
		want[f.Name] = true
		r, err := f.Open()
		if err != nil {
			return err
		}
		d := xml.NewDecoder(r)
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				r.Close()
				return fmt.Errorf("%s: part %s: %w", ext(name), f.Name, err)
			}
		}
		r.Close()
	}
	for part, ok := range want {
		if !ok {
			return fmt.Errorf("%s: no part %s", ext(name), part)
		}
	}
	return nil
}
