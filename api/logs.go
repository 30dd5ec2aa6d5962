package api

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// LogsRequest selects action log records (GET /user-action-logs). The
// service keeps the last 30 days and answers at most 1000 records; End must
// be after Start.
type LogsRequest struct {
	Start, End time.Time // required; sent as ISO 8601 in UTC
	ActionType string    // optional, e.g. machine_started, file_downloaded
	UserEmail  string    // optional
	MachineID  int64     // optional (organization_machine_id)
}

// Logs is the answer of GET /user-action-logs.
type Logs struct {
	Logs      []LogRecord `json:"logs"`
	Count     int64       `json:"count"`
	StartDate time.Time   `json:"start_date"`
	EndDate   time.Time   `json:"end_date"`
}

// UnmarshalJSON decodes the answer leniently.
func (l *Logs) UnmarshalJSON(b []byte) error {
	var w struct {
		Logs      []LogRecord     `json:"logs"`
		Data      json.RawMessage `json:"data"` // tolerated wrapper
		Count     lenientInt      `json:"count"`
		StartDate flexTime        `json:"start_date"`
		EndDate   flexTime        `json:"end_date"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Logs == nil && len(w.Data) > 0 && w.Data[0] == '[' {
		if err := json.Unmarshal(w.Data, &w.Logs); err != nil {
			return err
		}
	}
	*l = Logs{Logs: w.Logs, Count: int64(w.Count), StartDate: time.Time(w.StartDate), EndDate: time.Time(w.EndDate)}
	if l.Count == 0 {
		l.Count = int64(len(l.Logs))
	}
	return nil
}

// UserActionLogs returns administrative and user action log records
// (GET /user-action-logs).
func (c *Client) UserActionLogs(ctx context.Context, req LogsRequest) (*Logs, error) {
	// ISO 8601 in UTC with milliseconds, as the service writes times: whole
	// seconds would cut off the end of the window (an action of the last
	// second). The end is rounded up so that the window keeps its last instant.
	const isoMillis = "2006-01-02T15:04:05.000Z07:00"
	end := req.End.UTC()
	if ms := end.Truncate(time.Millisecond); !ms.Equal(end) {
		end = ms.Add(time.Millisecond)
	}
	q := url.Values{}
	q.Set("start_date", req.Start.UTC().Truncate(time.Millisecond).Format(isoMillis))
	q.Set("end_date", end.Format(isoMillis))
	if req.ActionType != "" {
		q.Set("action_type", req.ActionType)
	}
	if req.UserEmail != "" {
		q.Set("user_email", req.UserEmail)
	}
	if req.MachineID != 0 {
		q.Set("organization_machine_id", strconv.FormatInt(req.MachineID, 10))
	}
	var out Logs
	if _, err := c.do(ctx, call{op: opUserActionLogs, method: "GET", path: "/user-action-logs", query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
