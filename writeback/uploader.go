package writeback

import (
	"cmp"
	"context"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/place"
)

// Locks: Staging.mu (a leaf, docs/ARCHITECTURE.md), taken between the steps of an
// upload and never held across one: the request, the deletions after it and
// the OnUploaded and OnFailed calls run without it.

// sizeMismatchAttempts is how many uploads answered 452 (size mismatch) in a
// row before the failure counts as permanent.
const sizeMismatchAttempts = 3

// deleteTimeout bounds the background deletion of one service file.
const deleteTimeout = 2 * time.Minute

// upload is one upload attempt of a staged file, as it started.
type upload struct {
	st        *Staged
	target    place.Target
	name      string // st's path, for the log
	gen       uint64
	overwrite bool
	ctx       context.Context
	// Many writers (conflicts.go): the version the change started from; a
	// check of the name first; the conflict copy's name when another
	// writer's version (theirs) holds the name.
	replaces int64
	check    bool
	copyName string
	theirs   int64
	resumes  int // Staging.resumes when the attempt began
	// contentType is what the file went up with: its MIME type, its mode
	// and modification time (uploadType).
	contentType string
}

// worker uploads queued files, one at a time, until Close. Of the workers,
// Transfers at most upload files that are not small (see smallFile).
func (s *Staging) worker() {
	defer s.wg.Done()
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return
		}
		st := s.takeLocked()
		if st == nil {
			s.cond.Wait()
			continue
		}
		if !s.readyLocked(st) {
			// Its folder, made offline, is not on the service yet: it
			// goes once the journal made it (startJournalLocked); one the
			// journal gave up on fails, and stays staged.
			switch {
			case s.madeLaterLocked(st.target.ParentID):
				st.state, st.lastErr = stRetrying, errFolderWaits
			case s.realTargetLocked(st.target) != st.target:
				// Its folder is made, and another file was staged at its
				// name there meanwhile: that one is the newer.
				st.state, st.lastErr, st.final = stFailed, errNameTaken, true
				s.log.WithField("path", st.nameLocked()).Warn("staging: not uploaded: " + errNameTaken.Error())
			default:
				st.state, st.lastErr, st.final = stFailed, errFolderLost, true
				s.log.WithField("path", st.nameLocked()).Warn("staging: not uploaded: " + errFolderLost.Error())
			}
			s.settleLocked(st) // a flush or a drain does not wait for it
			continue
		}
		ctx, cancel := context.WithCancel(s.ctx)
		up := &upload{st: st, target: st.target, name: st.nameLocked(), gen: st.gen, overwrite: st.replaces != 0 || st.overwrite, ctx: ctx,
			replaces: st.replaces, check: st.replaces != 0 || st.recheck, resumes: s.resumes}
		if st.conflictName != "" {
			// Changed again after it went up as a conflict copy: the copy
			// gets the new content.
			up.copyName, up.replaces, up.overwrite, up.check = st.conflictName, st.conflictID, true, false
		}
		st.recheck = false
		st.state = stUploading
		st.upCancel = cancel
		st.done, st.total = 0, 0
		s.busy[up.target]++
		big := !st.small
		if big {
			s.bigBusy++
		}
		s.mu.Unlock()
		s.run(up)
		cancel()
		s.mu.Lock()
		if big {
			s.bigBusy--
			s.cond.Broadcast()
		}
	}
}

// run makes one upload attempt and settles its outcome.
func (s *Staging) run(up *upload) {
	var res *api.UploadResult
	size := int64(-1)
	err := error(nil)
	if up.check {
		err = s.checkVersion(up)
	}
	if err == nil {
		res, size, err = s.send(up)
	}
	if err == nil {
		s.succeeded(up, res, size)
		return
	}
	s.dropAbandoned(up, err)
	if api.IsNotFound(err) || api.IsCode(err, api.CodeBadRequest) {
		// Its folder may be gone (the contract answers 404 or 400 for a
		// parent folder deleted): made again, the file goes there
		// (failedLocked sees it moved meanwhile and uploads it again).
		if _, rerr := s.remakeFolders(up); rerr != nil && api.Temporary(rerr) {
			err = rerr // no word on the folder yet (offline, a 5xx): tried again, not failed for good
		}
	}
	if fi, serr := up.st.f.Stat(); serr == nil && size >= 0 && fi.Size() != size {
		// The file changed under the upload (a truncation read short),
		// its Touch not yet made: not the content's failure.
		s.mu.Lock()
		up.st.gen++
		s.mu.Unlock()
	}
	s.mu.Lock()
	if s.failedLocked(up, err) && s.onFailed != nil {
		// Called before the attempt ends, so that a Flush learns the
		// failure after the mount did.
		s.mu.Unlock()
		s.onFailed(up.target, err)
		s.mu.Lock()
	}
	s.endLocked(up)
	s.mu.Unlock()
}

