package emulator_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
)

func logsQuery(start, end time.Time, extra string) string {
	return "/user-action-logs?start_date=" + url.QueryEscape(start.Format(time.RFC3339)) + "&end_date=" + url.QueryEscape(end.Format(time.RFC3339)) + extra
}

func TestActionLogs(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	fx := v.e.Fixtures(emulator.OrgA)
	m := fmt.Sprintf("/machines/%d/", fx.StoppedMachine)
	v.ok(v.a, "POST", m+"start", nil)
	v.clock.Advance(step)
	v.ok(v.a, "POST", m+"stop", nil)
	v.clock.Advance(step)
	v.mkdir(v.a, 0, 0, "logged")
	v.ok(v.b, "POST", fmt.Sprintf("/machines/%d/start", v.e.Fixtures(emulator.OrgB).StoppedMachine), nil)

	now := v.clock.Now()
	all := v.ok(v.a, "GET", logsQuery(now.Add(-time.Hour), now.Add(time.Hour), ""), nil)
	if num(t, all, "count") != 3 || all["start_date"] == nil || all["end_date"] == nil {
		t.Fatalf("logs: %v", dump(all))
	}
	first := list(all, "logs")[0].(map[string]any) // newest first
	if first["action_type"] != "folder_created" || first["user_email"] != "alex@org-a.example" || first["machine_id"] != nil ||
		num(t, first, "user_id") != 1 || first["metadata"] == nil || first["created_at"] != "2025-06-01T12:00:04.000Z" {
		t.Fatalf("record: %v", dump(first))
	}
	started := v.ok(v.a, "GET", logsQuery(now.Add(-time.Hour), now.Add(time.Hour), "&action_type=machine_started"), nil)
	if num(t, started, "count") != 1 || num(t, list(started, "logs")[0].(map[string]any), "machine_id") != fx.StoppedMachine {
		t.Fatalf("action_type filter: %v", dump(started))
	}
	byMachine := v.ok(v.a, "GET", logsQuery(now.Add(-time.Hour), now.Add(time.Hour), fmt.Sprintf("&organization_machine_id=%d", fx.StoppedMachine)), nil)
	if num(t, byMachine, "count") != 2 {
		t.Fatalf("machine filter: %v", dump(byMachine))
	}
	if n := num(t, v.ok(v.a, "GET", logsQuery(now.Add(-time.Hour), now.Add(time.Hour), "&user_email=nobody@example.com"), nil), "count"); n != 0 {
		t.Fatalf("user_email filter: %d", n)
	}
	if n := num(t, v.ok(v.a, "GET", logsQuery(now.Add(-time.Hour), now.Add(time.Hour), "&user_email=ALEX@org-a.example"), nil), "count"); n != 3 {
		t.Fatalf("user_email filter: %d", n)
	}
	// Range: only records inside [start, end].
	if n := num(t, v.ok(v.a, "GET", logsQuery(now.Add(-time.Second), now.Add(time.Hour), ""), nil), "count"); n != 1 {
		t.Fatalf("range: %d", n)
	}
	// 400s.
	v.call(v.a, 400, "GET", "/user-action-logs", nil)
	v.call(v.a, 400, "GET", "/user-action-logs?start_date="+url.QueryEscape(now.Format(time.RFC3339)), nil)
	v.call(v.a, 400, "GET", logsQuery(now, now, ""), nil)
	v.call(v.a, 400, "GET", logsQuery(now, now.Add(-time.Hour), ""), nil)
	v.call(v.a, 400, "GET", "/user-action-logs?start_date=yesterday&end_date=today", nil)
	v.call(v.a, 400, "GET", logsQuery(now.Add(-time.Hour), now, "&organization_machine_id=x"), nil)
	// Only the last 30 days.
	v.clock.Advance(31 * 24 * time.Hour)
	if n := num(t, v.ok(v.a, "GET", logsQuery(now.Add(-time.Hour), v.clock.Now(), ""), nil), "count"); n != 0 {
		t.Fatalf("records older than 30 days: %d", n)
	}
}

func TestDemoLogsCapAndWindow(t *testing.T) {
	v := start(t, emulator.SeedDemo)
	now := v.clock.Now()
	r := v.ok(v.a, "GET", logsQuery(now.Add(-90*24*time.Hour), now.Add(time.Hour), ""), nil)
	n := num(t, r, "count")
	if n < 50 || n > 1000 {
		t.Fatalf("demo logs: %d", n)
	}
	oldest := now.Add(-30 * 24 * time.Hour)
	for _, l := range list(r, "logs") {
		ts, err := time.Parse(time.RFC3339, l.(map[string]any)["created_at"].(string))
		if err != nil || ts.Before(oldest) {
			t.Fatalf("record outside the 30-day window: %v", l)
		}
	}
	// More than 1000 matching records: 1000 answered.
	for range 900 {
		v.ok(v.a, "POST", fmt.Sprintf("/machines/%d/machine-type", v.e.Fixtures(emulator.OrgA).StoppedMachine), map[string]any{"machine_type_id": 2})
	}
	if n := num(t, v.ok(v.a, "GET", logsQuery(now.Add(-90*24*time.Hour), now.Add(time.Hour), ""), nil), "count"); n != 1000 {
		t.Fatalf("cap: %d", n)
	}
}
