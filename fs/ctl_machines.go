package fs

// .ctl/machines/<id>/: one folder per computer, its record and its actions.
//
// Locks: none of its own (see ctl.go).

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/orgfs/orgfs/api"
)

// machinesList is .ctl/machines/: one folder per computer of GET /seats.
func (f *FS) machinesList(ctx context.Context) ([]ctlEntry, error) {
	seats, err := f.seatList(ctx)
	if err != nil {
		return nil, err
	}
	es := make([]ctlEntry, len(seats))
	for i, s := range seats {
		es[i] = f.machineEntry(s.ID)
	}
	return es, nil
}

// seat returns computer id from the computer list (fresh: true asks the
// service again first). An id not in the list is ENOENT.
func (f *FS) seat(ctx context.Context, id int64, fresh bool) (*api.Seat, error) {
	if fresh {
		f.Dirs.DropSeats()
	}
	seats, err := f.seatList(ctx)
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
func (f *FS) machineEntry(id int64) ctlEntry {
	sid := strconv.FormatInt(id, 10)
	dir := ctlName + "/machines/" + sid
	seat := func(ctx context.Context) (*api.Seat, error) { return f.seat(ctx, id, false) }
	es := []ctlEntry{
		f.ctlLiveEntry(dir, "info", 0o444, jsonRead(seat), nil),
		f.ctlLiveEntry(dir, "status", 0o444, func(ctx context.Context) ([]byte, error) {
			s, err := seat(ctx)
			if err != nil {
				return nil, err
			}
			return lineOut(statusWord(s)), nil
		}, nil),
		f.ctlLiveEntry(dir, "usage", 0o444, jsonRead(func(ctx context.Context) (*api.MachineUsage, error) {
			return memoGet(ctx, f.ctl.memo, "usage/"+sid, func(ctx context.Context) (*api.MachineUsage, error) {
				return f.Admin.MachineUsage(ctx, id)
			})
		}), nil),
		f.ctlFileEntry(dir, "assign", 0o200, nil, f.minutesAction(id, "assign")),
		f.ctlFileEntry(dir, "retrieve", 0o200, nil, f.minutesAction(id, "retrieve")),
		f.ctlFileEntry(dir, "power", 0o200, nil, f.powerAction(id)),
		f.ctlFileEntry(dir, "reset", 0o200, nil, f.resetAction(id)),
		f.ctlLiveEntry(dir, "machine-types", 0o444, jsonRead(func(ctx context.Context) ([]api.MachineType, error) {
			return f.machineTypes(ctx, id)
		}), nil),
		f.ctlFileEntry(dir, "machine-type", 0o200, nil, f.machineTypeAction(id)),
		f.ctlLiveEntry(dir, "access", 0o600, func(context.Context) ([]byte, error) {
			f.ctl.mu.Lock()
			defer f.ctl.mu.Unlock()
			if l := f.ctl.links[id]; l != "" {
				return lineOut(l), nil
			}
			return nil, nil
		}, f.accessAction(id)),
		f.liveEntry(dir, id),
		{name: "files", mode: syscall.S_IFLNK, make: func() gofs.InodeEmbedder {
			return &ctlLink{node: node{fsys: f}, target: func(ctx context.Context) (string, error) { return f.filesLink(ctx, id) }}
		}},
		f.ctlDirEntry(dir, "tasks", func(context.Context) ([]ctlEntry, error) { return nil, nil }, func(ctx context.Context, name string) (*ctlEntry, error) {
			return f.taskFind(ctx, dir+"/tasks", id, name)
		}),
		f.ctlResultEntry(dir),
	}
	return f.ctlDirEntry(ctlName+"/machines", sid, func(ctx context.Context) ([]ctlEntry, error) {
		if _, err := seat(ctx); err != nil {
			return nil, err
		}
		return es, nil
	}, nil)
}

func (f *FS) machineTypes(ctx context.Context, id int64) ([]api.MachineType, error) {
	return memoGet(ctx, f.ctl.memo, "machine-types/"+strconv.FormatInt(id, 10), func(ctx context.Context) ([]api.MachineType, error) {
		ts, err := f.Admin.MachineTypes(ctx, id)
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
func (f *FS) minutesAction(id int64, verb string) *ctlAction {
	return &ctlAction{name: verb, parse: func(in string) (ctlRun, error) {
		n, err := parseMinutes(in)
		if err != nil {
			return ctlRun{}, err
		}
		return ctlRun{what: fmt.Sprintf("%d minutes, computer %d", n, id), run: func(ctx context.Context) (any, error) {
			defer f.changed()
			if verb == "assign" {
				return f.Admin.AssignUsage(ctx, id, n)
			}
			return f.Admin.RetrieveUsage(ctx, id, n)
		}}, nil
	}}
}

// powerAction is power: start, stop, or stop graceful. A computer not in the
// state the action starts from is EBUSY (the service would answer a start of
// a running computer with success and do nothing).
func (f *FS) powerAction(id int64) *ctlAction {
	return &ctlAction{name: "power", parse: func(in string) (ctlRun, error) {
		words := strings.Fields(in)
		var want string
		var do func(ctx context.Context) error
		switch strings.Join(words, " ") {
		case "start":
			want, do = api.SeatOff, func(ctx context.Context) error { return f.Admin.StartMachine(ctx, id, api.StartOptions{}) }
		case "stop", "stop graceful":
			graceful := len(words) == 2
			want, do = api.SeatReady, func(ctx context.Context) error { return f.Admin.StopMachine(ctx, id, graceful) }
		default:
			return ctlRun{}, refuse(syscall.EINVAL, "%q: write start, stop or stop graceful", in)
		}
		return ctlRun{what: strings.Join(words, " ") + ", computer " + strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			defer f.changed()
			if err := f.wantState(ctx, id, want, words[0]); err != nil {
				return nil, err
			}
			return nil, do(ctx)
		}}, nil
	}}
}

// wantState refuses with EBUSY unless computer id is in state (a friendly status).
func (f *FS) wantState(ctx context.Context, id int64, state, action string) error {
	s, err := f.seat(ctx, id, true)
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
func (f *FS) resetAction(id int64) *ctlAction {
	return &ctlAction{name: "reset", parse: func(in string) (ctlRun, error) {
		if in != "reset" {
			return ctlRun{}, refuse(syscall.EINVAL, "write the word reset to erase computer %d", id)
		}
		return ctlRun{what: "computer " + strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			defer f.changed()
			if err := f.wantState(ctx, id, api.SeatOff, "reset"); err != nil {
				return nil, err
			}
			return nil, f.Admin.ResetMachine(ctx, id)
		}}, nil
	}}
}

// machineTypeAction is machine-type: an id (or name) from machine-types.
func (f *FS) machineTypeAction(id int64) *ctlAction {
	return &ctlAction{name: "machine-type", parse: func(in string) (ctlRun, error) {
		if in == "" || strings.ContainsAny(in, "\n") {
			return ctlRun{}, refuse(syscall.EINVAL, "write one machine type id from machine-types")
		}
		return ctlRun{what: in + ", computer " + strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			defer f.changed()
			ts, err := f.machineTypes(ctx, id)
			if err != nil {
				return nil, err
			}
			for _, t := range ts {
				if strconv.FormatInt(t.ID, 10) == in || strings.EqualFold(t.Name, in) || strings.EqualFold(t.FriendlyName, in) {
					return nil, f.Admin.SetMachineType(ctx, id, t.ID)
				}
			}
			return nil, refuse(syscall.EINVAL, "%q is not among computer %d's machine types (see machine-types)", in, id)
		}}, nil
	}}
}

// accessAction is access: minutes the link lasts. The link is kept for
// reads of access (0600) and never logged nor put in the result.
func (f *FS) accessAction(id int64) *ctlAction {
	return &ctlAction{name: "access", parse: func(in string) (ctlRun, error) {
		n, err := parseMinutes(in)
		if err != nil {
			return ctlRun{}, err
		}
		return ctlRun{what: fmt.Sprintf("link for %d minutes, computer %d", n, id), run: func(ctx context.Context) (any, error) {
			l, err := f.Admin.AccessLink(ctx, id, int(n))
			if err != nil {
				return nil, err
			}
			f.ctl.mu.Lock()
			f.ctl.links[id] = l.ConnectionLink
			f.ctl.mu.Unlock()
			return map[string]any{"expires_at": l.ExpiresAt}, nil
		}}, nil
	}}
}

// filesLink is the target of machines/<id>/files: the computer's folder
// under computers/, by the name computers/ shows.
func (f *FS) filesLink(ctx context.Context, id int64) (string, error) {
	seats, err := f.seatList(ctx)
	if err != nil {
		return "", err
	}
	items := make([]named, len(seats))
	for i, s := range seats {
		items[i] = named{s.Name, s.ID}
	}
	for i, name := range uniqueNames(items) {
		if seats[i].ID == id {
			return path.Join("../../..", "computers", name), nil
		}
	}
	return "", refuse(syscall.ENOENT, "no computer %d in the organization", id)
}

// ctlLink is a symbolic link of the control tree.
type ctlLink struct {
	node
	target func(ctx context.Context) (string, error)
}

var (
	_ = (gofs.NodeReadlinker)((*ctlLink)(nil))
	_ = (gofs.NodeGetattrer)((*ctlLink)(nil))
)

func (n *ctlLink) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	t, err := n.target(ctx)
	if err != nil {
		return nil, n.fsys.ctlErrno("link", err)
	}
	return []byte(t), 0
}

func (n *ctlLink) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	t, _ := n.target(ctx)
	n.fsys.setAttr(&out.Attr, syscall.S_IFLNK|0o777, int64(len(t)), n.fsys.start)
	return 0
}
