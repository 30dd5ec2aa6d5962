package cache

// Folders renamed with their content (fs/rename_tree.go). The service has no
// rename: the folder is made anew at the new name, each file staged there
// superseding its old self, and the old folder retired: hidden from its
// parent's listing at once, and deleted from the service once no file of it
// waits for its copy's upload (the staging deletes each old file when its
// copy is up). The folders retiring are kept in the cache dir
// (retiring.json), so that a crash resumes where it stopped.
//
// A file another writer put in the old folder meanwhile is never deleted:
// the retiring stops, the old folder shows again with what is left in it,
// and the log says so.

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// RetiringFile lists the folders retiring, in the cache dir.
const RetiringFile = "retiring.json"

// retireEvery is how often the folders retiring are looked at.
const retireEvery = time.Second

// Retiring is an old folder of a folder renamed with its content.
type Retiring struct {
	Parent place.DirKey `json:"parent"`
	Folder int64        `json:"folder"`
	Path   string       `json:"path"`  // the old path, for the log
	Moved  []int64      `json:"moved"` // the files moved out of it (the staging deletes them)
}

// retirer deletes retired folders once emptied.
type retirer struct {
	store *Store
	path  string
	log   logrus.FieldLogger
	mu    sync.Mutex
	items []Retiring // guarded by mu
	kick  chan struct{}
	stop  context.CancelFunc
	done  chan struct{}
}

// openRetirer reads the folders retiring, hides them again and starts
// retiring them.
func openRetirer(s *Store, path string, log logrus.FieldLogger) (*retirer, error) {
	r := &retirer{store: s, path: path, log: log, kick: make(chan struct{}, 1), done: make(chan struct{})}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &r.items); err != nil {
			log.WithError(err).Warn("cache: the list of renamed folders to delete is unreadable; their old folders stay")
		}
	}
	for _, it := range r.items {
		s.Dirs.Hide(it.Parent, it.Folder)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go r.run(ctx)
	return r, nil
}

// RetireFolder hides the old folder of a folder renamed with its content and
// deletes it from the service once the files moved out of it are up at their
// new place.
func (s *Store) RetireFolder(it Retiring) error {
	s.Dirs.Hide(it.Parent, it.Folder)
	r := s.retirer
	r.mu.Lock()
	r.items = append(r.items, it)
	err := r.saveLocked()
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return err
}

func (r *retirer) saveLocked() error {
	data, err := json.Marshal(r.items)
	if err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.path)
}

func (r *retirer) run(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(retireEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
		}
		r.pass(ctx)
	}
}

// pass takes a step of every folder retiring.
func (r *retirer) pass(ctx context.Context) {
	r.mu.Lock()
	items := slices.Clone(r.items)
	r.mu.Unlock()
	for _, it := range items {
		if r.step(ctx, it) {
			r.mu.Lock()
			r.items = slices.DeleteFunc(r.items, func(x Retiring) bool { return x.Folder == it.Folder })
			if err := r.saveLocked(); err != nil {
				r.log.WithError(err).Warn("cache: the list of renamed folders could not be saved")
			}
			r.mu.Unlock()
		}
	}
}

// step looks at one folder retiring: done (true) once deleted, or given up.
func (r *retirer) step(ctx context.Context, it Retiring) bool {
	moved := map[int64]bool{}
	for _, id := range it.Moved {
		moved[id] = true
	}
	s := r.store
	if s.Staging != nil && s.Staging.Deleting(moved) {
		return false // copies still to upload
	}
	other, err := r.strangers(ctx, place.DirKey{Area: it.Parent.Area, ID: it.Folder}, moved)
	if err != nil {
		if errors.Is(err, ctx.Err()) {
			return false
		}
		if api.IsNotFound(err) {
			return true // deleted already
		}
		r.log.WithError(err).WithField("path", it.Path).Debug("cache: listing a renamed folder's old tree; will retry")
		return false
	}
	if other != "" {
		r.log.WithField("path", it.Path).WithField("file", other).Warn("cache: a folder renamed here got a file from another writer meanwhile; the old folder stays on the service with it")
		s.Dirs.Unhide(it.Folder)
		s.Dirs.DropAll() // its folder and subfolders were listed before the other writer's file came (rare: listed anew)
		return true
	}
	if err := s.Client.DeleteFile(ctx, it.Folder); err != nil && !api.IsNotFound(err) {
		r.log.WithError(err).WithField("path", it.Path).Debug("cache: deleting a renamed folder's old tree; will retry")
		return false
	}
	r.log.WithField("path", it.Path).Info("cache: the old folder of a folder renamed is deleted from the service")
	return true
}

// strangers lists the tree under key as the service holds it now and names
// a file in it that was not moved out ("" when none).
func (r *retirer) strangers(ctx context.Context, key place.DirKey, moved map[int64]bool) (string, error) {
	files, _, err := r.store.Dirs.fetch(ctx, key)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if f.IsDir() {
			if name, err := r.strangers(ctx, place.DirKey{Area: key.Area, ID: f.ID}, moved); err != nil || name != "" {
				return name, err
			}
		} else if !moved[f.ID] && (r.store.Staging == nil || !r.store.Staging.Mine(f.ID)) {
			// Not an upload of this mount's either (one in flight as the
			// folder was renamed lands at the old place; its file goes up
			// again at the new one).
			return f.Name, nil
		}
	}
	return "", nil
}

// close stops retiring, after a last pass (at unmount, after the drain:
// the old folders whose files are all up go now; the others at the next
// mount).
func (r *retirer) close() {
	r.stop()
	<-r.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.pass(ctx)
}
