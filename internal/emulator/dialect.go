package emulator

// Dialects: where the contract (organization-api.md, service-notes.md) is
// ambiguous or silent, the real service may have chosen the other reading.
// A Dialect holds one switch per ambiguity; the zero Dialect is the reading
// the emulator has always answered in (the "(emulator choice)" notes), and
// the dialect "other" flips every switch at once. The switches are listed
// in dialectSwitches, in the order of service-notes.md (then of the
// interface document), which docs/DIALECTS.md and the emulator's help follow.
//
// Most switches act where a record is built (records.go and the handlers);
// those that reshape any answer (ids, times, next_page, the error envelope)
// act in render, on the answer's JSON.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Dialect is the reading of the contract the emulator answers in. The zero
// value is the default dialect.
type Dialect struct {
	// Error responses.
	ErrorsIn200     bool // refusals with a 3-digit client_code below 500 answer HTTP 200
	FourDigitStatus int  // HTTP status of 4-digit codes: 0 (400), 422 or 200
	ErrorField      bool // the error text is under "error", with no "message"
	Bare5xx         bool // 5xx answers carry no body at all

	// Computers.
	StorageBytes  bool   // a computer's file_storage_size and disk_size in bytes, not GB
	ComputerPaths string // "": both forms; "machines": only /machines/{id}/...; "seats": files and list-content only as /seats/{id}/...
	AccessSeconds bool   // expires_in of POST /machines/{id}/access in seconds, not minutes

	// Times (every record, the action logs' created_at among them).
	TimeNoFraction bool // timestamps without fractional seconds
	TimeOffset     bool // timestamps end in +00:00, not Z

	// Objects, lists and downloads.
	NoGetImage        bool // GET /images/{id} does not exist (404)
	PerPage100        bool // per_page is capped at 100, not 1000
	ChunkMB           bool // chunk_size is decimal MB (1,000,000 bytes), not MiB
	DownloadIDStrings bool // download_id is a string in POST /files/download too

	// The interface document's own ambiguities.
	ImageSizeBytes    bool // an image's size in bytes, not GB
	SoftwaresSwapped  bool // softwares wrapped as {"data": [...]} in lists, a plain array from install
	SoftwareSizeGB    bool // software sizes in fractional GB, not bytes
	IDsSwapped        bool // ids given as strings become numbers and numeric ids become strings
	NextPageAbsent    bool // the last page has no next_page at all, instead of null
	NameRequired      bool // name required on POST /images and /images/install (400 when missing)
	BaseImageRequired bool // base_image_id required on POST /images/install (400 when missing)
	ParentIDRequired  bool // parent_id required on POST /files (400 when missing)
	TypeNoParams      bool // a file's content_type is kept without its parameters
}

// Dialect names.
const (
	DialectDefault = "default" // the zero Dialect
	DialectOther   = "other"   // every switch flipped (OtherDialect)
)

// DialectSwitch is one switch of a Dialect.
type DialectSwitch struct {
	Name    string // as --dialect takes it
	Help    string // what the emulator does with the switch on
	Default string // what it does without
	group   string // switches of one group exclude each other
	set     func(*Dialect)
	on      func(Dialect) bool
}

