package emulator

// Downloads: a single file's presigned URL, and download jobs that bundle
// several files, a directory or a task into a ZIP.
//
// ZIP naming (the contract is silent where not stated):
//   - directory: entries are paths relative to the requested directory
//     ("sub/a.txt"), with an entry "sub/" for every subdirectory;
//   - file_ids: entries are the file names at the top level, in the order
//     requested; a repeated name gets " (2)", " (3)"... before its extension;
//   - task: each folder (output folder, then recording folders) becomes a
//     top-level folder named after it ("<name>/..."), a repeated name getting
//     " (2)"...
//   - the ZIP is named "<directory name>.zip" (the shared root:
//     "shared-storage.zip"), "files-<download_id>.zip" or "task-<task_id>.zip".
//
// Repeated ids in file_ids count once (so [a, a] is a single-file download).
// A job whose content is gone when it is built becomes failed.
//
// The ZIP is built from the content current when the job becomes uploaded
// (the first read of the job at or after two steps from its creation);
// size is then the total bytes of the files it holds.

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// GET /files/{id}/download: envelope + url, name, size, content_type, for a
// file of the shared or a computer's storage (recordings: 404, as documented).
func (e *Emulator) getFileDownload(c *call) (any, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	n := e.lookupNode(c.org, id)
	if n == nil || !n.completed() {
		return nil, notFound(fmt.Sprintf("file %d", id))
	}
	if n.area.kind == areaRecordings {
		return nil, notFound(fmt.Sprintf("file %d in the shared or a computer's storage", id))
	}
	if n.kind != kindFile {
		return nil, badRequest("%d is a folder, not a file", id)
	}
	return e.singleDownload(c, n), nil
}

// singleDownload answers a single file's presigned URL. Called with mu held.
func (e *Emulator) singleDownload(c *call, n *node) map[string]any {
	e.appendLog(c.org, "file_downloaded", c.org.admin, n.area.machineID, map[string]any{"file_id": n.id, "file_name": n.name, "size": n.size}, c.now)
	return map[string]any{
		"url":          e.store.PresignGet(n.objKey, downloadURLTTL, n.name),
		"size":         n.size,
		"name":         n.name,
		"content_type": n.contentType,
		"download_id":  nil,
	}
}

type downloadRequest struct {
	DirectoryID *int64   `json:"directory_id"`
	FileIDs     *[]int64 `json:"file_ids"`
	TaskID      *int64   `json:"task_id"`
}

// POST /files/download
func (e *Emulator) postDownload(c *call) (any, error) {
	var req downloadRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	e.sweepJobs(c.now)
	if err := req.checkOne(); err != nil {
		return nil, err
	}
	ids := uniqueIDs(req.FileIDs)
	if len(ids) == 1 {
		return e.downloadOne(c, ids[0])
	}
	if !c.org.features[featureMultiDownload] {
		return nil, errf(4710, "permission required: the organization has no %s feature", featureMultiDownload)
	}
	j := &job{org: c.org, created: c.now, expires: c.now.Add(jobLifetime)}
	meta := map[string]any{}
	var err error
	switch {
	case len(ids) > 1:
		err = e.setFilesJob(c, j, ids, meta)
	case req.DirectoryID != nil:
		err = e.setDirectoryJob(c, j, *req.DirectoryID, meta)
	default:
		err = e.setTaskJob(c, j, *req.TaskID, meta)
	}
	if err != nil {
		return nil, err
	}
	return e.startJob(c, j, meta), nil
}

// checkOne checks that the request gives exactly one of directory_id,
// file_ids (not empty) and task_id (4722).
func (req *downloadRequest) checkOne() error {
	given := 0
	if req.DirectoryID != nil {
		given++
	}
	if req.FileIDs != nil && len(*req.FileIDs) > 0 {
		given++
	}
	if req.TaskID != nil {
		given++
	}
	if given != 1 {
		return errf(4722, "give exactly one of directory_id, file_ids, task_id (%d given)", given)
	}
	return nil
}

