package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeResponse feeds arbitrary answers through the response path of
// several record types: decoding must never panic, must give nil or an
// *Error, never a raw JSON error, and a non-2xx status is always an error.
// The seeds below and the files under testdata/fuzz/FuzzDecodeResponse run
// as a normal test in go test.
func FuzzDecodeResponse(f *testing.F) {
	seeds := []struct {
		status int
		body   string
	}{
		{200, `{"client_code":200,"message":"OK","timestamp":"2025-11-22T02:20:00Z","usage_minutes":1514,"machine_type":"Lake"}`},
		{200, `{"client_code":200,"images":[{"id":"1","type":"image","attributes":{"id":1,"name":"a","size":1.5,"softwares":{"data":[{"id":"2","attributes":{"id":2}}]}}}],"next_page":2}`},
		{200, `{"client_code":200,"files":[{"id":"5","type":"file","attributes":{"name":"a","size":10.0,"path":null,"user":null,"machine_id":"3"}}],"current":null,"count":1,"next_page":null}`},
		{200, `{"client_code":200,"seats":[{"id":"668","type":"seat","attributes":{"name":"C","friendly_status":"off","permissions":{"clipboard_enabled":true},"machine":{"id":"668","attributes":{}}}}]}`},
		{200, `{"client_code":200,"id":"77","type":"download","attributes":{"status":"uploaded","download_url":"https://x/y","size":null}}`},
		{200, `{"client_code":200,"url":null,"size":null,"download_id":77}`},
		{200, `{"client_code":200,"logs":[{"id":1,"metadata":{"a":[1,2]},"machine_id":null}],"count":1}`},
		{200, `{"client_code":4722,"message":"exactly one"}`},
		{400, `{"client_code":"4710","error":{"message":"permission"}}`},
		{502, `<html><body>Bad Gateway</body></html>`},
		{200, ``},
		{200, `{"client_code":200,"usage_minutes":`},
		{200, `{"client_code":200,"id":1e400}`},
		{200, `{"softwares":"x","size":"NaN","id":[1]}`},
		{200, `{"client_code":200,"files":[null,{"id":7,"type":"file","name":"flat","size":"3","object_type":"file","parent_id":1},{"id":"8","attributes":"oops","name":"x"}],"current":{"id":"1","attributes":{"name":"d","object_type":"directory"}},"count":"3","next_page":2}`},
		{200, `{"client_code":4717,"message":"file not found","files":[{"id":"5","attributes":{"name":"a"}}]}`},
		{200, `{"files":[{"id":1,"attributes":{"name":"a"},"attributes":{"size":3}}],"files":[null]}`},
	}
	for _, s := range seeds {
		f.Add(s.status, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 599 {
			status = 100 + (status%500+500)%500
		}
		targets := []func() any{
			func() any { return nil },
			func() any { return new(AccountUsage) },
			func() any { return new(MachinesUsage) },
			func() any { return new(imageAnswer) },
			func() any {
				return new(struct {
					Images   []Image     `json:"images"`
					NextPage *lenientInt `json:"next_page"`
				})
			},
			func() any {
				return new(struct {
					Files    []File      `json:"files"`
					Current  *File       `json:"current"`
					Count    lenientInt  `json:"count"`
					NextPage *lenientInt `json:"next_page"`
				})
			},
			func() any {
				return new(struct {
					Seats []Seat `json:"seats"`
				})
			},
			func() any { return new(filesPage) }, // decoded in one pass with its envelope where it can
			func() any { return new(CreateSeatsResult) },
			func() any { return new(DownloadJob) },
			func() any { return new(DownloadLink) },
			func() any { return new(Logs) },
			func() any { return new(CreateFileResult) },
			func() any { return new(CompleteResult) },
			func() any { return new(accessAnswer) },
			func() any {
				return new(struct {
					Software   []Software    `json:"software"`
					BaseImages []BaseImage   `json:"base_images"`
					Types      []MachineType `json:"machine_types"`
					Content    []ContentEntry
				})
			},
		}
		for _, mk := range targets {
			_, err := decodeResponse("GET /x", status, http.Header{"Retry-After": {"1"}}, body, mk(), time.Now())
			if err == nil {
				if status < 200 || status > 299 {
					t.Fatalf("HTTP %d decoded as success", status)
				}
				continue
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T %v", err, err)
			}
			if msg := err.Error(); strings.Contains(msg, "json: ") || strings.ContainsAny(e.Message, "\n\r") {
				t.Fatalf("unclean error: %q", msg)
			}
		}
		samePage(t, status, body)
	})
}

