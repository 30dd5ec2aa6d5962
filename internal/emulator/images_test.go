package emulator_test

import (
	"fmt"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
)

func TestImageStateMachine(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	id := v.e.Fixtures(emulator.OrgA).StoppedMachine

	im := v.ok(v.a, "POST", "/images", map[string]any{"machine_id": id})
	imID := num(t, attrs(im), "id")
	if a := attrs(im); a["status"] != "pending" || a["source"] != "seat" || a["name"] != fmt.Sprintf("Template #%d", imID) || im["type"] != "image" {
		t.Fatalf("new image: %v", dump(im))
	}
	if got := v.seatStatus(v.a, id); got != "installing" {
		t.Fatalf("computer %s, want installing", got)
	}
	v.call(v.a, 4212, "POST", "/images", map[string]any{"machine_id": id})
	v.call(v.a, 4210, "POST", fmt.Sprintf("/images/%d/assign", imID), map[string]any{"machine_ids": []int64{id}})
	v.clock.Advance(step)
	if s := attrs(v.ok(v.a, "GET", fmt.Sprintf("/images/%d", imID), nil))["status"]; s != "building" {
		t.Fatalf("after a step: %v", s)
	}
	v.call(v.a, 4213, "DELETE", fmt.Sprintf("/images/%d", imID), nil)
	v.clock.Advance(step)
	if s := attrs(v.ok(v.a, "GET", fmt.Sprintf("/images/%d", imID), nil))["status"]; s != "available" {
		t.Fatalf("after two steps: %v", s)
	}
	if got := v.seatStatus(v.a, id); got != "off" {
		t.Fatalf("computer %s, want off", got)
	}

	// Assign: resets the computer, which installs at its first run.
	v.ok(v.a, "POST", fmt.Sprintf("/images/%d/assign", imID), map[string]any{"machine_ids": []int64{id}})
	if a := attrs(v.seat(v.a, id)); num(t, a, "assigned_image_id") != imID {
		t.Fatalf("assigned_image_id %v", a["assigned_image_id"])
	}
	v.call(v.a, 4211, "POST", fmt.Sprintf("/images/%d/assign", imID), map[string]any{"machine_ids": []int64{v.e.Fixtures(emulator.OrgB).StoppedMachine}})
	v.call(v.a, 4211, "POST", fmt.Sprintf("/images/%d/assign", imID), map[string]any{"machine_ids": []int64{}})
	v.call(v.a, 400, "POST", fmt.Sprintf("/images/%d/assign", imID), map[string]any{})
	v.ok(v.a, "POST", fmt.Sprintf("/machines/%d/start", id), nil)
	for _, want := range []string{"installing", "turning_on", "ready"} {
		if got := v.seatStatus(v.a, id); got != want {
			t.Fatalf("start with an image: %s, want %s", got, want)
		}
		v.clock.Advance(step)
	}
	v.call(v.a, 4209, "POST", "/images", map[string]any{"machine_id": id})

	// Install: pre_installation, 5% buffer, {data: [...]} software shape.
	inst := v.ok(v.a, "POST", "/images/install", map[string]any{"software_ids": []int{101, 104}, "base_image_id": 202})
	a := attrs(inst)
	if a["status"] != "pending" || a["source"] != "pre_installation" || a["name"] != "Template #202" {
		t.Fatalf("install: %v", dump(inst))
	}
	if size := a["size"].(float64); size != 10.64 { // (9e9+0.35e9+0.78e9)*1.05 bytes in GB
		t.Fatalf("install size %v", size)
	}
	if sw := a["softwares"].(map[string]any)["data"].([]any); len(sw) != 2 {
		t.Fatalf("softwares %v", a["softwares"])
	}
	instID := num(t, a, "id")
	v.ok(v.a, "DELETE", fmt.Sprintf("/images/%d", instID), nil) // pending can be deleted
	v.call(v.a, 404, "GET", fmt.Sprintf("/images/%d", instID), nil)
	v.call(v.a, 404, "POST", "/images/install", map[string]any{"base_image_id": 999})
	v.call(v.a, 400, "POST", "/images/install", map[string]any{"software_ids": []int{999}})
	v.call(v.a, 400, "POST", "/images/install", map[string]any{"name": "a name that is definitely longer than thirty"})
	big := v.ok(v.a, "POST", "/images/install", map[string]any{"name": "big", "software_ids": []int{108}})
	v.clock.Advance(2 * step)
	v.call(v.a, 4510, "POST", fmt.Sprintf("/images/%d/assign", num(t, attrs(big), "id")), map[string]any{"machine_ids": []int64{id}})

	// List: q and pagination.
	l := v.ok(v.a, "GET", "/images?q=TEMPLATE&per_page=1", nil)
	if num(t, l, "count") != 1 || l["next_page"] != nil || len(list(l, "images")) != 1 {
		t.Fatalf("images q: %v", dump(l))
	}
	l = v.ok(v.a, "GET", "/images?per_page=1", nil)
	if num(t, l, "count") != 2 || num(t, l, "next_page") != 2 {
		t.Fatalf("images page 1: %v", dump(l))
	}
	if sw, ok := attrs(list(l, "images")[0])["softwares"].([]any); !ok || sw == nil {
		t.Fatalf("list softwares is not an array: %v", attrs(list(l, "images")[0])["softwares"])
	}
}
