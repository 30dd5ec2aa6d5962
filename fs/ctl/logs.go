package ctl

// .ctl/logs/: the action logs of the last 30 days, one JSON Lines file per
// day (UTC), all of them or filtered by action, user or computer.
//
// Locks: none of its own (docs/ARCHITECTURE.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orgfs/orgfs/api"
)

const (
	logDays      = 30   // the service keeps the last 30 days
	logPageLimit = 1000 // the most records one request answers
	dayFormat    = "2006-01-02"
)

// logActions are the documented action types, listed under by-action/ (any
// other type answers when named).
var logActions = []string{
	"file_deleted", "file_downloaded", "file_uploaded", "folder_created",
	"machine_created", "machine_external_access_created", "machine_reset", "machine_started",
	"machine_stopped", "machine_type_changed", "user_login",
}

var actionName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// logDaysNow are the days the service keeps, oldest first.
func logDaysNow() []time.Time {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	out := make([]time.Time, logDays)
	for i := range out {
		out[i] = today.AddDate(0, 0, i-logDays+1)
	}
	return out
}

// logsList is a logs folder: a file per day of the records req selects; the
// top one (no filter) also holds by-action/, by-user/ and by-machine/.
func (t *Tree) logsList(dir string, req api.LogsRequest) func(ctx context.Context) ([]entry, error) {
	return func(ctx context.Context) ([]entry, error) {
		var es []entry
		for _, day := range logDaysNow() {
			es = append(es, t.logDayEntry(dir, req, day))
		}
		if req != (api.LogsRequest{}) {
			return es, nil
		}
		return append(es,
			t.logFilterEntry(dir, "by-action", func(context.Context) ([]string, error) {
				return logActions, nil
			}, func(name string) (api.LogsRequest, bool) {
				return api.LogsRequest{ActionType: name}, actionName.MatchString(name)
			}),
			t.logFilterEntry(dir, "by-user", t.userEmails, func(name string) (api.LogsRequest, bool) {
				return api.LogsRequest{UserEmail: name}, strings.Contains(name, "@")
			}),
			t.logFilterEntry(dir, "by-machine", t.seatIDs, func(name string) (api.LogsRequest, bool) {
				id, err := strconv.ParseInt(name, 10, 64)
				return api.LogsRequest{MachineID: id}, err == nil && id > 0 && strconv.FormatInt(id, 10) == name
			}),
		), nil
	}
}

// logFilterEntry is by-action/, by-user/ or by-machine/ in parent: a folder
// per value names lists, and any other valid value when named.
func (t *Tree) logFilterEntry(parent, name string, names func(context.Context) ([]string, error), filter func(string) (api.LogsRequest, bool)) entry {
	dir := parent + "/" + name
	folderOf := func(name string, req api.LogsRequest) entry {
		return t.dirEntry(dir, name, t.logsList(dir+"/"+name, req), nil)
	}
	list := func(ctx context.Context) ([]entry, error) {
		ns, err := names(ctx)
		if err != nil {
			return nil, err
		}
		es := make([]entry, 0, len(ns))
		for _, n := range ns {
			if req, ok := filter(n); ok {
				es = append(es, folderOf(n, req))
			}
		}
		return es, nil
	}
	find := func(_ context.Context, name string) (*entry, error) {
		req, ok := filter(name)
		if !ok {
			return nil, nil
		}
		e := folderOf(name, req)
		return &e, nil
	}
	return t.dirEntry(parent, name, list, find)
}

// userEmails are the e-mail addresses of the computers' users.
func (t *Tree) userEmails(ctx context.Context) ([]string, error) {
	seats, err := t.seatList(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range seats {
		if s.User != nil && s.User.Email != "" && !slices.Contains(out, s.User.Email) && !strings.ContainsAny(s.User.Email, "/\x00") {
			out = append(out, s.User.Email)
		}
	}
	slices.Sort(out)
	return out, nil
}

// seatIDs are the computers' ids.
func (t *Tree) seatIDs(ctx context.Context) ([]string, error) {
	seats, err := t.seatList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(seats))
	for i, s := range seats {
		out[i] = strconv.FormatInt(s.ID, 10)
	}
	return out, nil
}

// logDayEntry is <YYYY-MM-DD>.jsonl: the day's records, oldest first, one
// JSON object a line.
func (t *Tree) logDayEntry(dir string, req api.LogsRequest, day time.Time) entry {
	return t.fileEntry(dir, day.Format(dayFormat)+".jsonl", 0o444, func(ctx context.Context) ([]byte, error) {
		r := req
		r.Start, r.End = day, day.Add(24*time.Hour-time.Millisecond)
		recs, err := t.logRecords(ctx, r, 0)
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(recs, func(a, b api.LogRecord) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return int(a.ID - b.ID)
		})
		var buf bytes.Buffer
		for _, rec := range recs {
			b, err := json.Marshal(rec)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		return buf.Bytes(), nil
	}, nil)
}

// logRecords returns every record of req's window. The service answers at
// most 1000 a request, without pages: a full answer is asked again in two
// halves, down to windows of a millisecond.
func (t *Tree) logRecords(ctx context.Context, req api.LogsRequest, depth int) ([]api.LogRecord, error) {
	ls, err := t.admin.UserActionLogs(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(ls.Logs) < logPageLimit || depth > 30 || req.End.Sub(req.Start) <= time.Millisecond {
		return ls.Logs, nil
	}
	mid := req.Start.Add(req.End.Sub(req.Start) / 2).Truncate(time.Millisecond)
	first, second := req, req
	first.End, second.Start = mid, mid.Add(time.Millisecond)
	a, err := t.logRecords(ctx, first, depth+1)
	if err != nil {
		return nil, err
	}
	b, err := t.logRecords(ctx, second, depth+1)
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}
