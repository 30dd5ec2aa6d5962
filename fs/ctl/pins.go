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
				parent, f, err := t.resolve(ctx, p)
				if err != nil {
					return nil, err
				}
				st, err := t.store.Pins.Add(ctx, parent, f, p)
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
// recordings/...): its folder and its record (an area's root: a folder of
// id 0).
func (t *Tree) resolve(ctx context.Context, path string) (place.DirKey, api.File, error) {
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
			return key, api.File{}, refuse(syscall.EIO, "listing computers: %v", err)
		}
		i := slices.Index(fs.ComputerNames(seats), parts[1])
		if i < 0 {
			return key, api.File{}, refuse(syscall.ENOENT, "%s: no such computer", path)
		}
		key, parts = place.DirKey{Area: place.Area{Kind: place.Machine, MachineID: seats[i].ID}}, parts[2:]
	default:
		return key, api.File{}, refuse(syscall.EINVAL, "%s: a path in the mount is pinned: shared/..., computers/NAME/..., recordings/...", path)
	}
	parent, f := key, api.File{ID: 0, Name: path, ObjectType: api.ObjectDirectory}
	for i, name := range parts {
		l, err := t.store.Dirs.List(ctx, key)
		if err != nil {
			return key, api.File{}, refuse(syscall.EIO, "listing %s: %v", strings.Join(parts[:i], "/"), err)
		}
		j := slices.IndexFunc(l.Files, func(x api.File) bool { return x.Name == name })
		if j < 0 {
			return key, api.File{}, refuse(syscall.ENOENT, "%s: not on the service (a file not uploaded yet is pinned once it is)", path)
		}
		parent, f = key, l.Files[j]
		if i < len(parts)-1 {
			if !f.IsDir() {
				return key, api.File{}, refuse(syscall.ENOTDIR, "%s: %s is a file", path, name)
			}
			key = place.DirKey{Area: key.Area, ID: f.ID}
		}
	}
	return parent, f, nil
}
