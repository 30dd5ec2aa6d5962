package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unique"
)

// This file holds the decoding of answers: the envelope and the error path
// (decodeResponse), and the lenient JSON types the wire records use where the
// interface documents disagree (ids as strings or numbers, sizes integral or
// fractional, nullable fields, times in several ISO 8601 spellings).

// maxMessage bounds the length of a message kept from an error body.
const maxMessage = 300

var errNotNumber = errors.New("api: value is not a number")

// Size is a size or amount the service gives as a JSON number that may be
// integral or fractional (a numeric string or null is tolerated too). The unit
// is that of the field it sits in: the interface documents image sizes in GB
// (with an example at byte scale) and software sizes in bytes.
type Size float64

// UnmarshalJSON accepts a number, a numeric string or null.
func (s *Size) UnmarshalJSON(b []byte) error {
	f, err := parseFloat(b)
	if err != nil {
		return err
	}
	*s = Size(f)
	return nil
}

// Int64 returns the size rounded to the nearest integer.
func (s Size) Int64() int64 {
	f := math.Round(float64(s))
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	if f <= math.MinInt64 {
		return math.MinInt64
	}
	return int64(f)
}

// flexInt is an integer given as a JSON number (a fractional one is rounded)
// or as a string holding one; null and "" give 0. Anything else is an error.
type flexInt int64

func (v *flexInt) UnmarshalJSON(b []byte) error {
	n, err := parseInt(b)
	if err != nil {
		return err
	}
	*v = flexInt(n)
	return nil
}

// ptr returns the value as a *int64 (the decoded value itself, not a
// copy); nil for a nil receiver (JSON null or absent).
func (v *flexInt) ptr() *int64 { return (*int64)(v) }

// lenientInt is a flexInt that reads anything it cannot understand as 0. It
// is used for fields nobody acts on, where failing a whole listing would be
// worse than losing the value.
type lenientInt int64

func (v *lenientInt) UnmarshalJSON(b []byte) error {
	n, _ := parseInt(b)
	*v = lenientInt(n)
	return nil
}

// jsonString decodes b, a JSON string, as json.Unmarshal would, without
// its machinery for the common case (printable ASCII, no escapes: ids,
// names, times, types): a listing decodes several strings a file.
func jsonString(b []byte) (string, error) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		plain := true
		for _, c := range b[1 : len(b)-1] {
			if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
				plain = false
				break
			}
		}
		if plain {
			return string(b[1 : len(b)-1]), nil
		}
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// flexString is a string that tolerates a number or boolean in its place
// (kept as its JSON text) and reads null, objects and arrays as "".
type flexString string

func (v *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		s, err := jsonString(b)
		if err != nil {
			return err
		}
		*v = flexString(s)
	case 'n', '{', '[':
		*v = ""
	default:
		*v = flexString(b)
	}
	return nil
}

// ptr returns the value as a *string (the decoded value itself, not a
// copy); nil for a nil receiver.
func (v *flexString) ptr() *string { return (*string)(v) }

// intern returns the value as a string shared by every value decoded
// equal: for the fields that take a few distinct values over a whole
// listing (a file's type, content type, region, status, object type, its
// user's id, e-mail and name), so that a listing of 100,000 files keeps one
// copy of each instead of 100,000. A string no record holds any more is
// forgotten (package unique), so a service that sends many distinct values
// costs no more than without interning.
func (v flexString) intern() string {
	if v == "" {
		return ""
	}
	return unique.Make(string(v)).Value()
}

// flexBool is a boolean that tolerates "true"/"false"/"1"/"0" strings and
// numbers; null reads as false (use *flexBool to tell null apart).
type flexBool bool

func (v *flexBool) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes":
		*v = true
	case "false", "0", "no", "", "null":
		*v = false
	default:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			*v = f != 0
			return nil
		}
		return errors.New("api: value is not a boolean")
	}
	return nil
}

func (v *flexBool) ptr() *bool { return (*bool)(v) }

// flexTime is a time in one of the ISO 8601 spellings services use, or a Unix
// time in seconds or milliseconds. Null, "" and unreadable values give the
// zero time rather than failing the whole answer.
type flexTime time.Time

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02",
}

