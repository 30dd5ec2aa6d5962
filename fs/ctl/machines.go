package ctl

// .ctl/machines/<id>/: one folder per computer, its record and its actions.
//
// Locks: none of its own (Tree.mu for the access links, docs/ARCHITECTURE.md).

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs"
)

// machinesList is .ctl/machines/: one folder per computer of GET /seats.
func (t *Tree) machinesList(ctx context.Context) ([]entry, error) {
	seats, err := t.seatList(ctx)
	if err != nil {
		return nil, err
	}
	es := make([]entry, len(seats))
	for i, s := range seats {
		es[i] = t.machineEntry(s.ID)
	}
	return es, nil
}

// seat returns computer id from the computer list (fresh: true asks the
// service again first). An id not in the list is ENOENT.
func (t *Tree) seat(ctx context.Context, id int64, fresh bool) (*api.Seat, error) {
	if fresh {
		t.store.Dirs.DropSeats()
	}
	seats, err := t.seatList(ctx)
	if err != nil {
		return nil, err
	}
	for i := range seats {
		if seats[i].ID == id {
			return &seats[i], nil
		}
	}
	return nil, refuse(syscall.ENOENT, "no computer %d in the organization", id)
}

// statusWord is a computer's friendly status as one word: ready is
// running, turning_on starting, turning_off and graceful_stopping stopping;
// the others as the service says them (off, creating, installing, ...).
func statusWord(s *api.Seat) string {
	switch s.FriendlyStatus {
	case api.SeatReady:
		return "running"
	case "turning_on":
		return "starting"
	case "turning_off", "graceful_stopping":
		return "stopping"
	case "":
		return "unknown"
	}
	return s.FriendlyStatus
}

// machineEntry is .ctl/machines/<id>/.
func (t *Tree) machineEntry(id int64) entry {
	sid := strconv.FormatInt(id, 10)
	dir := fs.CtlName + "/machines/" + sid
	seat := func(ctx context.Context) (*api.Seat, error) { return t.seat(ctx, id, false) }
	es := []entry{
		t.volatileEntry(dir, "info", 0o444, jsonRead(seat), nil),
		t.volatileEntry(dir, "status", 0o444, func(ctx context.Context) ([]byte, error) {
			s, err := seat(ctx)
			if err != nil {
				return nil, err
			}
			return lineOut(statusWord(s)), nil
		}, nil),
		t.volatileEntry(dir, "usage", 0o444, jsonRead(func(ctx context.Context) (*api.MachineUsage, error) {
			return memoGet(ctx, t.memo, "usage/"+sid, func(ctx context.Context) (*api.MachineUsage, error) {
				return t.admin.MachineUsage(ctx, id)
			})
		}), nil),
		t.fileEntry(dir, "assign", 0o200, nil, t.minutesAction(id, "assign")),
		t.fileEntry(dir, "retrieve", 0o200, nil, t.minutesAction(id, "retrieve")),
		t.fileEntry(dir, "power", 0o200, nil, t.powerAction(id)),
		t.fileEntry(dir, "reset", 0o200, nil, t.resetAction(id)),
		t.volatileEntry(dir, "machine-types", 0o444, jsonRead(func(ctx context.Context) ([]api.MachineType, error) {
			return t.machineTypes(ctx, id)
		}), nil),
		t.fileEntry(dir, "machine-type", 0o200, nil, t.machineTypeAction(id)),
		t.volatileEntry(dir, "access", 0o600, func(context.Context) ([]byte, error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if l := t.links[id]; l != "" {
				return lineOut(l), nil
			}
			return nil, nil
		}, t.accessAction(id)),
		t.liveEntry(dir, id),
		{name: "files", mode: syscall.S_IFLNK, make: func() gofs.InodeEmbedder {
			return &linkNode{node: node{t: t}, target: func(ctx context.Context) (string, error) { return t.filesLink(ctx, id) }}
		}},
		t.dirEntry(dir, "tasks", func(context.Context) ([]entry, error) { return nil, nil }, func(ctx context.Context, name string) (*entry, error) {
			return t.taskFind(ctx, dir+"/tasks", id, name)
		}),
		t.resultEntry(dir),
	}
	return t.dirEntry(fs.CtlName+"/machines", sid, func(ctx context.Context) ([]entry, error) {
		if _, err := seat(ctx); err != nil {
			return nil, err
		}
		return es, nil
	}, nil)
}

func (t *Tree) machineTypes(ctx context.Context, id int64) ([]api.MachineType, error) {
	return memoGet(ctx, t.memo, "machine-types/"+strconv.FormatInt(id, 10), func(ctx context.Context) ([]api.MachineType, error) {
		ts, err := t.admin.MachineTypes(ctx, id)
		if ts == nil && err == nil {
			ts = []api.MachineType{}
		}
		return ts, err
	})
}

// parseMinutes reads a positive whole number of minutes.
func parseMinutes(in string) (int64, error) {
	n, err := strconv.ParseInt(in, 10, 64)
	switch {
	case err != nil:
		return 0, refuse(syscall.EINVAL, "%q is not a whole number of minutes", in)
	case n <= 0:
		return 0, refuse(syscall.EINVAL, "minutes must be positive, not %d", n)
	case n > 1<<31:
		return 0, refuse(syscall.EINVAL, "%d minutes is more than any balance", n)
	}
	return n, nil
}

