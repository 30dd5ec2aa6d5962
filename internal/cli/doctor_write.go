package cli

// orgfs doctor --write PATH: a small file and a multi-part file sent into a
// scratch folder made under PATH, read back, compared, then deleted with the
// folder; the chunk_size unit the service reads, from the parts it asks for.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/orgfs/orgfs/api"
	orgfs "github.com/orgfs/orgfs/fs"
)

// The files --write sends. The multi-part one asks for parts of 6 (chunk_size
// in MB): 6 MiB parts cut it in 2, decimal 6 MB parts in 3, so the number of
// upload URLs tells the unit (each part but the last above S3's 5 MiB
// minimum either way).
const (
	doctorSmallSize = 1000
	doctorChunk     = 6 << 20
	doctorMultiSize = 12_200_000
)

// writeTarget is the folder --write makes its scratch folder in.
type writeTarget struct {
	machine int64  // 0: the shared storage
	parent  int64  // 0: the area's root
	shown   string // its path in the mount
}

// splitWritePath reads --write's PATH, a folder as the mount shows it:
// shared[/FOLDER...] or computers/NAME[/FOLDER...]. It returns the
// computer's name ("" for the shared storage) and the folders below.
func splitWritePath(p string) (computer string, folders []string, err error) {
	parts := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	switch {
	case parts[0] == "shared":
		return "", parts[1:], nil
	case parts[0] == "computers" && len(parts) >= 2:
		return parts[1], parts[2:], nil
	}
	return "", nil, errors.New("want a folder of the mount: shared[/FOLDER...] or computers/NAME[/FOLDER...]")
}

// checkWrite makes the scratch folder, round-trips the two files in it and
// removes it all, one line per step.
func (d *doctor) checkWrite(p string) {
	ctx, cancel := d.ctx(doctorWriteTimeout)
	defer cancel()
	t, err := d.resolveWritePath(ctx, p)
	if err != nil {
		d.report(checkFailed, "scratch", "--write %s: %s; fix: give a folder that exists (in the mount: shared/... or computers/NAME/...)", p, errText(err))
		return
	}
	var b [6]byte
	rand.Read(b[:])
	name := "orgfs-doctor-" + hex.EncodeToString(b[:])
	dir, err := d.client.CreateDirectory(ctx, api.CreateDirectoryRequest{MachineID: t.machine, ParentID: t.parent, Name: name})
	if err != nil {
		d.fail("scratch", fmt.Errorf("making %s/%s: %w", t.shown, name, err))
		return
	}
	scratch := t.shown + "/" + name
	d.report(checkOK, "scratch", "made %s", scratch)
	var made []int64
	if id, ok := d.roundTrip(t, dir.ID, scratch+"/small.bin", doctorSmallSize, 0); ok {
		made = append(made, id)
	}
	if id, ok := d.roundTrip(t, dir.ID, scratch+"/multi-part.bin", doctorMultiSize, doctorChunk); ok {
		made = append(made, id)
	}
	if len(made) > 0 {
		d.checkTypeAttrs(ctx, t, dir.ID, scratch)
	}
	d.removeScratch(t, dir.ID, name, made)
}

// doctorTypeAttrs is the mode and time the round trip's files are sent
// with, as the mount sends them (api.WithTypeAttrs).
var doctorTypeAttrs = func() api.TypeAttrs {
	mode, mtime := uint32(0o755), time.Date(2024, 2, 29, 12, 34, 56, 123456789, time.UTC)
	return api.TypeAttrs{Mode: &mode, MTime: &mtime}
}()

// checkTypeAttrs lists the scratch folder: whether the mode and time sent
// as parameters of the files' content type come back (every desk then
// shows a file's mode and time), or not (each desk shows its own).
func (d *doctor) checkTypeAttrs(ctx context.Context, t writeTarget, dir int64, scratch string) {
	const check = "attributes"
	list, err := d.listFolder(ctx, t.machine, dir)
	if err != nil {
		d.fail(check, fmt.Errorf("listing %s: %w", scratch, err))
		return
	}
	for _, f := range list {
		if f.IsDir() || f.Details == nil {
			continue
		}
		got := api.TypeAttrsOf(f.Details.ContentType)
		if got.Mode == nil || *got.Mode != *doctorTypeAttrs.Mode || got.MTime == nil || !got.MTime.Equal(*doctorTypeAttrs.MTime) {
			d.report(checkDegraded, check, "%s/%s lists with content_type %q, without the mode and time sent as its parameters; orgfs keeps each desk's modes and times in its cache dir instead: another desk (or this one after its cache dir is cleared) shows the defaults (0644, the upload's time)", scratch, f.Name, f.Details.ContentType)
			return
		}
	}
	d.report(checkOK, check, "the mode and time sent as content_type parameters (%s, %s) come back from the listing: every desk shows the mode and time a file was written with", api.ParamMode, api.ParamMTime)
}