func (v *flexTime) UnmarshalJSON(b []byte) error {
	*v = flexTime(parseTime(b))
	return nil
}

func parseTime(b []byte) time.Time {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return time.Time{}
	}
	if b[0] != '"' {
		n, err := parseInt(b)
		if err != nil || n <= 0 {
			return time.Time{}
		}
		if n > 1e12 {
			return time.UnixMilli(n).UTC()
		}
		return time.Unix(n, 0).UTC()
	}
	s, err := jsonString(b)
	if err != nil {
		return time.Time{}
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return sharedZone(t)
		}
	}
	return time.Time{}
}

// zones are the fixed zones of the times decoded, by name and offset.
// time.Parse makes a new *time.Location (about 170 bytes) for each time
// whose offset is not the desk's own: a listing's modification times in
// "+01:00" on a desk in UTC would each carry one. The times decoded in the
// same zone share the first one's. Bounded by maxZones; past it, a time
// keeps the zone Parse gave it.
var zones struct {
	sync.Mutex
	m map[zoneKey]*time.Location
}

type zoneKey struct {
	name   string
	offset int
}

const maxZones = 256

// sharedZone returns t in the shared location of its fixed zone (t itself
// in UTC or the desk's zone).
func sharedZone(t time.Time) time.Time {
	loc := t.Location()
	name, offset := t.Zone()
	if loc == time.UTC || loc == time.Local || loc.String() != name {
		return t
	}
	k := zoneKey{name, offset}
	zones.Lock()
	shared, ok := zones.m[k]
	if !ok && len(zones.m) < maxZones {
		if zones.m == nil {
			zones.m = map[zoneKey]*time.Location{}
		}
		shared = loc
		zones.m[k] = loc
	}
	zones.Unlock()
	if shared == nil || shared == loc {
		return t
	}
	return t.In(shared)
}

func parseInt(b []byte) (int64, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return 0, nil
	}
	s := string(b)
	if b[0] == '"' {
		var err error
		if s, err = jsonString(b); err != nil {
			return 0, err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return 0, nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := parseNumber(s)
	if err != nil {
		return 0, err
	}
	f = math.Round(f)
	if f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, errors.New("api: integer out of range")
	}
	return int64(f), nil
}

func parseFloat(b []byte) (float64, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return 0, nil
	}
	s := string(b)
	if b[0] == '"' {
		var err error
		if s, err = jsonString(b); err != nil {
			return 0, err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return 0, nil
		}
	}
	return parseNumber(s)
}

// parseNumber accepts decimal numbers only (no hex, no inf or nan).
func parseNumber(s string) (float64, error) {
	if s == "" || strings.ContainsAny(s, "xXpPiInN_") {
		return 0, errNotNumber
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, errNotNumber
	}
	return f, nil
}

// rawOrNil returns nil for an absent or null JSON value, and a copy otherwise.
func rawOrNil(b json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	return append(json.RawMessage(nil), t...)
}

// envelope is what every answer of the service carries.
type envelope struct {
	ClientCode json.RawMessage `json:"client_code"`
	Message    json.RawMessage `json:"message"`
	Error      json.RawMessage `json:"error"`
	Timestamp  json.RawMessage `json:"timestamp"`
}

// decodeResponse turns one answer into nil (success, with out filled when not
// nil) or an *Error. It never panics and never returns a raw JSON error:
//   - client_code is read from a JSON-object body whatever the HTTP status;
//     a 2xx whose client_code is not 2xx is an error, and so is a non-2xx
//     status whatever the body says;
//   - when the body is not the envelope (HTML from a proxy, empty, truncated
//     JSON), Code falls back to the HTTP status; a 2xx then gives an error
//     wrapping ErrMalformedResponse, except an empty body when out is nil;
//   - the message comes from message, or else error.
//
// It returns the client_code seen (for logging) with the error.
func decodeResponse(op string, status int, header http.Header, body []byte, out any, now time.Time) (int, error) {
	code, _, err := decodeAnswer(op, status, header, body, out, now)
	return code, err
}

