package emulator

// Action logs. Every action the emulator performs appends a record. Besides
// the action types of the public reference (machine_started, machine_stopped,
// machine_reset, machine_type_changed, machine_external_access_created,
// machine_created, file_downloaded, file_uploaded, file_deleted,
// folder_created, user_login), actions the reference has no type for are
// recorded as image_created, image_installed, image_assigned, image_deleted,
// usage_assigned, usage_retrieved and download_cancelled.
//
// GET /user-action-logs answers the records created in [start_date, end_date]
// and within the last 30 days, newest first, at most 1000.

import (
	"sort"
	"strings"
	"time"
)

// appendLog records an action. machineID 0 is null. Called with mu held.
func (e *Emulator) appendLog(o *org, actionType string, u *user, machineID int64, meta map[string]any, at time.Time) {
	e.nextLogID++
	e.logs = append(e.logs, &logRecord{id: e.nextLogID, org: o, actionType: actionType, user: u, machineID: machineID, metadata: meta, created: at})
	if len(e.logs) > maxLogsKept {
		e.logs = append([]*logRecord(nil), e.logs[len(e.logs)-maxLogsKept:]...)
	}
}

// parseDate reads an ISO 8601 date-time (RFC 3339, with or without
// fractional seconds) or a plain date (midnight UTC).
func parseDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// GET /user-action-logs
func (e *Emulator) getLogs(c *call) (any, error) {
	q := c.r.URL.Query()
	ss, es := q.Get("start_date"), q.Get("end_date")
	if ss == "" || es == "" {
		return nil, badRequest("start_date and end_date are required")
	}
	start, ok := parseDate(ss)
	if !ok {
		return nil, badRequest("invalid start_date %q: want ISO 8601", ss)
	}
	end, ok := parseDate(es)
	if !ok {
		return nil, badRequest("invalid end_date %q: want ISO 8601", es)
	}
	if !end.After(start) {
		return nil, badRequest("end_date must be after start_date")
	}
	mid, hasMID, err := c.queryInt("organization_machine_id")
	if err != nil {
		return nil, err
	}
	action, email := q.Get("action_type"), q.Get("user_email")
	oldest := c.now.Add(-logWindow)
	var hits []*logRecord
	for _, l := range e.logs {
		switch {
		case l.org != c.org,
			l.created.Before(start), l.created.After(end), l.created.Before(oldest),
			action != "" && l.actionType != action,
			email != "" && (l.user == nil || !strings.EqualFold(l.user.email, email)),
			hasMID && l.machineID != mid:
			continue
		}
		hits = append(hits, l)
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if !hits[i].created.Equal(hits[j].created) {
			return hits[i].created.After(hits[j].created)
		}
		return hits[i].id > hits[j].id
	})
	out := make([]logJSON, 0, min(len(hits), maxLogAnswer))
	for _, l := range hits[:min(len(hits), maxLogAnswer)] {
		out = append(out, logRecordJSON(l))
	}
	return map[string]any{"logs": out, "count": len(out), "start_date": isoTime(start), "end_date": isoTime(end)}, nil
}