// dialectSwitches are the switches in the order of service-notes.md, then of
// the interface document. Switches that set the same field exclude each
// other; OtherDialect takes the first of such a pair.
var dialectSwitches = []DialectSwitch{
	{"errors-in-200", "refusals with a 3-digit client_code (400, 401, 404, 450...) answer HTTP 200; the body says the error",
		"the HTTP status is the client_code", "",
		func(d *Dialect) { d.ErrorsIn200 = true }, func(d Dialect) bool { return d.ErrorsIn200 }},
	{"four-digit-422", "4-digit codes (4210, 4710...) answer HTTP 422",
		"HTTP 400", "four-digit",
		func(d *Dialect) { d.FourDigitStatus = 422 }, func(d Dialect) bool { return d.FourDigitStatus == 422 }},
	{"four-digit-200", "4-digit codes answer HTTP 200",
		"HTTP 400", "four-digit",
		func(d *Dialect) { d.FourDigitStatus = 200 }, func(d Dialect) bool { return d.FourDigitStatus == 200 }},
	{"error-field", "an error body gives its text under \"error\", with no \"message\"",
		"under \"message\"", "",
		func(d *Dialect) { d.ErrorField = true }, func(d Dialect) bool { return d.ErrorField }},
	{"bare-5xx", "500 and 503 answers have no body at all",
		"the error envelope", "",
		func(d *Dialect) { d.Bare5xx = true }, func(d Dialect) bool { return d.Bare5xx }},
	{"storage-bytes", "a computer's file_storage_size and disk_size are bytes (26843545600)",
		"GB (25)", "",
		func(d *Dialect) { d.StorageBytes = true }, func(d Dialect) bool { return d.StorageBytes }},
	{"seats-only", "list-content and files are served only as /seats/{id}/... (files taking task_id there); /machines/{id}/files and /machines/{id}/list-content answer 404",
		"both forms of every computer route", "computer-paths",
		func(d *Dialect) { d.ComputerPaths = "seats" }, func(d Dialect) bool { return d.ComputerPaths == "seats" }},
	{"machines-only", "every computer route is served only as /machines/{id}/...; /seats/{id}/... answers 404",
		"both forms", "computer-paths",
		func(d *Dialect) { d.ComputerPaths = "machines" }, func(d Dialect) bool { return d.ComputerPaths == "machines" }},
	{"access-seconds", "expires_in of POST /machines/{id}/access counts seconds (1..604800, default 3600)",
		"minutes (1..10080, default 60)", "",
		func(d *Dialect) { d.AccessSeconds = true }, func(d Dialect) bool { return d.AccessSeconds }},
	{"time-no-fraction", "timestamps have no fractional seconds (2024-09-30T07:29:37Z)",
		"milliseconds (07:29:37.108Z)", "",
		func(d *Dialect) { d.TimeNoFraction = true }, func(d Dialect) bool { return d.TimeNoFraction }},
	{"time-offset", "timestamps end in +00:00",
		"in Z", "",
		func(d *Dialect) { d.TimeOffset = true }, func(d Dialect) bool { return d.TimeOffset }},
	{"no-get-image", "GET /images/{id} does not exist (404): an image's status is only in the list",
		"answers the image", "",
		func(d *Dialect) { d.NoGetImage = true }, func(d Dialect) bool { return d.NoGetImage }},
	{"per-page-100", "per_page is capped at 100",
		"at 1000", "",
		func(d *Dialect) { d.PerPage100 = true }, func(d Dialect) bool { return d.PerPage100 }},
	{"chunk-mb", "chunk_size counts decimal MB (1,000,000 bytes): parts are cut, and counted, in MB",
		"MiB (1,048,576 bytes)", "",
		func(d *Dialect) { d.ChunkMB = true }, func(d Dialect) bool { return d.ChunkMB }},
	{"download-id-strings", "download_id of POST /files/download is a string, as the job record's id",
		"an integer there", "",
		func(d *Dialect) { d.DownloadIDStrings = true }, func(d Dialect) bool { return d.DownloadIDStrings }},
	{"image-size-bytes", "an image's size is bytes (24150000000)",
		"GB with two decimals (24.15)", "",
		func(d *Dialect) { d.ImageSizeBytes = true }, func(d Dialect) bool { return d.ImageSizeBytes }},
	{"softwares-swapped", "an image's softwares are {\"data\": [...]} in lists and GET /images/{id}, a plain array from POST /images/install",
		"the other way round", "",
		func(d *Dialect) { d.SoftwaresSwapped = true }, func(d Dialect) bool { return d.SoftwaresSwapped }},
	{"software-size-gb", "software sizes are fractional GB (0.35), in GET /software and in images",
		"bytes (350000000)", "",
		func(d *Dialect) { d.SoftwareSizeGB = true }, func(d Dialect) bool { return d.SoftwareSizeGB }},
	{"ids-swapped", "ids the contract shows as strings (\"id\": \"668\") are numbers, and numeric ids (parent_id, machine_id, attributes.id, an upload's id...) are strings",
		"as the contract shows them", "",
		func(d *Dialect) { d.IDsSwapped = true }, func(d Dialect) bool { return d.IDsSwapped }},
	{"next-page-absent", "the last page of a list has no next_page field",
		"next_page null", "",
		func(d *Dialect) { d.NextPageAbsent = true }, func(d Dialect) bool { return d.NextPageAbsent }},
	{"name-required", "name is required on POST /images and POST /images/install (400 when missing or empty)",
		"generated when missing", "",
		func(d *Dialect) { d.NameRequired = true }, func(d Dialect) bool { return d.NameRequired }},
	{"base-image-required", "base_image_id is required on POST /images/install (400 when missing)",
		"the latest base image when missing", "",
		func(d *Dialect) { d.BaseImageRequired = true }, func(d Dialect) bool { return d.BaseImageRequired }},
	{"parent-id-required", "parent_id is required on POST /files (400 when missing; 0 is still the root)",
		"the root when missing", "",
		func(d *Dialect) { d.ParentIDRequired = true }, func(d Dialect) bool { return d.ParentIDRequired }},
	{"type-no-params", "a file's content_type is kept without its parameters (text/plain; charset=utf-8 lists as text/plain)",
		"kept as sent", "",
		func(d *Dialect) { d.TypeNoParams = true }, func(d Dialect) bool { return d.TypeNoParams }},
}

