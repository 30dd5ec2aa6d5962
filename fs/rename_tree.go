package fs

// Rename of a folder with content. The service has no rename: the folder and
// its subfolders are made anew at the new name, every file is staged there
// (a pending file moved, a service file copied from its content, in the
// cache or fetched before anything changes), superseding its old self, which
// the staging deletes once the copy is up; the old folder leaves the
// listing at once and the service once emptied (cache/retire.go, journaled).
// In the mount the rename is done when it returns; the service follows as
// the uploads go (.ctl/uploads, orgfs status).
//
// A folder of more than maxTreeFiles files, or whose content not in the
// cache exceeds Options.RenameFetchMax, answers EXDEV: mv then copies it file
// by file, which shows progress and can be interrupted, where a rename would
// block on the download with neither.

import (
	"context"
	"syscall"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/place"
	"github.com/orgfs/orgfs/writeback"
)

// maxTreeFiles is the most files a folder rename moves; more is EXDEV.
const maxTreeFiles = 10000

// treePlan is what a folder rename moves: the subfolders (parents first),
// the service files and the pending files, by their old folder.
type treePlan struct {
	folders []treeFolder
	files   []treeFile
	held    []*writeback.Staged // pending files held as readers until the end
	fetch   int64               // bytes not in the cache
}

type treeFolder struct {
	old    place.DirKey
	parent int64 // the old id of its parent folder
	name   string
	mtime  time.Time // its time as listed
}

type treeFile struct {
	parent  place.DirKey // its old folder
	file    api.File     // the service file (ID 0: none)
	pending *writeback.Staged
}

// planTree walks folder key: its subfolders, files and pending files, the
// pending ones held. EXDEV past the limits.
func (r *renaming) planTree(ctx context.Context, key place.DirKey) (*treePlan, syscall.Errno) {
	p := &treePlan{}
	if errno := r.walkTree(ctx, p, key); errno != 0 {
		p.release()
		return nil, errno
	}
	if p.fetch > 0 && r.src.fsys.store.Offline() {
		r.src.fsys.log.WithField("path", r.src.Path(nil)+"/"+r.name).WithField("fetch_bytes", p.fetch).
			Info("fs: the service cannot be reached and the folder's content is not all cached: it cannot be renamed in place; EXDEV (mv copies what it can read)")
		p.release()
		return nil, syscall.EXDEV
	}
	if len(p.files) > maxTreeFiles || p.fetch > r.src.fsys.opts.RenameFetchMax {
		r.src.fsys.log.WithField("path", r.src.Path(nil)+"/"+r.name).WithField("files", len(p.files)).
			WithField("fetch_bytes", p.fetch).Info("fs: folder too large to rename in place; EXDEV (mv copies it)")
		p.release()
		return nil, syscall.EXDEV
	}
	return p, 0
}

func (r *renaming) walkTree(ctx context.Context, p *treePlan, key place.DirKey) syscall.Errno {
	fsys := r.src.fsys
	// The staging first, then the listing, as Rename does.
	pending := map[string]*writeback.Staged{}
	for _, st := range fsys.store.PendingIn(key) {
		if h := fsys.store.Acquire(st.Target(), false); h != nil {
			p.held = append(p.held, h)
			pending[h.Target().Name] = h
		}
	}
	l, err := fsys.store.Dirs.ListAnew(ctx, key) // offline: as last seen
	if err != nil {
		return Errno(fsys.log, "listing a folder to rename", err)
	}
	for _, f := range l.Files {
		if f.IsDir() {
			p.folders = append(p.folders, treeFolder{old: place.DirKey{Area: key.Area, ID: f.ID}, parent: key.ID, name: f.Name, mtime: f.LastModified})
			if errno := r.walkTree(ctx, p, place.DirKey{Area: key.Area, ID: f.ID}); errno != 0 {
				return errno
			}
			continue
		}
		st := pending[f.Name]
		delete(pending, f.Name)
		if st == nil && !fsys.store.Content.Complete(cache.MetaOf(f)) {
			p.fetch += f.Size
		}
		p.files = append(p.files, treeFile{parent: key, file: f, pending: st})
	}
	for _, st := range pending {
		p.files = append(p.files, treeFile{parent: key, pending: st})
	}
	return 0
}

// release lets the pending files go (once: later calls do nothing).
func (p *treePlan) release() {
	for _, st := range p.held {
		st.CloseReader()
	}
	p.held = nil
}

