package ctl

// .ctl/pins: what the user keeps on this desk (cache/pins.go). Reading it
// lists the pins with their state, one a line; pins.json is the same for
// programs (orgfs pin --list, orgfs status). Writing a path (one a line,
// from the mount's root: shared/Projects) pins it; "-PATH" or "unpin PATH"
// unpins it and the pins below it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/fs"
	"github.com/orgfs/orgfs/place"
)

// pinsRead is .ctl/pins: a line per pin, its path and state.
func (t *Tree) pinsRead(context.Context) ([]byte, error) {
	var b bytes.Buffer
	for _, p := range t.pinList() {
		fmt.Fprintf(&b, "%s\t%s\n", p.Path, p.Summary())
	}
	return b.Bytes(), nil
}

// pinsJSON is .ctl/pins.json.
func (t *Tree) pinsJSON(context.Context) ([]cache.PinState, error) { return t.pinList(), nil }

func (t *Tree) pinList() []cache.PinState {
	if t.store.Pins == nil {
		return []cache.PinState{}
	}
	return t.store.Pins.List()
}

// pinsAction is a write to .ctl/pins: paths to pin, "-PATH" or "unpin
// PATH" to unpin, one a line.
func (t *Tree) pinsAction() *action {
	return &action{name: "pins", waits: true, parse: func(in string) (step, error) {
		if t.store.Pins == nil {
			return step{}, refuse(syscall.ENOTSUP, "pins need the listing cache (--dir-cache-time above 0)")
		}
		var pin, unpin []string
		for _, l := range strings.Split(in, "\n") {
			l = strings.TrimSpace(l)
			switch {
			case l == "":
			case strings.HasPrefix(l, "-"):
				unpin = append(unpin, cleanPath(l[1:]))
			case strings.HasPrefix(l, "unpin "):
				unpin = append(unpin, cleanPath(l[len("unpin "):]))
			default:
				pin = append(pin, cleanPath(strings.TrimPrefix(l, "pin ")))
			}
		}
		if len(pin)+len(unpin) == 0 {
			return step{}, refuse(syscall.EINVAL, "write a path to pin (shared/Projects), or -PATH to unpin, one a line")
		}
		what := strings.Join(append(slices.Clone(pin), unpin...), ", ")
		return step{what: what, run: func(ctx context.Context) (any, error) {
			var out []cache.PinState
			for _, p := range unpin {
				if _, err := t.store.Pins.Remove(p, true); err != nil {
					return nil, refuse(syscall.EIO, "%s: %v", p, err)
				}
			}
			for _, p := range pin {
				above, parent, f, err := t.resolve(ctx, p)
				if err != nil {
					return nil, err
				}
				st, err := t.store.Pins.Add(ctx, above, parent, f, p)
				switch {
				case errors.Is(err, cache.ErrPinTooLarge):
					return nil, refuse(syscall.ENOSPC, "%s: %v", p, err)
				case api.IsOffline(err):
					return nil, refuse(syscall.EIO, "%s: %v", p, err)
				case err != nil:
					return nil, refuse(syscall.EIO, "%s: %v", p, err)
				}
				out = append(out, st)
			}
			return out, nil
		}}, nil
	}}
}

// cleanPath is a path in the mount as pins name it: no slashes at its ends.
func cleanPath(p string) string { return strings.Trim(strings.TrimSpace(p), "/") }

// resolve finds what path names in the mount (shared/..., computers/NAME/...,
// recordings/...), by the names the mount shows: its folder, the folders
// above that from the area's root, and its record (an area's root: a
// folder of id 0).
func (t *Tree) resolve(ctx context.Context, path string) (above []place.DirKey, parent place.DirKey, f api.File, err error) {
	parts := strings.Split(path, "/")
	var key place.DirKey
	switch {
	case parts[0] == "shared":
		key, parts = place.DirKey{Area: place.Area{Kind: place.Shared}}, parts[1:]
	case parts[0] == "recordings":
		key, parts = place.DirKey{Area: place.Area{Kind: place.Recordings}}, parts[1:]
	case parts[0] == "computers" && len(parts) > 1:
		seats, err := t.store.Dirs.Seats(ctx)
		if err != nil {
			return nil, key, f, refuse(syscall.EIO, "listing computers: %v", err)
		}
		i := slices.Index(fs.ComputerNames(seats), parts[1])
		if i < 0 {
			return nil, key, f, refuse(syscall.ENOENT, "%s: no such computer", path)
		}
		key, parts = place.DirKey{Area: place.Area{Kind: place.Machine, MachineID: seats[i].ID}}, parts[2:]
	default:
		return nil, key, f, refuse(syscall.EINVAL, "%s: a path in the mount is pinned: shared/..., computers/NAME/..., recordings/...", path)
	}
	parent, f = key, api.File{ID: 0, Name: path, ObjectType: api.ObjectDirectory}
	for i, name := range parts {
		l, err := t.store.Dirs.List(ctx, key)
		if err != nil {
			return nil, key, f, refuse(syscall.EIO, "listing %s: %v", strings.Join(parts[:i], "/"), err)
		}
		var found bool
		if t.mount != nil {
			f, found = t.mount.Shown(l, name)
		} else if j := slices.IndexFunc(l.Files, func(x api.File) bool { return x.Name == name }); j >= 0 {
			f, found = l.Files[j], true
		}
		switch {
		case !found:
			return nil, key, f, refuse(syscall.ENOENT, "%s: not on the service (a file not uploaded yet is pinned once it is)", path)
		case f.ID < 0:
			return nil, key, f, refuse(syscall.EAGAIN, "%s: made offline, not on the service yet: pin it once it is", path)
		case i < len(parts)-1 && !f.IsDir():
			return nil, key, f, refuse(syscall.ENOTDIR, "%s: %s is a file", path, name)
		}
		parent = key
		if i < len(parts)-1 {
			above = append(above, key)
			key = place.DirKey{Area: key.Area, ID: f.ID}
		}
	}
	return above, parent, f, nil
}
