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

func TestUsage(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	fx := v.e.Fixtures(emulator.OrgA)
	if u := v.ok(v.a, "GET", "/usage", nil); num(t, u, "usage_minutes") != 6000 || u["machine_type"] == "" {
		t.Fatalf("usage %v", u)
	}
	r := v.ok(v.a, "POST", "/usage/assign", map[string]any{"machine_id": fx.StoppedMachine, "minutes": 100})
	if num(t, r, "assigned_minutes") != 100 || num(t, r, "machine_id") != fx.StoppedMachine {
		t.Fatalf("assign %v", r)
	}
	if n := num(t, v.ok(v.a, "GET", "/usage", nil), "usage_minutes"); n != 5900 {
		t.Fatalf("balance %d", n)
	}
	v.call(v.a, 480, "POST", "/usage/assign", map[string]any{"machine_id": fx.StoppedMachine, "minutes": 5901})
	v.call(v.a, 480, "POST", "/usage/retrieve", map[string]any{"machine_id": fx.StoppedMachine, "minutes": 101})
	v.call(v.a, 400, "POST", "/usage/retrieve", map[string]any{"machine_id": fx.StoppedMachine})
	v.call(v.a, 404, "POST", "/usage/retrieve", map[string]any{"machine_id": 1, "minutes": 1})
	r = v.ok(v.a, "POST", "/usage/retrieve", map[string]any{"machine_id": fx.StoppedMachine, "minutes": 100})
	if num(t, r, "retrieved_minutes") != 100 {
		t.Fatalf("retrieve %v", r)
	}
	v.call(v.a, 480, "POST", "/usage/retrieve", map[string]any{"machine_id": fx.StoppedMachine, "minutes": 1})
	m := v.ok(v.a, "GET", "/usage/machines", nil)
	if num(t, m, "count") != 1 || len(list(m, "machines")) != 1 {
		t.Fatalf("machines %v", m)
	}
	one := v.ok(v.a, "GET", fmt.Sprintf("/usage/machines/%d", fx.StoppedMachine), nil)
	if num(t, one, "machine_id") != fx.StoppedMachine || one["usage_source"] != "team_balance" || num(t, one, "usage_minutes") != 6000 {
		t.Fatalf("machine usage %v", one)
	}
	v.call(v.a, 4709, "GET", fmt.Sprintf("/usage/machines/%d", fx.SeatlessMachine), nil)
	v.call(v.a, 404, "GET", "/usage/machines/5", nil)

	v.e.InjectError("POST /usage/assign", 482, 1)
	v.call(v.a, 482, "POST", "/usage/assign", map[string]any{"machine_id": fx.StoppedMachine, "minutes": 1})
	v.ok(v.a, "POST", "/usage/assign", map[string]any{"machine_id": fx.StoppedMachine, "minutes": 1})
}