// minutesAction is assign or retrieve: minutes moved between the team
// balance and the computer.
func (t *Tree) minutesAction(id int64, verb string) *action {
	return &action{name: verb, parse: func(in string) (step, error) {
		n, err := parseMinutes(in)
		if err != nil {
			return step{}, err
		}
		return step{what: fmt.Sprintf("%d minutes, computer %d", n, id), run: func(ctx context.Context) (any, error) {
			defer t.changed()
			if verb == "assign" {
				return t.admin.AssignUsage(ctx, id, n)
			}
			return t.admin.RetrieveUsage(ctx, id, n)
		}}, nil
	}}
}

// powerAction is power: start, stop, or stop graceful. A computer not in the
// state the action starts from is EBUSY (the service would answer a start of
// a running computer with success and do nothing).
func (t *Tree) powerAction(id int64) *action {
	return &action{name: "power", parse: func(in string) (step, error) {
		words := strings.Fields(in)
		var want string
		var do func(ctx context.Context) error
		switch strings.Join(words, " ") {
		case "start":
			want, do = api.SeatOff, func(ctx context.Context) error { return t.admin.StartMachine(ctx, id, api.StartOptions{}) }
		case "stop", "stop graceful":
			graceful := len(words) == 2
			want, do = api.SeatReady, func(ctx context.Context) error { return t.admin.StopMachine(ctx, id, graceful) }
		default:
			return step{}, refuse(syscall.EINVAL, "%q: write start, stop or stop graceful", in)
		}
		return step{what: strings.Join(words, " ") + ", computer " + strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			defer t.changed()
			if err := t.wantState(ctx, id, want, words[0]); err != nil {
				return nil, err
			}
			return nil, do(ctx)
		}}, nil
	}}
}

// wantState refuses with EBUSY unless computer id is in state (a friendly status).
func (t *Tree) wantState(ctx context.Context, id int64, state, action string) error {
	s, err := t.seat(ctx, id, true)
	if err != nil {
		return err
	}
	if s.FriendlyStatus != state {
		word := "off"
		if state == api.SeatReady {
			word = "running"
		}
		return refuse(syscall.EBUSY, "computer %d is %s: %s needs it %s", id, statusWord(s), action, word)
	}
	return nil
}

// resetAction is reset: the word reset erases the computer (when off).
func (t *Tree) resetAction(id int64) *action {
	return &action{name: "reset", parse: func(in string) (step, error) {
		if in != "reset" {
			return step{}, refuse(syscall.EINVAL, "write the word reset to erase computer %d", id)
		}
		return step{what: "computer " + strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			defer t.changed()
			if err := t.wantState(ctx, id, api.SeatOff, "reset"); err != nil {
				return nil, err
			}
			return nil, t.admin.ResetMachine(ctx, id)
		}}, nil
	}}
}

// machineTypeAction is machine-type: an id (or name) from machine-types.
func (t *Tree) machineTypeAction(id int64) *action {
	return &action{name: "machine-type", parse: func(in string) (step, error) {
		if in == "" || strings.ContainsAny(in, "\n") {
			return step{}, refuse(syscall.EINVAL, "write one machine type id from machine-types")
		}
		return step{what: in + ", computer " + strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			defer t.changed()
			ts, err := t.machineTypes(ctx, id)
			if err != nil {
				return nil, err
			}
			for _, mt := range ts {
				if strconv.FormatInt(mt.ID, 10) == in || strings.EqualFold(mt.Name, in) || strings.EqualFold(mt.FriendlyName, in) {
					return nil, t.admin.SetMachineType(ctx, id, mt.ID)
				}
			}
			return nil, refuse(syscall.EINVAL, "%q is not among computer %d's machine types (see machine-types)", in, id)
		}}, nil
	}}
}

// accessAction is access: minutes the link lasts. The link is kept for
// reads of access (0600) and never logged nor put in the result.
func (t *Tree) accessAction(id int64) *action {
	return &action{name: "access", parse: func(in string) (step, error) {
		n, err := parseMinutes(in)
		if err != nil {
			return step{}, err
		}
		return step{what: fmt.Sprintf("link for %d minutes, computer %d", n, id), run: func(ctx context.Context) (any, error) {
			l, err := t.admin.AccessLink(ctx, id, int(n))
			if err != nil {
				return nil, err
			}
			t.mu.Lock()
			t.links[id] = l.ConnectionLink
			t.mu.Unlock()
			return map[string]any{"expires_at": l.ExpiresAt}, nil
		}}, nil
	}}
}

// filesLink is the target of machines/<id>/files: the computer's folder
// under computers/, by the name computers/ shows.
func (t *Tree) filesLink(ctx context.Context, id int64) (string, error) {
	seats, err := t.seatList(ctx)
	if err != nil {
		return "", err
	}
	for i, name := range fs.ComputerNames(seats) {
		if seats[i].ID == id {
			return path.Join("../../..", "computers", name), nil
		}
	}
	return "", refuse(syscall.ENOENT, "no computer %d in the organization", id)
}