// decodeAnswer is decodeResponse that also returns the envelope's timestamp
// field as it came (its JSON text; nil when absent).
func decodeAnswer(op string, status int, header http.Header, body []byte, out any, now time.Time) (int, json.RawMessage, error) {
	trimmed := bytes.TrimSpace(body)
	var env envelope
	if d, ok := out.(envelopeDecoder); ok && len(trimmed) > 0 && trimmed[0] == '{' {
		if commit, ok := d.decodeWithEnvelope(trimmed, &env); ok {
			code, err := decodeEnvelope(op, status, header, trimmed, true, env, nil, now)
			if err == nil {
				commit()
			}
			return code, env.Timestamp, err
		}
	}
	isObject := len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &env) == nil
	code, err := decodeEnvelope(op, status, header, trimmed, isObject, env, out, now)
	return code, env.Timestamp, err
}

// decodeEnvelope is the rest of decodeResponse, once the body was read as
// an envelope (isObject) or not.
func decodeEnvelope(op string, status int, header http.Header, trimmed []byte, isObject bool, env envelope, out any, now time.Time) (int, error) {
	ok := status >= 200 && status <= 299
	if !isObject {
		if !ok {
			e := &Error{Op: op, HTTPStatus: status, Code: status, Message: statusText(status)}
			e.retryAfter = parseRetryAfter(header.Get("Retry-After"), now)
			return status, e
		}
		if len(trimmed) == 0 && out == nil {
			return status, nil
		}
		what := "body is not a JSON object"
		if len(trimmed) == 0 {
			what = "empty body"
		}
		return 0, &Error{Op: op, HTTPStatus: status, Err: fmt.Errorf("%w: %s", ErrMalformedResponse, what)}
	}
	code, hasCode := 0, false
	if c, err := parseInt(env.ClientCode); err == nil && len(bytes.TrimSpace(env.ClientCode)) > 0 && string(bytes.TrimSpace(env.ClientCode)) != "null" {
		code, hasCode = int(c), true
	}
	codeOK := !hasCode || (code >= 200 && code <= 299)
	if !ok || !codeOK {
		if !hasCode || codeOK {
			code = status // the status line is the only error indication
		}
		msg := envelopeMessage(env)
		if msg == "" {
			msg = statusText(code)
		}
		e := &Error{Op: op, HTTPStatus: status, Code: code, Message: msg}
		e.retryAfter = parseRetryAfter(header.Get("Retry-After"), now)
		return code, e
	}
	if !hasCode {
		code = CodeOK
	}
	if out != nil {
		if err := json.Unmarshal(trimmed, out); err != nil {
			return code, &Error{Op: op, HTTPStatus: status, Err: fmt.Errorf("%w: %s", ErrMalformedResponse, jsonErrorText(err))}
		}
	}
	return code, nil
}

// envelopeDecoder is an answer that decodes itself and the envelope around
// it in one pass where it can (a listing page: filesPage); commit fills it,
// once the envelope says it is no error.
type envelopeDecoder interface {
	decodeWithEnvelope(b []byte, env *envelope) (commit func(), ok bool)
}

// envelopeMessage returns the text of message, or else of error (a string, or
// an object's message/error string, or the JSON text itself), cleaned.
func envelopeMessage(env envelope) string {
	for _, raw := range []json.RawMessage{env.Message, env.Error} {
		if s := messageText(raw); s != "" {
			return s
		}
	}
	return ""
}

func messageText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return cleanMessage(s)
	}
	var obj struct {
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if raw[0] == '{' && json.Unmarshal(raw, &obj) == nil {
		if m := messageText(obj.Message); m != "" {
			return m
		}
		if m := messageText(obj.Error); m != "" {
			return m
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return cleanMessage(buf.String())
	}
	return ""
}

// cleanMessage makes a server-provided text safe for one log line: control
// characters become spaces, invalid UTF-8 is dropped, the length is bounded.
func cleanMessage(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "unexpected answer"
}

// jsonErrorText describes a decoding error without quoting the document.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at offset %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %s: cannot decode JSON %s", te.Field, te.Value)
		}
		return fmt.Sprintf("cannot decode JSON %s", te.Value)
	}
	if errors.Is(err, errNotNumber) {
		return "a number field holds a non-number"
	}
	return cleanMessage(err.Error())
}
