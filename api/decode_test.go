package api

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jsonString, the fast path of the decoder's strings, reads every JSON
// string as json.Unmarshal does: escapes, non-ASCII and invalid UTF-8 (which
// json.Unmarshal replaces) included.
func TestJSONStringReadsAsUnmarshal(t *testing.T) {
	for _, in := range []string{
		`""`, `"a"`, `"file-000001.dat"`, `"2025-11-20T10:00:00.000Z"`, `"a b/c"`,
		`"a\"b"`, `"a\\b"`, `"tab\there"`, `"\u00e9t\u00e9"`, `"été"`, "\"\xff\xfe\"", `"\ud800"`, "\"a\x01\"", `"x`, `x"`, `"`,
	} {
		got, gerr := jsonString([]byte(in))
		var want string
		werr := json.Unmarshal([]byte(in), &want)
		if got != want || (gerr == nil) != (werr == nil) {
			t.Errorf("%q: %q, %v; json.Unmarshal: %q, %v", in, got, gerr, want, werr)
		}
	}
}

// A user object a listing repeats is decoded once and read from memory
// after: each text gives its own user, whichever came first.
func TestDecodeUserRepeated(t *testing.T) {
	ann := `{"id":"u-1","type":"user","attributes":{"email":"a@b.c","name":"Ann"}}`
	bob := `{"id":"u-2","type":"user","attributes":{"email":"b@b.c","name":"Bob"}}`
	for i, c := range []struct{ in, id, email, name string }{
		{ann, "u-1", "a@b.c", "Ann"}, {bob, "u-2", "b@b.c", "Bob"}, {ann, "u-1", "a@b.c", "Ann"},
		{`{"id":"u-3","email":"c@b.c","name":"Cy"}`, "u-3", "c@b.c", "Cy"}, {bob, "u-2", "b@b.c", "Bob"},
	} {
		var u User
		if err := json.Unmarshal([]byte(c.in), &u); err != nil || u != (User{c.id, c.email, c.name}) {
			t.Errorf("decode %d: %+v %v, want %s %s %s", i, u, err, c.id, c.email, c.name)
		}
	}
	u := User{ID: "kept"}
	if err := json.Unmarshal([]byte(`"not an object"`), &u); err != nil || u.ID != "kept" {
		t.Errorf("a user that is not an object: %+v %v", u, err)
	}
}

// BenchmarkDecodeFilesPage decodes a listing page of 100 files as the
// emulator answers it (the service's shape: attributes, a user object, a
// path): the daemon's CPU per listed file.
func BenchmarkDecodeFilesPage(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"client_code":200,"files":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		n := strconv.Itoa(1000 + i)
		sb.WriteString(`{"id":"` + n + `","type":"file","attributes":{"name":"f` + n + `.dat","size":10,"content_type":"application/octet-stream",` +
			`"region":"eu-west-1","status":"upload_completed","object_type":"file","path":"/bench/tree/g000/d0000/f` + n + `.dat",` +
			`"parent_id":12,"last_modified_date":"2026-11-26T12:00:00.000Z","file_storage_size":null,"file_storage_usage":null,` +
			`"user":{"id":"0b5f0d0e-8a1c-4c1e-9e0e-123456789abc","type":"user","attributes":{"email":"alex@org-a.example","name":"Alex"}},"machine_id":null}}`)
	}
	sb.WriteString(`],"current":null,"count":100,"page":1,"next_page":null}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for range b.N {
		var p filesPage
		if _, err := decodeResponse("GET /files", 200, nil, body, &p, time.Time{}); err != nil || len(p.Files) != 100 {
			b.Fatal(len(p.Files), err)
		}
	}
}
