package ctl

// Fuzzing of every control file's parser (results.go's action.parse).

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/testkit"
)

// FuzzCtlInput feeds any input to every control file's parser: it never
// panics, refuses with EINVAL and a reason or accepts, and what it accepts
// is what the file documents (a positive whole number of minutes, a known
// word, ids, an image name of at most 30 characters).
func FuzzCtlInput(f *testing.F) {
	for _, s := range []string{
		"start", "stop", "stop graceful", "reset", "delete", "abort", "retry", "discard shared/a b.txt",
		"60", "0", "-1", "1e3", "99999999999999999999", " 12 ", "12,13 14", "1,,2",
		`{"machine_id": 12, "name": "base"}`, `{"machine_id": "12"}`, `{"name": "0123456789012345678901234567890"}`,
		`{"seat_plan_id": 1, "quantity": 2, "software_ids": [1], "base_image_id": null}`, `{"a": 1}{"b": 2}`,
		`{"name": "x", "software_ids": [-1]}`, "\x00", "ok\n\n", "",
	} {
		f.Add(s)
	}
	// The service is never asked: only the parsers run.
	tree := New(Deps{Store: &cache.Store{}, Admin: (*api.Client)(nil), Log: testkit.Quiet()}, Options{})
	actions := []*action{
		tree.powerAction(1), tree.resetAction(1), tree.minutesAction(1, "assign"), tree.accessAction(1),
		tree.machineTypeAction(1), tree.newImageAction(), tree.installImageAction(), tree.assignImageAction(1),
		tree.deleteImageAction(1), tree.seatsAction(), tree.uploadsAction(), tree.downloadEntryAction(1),
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, a := range actions {
			r, err := a.parse(in)
			if err != nil {
				var ce *refusal
				if !errors.As(err, &ce) || ce.msg == "" || (ce.errno != syscall.EINVAL && ce.errno != syscall.EROFS) {
					t.Fatalf("%s refused %q with %v (%T): want EINVAL and a reason", a.name, in, err, err)
				}
				continue
			}
			if r.run == nil || r.what == "" {
				t.Fatalf("%s accepted %q without an action", a.name, in)
			}
			switch a.name {
			case "assign", "access":
				if n, err := strconv.ParseInt(in, 10, 64); err != nil || n <= 0 {
					t.Fatalf("%s accepted %q: not a positive whole number", a.name, in)
				}
			case "power":
				if w := strings.Join(strings.Fields(in), " "); w != "start" && w != "stop" && w != "stop graceful" {
					t.Fatalf("power accepted %q", in)
				}
			case "reset", "abort":
				if in != a.name {
					t.Fatalf("%s accepted %q without its word", a.name, in)
				}
			case "image delete":
				if in != "delete" {
					t.Fatalf("%s accepted %q without its word", a.name, in)
				}
			case "image assign":
				if _, err := parseIDs(in); err != nil {
					t.Fatalf("%s accepted %q", a.name, in)
				}
			case "images new", "images install":
				var body struct{ Name string }
				if err := json.Unmarshal([]byte(in), &body); err != nil || utf8.RuneCountInString(body.Name) > maxImageName {
					t.Fatalf("%s accepted %q (%v)", a.name, in, err)
				}
			}
		}
	})
}
