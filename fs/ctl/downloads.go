package ctl

// .ctl/downloads/: the download jobs this mount started (a task's ZIP), and
// any job of the organization when named; write abort to cancel one.
//
// Locks: none of its own (Tree.mu for the jobs, docs/ARCHITECTURE.md).

import (
	"context"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/fs"
)

// downloadsList is .ctl/downloads/: the download jobs this mount started.
func (t *Tree) downloadsList(context.Context) ([]entry, error) {
	t.mu.Lock()
	ids := make([]int64, 0, len(t.jobs))
	for id := range t.jobs {
		ids = append(ids, id)
	}
	t.mu.Unlock()
	slices.Sort(ids)
	es := make([]entry, 0, len(ids)+1)
	for _, id := range ids {
		es = append(es, t.downloadEntry(id))
	}
	return append(es, t.resultEntry(fs.CtlName+"/downloads")), nil
}

// downloadFind answers any job id of the organization.
func (t *Tree) downloadFind(ctx context.Context, name string) (*entry, error) {
	id, err := strconv.ParseInt(name, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != name {
		return nil, nil
	}
	if _, err := t.admin.DownloadStatus(ctx, id, false); err != nil {
		return nil, err
	}
	e := t.downloadEntry(id)
	return &e, nil
}

// downloadEntry is downloads/<id>: the job's record (with its presigned
// URL, hence 0600); write abort to cancel it.
func (t *Tree) downloadEntry(id int64) entry {
	const dir = fs.CtlName + "/downloads"
	return t.fileEntry(dir, strconv.FormatInt(id, 10), 0o600, jsonRead(func(ctx context.Context) (*api.DownloadJob, error) {
		return t.admin.DownloadStatus(ctx, id, true)
	}), t.downloadEntryAction(id))
}

// downloadEntryAction is a write to downloads/<id>: the word abort.
func (t *Tree) downloadEntryAction(id int64) *action {
	return &action{name: "abort", parse: func(in string) (step, error) {
		if in != "abort" {
			return step{}, refuse(syscall.EINVAL, "write abort to cancel download %d", id)
		}
		return step{what: "download " + strconv.FormatInt(id, 10), run: func(ctx context.Context) (any, error) {
			return nil, t.admin.AbortDownload(ctx, id)
		}}, nil
	}}
}

// noteJob remembers a download job this mount started, for downloads/.
func (t *Tree) noteJob(id int64) {
	t.mu.Lock()
	t.jobs[id] = time.Now()
	t.mu.Unlock()
}
