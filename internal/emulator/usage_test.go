package emulator_test

import (
	"fmt"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
)

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