// failedLocked settles a failed upload attempt: retried at once after a 451
// (with a check of the name first), after a backoff when transient, else marked failed. It
// reports whether the failure is permanent.
func (s *Staging) failedLocked(up *upload, err error) bool {
	st := up.st
	switch {
	case s.closed || st.removed:
		// Close: the file stays queued on disk. Remove: dropped.
		return false
	case st.gen != up.gen || st.target != up.target:
		// Changed while uploading (a short read of a truncated file, a
		// rename): not the content's failure; upload the new content.
		s.waitLocked(st)
		return false
	}
	log := s.log.WithFields(logrus.Fields{"path": up.name, "error": err.Error()})
	taken := api.IsExists(err) && !up.overwrite
	if taken {
		// The name is taken on the service: by a version this mount
		// replaces (a rename away whose delete waits), or by another
		// writer's. The next attempt checks which (conflicts.go); a taken
		// conflict copy name gets a number. Taken again right after a check
		// found it free, another writer is creating it: after a backoff.
		st.recheck = true
		if up.copyName != "" {
			st.copyTry = max(st.copyTry, 1) + 1
		}
		if !up.check || up.copyName != "" {
			log.Debug("staging: the name is taken on the service; checking whose version it holds")
			st.state = stWaiting
			s.enqueueLocked(st, true)
			return false
		}
	}
	st.lastErr = err
	if api.IsOffline(err) && !taken {
		// The service cannot be reached: no attempt counted, no backoff
		// grown; the upload goes when it answers again (Resume), or at the
		// longest backoff.
		st.state = stRetrying
		if s.resumes != up.resumes {
			s.enqueueLocked(st, false) // back while the attempt failed: at once
			return false
		}
		log.Debug("staging: the service cannot be reached; the upload waits for it")
		s.armLocked(st, s.maxBackoff)
		return false
	}
	st.attempts++
	if taken || api.Temporary(err) || (api.IsSizeMismatch(err) && st.attempts < sizeMismatchAttempts) {
		d := s.minBackoff << min(st.retries, 30)
		if d > s.maxBackoff || d <= 0 {
			d = s.maxBackoff
		}
		st.retries++
		if st.retries > 3 {
			log.WithFields(logrus.Fields{"retry_in": d, "attempts": st.attempts}).Warn("staging: upload failed again; retrying")
		} else {
			log.WithField("retry_in", d).Info("staging: upload failed; retrying")
		}
		st.state = stRetrying
		s.armLocked(st, d)
		return false
	}
	if st.retryAsked {
		// Retry was asked while this attempt was under way: once more.
		st.retryAsked = false
		log.Info("staging: upload failed; retrying it once more, as asked while it was under way")
		st.state = stWaiting
		s.enqueueLocked(st, false)
		return false
	}
	st.state = stFailed
	st.permErr = err
	st.retries = 0
	st.final = !curable(err)
	s.saveLocked(st, true)
	if st.final {
		log.Warn("staging: upload failed for good (the service refuses it as it is); the staged copy is kept and not retried (SIGUSR1 retries it)")
	} else {
		log.Warn("staging: upload failed; the staged copy is kept and retried at the next start or on SIGUSR1")
	}
	return true
}

// endLocked ends an upload attempt: frees its target and wakes the waiters.
func (s *Staging) endLocked(up *upload) {
	st := up.st
	st.upCancel = nil
	if st.state == stUploading { // not settled otherwise (Close, Remove)
		st.state = stWaiting
		if !s.closed && !st.removed {
			s.waitLocked(st)
		}
	}
	if s.busy[up.target]--; s.busy[up.target] <= 0 {
		delete(s.busy, up.target)
	}
	s.cond.Broadcast()
	s.settleLocked(st)
	s.closeIfUnusedLocked(st)
}

