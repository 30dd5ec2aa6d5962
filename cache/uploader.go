package cache

import (
	"context"
	"fmt"
	"mime"
	"path/filepath"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
)

// Locks: Staging.mu (a leaf, see doc.go), taken between the steps of an
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
	target    Target
	name      string // st's path, for the log
	gen       uint64
	overwrite bool
	ctx       context.Context
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
		ctx, cancel := context.WithCancel(s.ctx)
		up := &upload{st: st, target: st.target, name: st.nameLocked(), gen: st.gen, overwrite: st.replaces != 0 || st.overwrite, ctx: ctx}
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
	res, size, err := s.send(up)
	if err == nil {
		s.succeeded(up, res, size)
		return
	}
	s.dropAbandoned(up, err)
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
// (with overwrite), after a backoff when transient, else marked failed. It
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
	if api.IsExists(err) && !up.overwrite {
		// Someone created the name meanwhile: last writer wins.
		log.Warn("staging: the name was taken on the service meanwhile; overwriting it (last writer wins)")
		st.overwrite = true
		st.state = stWaiting
		s.enqueueLocked(st, true)
		return false
	}
	st.lastErr = err
	st.attempts++
	if api.Temporary(err) || (api.IsSizeMismatch(err) && st.attempts < sizeMismatchAttempts) {
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
	req := api.UploadRequest{
		ParentID: up.target.ParentID, Name: up.target.Name, ContentType: contentType(up.target.Name),
		Size: size, Overwrite: up.overwrite, Body: st.f, Parallel: s.parallel,
		Progress: func(done, total int64) {
			s.mu.Lock()
			st.done, st.total = done, total
			s.mu.Unlock()
		},
	}
	if up.target.Area.Kind == Machine {
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
	case st.target != up.target:
		// Renamed while uploading: what went up under the old name goes
		// once the file is up under the new one.
		if !slices.Contains(st.deleteAfter, res.ID) {
			st.deleteAfter = append(st.deleteAfter, res.ID)
		}
		s.saveLocked(st, true)
		s.countLocked(res)
		s.endLocked(up)
		s.mu.Unlock()
		return
	}
	st.replaces = res.ID // a later upload overwrites this one
	st.overwrite = false
	st.lastErr, st.permErr, st.attempts, st.retries, st.retryAsked = nil, nil, 0, 0, false
	st.deleteAfter = slices.DeleteFunc(st.deleteAfter, func(id int64) bool { return id == res.ID })
	toDelete := slices.Clone(st.deleteAfter)
	s.saveLocked(st, true)
	s.mu.Unlock()

	s.log.WithFields(logrus.Fields{"path": up.name, "id": res.ID, "size": res.Size}).Debug("staging: uploaded")
	f := fileOf(up.target, res, size)
	if s.onUploaded != nil {
		s.onUploaded(up.target, f)
	}
	deleted := s.deleteReplaced(up.name, toDelete)

	s.mu.Lock()
	if st.removed {
		s.mu.Unlock()
		s.dropUploaded(up, res)
		return
	}
	defer s.mu.Unlock()
	st.deleteAfter = slices.DeleteFunc(st.deleteAfter, func(id int64) bool { return slices.Contains(deleted, id) })
	if st.gen == up.gen && st.target == up.target && len(st.deleteAfter) == 0 {
		st.state = stUploaded
		st.uploadedAs = f
		if st.writers == 0 && st.readers == 0 {
			s.retireLocked(st)
		} else {
			s.saveLocked(st, true)
		}
	} else {
		s.saveLocked(st, true)
	}
	s.countLocked(res)
	s.endLocked(up)
}

// deleteReplaced deletes the service files an upload to t replaced under
// other names (renames), and returns those done with: deleted, or failed for
// good (logged). The others stay for the next upload.
func (s *Staging) deleteReplaced(name string, ids []int64) []int64 {
	var deleted []int64
	for _, id := range ids {
		if err := s.deleteFile(id); err != nil {
			if s.ctx.Err() != nil {
				continue // Close: deleted after the upload at the next start
			}
			s.log.WithError(err).WithFields(logrus.Fields{"path": name, "id": id}).Warn("staging: could not delete the file replaced by a rename")
		}
		deleted = append(deleted, id)
	}
	return deleted
}

// countLocked counts a successful upload (when it is settled, so that a
// caller seeing the count sees the staging as the upload left it).
func (s *Staging) countLocked(res *api.UploadResult) {
	s.uploaded++
	s.bytesUp += res.Size
}

// dropUploaded deletes what the upload of a file removed meanwhile (too late
// to cancel) put on the service: the user unlinked it. The target stays busy
// until then, so that a new file at the same name is uploaded after.
func (s *Staging) dropUploaded(up *upload, res *api.UploadResult) {
	if err := s.deleteFile(res.ID); err != nil && s.ctx.Err() == nil {
		s.log.WithError(err).WithFields(logrus.Fields{"path": up.name, "id": res.ID}).Warn("staging: could not delete the upload of a file removed meanwhile")
	}
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
	if err := s.deleteFile(id); err != nil && s.ctx.Err() == nil {
		s.log.WithError(err).WithFields(logrus.Fields{"path": up.name, "id": id}).Warn("staging: could not delete the upload of a file removed meanwhile")
	}
}

// fileOf is the service's new file after an upload to t, as far as known.
func fileOf(t Target, res *api.UploadResult, size int64) api.File {
	f := api.File{
		ID: res.ID, Type: "file", Name: t.Name, Size: size, ContentType: contentType(t.Name),
		Status: api.FileStatusUploadCompleted, ObjectType: api.ObjectFile, ParentID: t.ParentID,
		LastModified: time.Now(),
	}
	if t.Area.Kind == Machine {
		f.MachineID = api.Int64(t.Area.MachineID)
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
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, id := range ids {
			if s.ctx.Err() != nil {
				return
			}
			if err := s.deleteFile(id); err != nil && s.ctx.Err() == nil {
				s.log.WithError(err).WithFields(logrus.Fields{"path": name, "id": id}).Warn("staging: could not delete a service file (" + why + ")")
			}
		}
	}()
}

// contentType is the MIME type of a file name's extension, by default
// application/octet-stream.
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
