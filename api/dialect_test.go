package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// The client against every dialect switch of the emulator (docs/DIALECTS.md),
// each alone: the reading of the contract that the switch turns around must
// not show to the client's callers.

type dialectEnv struct {
	s  *emulator.Server
	c  *api.Client
	fx emulator.Fixtures
}

// dialectClient starts the empty seed (one stopped computer with a disk
// image) in the dialect with only the named switch on, and a client of it
// with fast retries. A test that needs the demo organization's fixtures
// calls dialectDemo.
func dialectClient(t *testing.T, sw string, mods ...func(*api.Options)) *dialectEnv {
	t.Helper()
	return startDialect(t, sw, emulator.SeedEmpty, 20*time.Millisecond, mods...)
}

// dialectPending is dialectClient with state-machine steps of an hour: what
// the test makes stays pending (an image installed is pending for two steps,
// which a loaded machine passed at 20 ms before the test's next request).
func dialectPending(t *testing.T, sw string) *dialectEnv {
	t.Helper()
	return startDialect(t, sw, emulator.SeedEmpty, time.Hour)
}

// dialectDemo is dialectClient on the demo organization (a running
// computer, a task, images in every state).
func dialectDemo(t *testing.T, sw string) *dialectEnv {
	t.Helper()
	return startDialect(t, sw, emulator.SeedDemo, 20*time.Millisecond)
}

func startDialect(t *testing.T, sw, seed string, step time.Duration, mods ...func(*api.Options)) *dialectEnv {
	t.Helper()
	d, err := emulator.DialectOf(sw)
	if err != nil {
		t.Fatal(err)
	}
	s := emutest.Start(t, emulator.Options{Seed: seed, StepDelay: step, Log: testkit.Quiet(), Dialect: d})
	opts := api.Options{BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxAttempts: 6}
	for _, m := range mods {
		m(&opts)
	}
	return &dialectEnv{s: s, c: testkit.Client(t, s, emulator.OrgA, opts), fx: s.Emulator.Fixtures(emulator.OrgA)}
}