// send uploads st's file as it is now.
func (s *Staging) send(up *upload) (*api.UploadResult, int64, error) {
	st := up.st
	fi, err := st.f.Stat()
	if err != nil {
		return nil, -1, fmt.Errorf("staging: %w", err)
	}
	size := fi.Size()
	up.contentType = s.uploadType(up.target, fi.ModTime())
	req := api.UploadRequest{
		ParentID: up.target.ParentID, Name: cmp.Or(up.copyName, up.target.Name), ContentType: up.contentType,
		Size: size, Overwrite: up.overwrite, Body: st.f, Parallel: s.parallel, Slots: s.parts,
		Progress: func(done, total int64) {
			s.sent.mark()
			s.mu.Lock()
			st.done, st.total = done, total
			s.mu.Unlock()
		},
		Created: func(id int64) {
			s.mu.Lock()
			defer s.mu.Unlock()
			st.sent = append(st.sent, id)
			s.mine.Add(id, struct{}{})
			s.saveLocked(st, true) // before a byte is sent
		},
	}
	if up.target.Area.Kind == place.Machine {
		req.MachineID = up.target.Area.MachineID
	}
	s.mu.Lock()
	st.total = size
	s.mu.Unlock()
	res, err := s.client.Upload(up.ctx, req)
	return res, size, err
}

// succeeded settles an upload that reached the service.
func (s *Staging) succeeded(up *upload, res *api.UploadResult, size int64) {
	st := up.st
	s.mu.Lock()
	switch {
	case st.removed:
		s.mu.Unlock()
		s.dropUploaded(up, res)
		return
	case up.copyName != "":
		c := s.conflictedLocked(up, res, size)
		s.mu.Unlock()
		s.settleConflict(up, res, c)
		return
	case st.target != up.target:
		// Renamed while uploading: what went up under the old name goes
		// once the file is up under the new one.
		st.deleteAfter = withIDs(st.deleteAfter, res.ID)
		s.mine.Add(res.ID, struct{}{}) // this mount's, though never shown (a folder renamed retires with it)
		s.saveLocked(st, true)
		s.countLocked(res)
		s.endLocked(up)
		s.mu.Unlock()
		if s.onSuperseded != nil {
			s.onSuperseded(up.target, res.ID) // no listing may show it meanwhile
		}
		return
	}
	st.replaces = res.ID // a later upload overwrites this one
	st.overwrite = false
	toDelete := s.clearLocked(st, res)
	s.mu.Unlock()
	mod := st.ModTime()

	s.log.WithFields(logrus.Fields{"path": up.name, "id": res.ID, "size": res.Size}).Debug("staging: uploaded")
	f := fileOf(up.target, res, size, up.contentType)
	if s.onUploaded != nil {
		s.onUploaded(up.target, f, mod)
	}
	s.finishUpload(up, res, f, toDelete)
}

// clearLocked resets st's failures after a successful upload as res and
// returns the service files still to delete after it.
func (s *Staging) clearLocked(st *Staged, res *api.UploadResult) []int64 {
	s.mine.Add(res.ID, struct{}{})
	for _, id := range st.sent {
		s.mine.Add(id, struct{}{}) // an attempt before may have completed too
	}
	st.sent = nil
	st.lastErr, st.permErr, st.attempts, st.retries, st.retryAsked = nil, nil, 0, 0, false
	st.deleteAfter = slices.DeleteFunc(st.deleteAfter, func(id int64) bool { return id == res.ID })
	s.saveLocked(st, true)
	return slices.Clone(st.deleteAfter)
}

// settleConflict ends an upload that went up as a conflict copy (c): the
// mount is told, and the staged file settles as after any upload, but shows
// no file of its own once landed: the name holds the other writer's.
func (s *Staging) settleConflict(up *upload, res *api.UploadResult, c Conflict) {
	s.mu.Lock()
	toDelete := s.clearLocked(up.st, res)
	s.mu.Unlock()
	if s.onConflict != nil {
		s.onConflict(up.target, c)
	}
	s.finishUpload(up, res, api.File{}, toDelete)
}

