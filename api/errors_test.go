package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDecodeResponseErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		wantCode   int
		wantStatus int
		wantMsg    string
		malformed  bool
		wantText   string
	}{
		{name: "4-digit code under HTTP 400", status: 400, body: `{"client_code":4710,"message":"permission required","timestamp":"2025-01-01T00:00:00Z"}`,
			wantCode: 4710, wantStatus: 400, wantMsg: "permission required", wantText: "api: GET /usage: 4710 permission required (HTTP 400)"},
		{name: "3-digit code", status: 451, body: `{"client_code":451,"message":"file already exists"}`,
			wantCode: 451, wantStatus: 451, wantMsg: "file already exists", wantText: "api: GET /usage: 451 file already exists (HTTP 451)"},
		{name: "HTTP 200 with error client_code", status: 200, body: `{"client_code":4722,"message":"exactly one of directory_id, file_ids, task_id"}`,
			wantCode: 4722, wantStatus: 200, wantMsg: "exactly one of directory_id, file_ids, task_id"},
		{name: "client_code as string", status: 400, body: `{"client_code":"4213","message":"building"}`,
			wantCode: 4213, wantStatus: 400, wantMsg: "building"},
		{name: "error field instead of message", status: 404, body: `{"client_code":404,"error":"not found"}`,
			wantCode: 404, wantStatus: 404, wantMsg: "not found"},
		{name: "error object", status: 400, body: `{"error":{"message":"bad things"}}`,
			wantCode: 400, wantStatus: 400, wantMsg: "bad things"},
		{name: "no client_code", status: 503, body: `{"message":"maintenance"}`,
			wantCode: 503, wantStatus: 503, wantMsg: "maintenance"},
		{name: "body says 200 under HTTP 500", status: 500, body: `{"client_code":200,"message":"OK"}`,
			wantCode: 500, wantStatus: 500, wantMsg: "OK"},
		{name: "HTML page from a proxy", status: 502, body: "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
			wantCode: 502, wantStatus: 502, wantMsg: "Bad Gateway", wantText: "api: GET /usage: 502 Bad Gateway (HTTP 502)"},
		{name: "empty body error", status: 404, body: "",
			wantCode: 404, wantStatus: 404, wantMsg: "Not Found"},
		{name: "truncated JSON error", status: 400, body: `{"client_code":4710,"mess`,
			wantCode: 400, wantStatus: 400, wantMsg: "Bad Request"},
		{name: "HTML under HTTP 200", status: 200, body: "<html>captive portal</html>", malformed: true, wantStatus: 200},
		{name: "empty body under HTTP 200 when a record is expected", status: 200, body: "", malformed: true, wantStatus: 200},
		{name: "truncated JSON under HTTP 200", status: 200, body: `{"client_code":200,"usage_minutes":1`, malformed: true, wantStatus: 200},
		{name: "JSON array under HTTP 200", status: 200, body: `[1,2,3]`, malformed: true, wantStatus: 200},
		{name: "wrong type under HTTP 200", status: 200, body: `{"client_code":200,"usage_minutes":{"a":1}}`, malformed: true, wantStatus: 200},
		{name: "long multi-line message is cleaned", status: 400, body: `{"client_code":400,"message":"line1\nline2` + strings.Repeat("x", 1000) + `"}`,
			wantCode: 400, wantStatus: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out AccountUsage
			_, err := decodeResponse("GET /usage", tt.status, http.Header{}, []byte(tt.body), &out, time.Now())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T %v, want *Error", err, err)
			}
			if e.HTTPStatus != tt.wantStatus {
				t.Errorf("HTTPStatus %d, want %d", e.HTTPStatus, tt.wantStatus)
			}
			if tt.malformed {
				if !errors.Is(err, ErrMalformedResponse) {
					t.Errorf("%v: not ErrMalformedResponse", err)
				}
				if strings.Contains(err.Error(), "json:") {
					t.Errorf("raw JSON error leaked: %v", err)
				}
				return
			}
			if e.Code != tt.wantCode {
				t.Errorf("Code %d, want %d", e.Code, tt.wantCode)
			}
			if tt.wantMsg != "" && e.Message != tt.wantMsg {
				t.Errorf("Message %q, want %q", e.Message, tt.wantMsg)
			}
			if tt.wantText != "" && e.Error() != tt.wantText {
				t.Errorf("Error() %q, want %q", e.Error(), tt.wantText)
			}
			if strings.ContainsAny(e.Message, "\n\r") || len(e.Message) > maxMessage+4 {
				t.Errorf("message not cleaned: %q", e.Message)
			}
		})
	}
}