// tree renames r.old, a folder with content, to the folder made for it.
// ctx bounds the waits for answers, copyCtx the copies of content (bounded
// block by block).
func (r *renaming) tree(copyCtx, ctx context.Context, p *treePlan, made api.File) syscall.Errno {
	fsys := r.src.fsys
	dst := r.dst.dirKey()
	newKeys := map[int64]place.DirKey{r.old.ID: {Area: dst.Area, ID: made.ID}}
	undo := func() {
		ours := map[int64]bool{made.ID: true}
		for _, k := range newKeys {
			ours[k.ID] = true
		}
		uctx, cancel := fsys.bound(context.WithoutCancel(ctx)) // ctx may be what ended it
		defer cancel()
		r.undoFolder(uctx, made, ours)
	}
	for _, f := range p.folders {
		d, err := fsys.store.MakeFolder(ctx, newKeys[f.parent], f.name, "")
		if err != nil {
			undo()
			return fsys.errno(ctx, "making folder "+f.name+" of a folder renamed", err)
		}
		newKeys[f.old.ID] = place.DirKey{Area: dst.Area, ID: d.ID}
	}
	copies, errno := r.copyFiles(copyCtx, p, newKeys)
	if errno != 0 {
		undo()
		return errno
	}
	paths := map[int64]string{r.old.ID: r.dst.Path(nil) + "/" + r.newName}
	for _, f := range p.folders {
		paths[f.old.ID] = paths[f.parent] + "/" + f.name
	}
	moved := r.commitTree(p, newKeys, paths, copies)
	for _, f := range append(p.folders, treeFolder{old: place.DirKey{Area: dst.Area, ID: r.old.ID}, mtime: r.old.LastModified}) {
		// Each folder keeps its mode, owner and time, as on a disk.
		set := fsys.store.DirAttr(f.old)
		if set.MTime == nil {
			set.MTime = &f.mtime
		}
		fsys.store.SetDirAttr(newKeys[f.old.ID], set)
		fsys.local.moveDir(f.old, newKeys[f.old.ID]) // desktop files and special nodes go along
	}
	r.retargetTree(newKeys, copies)
	err := fsys.store.RetireFolder(cache.Retiring{Parent: r.src.dirKey(), Folder: r.old.ID,
		Path: r.src.Path(nil) + "/" + r.name, Moved: moved})
	if err != nil {
		fsys.log.WithError(err).Warn("fs: the old folder of a folder renamed is not journaled; a crash before its files are moved leaves it on the service")
	}
	return 0
}

// copyFiles stages a copy of every service file not pending at its new
// place; on a failure none is left.
func (r *renaming) copyFiles(ctx context.Context, p *treePlan, newKeys map[int64]place.DirKey) (map[*treeFile]*writeback.Staged, syscall.Errno) {
	fsys := r.src.fsys
	copies := map[*treeFile]*writeback.Staged{}
	for i := range p.files {
		f := &p.files[i]
		if f.pending != nil {
			continue
		}
		to := place.Target{Area: newKeys[f.parent.ID].Area, ParentID: newKeys[f.parent.ID].ID, Name: f.file.Name}
		st, err := fsys.store.StageCopy(ctx, to, f.file, 0, f.file)
		if err != nil {
			for _, c := range copies {
				c.CloseWriter()
				fsys.store.DropStaged(c)
			}
			return nil, Errno(fsys.log, "copying "+f.file.Name+" of a folder renamed", err)
		}
		copies[f] = st
	}
	return copies, 0
}

// commitTree makes the copies and the pending files moved the successors of
// the old files, and returns the ids of the old files they delete.
func (r *renaming) commitTree(p *treePlan, newKeys map[int64]place.DirKey, paths map[int64]string, copies map[*treeFile]*writeback.Staged) []int64 {
	fsys := r.src.fsys
	defer p.release()
	var moved []int64
	for i := range p.files {
		f := &p.files[i]
		nk := newKeys[f.parent.ID]
		st := copies[f]
		if st == nil {
			st = f.pending
			to := place.Target{Area: nk.Area, ParentID: nk.ID, Name: st.Target().Name}
			if err := fsys.store.Move(st, to, 0, paths[f.parent.ID]+"/"+to.Name); err != nil {
				fsys.log.WithError(err).WithField("name", st.Target().Name).Warn("fs: a pending file of a folder renamed stays at its old place")
				continue
			}
			copies[f] = st
		}
		if f.file.ID != 0 {
			fsys.store.Supersede(f.parent, f.file, st)
			moved = append(moved, f.file.ID)
		}
		st.SetPath(paths[f.parent.ID] + "/" + st.Target().Name)
		if f.pending == nil {
			st.Touch()
			st.CloseWriter()
		}
	}
	return moved
}

// retargetTree points the nodes the kernel knows under the folder moved at
// the new folders and staging copies.
func (r *renaming) retargetTree(newKeys map[int64]place.DirKey, copies map[*treeFile]*writeback.Staged) {
	byPlace := map[place.Target]*writeback.Staged{}
	for f, st := range copies {
		byPlace[place.Target{Area: f.parent.Area, ParentID: f.parent.ID, Name: st.Target().Name}] = st
	}
	ch := r.src.GetChild(r.name)
	if ch == nil {
		return
	}
	dn, ok := ch.Operations().(*dirNode)
	if !ok {
		return
	}
	var walk func(dn *dirNode)
	walk = func(dn *dirNode) {
		old := dn.dirKey()
		nk, ok := newKeys[old.ID]
		if !ok {
			return
		}
		for name, c := range dn.Children() {
			switch op := c.Operations().(type) {
			case *dirNode:
				walk(op)
			case *fileNode:
				if op.link {
					name += linkSuffix // a link's service name
				}
				op.mu.Lock()
				op.parent = nk
				if st := byPlace[place.Target{Area: old.Area, ParentID: old.ID, Name: name}]; st != nil {
					op.staged = st
				}
				op.mu.Unlock()
			}
		}
		dn.setKey(nk)
		dn.mu.Lock()
		dn.view = nil
		dn.mu.Unlock()
		dn.fsys.inos.Add(nk.ID, dn.StableAttr().Ino)
		dn.fsys.inos.Add(old.ID, movedIno(old.ID))
	}
	walk(dn)
}