// finishUpload deletes what the upload replaced under other names, then
// settles st: uploaded as f (landed at once unless open), or waiting again
// when it changed meanwhile.
func (s *Staging) finishUpload(up *upload, res *api.UploadResult, f api.File, toDelete []int64) {
	st := up.st
	deleted, failed := s.deleteReplaced(up.name, toDelete)
	defer s.kept(failed) // once st no longer lists them
	kept := s.keepData(st, f)

	s.mu.Lock()
	if st.removed {
		// Removed (unlinked) once the mount was told of the upload: what went
		// up is deleted, and no listing may show it meanwhile or after (the
		// unlink may have looked at the folder before the mount was told).
		s.mu.Unlock()
		s.dropUploaded(up, res)
		s.handOver(f, kept, false)
		return
	}
	landed := false
	st.deleteAfter = slices.DeleteFunc(st.deleteAfter, func(id int64) bool { return slices.Contains(deleted, id) })
	if st.gen == up.gen && st.target == up.target && len(st.deleteAfter) == 0 {
		st.state = stUploaded
		st.uploadedAs = f
		if st.writers == 0 && st.readers == 0 {
			s.landLocked(st)
			landed = true
		} else {
			s.saveLocked(st, true)
		}
	} else {
		s.saveLocked(st, true)
	}
	s.countLocked(res)
	s.endLocked(up)
	s.mu.Unlock()
	s.handOver(f, kept, landed)
}

// keepData links st's data file aside (no copy), before st may land and
// its files go, so that what was uploaded as f can become its content cache
// entry (handOver). "" when there is nothing to hand over.
func (s *Staging) keepData(st *Staged, f api.File) string {
	if s.onLanded == nil || f.ID == 0 {
		return ""
	}
	kept := s.dataPath(st.seq) + ".kept"
	os.Remove(kept)
	if err := os.Link(s.dataPath(st.seq), kept); err != nil {
		return ""
	}
	return kept
}

// handOver gives the data kept of an upload to the content cache when the
// staged file landed unchanged (nobody can write it any more: it is the
// content of f), which moves it in; what is left is removed.
func (s *Staging) handOver(f api.File, kept string, landed bool) {
	if kept == "" {
		return
	}
	if landed {
		s.onLanded(f, kept)
	}
	os.Remove(kept)
}

// deleteReplaced deletes the service files an upload to t replaced under
// other names (renames), and returns those done with: deleted, or failed for
// good (logged; also in failed: they stay on the service and show again).
// The others stay for the next upload.
func (s *Staging) deleteReplaced(name string, ids []int64) (deleted, failed []int64) {
	for _, id := range ids {
		// Known from now on (knownLocked): an upload that looked the name
		// up before the deletion, while this staged file still listed it,
		// must not take it for another writer's once the staged file is gone.
		s.mine.Add(id, struct{}{})
		if err := s.deleteFile(id); err != nil {
			if s.ctx.Err() != nil {
				continue // Close: deleted after the upload at the next start
			}
			if api.IsOffline(err) && s.DeleteLater(Change{ID: id, Path: name, ByID: true}) == nil {
				deleted = append(deleted, id) // journaled, still hidden: made when the service is back
				continue
			}
			s.log.WithError(err).WithFields(logrus.Fields{"path": name, "id": id}).Warn("staging: could not delete the file replaced by a rename; it stays on the service and shows again")
			failed = append(failed, id)
		}
		deleted = append(deleted, id)
	}
	return deleted, failed
}

// countLocked counts a successful upload (when it is settled, so that a
// caller seeing the count sees the staging as the upload left it).
func (s *Staging) countLocked(res *api.UploadResult) {
	s.uploaded++
	s.bytesUp += res.Size
}

// dropUploaded deletes what the upload of a file removed meanwhile (too late
// to cancel) put on the service: the user unlinked it. No listing shows it
// (one fetched once the upload was complete lists it). The target stays
// busy until then, so that a new file at the same name is uploaded after.
func (s *Staging) dropUploaded(up *upload, res *api.UploadResult) {
	s.dropRemoved(up, res.ID)
	s.mu.Lock()
	s.countLocked(res)
	s.endLocked(up)
	s.mu.Unlock()
}