// uniqueIDs returns the ids of fileIDs (nil: none) in order, each once.
func uniqueIDs(fileIDs *[]int64) []int64 {
	var ids []int64
	if fileIDs != nil {
		seen := map[int64]bool{}
		for _, id := range *fileIDs {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// downloadOne answers a download of the single file id with its presigned
// URL, as GET /files/{id}/download does. Called with mu held.
func (e *Emulator) downloadOne(c *call, id int64) (any, error) {
	if e.ownedElsewhere(c.org, id) {
		return nil, notFound(fmt.Sprintf("file %d", id))
	}
	n := e.lookupNode(c.org, id)
	if n == nil || n.kind != kindFile || !n.completed() {
		return nil, errf(4717, "file %d not found", id)
	}
	return e.singleDownload(c, n), nil
}

// setFilesJob makes j a job bundling the files ids, every one of them a
// completed file of the organization (4718 otherwise), and notes them in the
// log's meta. Called with mu held.
func (e *Emulator) setFilesJob(c *call, j *job, ids []int64, meta map[string]any) error {
	missing := 0
	var size int64
	for _, id := range ids {
		if e.ownedElsewhere(c.org, id) {
			return notFound(fmt.Sprintf("file %d", id))
		}
		n := e.lookupNode(c.org, id)
		if n == nil || n.kind != kindFile || !n.completed() {
			missing++
			continue
		}
		size += n.size
	}
	if missing > 0 {
		return errf(4718, "file count mismatch: %d of %d requested files not found", missing, len(ids))
	}
	j.kind, j.fileIDs, j.size = jobFiles, ids, size
	meta["file_ids"] = ids
	return nil
}

// setDirectoryJob makes j a job bundling the directory id, which must hold
// completed files (4719), names its ZIP, and notes it in the log's meta.
// Called with mu held.
func (e *Emulator) setDirectoryJob(c *call, j *job, id int64, meta map[string]any) error {
	if e.ownedElsewhere(c.org, id) {
		return notFound(fmt.Sprintf("directory %d", id))
	}
	d := e.lookupNode(c.org, id)
	if d == nil || d.kind == kindFile || !d.completed() {
		return errf(4717, "directory %d not found", id)
	}
	files, size := countFiles(d)
	if files == 0 {
		return errf(4719, "directory %d is empty or has no completed files", id)
	}
	j.kind, j.dirID, j.size = jobDirectory, id, size
	j.name = d.name + ".zip"
	if d.kind == kindRoot {
		j.name = map[areaKind]string{areaShared: "shared-storage.zip", areaMachine: "computer-storage.zip", areaRecordings: "recordings.zip"}[d.area.kind]
	}
	meta["directory_id"] = id
	return nil
}

// setTaskJob makes j a job bundling the folders of the task id, which must
// hold completed files (4719), names its ZIP, and notes it in the log's
// meta. Called with mu held.
func (e *Emulator) setTaskJob(c *call, j *job, id int64, meta map[string]any) error {
	t := e.tasks[id]
	if t == nil || t.org != c.org {
		return notFound(fmt.Sprintf("task %d", id))
	}
	var files int
	var size int64
	for _, f := range t.folders() {
		n, s := countFiles(f)
		files += n
		size += s
	}
	if files == 0 {
		return errf(4719, "the folders of task %d hold no completed files", id)
	}
	j.kind, j.taskID, j.size = jobTask, id, size
	j.name = "task-" + itoa(id) + ".zip"
	meta["task_id"] = id
	return nil
}

// startJob registers the job j, has its ZIP built in the background, logs
// the download with meta and answers the job's envelope fields. Called with
// mu held.
func (e *Emulator) startJob(c *call, j *job, meta map[string]any) map[string]any {
	j.id = e.newID()
	if j.kind == jobFiles {
		j.name = "files-" + itoa(j.id) + ".zip"
	}
	e.jobs[j.id] = j
	e.buildLater(j)
	meta["download_id"] = j.id
	meta["size"] = j.size
	var machineID int64
	if j.kind == jobTask {
		machineID = e.tasks[j.taskID].seat.id
	}
	e.appendLog(c.org, "file_downloaded", c.org.admin, machineID, meta, c.now)
	var downloadID any = j.id
	if e.dialect.DownloadIDStrings {
		downloadID = itoa(j.id)
	}
	return map[string]any{"url": nil, "size": j.size, "name": j.name, "content_type": "application/zip", "download_id": downloadID}
}

// countFiles counts the completed files below d and their bytes.
func countFiles(d *node) (n int, size int64) {
	for _, ch := range d.children {
		if ch.kind == kindFile {
			n++
			size += ch.size
		} else {
			cn, cs := countFiles(ch)
			n += cn
			size += cs
		}
	}
	return n, size
}

// sweepJobs forgets expired jobs and removes their ZIPs. Called with mu held.
func (e *Emulator) sweepJobs(now time.Time) {
	var keys []string
	for id, j := range e.jobs {
		if !now.Before(j.expires) {
			delete(e.jobs, id)
			keys = append(keys, zipKey(id))
		}
	}
	e.removeObjectsLater(keys, nil)
}

// lookupJob finds a live job of the organization. Called with mu held.
func (e *Emulator) lookupJob(c *call) (*job, error) {
	id, err := c.pathID("id")
	if err != nil {
		return nil, err
	}
	e.sweepJobs(c.now)
	j := e.jobs[id]
	if j == nil || j.org != c.org {
		return nil, notFound(fmt.Sprintf("download %d", id))
	}
	return j, nil
}

// GET /files/downloads/{id}[?generate_download_url=false]
func (e *Emulator) getDownloadJob(c *call) (any, error) {
	withURL := true
	if s := c.r.URL.Query().Get("generate_download_url"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, badRequest("invalid generate_download_url %q", s)
		}
		withURL = b
	}
	e.mu.Lock()
	j, err := e.lookupJob(c)
	if err != nil {
		e.mu.Unlock()
		return nil, err
	}
	if !j.due(c.now, e.step) {
		defer e.mu.Unlock()
		return e.jobRecord(j, c.now, withURL), nil
	}
	// Its ZIP is built in the background (buildLater): wait for the end of it.
	bg := j.bg
	e.mu.Unlock()
	<-bg
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.final == "" {
		err := j.built.err
		if items, _ := e.zipItems(j); err == nil && len(items) == 0 {
			err = errors.New("nothing left to bundle") // removed since
		}
		e.settleJob(j, j.built.size, j.built.zipSize, err)
	}
	return e.jobRecord(j, c.now, withURL), nil
}

// buildLater builds j's ZIP in the background, from the content as it is
// now (at the job's creation, or at a restart for a job not done then);
// getDownloadJob settles the job with it once it is due. Called with mu held.
func (e *Emulator) buildLater(j *job) {
	j.bg = make(chan struct{})
	items, size := e.zipItems(j)
	e.background.Add(1)
	go func() {
		defer e.background.Done()
		b := &zipBuild{size: size}
		if len(items) == 0 {
			b.err = errors.New("nothing left to bundle")
		} else {
			b.zipSize, b.err = e.buildZip(zipKey(j.id), items)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		j.built = b
		close(j.bg)
		if j.final != "" || e.jobs[j.id] != j { // cancelled or forgotten meanwhile
			e.removeObjectsLater([]string{zipKey(j.id)}, nil)
		}
	}()
}

// settleJob ends a due job with the outcome of its ZIP's build. Called with
// mu held.
func (e *Emulator) settleJob(j *job, size, zipSize int64, err error) {
	switch {
	case j.final != "": // cancelled meanwhile
		e.removeObjectsLater([]string{zipKey(j.id)}, nil)
	case err != nil:
		e.log.WithError(err).WithField("download_id", j.id).Warn("download job failed")
		j.final = jobFailed
		e.removeObjectsLater([]string{zipKey(j.id)}, nil)
	default:
		j.final = jobUploaded
		j.size = size
		j.zipSize = zipSize
	}
}

// DELETE /files/downloads/{id}
func (e *Emulator) deleteDownload(c *call) (any, error) {
	j, err := e.lookupJob(c)
	if err != nil {
		return nil, err
	}
	switch st := j.status(c.now, e.step); st {
	case jobPending, jobProcessing:
		j.final = jobCancelled
		e.appendLog(c.org, "download_cancelled", c.org.admin, 0, map[string]any{"download_id": j.id, "status_before": st}, c.now)
		return nil, nil
	default:
		return nil, errf(4716, "download %d cannot be aborted: it is %s", j.id, st)
	}
}

// zipItem is one entry of a ZIP to build.
type zipItem struct {
	name string // entry name; directories end in "/"
	key  string // object key of a file
	size int64
	mod  time.Time
}

// zipItems lists the entries of a job's ZIP from the current content and the
// total bytes of its files. Called with mu held.
func (e *Emulator) zipItems(j *job) ([]zipItem, int64) {
	var items []zipItem
	var total int64
	var walk func(prefix string, d *node)
	walk = func(prefix string, d *node) {
		for _, ch := range d.sortedChildren() {
			if ch.kind == kindFile {
				items = append(items, zipItem{name: prefix + ch.name, key: ch.objKey, size: ch.size, mod: ch.modified})
				total += ch.size
				continue
			}
			items = append(items, zipItem{name: prefix + ch.name + "/", mod: ch.modified})
			walk(prefix+ch.name+"/", ch)
		}
	}
	switch j.kind {
	case jobDirectory:
		if d := e.lookupNode(j.org, j.dirID); d != nil && d.completed() {
			walk("", d)
		}
	case jobFiles:
		names := uniqueNamer{}
		for _, id := range j.fileIDs {
			n := e.lookupNode(j.org, id)
			if n == nil || n.kind != kindFile || !n.completed() {
				continue
			}
			items = append(items, zipItem{name: names.next(n.name), key: n.objKey, size: n.size, mod: n.modified})
			total += n.size
		}
	case jobTask:
		names := uniqueNamer{}
		if t := e.tasks[j.taskID]; t != nil {
			for _, f := range t.folders() {
				top := names.next(f.name) + "/"
				items = append(items, zipItem{name: top, mod: f.modified})
				walk(top, f)
			}
		}
	}
	hasFile := false
	for _, it := range items {
		if it.key != "" {
			hasFile = true
		}
	}
	if !hasFile {
		return nil, 0
	}
	return items, total
}

// uniqueNamer gives a name, or the name with " (2)", " (3)"... before its
// extension when it was already given.
type uniqueNamer map[string]bool

func (u uniqueNamer) next(name string) string {
	cand := name
	ext := path.Ext(name)
	if ext == name {
		ext = ""
	}
	base := strings.TrimSuffix(name, ext)
	for i := 2; u[cand]; i++ {
		cand = fmt.Sprintf("%s (%d)%s", base, i, ext)
	}
	u[cand] = true
	return cand
}

// buildZip writes the ZIP of items as object key, streaming from the objects
// (never the whole content in memory). Files deleted meanwhile are skipped.
// Called without mu.
func (e *Emulator) buildZip(key string, items []zipItem) (int64, error) {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(e.writeZip(pw, items))
	}()
	size, _, err := e.store.Write(key, pr)
	pr.CloseWithError(errors.New("zip writer stopped"))
	return size, err
}

func (e *Emulator) writeZip(w io.Writer, items []zipItem) error {
	zw := zip.NewWriter(w)
	for _, it := range items {
		hdr := &zip.FileHeader{Name: it.name, Modified: it.mod.UTC()}
		if it.key == "" {
			hdr.Method = zip.Store
			hdr.SetMode(0o755 | os.ModeDir)
			if _, err := zw.CreateHeader(hdr); err != nil {
				return err
			}
			continue
		}
		f, err := e.store.Open(it.key)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		hdr.Method = zip.Deflate
		if it.size >= mib {
			hdr.Method = zip.Store // large files are mostly media: store them
		}
		hdr.SetMode(0o644)
		zf, err := zw.CreateHeader(hdr)
		if err == nil {
			_, err = io.Copy(zf, f)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return zw.Close()
}