func TestDecodeResponseSuccess(t *testing.T) {
	var out AccountUsage
	code, err := decodeResponse("GET /usage", 200, http.Header{}, []byte(`{"client_code":200,"message":"OK","usage_minutes":1514,"machine_type":"Lake","extra":{"x":1}}`), &out, time.Now())
	if err != nil || code != 200 || out.UsageMinutes != 1514 || out.MachineType != "Lake" {
		t.Fatalf("%d %v %+v", code, err, out)
	}
	// No envelope but a 2xx JSON object: tolerated.
	if _, err := decodeResponse("GET /usage", 200, http.Header{}, []byte(`{"usage_minutes":1}`), &out, time.Now()); err != nil || out.UsageMinutes != 1 {
		t.Fatal(err, out)
	}
	// An empty 200 (or 204) when nothing is expected is a success.
	for _, st := range []int{200, 204} {
		if _, err := decodeResponse("DELETE /files/downloads/3", st, http.Header{}, nil, nil, time.Now()); err != nil {
			t.Fatalf("%d: %v", st, err)
		}
	}
}

func TestErrorHelpers(t *testing.T) {
	mk := func(code int) error {
		return fmt.Errorf("wrapped: %w", &Error{Op: "X /y", HTTPStatus: 400, Code: code})
	}
	checks := []struct {
		name string
		fn   func(error) bool
		yes  []int
		no   []int
	}{
		{"IsNotFound", IsNotFound, []int{404, 4709, 4717, 4718}, []int{400, 451}},
		{"IsExists", IsExists, []int{451}, []int{450, 452}},
		{"IsStorageFull", IsStorageFull, []int{450}, []int{451}},
		{"IsSizeMismatch", IsSizeMismatch, []int{452}, []int{451}},
		{"IsPermission", IsPermission, []int{4710, 403, 4202}, []int{401, 404}},
		{"IsUnauthorized", IsUnauthorized, []int{401}, []int{403}},
	}
	for _, c := range checks {
		for _, code := range c.yes {
			if !c.fn(mk(code)) {
				t.Errorf("%s(%d) = false", c.name, code)
			}
		}
		for _, code := range c.no {
			if c.fn(mk(code)) {
				t.Errorf("%s(%d) = true", c.name, code)
			}
		}
		if c.fn(nil) || c.fn(errors.New("x")) {
			t.Errorf("%s of a non-API error is true", c.name)
		}
	}
	if !IsCode(mk(4213), CodeImageBuilding) || IsCode(mk(4213), 4212) {
		t.Error("IsCode")
	}
	temp := []struct {
		err  error
		want bool
	}{
		{&Error{HTTPStatus: 503, Code: 503}, true},
		{&Error{HTTPStatus: 429, Code: 429}, true},
		{&Error{HTTPStatus: 400, Code: 4710}, false},
		{&Error{HTTPStatus: 200, Code: 500}, true},
		{&Error{Err: io.ErrUnexpectedEOF}, true},
		{&Error{Err: context.Canceled}, false},
		{&Error{HTTPStatus: 200, Err: ErrMalformedResponse}, false},
		{&ObjectError{HTTPStatus: 503}, true},
		{&ObjectError{HTTPStatus: 403}, false},
		{context.DeadlineExceeded, false},
		{nil, false},
	}
	for _, tt := range temp {
		if got := Temporary(tt.err); got != tt.want {
			t.Errorf("Temporary(%v) = %v", tt.err, got)
		}
	}
	if !errors.Is(ErrRangeNotSatisfiable, io.EOF) {
		t.Error("ErrRangeNotSatisfiable is not io.EOF")
	}
	oe := &ObjectError{Op: "GET", URL: "objects.example/b/k", HTTPStatus: 403, Code: "AccessDenied", Message: "Request has expired"}
	if !IsURLExpired(fmt.Errorf("x: %w", oe)) || oe.Error() != "api: GET objects.example/b/k: 403 AccessDenied: Request has expired" {
		t.Error(oe.Error())
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"0.25":                          250 * time.Millisecond,
		"-1":                            0,
		"soon":                          0,
		"Wed, 01 Jan 2025 00:00:10 GMT": 10 * time.Second,
		"Tue, 31 Dec 2024 00:00:10 GMT": 0,
	}
	for in, want := range cases {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}