// dropAbandoned deletes the file record a failed upload made, when the file
// was removed meanwhile: the removal cancelled the upload, maybe after the
// service had completed it (the client seeing only the cancellation), and
// the file the user removed must not stay on the service (a record not
// completed is gone already: a 404 is fine). As in dropUploaded, the target
// stays busy until then.
func (s *Staging) dropAbandoned(up *upload, err error) {
	id := api.UploadRecord(err)
	s.mu.Lock()
	removed := up.st.removed
	s.mu.Unlock()
	if id == 0 || !removed {
		return
	}
	s.dropRemoved(up, id)
}

// dropRemoved deletes service file id, what an upload of a file removed
// meanwhile made (dropUploaded, dropAbandoned), hidden from listings first.
func (s *Staging) dropRemoved(up *upload, id int64) {
	if s.onSuperseded != nil {
		s.onSuperseded(up.target, id)
	}
	s.deleteOrShow(id, up.name, "the upload of a file removed meanwhile")
}

// deleteOrShow deletes service file id, which the staging meant to be gone;
// one that stays (the deletion failed) is logged and shown again (OnKept).
func (s *Staging) deleteOrShow(id int64, name, what string) {
	err := s.deleteFile(id)
	if err == nil || s.ctx.Err() != nil {
		return
	}
	if api.IsOffline(err) {
		// Journaled, still hidden: made when the service answers again.
		if jerr := s.DeleteLater(Change{ID: id, Path: name, ByID: true}); jerr == nil {
			return
		}
	}
	s.log.WithError(err).WithFields(logrus.Fields{"path": name, "id": id}).Warn("staging: could not delete " + what + "; it stays on the service and shows again")
	s.kept([]int64{id})
}

// fileOf is the service's new file after an upload to t with contentType,
// as far as known.
func fileOf(t place.Target, res *api.UploadResult, size int64, contentType string) api.File {
	f := api.File{
		ID: res.ID, Name: t.Name, Size: size, ObjectType: api.ObjectFile, ParentID: t.ParentID, LastModified: time.Now(),
		Details: &api.FileDetails{Type: "file", ContentType: contentType, Status: api.FileStatusUploadCompleted}, Written: api.WrittenOf(contentType),
	}
	if t.Area.Kind == place.Machine {
		f.Details.MachineID = api.Int64(t.Area.MachineID)
	}
	return f
}

// deleteFile deletes a service file; one already gone is fine.
func (s *Staging) deleteFile(id int64) error {
	ctx, cancel := context.WithTimeout(s.ctx, deleteTimeout)
	defer cancel()
	if err := s.client.DeleteFile(ctx, id); err != nil && !api.IsNotFound(err) {
		return err
	}
	return nil
}

// deleteLater deletes service files in the background (best effort, logged).
// Called with mu held.
func (s *Staging) deleteLater(ids []int64, name string, why string) {
	if s.closed || len(ids) == 0 {
		return
	}
	// Known from now on (knownLocked), as in deleteReplaced: the staged file
	// that listed them is gone, and an upload at their name before the
	// deletion ends must not take them for another writer's (a new file at
	// a name renamed away went up as a conflict copy, and the deletion
	// then left the name empty).
	for _, id := range ids {
		s.mine.Add(id, struct{}{})
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, id := range ids {
			if s.ctx.Err() != nil {
				return
			}
			s.deleteOrShow(id, name, "a service file ("+why+")")
		}
	}()
}

// contentType is the MIME type of a file name's extension, by default
// application/octet-stream.
// uploadType is the content type a file at t goes up with: the MIME type
// of its name, with its mode (UploadMode) and modification time mod.
func (s *Staging) uploadType(t place.Target, mod time.Time) string {
	a := api.TypeAttrs{MTime: &mod}
	if s.uploadMode != nil {
		a.Mode = s.uploadMode(t)
	}
	return api.WithTypeAttrs(contentType(t.Name), a)
}

func contentType(name string) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// curable reports whether a permanent upload failure may go away without a
// change to the file: a full storage, a balance, a resizing disk, a payment,
// credentials or permissions. Those are retried at the next start; any other
// (a refused request, a removed folder) is not, as it would fail again.
func curable(err error) bool {
	return api.IsStorageFull(err) || api.IsUnauthorized(err) || api.IsPermission(err) ||
		api.IsCode(err, api.CodeInsufficientBalance) || api.IsCode(err, api.CodeDiskResizing) ||
		api.IsCode(err, api.CodeSubscriptionPayment)
}