// DialectSwitches returns the switches, in the order of the service notes.
func DialectSwitches() []DialectSwitch { return append([]DialectSwitch(nil), dialectSwitches...) }

// OtherDialect is the dialect "other": every switch flipped; of switches
// that exclude each other, the first (four-digit-422, seats-only).
func OtherDialect() Dialect {
	var d Dialect
	taken := map[string]bool{}
	for _, s := range dialectSwitches {
		if s.group != "" {
			if taken[s.group] {
				continue
			}
			taken[s.group] = true
		}
		s.set(&d)
	}
	return d
}

// ParseDialect reads a dialect: "default", "other", or switch names
// separated by commas, on top of the default ("errors-in-200,chunk-mb") or,
// when the list starts with other, on top of other ("other,four-digit-200").
// Two switches of one group (four-digit-422 and four-digit-200, seats-only
// and machines-only) cannot both be named.
func ParseDialect(s string) (Dialect, error) {
	var d Dialect
	named := map[string]string{} // group → the switch named for it
	for i, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch {
		case i == 0 && (name == DialectDefault || s == ""):
			continue
		case i == 0 && name == DialectOther:
			d = OtherDialect()
			continue
		}
		sw, ok := switchNamed(name)
		if !ok {
			return Dialect{}, fmt.Errorf("unknown dialect switch %q (want default, other, or switches of %s)", name, strings.Join(switchNames(), ", "))
		}
		if sw.group != "" {
			if prev := named[sw.group]; prev != "" && prev != name {
				return Dialect{}, fmt.Errorf("dialect switches %s and %s exclude each other", prev, name)
			}
			named[sw.group] = name
		}
		sw.set(&d)
	}
	return d, nil
}

// DialectOf returns the dialect with only the named switch on.
func DialectOf(name string) (Dialect, error) {
	sw, ok := switchNamed(name)
	if !ok {
		return Dialect{}, fmt.Errorf("unknown dialect switch %q", name)
	}
	var d Dialect
	sw.set(&d)
	return d, nil
}

func switchNamed(name string) (DialectSwitch, bool) {
	for _, s := range dialectSwitches {
		if s.Name == name {
			return s, true
		}
	}
	return DialectSwitch{}, false
}

func switchNames() []string {
	out := make([]string, len(dialectSwitches))
	for i, s := range dialectSwitches {
		out[i] = s.Name
	}
	return out
}

// Switches names the switches that are on, in the order of the notes.
func (d Dialect) Switches() []string {
	var out []string
	for _, s := range dialectSwitches {
		if s.on(d) {
			out = append(out, s.Name)
		}
	}
	return out
}

// String is "default", "other", or the switches that are on, comma-separated.
func (d Dialect) String() string {
	switch {
	case d == Dialect{}:
		return DialectDefault
	case d == OtherDialect():
		return DialectOther
	}
	return strings.Join(d.Switches(), ",")
}

