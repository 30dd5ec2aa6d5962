package api

import (
	"errors"
	"net/http"
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
	})
}