// resolveWritePath finds the folder of p, listing each folder on the way.
func (d *doctor) resolveWritePath(ctx context.Context, p string) (writeTarget, error) {
	computer, folders, err := splitWritePath(p)
	if err != nil {
		return writeTarget{}, err
	}
	t := writeTarget{shown: "shared"}
	if computer != "" {
		i := slices.Index(orgfs.ComputerNames(d.seats), computer)
		if i < 0 {
			return t, fmt.Errorf("no computer named %q in computers/ (%d computers)", computer, len(d.seats))
		}
		t.machine, t.shown = d.seats[i].ID, "computers/"+computer
	}
	for _, name := range folders {
		list, err := d.listFolder(ctx, t.machine, t.parent)
		if err != nil {
			return t, err
		}
		i := slices.IndexFunc(list, func(f api.File) bool { return f.IsDir() && f.Name == name })
		if i < 0 {
			return t, fmt.Errorf("no folder %s/%s", t.shown, name)
		}
		t.parent, t.shown = list[i].ID, t.shown+"/"+name
	}
	return t, nil
}

// listFolder lists a folder of the shared storage (machine 0) or of a
// computer's.
func (d *doctor) listFolder(ctx context.Context, machine, parent int64) ([]api.File, error) {
	if machine == 0 {
		return d.client.SharedFiles(ctx, api.ListFilesRequest{ParentID: parent}).Collect()
	}
	return d.client.MachineFiles(ctx, machine, api.ListFilesRequest{ParentID: parent}).Collect()
}

// roundTrip sends size random bytes as the file at shown (in parts of chunk
// bytes; 0: one part), reads it back whole and compares. It returns the
// file's id when the service made it, and whether the round trip held.
func (d *doctor) roundTrip(t writeTarget, dir int64, shown string, size, chunk int64) (int64, bool) {
	check := "small file"
	if chunk > 0 {
		check = "multi-part"
	}
	ctx, cancel := d.ctx(doctorWriteTimeout)
	defer cancel()
	data := make([]byte, size)
	rand.Read(data)
	res, err := d.client.Upload(ctx, api.UploadRequest{MachineID: t.machine, ParentID: dir, Name: path.Base(shown),
		ContentType: api.WithTypeAttrs("application/octet-stream", doctorTypeAttrs), Size: size, ChunkSize: chunk, Body: bytes.NewReader(data)})
	if err != nil {
		d.fail(check, fmt.Errorf("sending %s: %w", shown, err))
		return api.UploadRecord(err), false
	}
	got, err := d.readBack(ctx, res.ID)
	switch {
	case err != nil:
		d.fail(check, fmt.Errorf("reading %s back: %w", shown, err))
		return res.ID, false
	case !bytes.Equal(got, data):
		d.report(checkFailed, check, "%s: read back %s bytes that differ from the %s sent; fix: report it with 'orgfs version'", shown, digits(len(got)), digits(size))
		return res.ID, false
	}
	if chunk == 0 {
		d.report(checkOK, check, "%s: %s bytes sent in %s, read back identical", shown, digits(size), plural(res.Parts, "part"))
		return res.ID, true
	}
	d.report(checkOK, check, "%s: %s bytes sent in %s of %s bytes, read back identical: %s", shown, digits(size), plural(res.Parts, "part"), digits(res.PartSize), chunkUnit(res.PartSize))
	if !d.rangeChecked { // no file to check ranged reads with before
		d.probeRange(foundFile{File: api.File{ID: res.ID, Size: size}, path: shown})
	}
	return res.ID, true
}

// chunkUnit says which unit the service read chunk_size in, from the size
// of the parts its upload URLs cover.
func chunkUnit(partSize int64) string {
	switch partSize {
	case doctorChunk:
		return "the service reads chunk_size in MiB (1,048,576 bytes)"
	case doctorChunk / (1 << 20) * 1_000_000:
		return "the service reads chunk_size in decimal MB (1,000,000 bytes)"
	}
	return "the service reads chunk_size in neither MiB nor MB (orgfs cuts the parts its URLs ask for)"
}

// readBack downloads a file whole through its presigned URL.
func (d *doctor) readBack(ctx context.Context, id int64) ([]byte, error) {
	link, err := d.client.FileURL(ctx, id)
	if err != nil {
		return nil, err
	}
	rc, err := d.client.ReadRange(ctx, link.URL, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// removeScratch deletes the files made and the scratch folder, and checks
// that its parent no longer lists it.
func (d *doctor) removeScratch(t writeTarget, dir int64, name string, made []int64) {
	ctx, cancel := d.ctx(doctorWriteTimeout)
	defer cancel()
	scratch := t.shown + "/" + name
	for _, id := range made {
		if err := d.client.DeleteFile(ctx, id); err != nil && !api.IsNotFound(err) {
			d.fail("cleanup", fmt.Errorf("deleting file %d in %s: %w", id, scratch, err))
		}
	}
	if err := d.client.DeleteFile(ctx, dir); err != nil {
		d.fail("cleanup", fmt.Errorf("deleting %s (remove it by hand): %w", scratch, err))
		return
	}
	list, err := d.listFolder(ctx, t.machine, t.parent)
	if err != nil {
		d.fail("cleanup", fmt.Errorf("listing %s after the delete: %w", t.shown, err))
		return
	}
	if slices.ContainsFunc(list, func(f api.File) bool { return f.Name == name }) {
		d.report(checkFailed, "cleanup", "%s is still listed after its delete answered; fix: remove it by hand", scratch)
		return
	}
	d.report(checkOK, "cleanup", "deleted %s and %s; %s no longer lists it", plural(len(made), "file"), scratch, t.shown)
}