// samePage checks that a listing page decodes in one pass (filesPage, with
// its envelope) as it does the long way, written out here: the envelope
// first, then each record as a resource (its attributes object, or itself
// when that is not an object), fields taken one by one. The same records,
// and an error where the long way has one.
func samePage(t *testing.T, status int, body []byte) {
	t.Helper()
	var fast filesPage
	var raw struct {
		Files    []json.RawMessage `json:"files"`
		Current  json.RawMessage   `json:"current"`
		Count    lenientInt        `json:"count"`
		NextPage *lenientInt       `json:"next_page"`
	}
	fc, ferr := decodeResponse("GET /files", status, nil, body, &fast, time.Time{})
	sc, serr := decodeResponse("GET /files", status, nil, body, &raw, time.Time{})
	slow := filesPage{Count: raw.Count, NextPage: raw.NextPage}
	if serr == nil && raw.Files != nil {
		slow.Files = make([]File, len(raw.Files))
	}
	for i, b := range raw.Files {
		if serr == nil {
			slow.Files[i], serr = referenceFile(b)
		}
	}
	if t := bytes.TrimSpace(raw.Current); serr == nil && len(t) > 0 && string(t) != "null" {
		c, err := referenceFile(raw.Current)
		slow.Current, serr = &c, err
	}
	if repeatsAKey(body) {
		return // one pass merges a repeated object where the long way takes the last (pages.go)
	}
	if fc != sc || (ferr == nil) != (serr == nil) {
		t.Fatalf("one pass: %d %v; the long way: %d %v", fc, ferr, sc, serr)
	}
	if ferr == nil && !reflect.DeepEqual(fast, slow) {
		t.Fatalf("one pass: %+v; the long way: %+v", fast, slow)
	}
}

// repeatsAKey reports whether an object in body has a key twice (matched
// as the json package matches keys to fields: without regard to case).
func repeatsAKey(body []byte) bool {
	d := json.NewDecoder(bytes.NewReader(body))
	type level struct {
		keys  map[string]bool
		isKey bool // the next token of this object is a key
	}
	var stack []*level
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].isKey {
			if k, ok := tok.(string); ok {
				top := stack[n-1]
				if top.keys[strings.ToLower(k)] {
					return true
				}
				top.keys[strings.ToLower(k)], top.isKey = true, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{keys: map[string]bool{}, isKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].isKey = true // a value ended: a key comes next
		}
	}
}

// referenceFile decodes a file record the long way (samePage).
func referenceFile(b []byte) (File, error) {
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		return File{}, nil
	}
	var r resource
	if err := json.Unmarshal(b, &r); err != nil {
		return File{}, err
	}
	src := bytes.TrimSpace(r.Attributes)
	if len(src) == 0 || src[0] != '{' {
		src = b
	}
	var a fileAttrs
	if err := json.Unmarshal(src, &a); err != nil {
		return File{}, err
	}
	return File{ID: int64(r.ID), Name: string(a.Name), Size: int64(a.Size), ObjectType: string(a.ObjectType),
		ParentID: int64(a.ParentID), LastModified: time.Time(a.LastModified),
		FileStorageSize: a.FileStorageSize.ptr(), FileStorageUsage: a.FileStorageUsage.ptr(),
		Details: &FileDetails{Type: string(r.Type), ContentType: string(a.ContentType), Region: string(a.Region),
			Status: string(a.Status), Path: a.Path.ptr(), User: a.User, MachineID: a.MachineID.ptr()}}, nil
}
