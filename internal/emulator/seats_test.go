package emulator_test

import (
	"fmt"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
)

func TestComputerStateMachine(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	id := v.e.Fixtures(emulator.OrgA).StoppedMachine
	p := func(action string) string { return fmt.Sprintf("/machines/%d/%s", id, action) }
	expect := func(want string) {
		t.Helper()
		if got := v.seatStatus(v.a, id); got != want {
			t.Fatalf("status %s, want %s", got, want)
		}
	}
	expect("off")
	v.call(v.a, 400, "POST", p("list-content"), map[string]any{"path": `C:\Users`})

	v.ok(v.a, "POST", p("start"), nil)
	expect("turning_on")
	v.clock.Advance(step - 1)
	expect("turning_on")
	v.call(v.a, 400, "POST", p("reset"), nil)
	v.clock.Advance(1)
	expect("ready")
	if m := attrs(v.seat(v.a, id))["machine"].(map[string]any); attrs(m)["status"] != "running" || attrs(m)["last_session_start_at"] == nil {
		t.Fatalf("nested machine: %v", m)
	}
	v.ok(v.a, "POST", p("start"), nil) // already running: no change
	expect("ready")

	r := v.ok(v.a, "POST", p("list-content"), map[string]any{"path": `C:\Users`})
	found := false
	for _, e := range list(r, "content") {
		m := e.(map[string]any)
		if m["name"] == "Public" && m["path"] == `C:\Users\Public` && m["is_directory"] == true {
			found = true
		}
	}
	if !found {
		t.Fatalf("C:\\Users lacks Public: %v", dump(r))
	}
	v.ok(v.a, "POST", "/seats/"+fmt.Sprint(id)+"/list-content", map[string]any{"path": "c:/users/"})
	v.call(v.a, 400, "POST", p("list-content"), map[string]any{"path": `Q:\nowhere`})
	v.call(v.a, 400, "POST", p("list-content"), map[string]any{})

	v.ok(v.a, "POST", p("stop"), map[string]any{"gracefully": false})
	expect("turning_off")
	v.call(v.a, 4201, "POST", p("start"), nil)
	v.clock.Advance(step)
	expect("off")

	v.ok(v.a, "POST", p("start"), nil)
	v.clock.Advance(step)
	v.ok(v.a, "POST", p("stop"), map[string]any{"gracefully": true})
	expect("graceful_stopping")
	v.clock.Advance(step)
	expect("off")
	v.ok(v.a, "POST", p("stop"), nil) // already off: no change
	v.ok(v.a, "POST", p("reset"), nil)
	expect("off")

	// Machine types.
	types := list(v.ok(v.a, "GET", p("available-machine-types"), nil), "machine_types")
	if len(types) != 4 || types[0].(map[string]any)["type"] != "machine_type" || attrs(types[0])["friendly_name"] == nil {
		t.Fatalf("machine types: %v", types)
	}
	v.ok(v.a, "POST", p("machine-type"), map[string]any{"machine_type_id": 3})
	if mt := attrs(attrs(v.seat(v.a, id))["machine"])["machine_type"]; mt != "Volcano" {
		t.Fatalf("machine type %v", mt)
	}
	v.call(v.a, 400, "POST", p("machine-type"), map[string]any{"machine_type_id": 99})
	idB := v.e.Fixtures(emulator.OrgB).StoppedMachine
	v.call(v.b, 400, "POST", fmt.Sprintf("/machines/%d/machine-type", idB), map[string]any{"machine_type_id": 3})

	// Access link.
	acc := v.ok(v.a, "POST", p("access"), map[string]any{"expires_in": 30})
	if acc["type"] != "machine_access" || attrs(acc)["connection_link"] == "" || attrs(acc)["expires_at"] != "2025-06-01T12:30:08.000Z" {
		t.Fatalf("access: %v", acc)
	}

	// New computers: creating → off.
	created := v.ok(v.a, "POST", "/seats", map[string]any{"seat_plan_id": 1, "quantity": 2, "software_ids": []int{101}, "base_image_id": nil,
		"permissions": map[string]any{"screen_recording_enabled": true}})
	seats := list(created, "seats")
	if num(t, created, "count") != 2 || len(seats) != 2 {
		t.Fatalf("POST /seats: %v", created)
	}
	nid := num(t, map[string]any{"id": mustFloat(seats[0].(map[string]any)["id"])}, "id")
	a := attrs(seats[0])
	perms := a["permissions"].(map[string]any)
	if a["friendly_status"] != "creating" || perms["screen_recording_enabled"] != true || perms["public_internet_access"] != true || perms["analytics_collection_enabled"] != false {
		t.Fatalf("new seat: %v", dump(seats[0]))
	}
	v.clock.Advance(step)
	if got := v.seatStatus(v.a, nid); got != "off" {
		t.Fatalf("new computer after a step: %s", got)
	}
	// A new computer has no image yet.
	v.call(v.a, 4208, "POST", "/images", map[string]any{"machine_id": nid})
	v.call(v.a, 400, "POST", "/seats", map[string]any{"seat_plan_id": 77, "quantity": 1})
	v.call(v.a, 400, "POST", "/seats", map[string]any{"seat_plan_id": 1, "quantity": 1, "software_ids": []int{108}})
	v.call(v.a, 404, "POST", "/seats", map[string]any{"seat_plan_id": 1, "quantity": 1, "base_image_id": 9})
	if n := num(t, v.ok(v.a, "GET", "/seats?q=COMPUTER", nil), "count"); n != 2 {
		t.Fatalf("q=COMPUTER: %d", n)
	}
}

func mustFloat(s any) float64 {
	var f float64
	fmt.Sscan(s.(string), &f)
	return f
}
