package emulator_test

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/content/contenttest"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
)

// Every file of the demo seed, fetched through the API and its presigned
// URL, has the size it is listed with and content of its type: JSON that
// parses, PNG and JPEG that decode, UTF-8 text, CSV rows, PDF and Office
// documents that hold together (contenttest.Check).
func TestDemoContent(t *testing.T) {
	v := start(t, emulator.SeedDemo)
	seen := map[string]int{}
	for _, c := range []*emutest.Client{v.a, v.b} {
		var walk func(base, parent string, recordings bool)
		walk = func(base, parent string, recordings bool) {
			sep := "?"
			if strings.Contains(base, "?") {
				sep = "&"
			}
			for _, f := range list(v.ok(c, "GET", base+sep+"per_page=1000"+parent, nil), "files") {
				id, a := f.(map[string]any)["id"].(string), attrs(f)
				name := a["name"].(string)
				if a["object_type"] == "directory" {
					walk(base, "&parent_id="+id, recordings)
					continue
				}
				ext := strings.ToLower(path.Ext(name))
				if ext == ".bin" { // random bytes, and 64 MiB of them
					continue
				}
				var d map[string]any
				if recordings { // no single-file route for recordings
					d = v.ok(c, "POST", "/files/download", `{"file_ids": [`+id+`]}`)
				} else {
					d = v.ok(c, "GET", "/files/"+id+"/download", nil)
				}
				b := v.get(d["url"].(string))
				if int64(len(b)) != num(t, a, "size") {
					t.Errorf("%s: %d bytes, listed as %d", a["path"], len(b), num(t, a, "size"))
				}
				if err := contenttest.Check(name, b); err != nil {
					t.Errorf("%s (%d bytes): %v", a["path"], len(b), err)
				}
				seen[ext]++
			}
		}
		walk("/files", "", false)
		walk("/files/recordings", "", true)
		for _, s := range list(v.ok(c, "GET", "/seats", nil), "seats") {
			walk(fmt.Sprintf("/machines/%s/files", s.(map[string]any)["id"]), "", false)
		}
	}
	var exts []string
	for e := range seen {
		exts = append(exts, e)
	}
	sort.Strings(exts)
	t.Logf("files checked by type: %v", seen)
	for _, want := range []string{".json", ".png", ".jpg", ".txt", ".md", ".csv", ".log", ".pdf", ".docx", ".xlsx", ".html", ".css", ".js", ".webm", ".blend"} {
		if seen[want] == 0 {
			t.Errorf("no %s file in the demo seed (types seen: %v)", want, exts)
		}
	}
}