// file puts a file of the shared storage, at its root or in folder parent,
// on the service (not through the client) and returns its id.
func (v *dialectEnv) file(t *testing.T, parent int64, name, content string) int64 {
	t.Helper()
	if parent == 0 {
		root, err := v.s.Emulator.RootID(emulator.OrgA, 0)
		if err != nil {
			t.Fatal(err)
		}
		parent = root
	}
	id, err := v.s.Emulator.CreateFile(emulator.OrgA, 0, parent, name, strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// folder makes a folder at the shared storage's root, on the service, with
// n files, and returns its id.
func (v *dialectEnv) folder(t *testing.T, name string, n int) int64 {
	t.Helper()
	root, err := v.s.Emulator.RootID(emulator.OrgA, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := v.s.Emulator.CreateDir(emulator.OrgA, 0, root, name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		v.file(t, dir, fmt.Sprintf("f%03d", i), fmt.Sprintf("file %d\n", i))
	}
	return dir
}

// image installs an image (Ubuntu 22.04, base image 202) and returns it.
func (v *dialectEnv) image(t *testing.T, name string) *api.Image {
	t.Helper()
	im, err := v.c.InstallImage(t.Context(), api.InstallImageRequest{Name: name, BaseImageID: 202})
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// apiErr returns err as an *api.Error, failing the test when it is not one.
func apiErr(t *testing.T, err error) *api.Error {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want an *api.Error", err, err)
	}
	return e
}

// dialectRows: one test per switch, named by it.
var dialectRows = map[string]func(t *testing.T){
	"errors-in-200": func(t *testing.T) {
		v := dialectClient(t, "errors-in-200")
		ctx := t.Context()
		v.file(t, 0, "Welcome.txt", "hello")
		// A refusal in a 200 answer is an error, not a record of zeros.
		res, err := v.c.CreateFile(ctx, api.CreateFileRequest{Name: "Welcome.txt", Size: 3})
		if !api.IsExists(err) {
			t.Fatalf("POST /files of an existing name: %+v, %v; want 451", res, err)
		}
		if e := apiErr(t, err); e.HTTPStatus != 200 || e.Temporary() {
			t.Errorf("%v: HTTP %d, temporary %v; want HTTP 200, not temporary", e, e.HTTPStatus, e.Temporary())
		}
		if _, err := v.c.SharedFiles(ctx, api.ListFilesRequest{ParentID: 999999}).Collect(); !api.IsNotFound(err) {
			t.Errorf("listing a folder that does not exist: %v, want 404", err)
		}
	},
	"four-digit-422": func(t *testing.T) {
		v := dialectPending(t, "four-digit-422")
		_, err := v.c.CreateDownload(t.Context(), api.CreateDownloadRequest{})
		if e := apiErr(t, err); e.Code != 4722 || e.HTTPStatus != 422 || e.Temporary() {
			t.Fatalf("%v: code %d, HTTP %d; want 4722 at HTTP 422, not temporary", e, e.Code, e.HTTPStatus)
		}
		im := v.image(t, "not yet")
		if err := v.c.AssignImage(t.Context(), im.ID, []int64{v.fx.StoppedMachine}); !api.IsCode(err, 4210) {
			t.Errorf("assigning a pending image: %v, want 4210", err)
		}
	},
	"four-digit-200": func(t *testing.T) {
		v := dialectClient(t, "four-digit-200")
		link, err := v.c.CreateDownload(t.Context(), api.CreateDownloadRequest{})
		if e := apiErr(t, err); e.Code != 4722 || e.HTTPStatus != 200 {
			t.Fatalf("%+v, %v: code %d, HTTP %d; want 4722 at HTTP 200", link, e, e.Code, e.HTTPStatus)
		}
	},
	"error-field": func(t *testing.T) {
		v := dialectClient(t, "error-field")
		v.file(t, 0, "Welcome.txt", "hello")
		_, err := v.c.CreateFile(t.Context(), api.CreateFileRequest{Name: "Welcome.txt", Size: 3})
		if e := apiErr(t, err); e.Code != 451 || !strings.Contains(e.Message, "already exists") {
			t.Fatalf("%v: message %q, want the service's text (under \"error\")", e, e.Message)
		}
	},
	"bare-5xx": func(t *testing.T) {
		v := dialectClient(t, "bare-5xx")
		ctx := t.Context()
		v.file(t, 0, "Welcome.txt", "hello")
		// No body: the status line says it all, and it is retried.
		v.s.Emulator.InjectError("GET /files", 503, 2)
		files, err := v.c.SharedFiles(ctx, api.ListFilesRequest{}).Collect()
		if err != nil || len(files) == 0 {
			t.Fatalf("listing through two bodiless 503s: %d files, %v", len(files), err)
		}
		one := testkit.Client(t, v.s, emulator.OrgA, api.Options{MaxAttempts: 1})
		v.s.Emulator.InjectError("GET /files", 500, 1)
		_, err = one.SharedFiles(ctx, api.ListFilesRequest{}).Collect()
		if e := apiErr(t, err); e.Code != 500 || e.HTTPStatus != 500 || !e.Temporary() || errors.Is(err, api.ErrMalformedResponse) {
			t.Errorf("%v: code %d, HTTP %d, temporary %v; want 500, temporary", e, e.Code, e.HTTPStatus, e.Temporary())
		}
		// Other refusals keep their body: a 4-digit code is no 5xx.
		if _, err := v.c.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: []int64{999999}}); !api.IsNotFound(err) {
			t.Errorf("a download of a file that does not exist: %v, want 4717 (not found)", err)
		}
	},
	"storage-bytes": func(t *testing.T) {
		v := dialectClient(t, "storage-bytes")
		seats, err := api.Collect(v.c.Seats(t.Context(), ""))
		if err != nil {
			t.Fatal(err)
		}
		if len(seats) != 1 || seats[0].DiskSize != 75 || seats[0].FileStorageSize != 25 {
			t.Fatalf("%+v: want one computer of 75 GB disk, 25 GB storage (given in bytes)", seats)
		}
	},
	"seats-only":    func(t *testing.T) { computerRoutes(t, "seats-only") },
	"machines-only": func(t *testing.T) { computerRoutes(t, "machines-only") },
	"access-seconds": func(t *testing.T) {
		v := dialectClient(t, "access-seconds")
		ctx := t.Context()
		for i := range 2 {
			l, err := v.c.AccessLink(ctx, v.fx.StoppedMachine, 30)
			if err != nil {
				t.Fatal(err)
			}
			if life := l.ExpiresAt.Sub(v.s.Emulator.Now()); life < 29*time.Minute || life > 31*time.Minute {
				t.Fatalf("link %d: a link for 30 minutes lives %v", i+1, life)
			}
		}
		// The first link told the unit: three requests for two links.
		if n := v.s.Emulator.Stats().Requests["POST /machines/{id}/access"]; n != 3 {
			t.Errorf("%d access requests for two links, want 3", n)
		}
		// Told, the unit is not judged: a client set to minutes gets what it asks.
		fixed := testkit.Client(t, v.s, emulator.OrgA, api.Options{AccessUnit: api.AccessUnitMinutes})
		if l, err := fixed.AccessLink(ctx, v.fx.StoppedMachine, 30); err != nil || l.ExpiresAt.Sub(v.s.Emulator.Now()) > time.Minute {
			t.Errorf("--api-access-unit minutes: %v, %v", l, err)
		}
	},
	"time-no-fraction": func(t *testing.T) { timestamps(t, "time-no-fraction") },
	"time-offset":      func(t *testing.T) { timestamps(t, "time-offset") },
	"no-get-image": func(t *testing.T) {
		v := dialectClient(t, "no-get-image")
		ctx := t.Context()
		made := v.image(t, "status")
		testkit.WaitFor(t, 10*time.Second, "the image built", func() bool {
			im, err := v.c.GetImage(ctx, made.ID)
			if err != nil {
				t.Fatalf("GET /images/%d: %v", made.ID, err)
			}
			return im.ID == made.ID && im.Status == api.ImageAvailable
		})
		if n := v.s.Emulator.Stats().Requests["unknown"]; n != 1 {
			t.Errorf("%d requests to no route, want 1: the list serves from the first 404 on", n)
		}
		if _, err := v.c.GetImage(ctx, 999999); !api.IsNotFound(err) {
			t.Errorf("an image nowhere: %v, want 404", err)
		}
	},
	"per-page-100": func(t *testing.T) {
		v := dialectClient(t, "per-page-100", func(o *api.Options) { o.PerPage = 1000 })
		root, err := v.s.Emulator.RootID(emulator.OrgA, 0)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := v.s.Emulator.CreateDir(emulator.OrgA, 0, root, "many")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 150 {
			if _, err := v.s.Emulator.CreateFile(emulator.OrgA, 0, dir, fmt.Sprintf("f%03d", i), strings.NewReader("x")); err != nil {
				t.Fatal(err)
			}
		}
		files, err := v.c.SharedFiles(t.Context(), api.ListFilesRequest{ParentID: dir}).Collect()
		if err != nil || len(files) != 150 {
			t.Fatalf("asked 1000 a page, served 100: %d files listed, %v; want 150", len(files), err)
		}
	},
	"chunk-mb": func(t *testing.T) {
		v := dialectClient(t, "chunk-mb")
		ctx := t.Context()
		// 8 MB parts cut 16.5 MB in three, 8 MiB parts in two: the answer's
		// three upload URLs tell the unit.
		data := testkit.RandBytes(16_500_000, 7)
		res, err := v.c.Upload(ctx, api.UploadRequest{Name: "mb.bin", Size: int64(len(data)), Body: bytes.NewReader(data), ChunkSize: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if res.Parts != 3 || res.PartSize != 8_000_000 {
			t.Errorf("%d parts of %d bytes, want 3 of 8000000", res.Parts, res.PartSize)
		}
		if got := readBack(t, v.c, res.ID); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, differing from the %d uploaded", len(got), len(data))
		}
		// 20 MB is three parts in either unit: the unit told before cuts it.
		data = testkit.RandBytes(20_000_000, 8)
		res, err = v.c.Upload(ctx, api.UploadRequest{Name: "mb2.bin", Size: int64(len(data)), Body: bytes.NewReader(data), ChunkSize: 8 << 20})
		if err != nil || res.Parts != 3 || res.PartSize != 8_000_000 {
			t.Fatalf("%+v, %v; want 3 parts of 8000000 bytes", res, err)
		}
		if got := readBack(t, v.c, res.ID); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, differing from the %d uploaded", len(got), len(data))
		}
	},
	"download-id-strings": func(t *testing.T) {
		v := dialectClient(t, "download-id-strings")
		dir := v.folder(t, "bundle", 5)
		rc, job, err := v.c.Bundle(t.Context(), api.BundleRequest{DirectoryID: dir, PollInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		zipped, err := io.ReadAll(rc)
		if err != nil || job.ID == 0 || job.Status != api.DownloadUploaded {
			t.Fatalf("job %+v, %v", job, err)
		}
		if entries := testkit.Unzip(t, zipped); len(entries) != 5 {
			t.Fatalf("%d entries, want the folder's 5 files", len(entries))
		}
	},
	"image-size-bytes": func(t *testing.T) {
		v := dialectClient(t, "image-size-bytes")
		ctx := t.Context()
		// Ubuntu 22.04 (9 GB) with the 5% buffer: 9.45 GB.
		im, err := v.c.InstallImage(ctx, api.InstallImageRequest{Name: "sized", BaseImageID: 202})
		if err != nil || im.Size != 9.45 {
			t.Fatalf("%+v, %v: size %v, want 9.45 (GB, given in bytes)", im, err, im.Size)
		}
		listed, err := v.c.GetImage(ctx, im.ID)
		if err != nil || listed.Size != 9.45 {
			t.Fatalf("%+v, %v", listed, err)
		}
	},
	"softwares-swapped": func(t *testing.T) {
		v := dialectClient(t, "softwares-swapped")
		ctx := t.Context()
		im, err := v.c.InstallImage(ctx, api.InstallImageRequest{Name: "with git", BaseImageID: 202, SoftwareIDs: []int64{106}})
		if err != nil || len(im.Softwares) != 1 || im.Softwares[0].ID != 106 {
			t.Fatalf("install answer (a plain array): %+v, %v", im, err)
		}
		ims, err := api.Collect(v.c.Images(ctx, "with git"))
		if err != nil || len(ims) != 1 || len(ims[0].Softwares) != 1 || ims[0].Softwares[0].Name != "Git" {
			t.Fatalf("list ({\"data\": [...]}): %+v, %v", ims, err)
		}
	},
	"software-size-gb": func(t *testing.T) {
		v := dialectClient(t, "software-size-gb")
		ctx := t.Context()
		cat, err := v.c.Software(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]api.Size{101: 350_000_000, 105: 130_000_000, 108: 62_000_000_000}
		for _, s := range cat.Software {
			if w, ok := want[s.ID]; ok && s.Size != w {
				t.Errorf("software %d (%s): %v bytes, want %v (given in GB)", s.ID, s.Name, s.Size, w)
			}
		}
		im, err := v.c.InstallImage(ctx, api.InstallImageRequest{Name: "with chrome", BaseImageID: 202, SoftwareIDs: []int64{101}})
		if err != nil || len(im.Softwares) != 1 || im.Softwares[0].Size != 350_000_000 {
			t.Fatalf("%+v, %v", im, err)
		}
	},
	"ids-swapped": func(t *testing.T) {
		v := dialectClient(t, "ids-swapped")
		ctx := t.Context()
		fresh, err := v.c.CreateDirectory(ctx, api.CreateDirectoryRequest{Name: "ids"})
		if err != nil || fresh.ID == 0 {
			t.Fatalf("%+v, %v", fresh, err)
		}
		up, err := v.c.Upload(ctx, api.UploadRequest{ParentID: fresh.ID, Name: "f.txt", Size: 2, Body: strings.NewReader("hi")})
		if err != nil || up.ID == 0 {
			t.Fatalf("%+v, %v", up, err)
		}
		files, err := v.c.SharedFiles(ctx, api.ListFilesRequest{ParentID: fresh.ID}).Collect()
		if err != nil || len(files) != 1 || files[0].ID != up.ID || files[0].ParentID != fresh.ID {
			t.Fatalf("%+v, %v; want file %d in folder %d", files, err, up.ID, fresh.ID)
		}
		seats, err := api.Collect(v.c.Seats(ctx, ""))
		if err != nil || len(seats) == 0 || seats[0].ID == 0 || seats[0].Machine == nil || seats[0].Machine.ID != seats[0].ID {
			t.Fatalf("%+v, %v", seats, err)
		}
		made := v.image(t, "ids")
		if made.ID == 0 {
			t.Fatalf("%+v", made)
		}
		im, err := v.c.GetImage(ctx, made.ID)
		if err != nil || im.ID != made.ID {
			t.Fatalf("%+v, %v", im, err)
		}
		mu, err := v.c.MachineUsage(ctx, v.fx.StoppedMachine)
		if err != nil || mu.MachineID != v.fx.StoppedMachine {
			t.Fatalf("%+v, %v", mu, err)
		}
	},
	"next-page-absent": func(t *testing.T) {
		v := dialectClient(t, "next-page-absent", func(o *api.Options) { o.PerPage = 7 })
		ctx := t.Context()
		dir := v.folder(t, "pages", 30)
		files, err := v.c.SharedFiles(ctx, api.ListFilesRequest{ParentID: dir}).Collect()
		if err != nil || len(files) != 30 {
			t.Fatalf("%d files, %v; want 30", len(files), err)
		}
		if n := v.s.Emulator.Stats().Requests["GET /files"]; n != 5 {
			t.Errorf("%d pages asked for 30 files at 7 a page, want 5", n)
		}
	},
	"name-required": func(t *testing.T) {
		v := dialectClient(t, "name-required")
		ctx := t.Context()
		im, err := v.c.CreateImage(ctx, v.fx.StoppedMachine, "")
		if err != nil || im.Name != fmt.Sprintf("Template of computer %d", v.fx.StoppedMachine) {
			t.Fatalf("POST /images without a name: %+v, %v", im, err)
		}
		im, err = v.c.InstallImage(ctx, api.InstallImageRequest{BaseImageID: 202})
		if err != nil || im.Name != "Template #202" {
			t.Fatalf("POST /images/install without a name: %+v, %v", im, err)
		}
	},
	"base-image-required": func(t *testing.T) {
		v := dialectClient(t, "base-image-required")
		// The latest base image, Windows Server 2022 (24 GB), with the 5% buffer.
		im, err := v.c.InstallImage(t.Context(), api.InstallImageRequest{Name: "latest base"})
		if err != nil || im.Size != 25.2 {
			t.Fatalf("POST /images/install without a base image: %+v, %v; want the latest one's 25.2 GB", im, err)
		}
	},
	"parent-id-required": func(t *testing.T) {
		v := dialectClient(t, "parent-id-required")
		ctx := t.Context()
		if _, err := v.c.CreateDirectory(ctx, api.CreateDirectoryRequest{Name: "at the root"}); err != nil {
			t.Fatalf("a folder at the root: %v", err)
		}
		if _, err := v.c.Upload(ctx, api.UploadRequest{Name: "root.txt", Size: 2, Body: strings.NewReader("hi")}); err != nil {
			t.Fatalf("a file at the root: %v", err)
		}
		if _, err := v.c.CreateDirectory(ctx, api.CreateDirectoryRequest{MachineID: v.fx.StoppedMachine, Name: "at its root"}); err != nil {
			t.Fatalf("a folder at a computer's root: %v", err)
		}
	},
	"type-no-params": func(t *testing.T) {
		// The upload succeeds; the listing gives the MIME type alone, and
		// the file carries no mode or time (each desk shows its own).
		v := dialectClient(t, "type-no-params")
		ctx := t.Context()
		mode := uint32(0o755)
		ct := api.WithTypeAttrs("text/x-shellscript", api.TypeAttrs{Mode: &mode})
		if _, err := v.c.Upload(ctx, api.UploadRequest{Name: "run.sh", ContentType: ct, Size: 2, Body: strings.NewReader("hi")}); err != nil {
			t.Fatal(err)
		}
		files, err := v.c.SharedFiles(ctx, api.ListFilesRequest{}).Collect()
		if err != nil || len(files) != 1 || files[0].Details.ContentType != "text/x-shellscript" || !files[0].Written.IsZero() {
			t.Fatalf("listed: %+v, %v; want run.sh as text/x-shellscript, carrying nothing", files, err)
		}
	},
}

// computerRoutes reaches every computer route of the client in a dialect
// that serves one path form alone.
func computerRoutes(t *testing.T, sw string) {
	v := dialectDemo(t, sw)
	ctx := t.Context()
	if files, err := v.c.MachineFiles(ctx, v.fx.RunningMachine, api.ListFilesRequest{}).Collect(); err != nil || len(files) == 0 {
		t.Fatalf("files: %d, %v", len(files), err)
	}
	if task, err := v.c.MachineFiles(ctx, v.fx.RunningMachine, api.ListFilesRequest{TaskID: v.fx.Task}).Collect(); err != nil || len(task) != 2 {
		t.Fatalf("a task's folders: %+v, %v; want its output and recording folders", task, err)
	}
	if _, err := v.c.MachineFiles(ctx, v.fx.StoppedMachine, api.ListFilesRequest{TaskID: v.fx.Task}).Collect(); !api.IsNotFound(err) {
		t.Fatalf("a task of another computer: %v, want 404", err)
	}
	if entries, err := v.c.ListContent(ctx, v.fx.RunningMachine, `C:\Users`); err != nil || len(entries) == 0 {
		t.Fatalf("list-content: %+v, %v", entries, err)
	}
	types, err := v.c.MachineTypes(ctx, v.fx.StoppedMachine)
	if err != nil || len(types) == 0 {
		t.Fatalf("machine types: %+v, %v", types, err)
	}
	if err := v.c.SetMachineType(ctx, v.fx.StoppedMachine, types[0].ID); err != nil {
		t.Fatalf("machine-type: %v", err)
	}
	if _, err := v.c.AccessLink(ctx, v.fx.StoppedMachine, 10); err != nil {
		t.Fatalf("access: %v", err)
	}
	if err := v.c.ResetMachine(ctx, v.fx.StoppedMachine); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if err := v.c.StartMachine(ctx, v.fx.StoppedMachine, api.StartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := v.c.StopMachine(ctx, v.fx.RunningMachine, false); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := v.c.StartMachine(ctx, 999999, api.StartOptions{}); !api.IsNotFound(err) {
		t.Fatalf("start of a computer that does not exist: %v, want 404", err)
	}
}

// timestamps reads the times of files, images, computers and logs.
func timestamps(t *testing.T, sw string) {
	v := dialectClient(t, sw)
	ctx := t.Context()
	v.folder(t, "times", 3)
	files, err := v.c.SharedFiles(ctx, api.ListFilesRequest{}).Collect()
	if err != nil || len(files) == 0 {
		t.Fatal(len(files), err)
	}
	for _, f := range files {
		if f.LastModified.IsZero() || f.LastModified.Year() < 2000 {
			t.Fatalf("%s: last modified %v", f.Name, f.LastModified)
		}
	}
	im, err := v.c.GetImage(ctx, v.image(t, "times").ID)
	if err != nil || im.CreatedAt.IsZero() || im.UpdatedAt.IsZero() {
		t.Fatalf("%+v, %v", im, err)
	}
	l, err := v.c.AccessLink(ctx, v.fx.StoppedMachine, 30)
	if err != nil || l.ExpiresAt.Sub(v.s.Emulator.Now()) < 29*time.Minute {
		t.Fatalf("%+v, %v", l, err)
	}
	now := v.s.Emulator.Now()
	logs, err := v.c.UserActionLogs(ctx, api.LogsRequest{Start: now.Add(-time.Hour), End: now.Add(time.Minute)})
	if err != nil || len(logs.Logs) == 0 || logs.Logs[0].CreatedAt.IsZero() {
		t.Fatalf("%+v, %v", logs, err)
	}
}

// readBack downloads file id whole.
func readBack(t *testing.T, c *api.Client, id int64) []byte {
	t.Helper()
	link, err := c.FileURL(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.ReadRange(context.Background(), link.URL, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDialectSwitches runs each switch's test; every switch of the emulator
// has one.
func TestDialectSwitches(t *testing.T) {
	for _, sw := range emulator.DialectSwitches() {
		row, ok := dialectRows[sw.Name]
		if !ok {
			t.Errorf("the dialect switch %s has no test in dialectRows", sw.Name)
			continue
		}
		t.Run(sw.Name, func(t *testing.T) {
			t.Parallel()
			row(t)
		})
	}
	if len(dialectRows) != len(emulator.DialectSwitches()) {
		t.Errorf("%d rows for %d switches", len(dialectRows), len(emulator.DialectSwitches()))
	}
}

// TestAccessUnitFromEnvironment: ORGFS_API_ACCESS_UNIT sets the unit, so
// that the first link is asked in it (nothing to judge) and comes out right.
func TestAccessUnitFromEnvironment(t *testing.T) {
	t.Setenv(api.AccessUnitEnv, api.AccessUnitSeconds)
	v := dialectClient(t, "access-seconds")
	l, err := v.c.AccessLink(t.Context(), v.fx.StoppedMachine, 30)
	if err != nil {
		t.Fatal(err)
	}
	if life := l.ExpiresAt.Sub(v.s.Emulator.Now()); life < 29*time.Minute || life > 31*time.Minute {
		t.Fatalf("a link for 30 minutes lives %v", life)
	}
	if n := v.s.Emulator.Stats().Requests["POST /machines/{id}/access"]; n != 1 {
		t.Errorf("%d access requests, want 1: the unit was told", n)
	}
	t.Setenv(api.AccessUnitEnv, "hours")
	if _, err := api.New(testkit.Creds(t, v.s, emulator.OrgA), api.Options{}); err == nil || !strings.Contains(err.Error(), api.AccessUnitEnv) {
		t.Errorf("ORGFS_API_ACCESS_UNIT=hours: %v, want an error naming it", err)
	}
}