// validate refuses values of the fields no switch gives.
func (d Dialect) validate() error {
	switch {
	case d.FourDigitStatus != 0 && d.FourDigitStatus != 400 && d.FourDigitStatus != 422 && d.FourDigitStatus != 200:
		return fmt.Errorf("dialect: FourDigitStatus %d: want 0 (400), 422 or 200", d.FourDigitStatus)
	case d.ComputerPaths != "" && d.ComputerPaths != "machines" && d.ComputerPaths != "seats":
		return fmt.Errorf("dialect: ComputerPaths %q: want \"\", machines or seats", d.ComputerPaths)
	}
	return nil
}

// The answers: status and body in the dialect.

// errorStatus is the HTTP status of a refusal with client_code code.
func (d Dialect) errorStatus(code int) int {
	switch {
	case code >= 1000 && d.FourDigitStatus != 0:
		return d.FourDigitStatus
	case code < 500 && d.ErrorsIn200:
		return http.StatusOK
	}
	return httpStatus(code) // the default dialect's
}

// formatTime is a timestamp of the dialect.
func (d Dialect) formatTime(t time.Time) string {
	layout := "2006-01-02T15:04:05.000Z07:00"
	if d.TimeNoFraction {
		layout = "2006-01-02T15:04:05Z07:00"
	}
	s := t.UTC().Format(layout)
	if d.TimeOffset {
		s = strings.TrimSuffix(s, "Z") + "+00:00"
	}
	return s
}

// isTimeKey reports whether a field of that name holds a timestamp.
func isTimeKey(k string) bool {
	return k == "timestamp" || strings.HasSuffix(k, "_at") || strings.HasSuffix(k, "_date")
}

// idKeys are the fields holding ids that ids-swapped turns around.
var idKeys = map[string]bool{"id": true, "parent_id": true, "machine_id": true, "user_id": true,
	"assigned_image_id": true, "output_folder_id": true}

// render encodes an answer in the dialect: its HTTP status and body (nil:
// no body at all).
func (d Dialect) render(status int, payload envelope) (int, []byte, error) {
	if code := payload.code(); code != 0 && code != 200 {
		if code >= 500 && code <= 599 && d.Bare5xx {
			return status, nil, nil
		}
		if d.ErrorField {
			payload["error"] = payload["message"]
			delete(payload, "message")
		}
	}
	if d.NextPageAbsent {
		if v, ok := payload["next_page"]; ok && v == nil {
			delete(payload, "next_page")
		}
	}
	b, err := json.Marshal(payload)
	if err != nil || !(d.IDsSwapped || d.TimeNoFraction || d.TimeOffset) {
		return status, b, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, nil, err
	}
	v = d.reshape("", v)
	b, err = json.Marshal(v)
	return status, b, err
}

// reshape turns the ids and times of a decoded answer into the dialect's.
func (d Dialect) reshape(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if key == "metadata" {
			return x // an action's own record, free-form
		}
		download := x["type"] == "download"
		for k, val := range x {
			switch {
			case d.IDsSwapped && idKeys[k] && !(download && k == "id"):
				x[k] = swapID(val)
			case isTimeKey(k):
				if s, ok := val.(string); ok {
					if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
						x[k] = d.formatTime(t)
					}
				}
			default:
				x[k] = d.reshape(k, val)
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = d.reshape(key, x[i])
		}
		return x
	}
	return v
}

// swapID turns a numeric string into a number and a number into a string;
// anything else (a UUID, null) stays.
func swapID(v any) any {
	switch x := v.(type) {
	case json.Number:
		return x.String()
	case string:
		if _, err := strconv.ParseInt(x, 10, 64); err == nil {
			return json.Number(x)
		}
	}
	return v
}

// perPageMax is the largest per_page.
func (d Dialect) perPageMax() int {
	if d.PerPage100 {
		return 100
	}
	return maxPerPage
}

// chunkUnit is the number of bytes of one chunk_size unit.
func (d Dialect) chunkUnit() int64 {
	if d.ChunkMB {
		return 1_000_000
	}
	return mib
}

// computerBases are the path forms of the computer routes: of those the
// contract documents in both forms (list-content, files), and of the others.
func (d Dialect) computerBases() (both, others []string) {
	switch d.ComputerPaths {
	case "machines":
		return []string{"/machines/{id}"}, []string{"/machines/{id}"}
	case "seats":
		return []string{"/seats/{id}"}, []string{"/machines/{id}"}
	}
	return []string{"/machines/{id}", "/seats/{id}"}, []string{"/machines/{id}", "/seats/{id}"}
}
