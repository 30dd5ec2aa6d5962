package content

import (
	"io"
	"path"
	"strings"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator/content/contenttest"
)

// Every generator gives exactly the size asked, for sizes around the edges
// of its format, the same bytes for the same name and size, and content that
// checks as its type (contenttest.Check).
func TestContentSizes(t *testing.T) {
	names := []string{"a.txt", "Welcome.txt", "b.md", "sales 2024.csv", "contacts.csv", "prices.csv", "x.csv",
		"render.log", "index.html", "style.css", "app.js", "config-007.json", "sensors.json", "input-log.json",
		"logo.png", "dish 01.jpg", "menu.pdf", "plan.docx", "budget.xlsx", "recording.webm", "kitchen.blend", "big.bin"}
	sizes := []int64{0, 1, 2, 3, 13, 14, 15, 99, 100, 101, 511, 512, 513, 1023, 1024, 2047, 2048, 4099, 5 << 10,
		20<<10 + 7, 64<<10 - 1, 64 << 10, 65537, 131075}
	for _, name := range names {
		for _, size := range sizes {
			b, err := io.ReadAll(New(name, size))
			if err != nil || int64(len(b)) != size {
				t.Fatalf("%s of %d bytes: %d bytes, %v", name, size, len(b), err)
			}
			if err := contenttest.Check(name, b); err != nil && size >= minTyped(name) {
				t.Errorf("%s of %d bytes: %v", name, size, err)
			}
		}
	}
	a, _ := io.ReadAll(New("notes.md", 5000))
	b, _ := io.ReadAll(New("notes.md", 5000))
	if string(a) != string(b) {
		t.Fatal("content is not deterministic")
	}
}

// minTyped is the smallest size from which a name's content is of its type
// (below it, the generators fall back to words or random bytes).
func minTyped(name string) int64 {
	switch strings.ToLower(path.Ext(name)) {
	case ".png", ".pdf":
		return 1024
	case ".jpg":
		return 2048
	case ".docx", ".xlsx":
		return 4099
	case ".html":
		return 300
	case ".json", ".csv", ".log":
		return 200
	case ".webm":
		return 64
	case ".blend":
		return 12
	}
	return 1
}
