package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// These tests hold the client to the contract (spec/organization-api.md, with
// the emulator's choices of spec/service-notes.md) against the in-process
// emulator: every service method of *api.Client once with its decoded result
// checked against values the seed or the emulator's own state fixes, and
// every documented error code provoked under the condition the contract
// states.

// contractT0 is the fake clock's start (a whole second: the emulator's
// presigned URLs carry Unix seconds).
var contractT0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// contractStep is one state-machine step of the emulator; only the fake
// clock moves it.
const contractStep = 10 * time.Second

// contractEnv is an emulator on a fake clock with a client of each
// organization, both signing with that clock.
type contractEnv struct {
	srv   *emulator.Server
	e     *emulator.Emulator
	clock *emutest.Clock
	a, b  *api.Client // org-a, org-b
	creds []api.Credentials
	fx    emulator.Fixtures // org-a
	fxB   emulator.Fixtures // org-b
}

func startContract(t *testing.T, seed string, perPage int) *contractEnv {
	t.Helper()
	return startContractWith(t, emulator.Options{Seed: seed}, perPage)
}

// startContractWith is startContract with more options of the emulator.
func startContractWith(t *testing.T, opts emulator.Options, perPage int) *contractEnv {
	t.Helper()
	clock := emutest.NewClock(contractT0)
	opts.StepDelay, opts.Now, opts.Log = contractStep, clock.Now, testkit.Quiet()
	srv := emutest.Start(t, opts)
	v := &contractEnv{srv: srv, e: srv.Emulator, clock: clock,
		fx: srv.Emulator.Fixtures(emulator.OrgA), fxB: srv.Emulator.Fixtures(emulator.OrgB)}
	for _, c := range srv.Credentials() {
		creds := testkit.Creds(t, srv, c.Name)
		v.creds = append(v.creds, creds)
		client := v.client(t, creds, perPage)
		switch c.Name {
		case emulator.OrgA:
			v.a = client
		case emulator.OrgB:
			v.b = client
		}
	}
	return v
}

// client returns a client of creds signing with the fake clock, with fast
// retries.
func (v *contractEnv) client(t *testing.T, creds api.Credentials, perPage int) *api.Client {
	t.Helper()
	c, err := api.New(creds, api.Options{Logger: testkit.Quiet(), Clock: v.clock.Now, PerPage: perPage,
		BaseBackoff: 2 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxAttempts: 4})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// steps moves the fake clock n state-machine steps forward.
func (v *contractEnv) steps(n int) { v.clock.Advance(time.Duration(n) * contractStep) }

// seat finds a computer of org-a in the (paginated) computer list.
func (v *contractEnv) seat(t *testing.T, id int64) api.Seat {
	t.Helper()
	seats, err := api.Collect(v.a.Seats(context.Background(), ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seats {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("computer %d not listed among %d", id, len(seats))
	return api.Seat{}
}

// imageStatus checks that GetImage and the (paginated) image list agree on
// an image and returns it.
func (v *contractEnv) imageStatus(t *testing.T, id int64, want string) *api.Image {
	t.Helper()
	ctx := context.Background()
	got, err := v.a.GetImage(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Status != want {
		t.Fatalf("GetImage(%d): id %d status %q, want %q", id, got.ID, got.Status, want)
	}
	images, err := api.Collect(v.a.Images(ctx, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range images {
		if im.ID == id {
			if im.Status != want || im.Name != got.Name || im.Size != got.Size || im.Source != got.Source {
				t.Fatalf("listed %+v, GetImage %+v", im, got)
			}
			return got
		}
	}
	t.Fatalf("image %d not listed", id)
	return nil
}

// names returns the names of files.
func names(files []api.File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	return out
}

// byName finds an entry by name.
func byName(t *testing.T, files []api.File, name string) api.File {
	t.Helper()
	for _, f := range files {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("%q not among %q", name, names(files))
	return api.File{}
}

// putRaw PUTs data to a presigned part URL with a plain HTTP client (no
// credentials) and returns the ETag exactly as answered.
func putRaw(t *testing.T, rawURL string, data []byte) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, rawURL, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || etag == "" {
		t.Fatalf("PUT part: HTTP %d, ETag %q", resp.StatusCode, etag)
	}
	return etag
}

// readAll reads a whole object through ReadRange.
func readAll(t *testing.T, c *api.Client, rawURL string) []byte {
	t.Helper()
	rc, err := c.ReadRange(context.Background(), rawURL, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundGB is the emulator's image size rule: bytes as GB, two decimals.
func roundGB(bytes float64) float64 { return math.Round(bytes/1e9*100) / 100 }

// contractFlow carries what one row of TestEveryMethodAgainstEmulator made to
// the rows after it.
type contractFlow struct {
	installed, snapshot *api.Image
	seat                int64 // a computer created by the test
	dir                 int64 // a shared folder created by the test
	raw                 int64 // a file uploaded with CreateFile, raw PUTs and CompleteFile
	rawUID              string
	rawURLs             []api.UploadURL
	rawData             []byte
	up                  int64 // a file uploaded with Upload
	upData              []byte
	upURL               string
	job                 int64 // a download job of dir
}

// Routes of the object store in methodRow.routes (the emulator's API routes
// are named as in its Stats).
const (
	objectGET = "object GET"
	objectPUT = "object PUT"
)

// methodRow calls one method of *api.Client (and others to check its effect)
// and names the emulator routes the call must reach.
type methodRow struct {
	method string
	routes []string
	run    func(t *testing.T, v *contractEnv, f *contractFlow)
}

// Methods of *api.Client that do not talk to the service.
var nonServiceMethods = map[string]bool{"Stats": true, "PerPage": true, "String": true, "GoString": true, "Format": true, "ClockSkew": true, "Reachability": true, "WatchReach": true, "Unreachable": true}

func TestEveryMethodAgainstEmulator(t *testing.T) {
	rows := methodRows()

	// Every service method of *api.Client has a row, and every row names one.
	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.method] = true
	}
	ct := reflect.TypeFor[*api.Client]()
	var missing []string
	for m := range ct.Methods() {
		if !nonServiceMethods[m.Name] && !covered[m.Name] {
			missing = append(missing, m.Name)
		}
		delete(covered, m.Name)
	}
	if len(missing) > 0 {
		t.Errorf("methods of *api.Client without a row in TestEveryMethodAgainstEmulator: %v", missing)
	}
	if len(covered) > 0 {
		t.Errorf("rows name methods *api.Client does not have: %v", covered)
	}

	v := startContract(t, emulator.SeedDemo, 4) // 4 per page: every list takes several pages
	f := &contractFlow{}
	for _, r := range rows {
		before := v.e.Stats()
		ok := t.Run(r.method, func(t *testing.T) {
			r.run(t, v, f)
			after := v.e.Stats()
			for _, route := range r.routes {
				var reached bool
				switch route {
				case objectGET:
					reached = after.Objects.Gets > before.Objects.Gets
				case objectPUT:
					reached = after.Objects.Puts > before.Objects.Puts
				default:
					reached = after.Requests[route] > before.Requests[route]
				}
				if !reached {
					t.Errorf("%s did not reach %s", r.method, route)
				}
			}
		})
		if !ok {
			t.FailNow() // the rows after it build on its state
		}
	}
	// No fault but the two lost answers of the CreateDirectory row.
	if st := v.a.Stats(); st.Retries != 2 || st.Ops["POST /files (directory)"].Retries != 2 {
		t.Errorf("retries: %+v", st)
	}
}

func methodRows() []methodRow {
	ctx := context.Background()
	return []methodRow{
		{"Usage", []string{"GET /usage"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			u, err := v.a.Usage(ctx)
			if err != nil || u.UsageMinutes != 6000 || u.MachineType != "Lake" {
				t.Fatalf("%+v %v", u, err)
			}
		}},
		{"MachinesUsage", []string{"GET /usage/machines"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			mu, err := v.a.MachinesUsage(ctx)
			if err != nil || mu.Count != 4 || len(mu.Machines) != 4 {
				t.Fatalf("%+v %v", mu, err)
			}
			want := map[int64]api.MachineUsage{
				v.fx.RunningMachine: {MachineID: v.fx.RunningMachine, MachineName: "Design Studio #1", UsageMinutes: 300, MachineType: "Volcano", UsageSource: api.UsageSourceMachine},
				v.fx.StoppedMachine: {MachineID: v.fx.StoppedMachine, MachineName: "Café Render", UsageMinutes: 6000, MachineType: "Lake", UsageSource: api.UsageSourceTeamBalance},
			}
			for _, m := range mu.Machines {
				if w, ok := want[m.MachineID]; ok && m != w {
					t.Errorf("got %+v, want %+v", m, w)
				}
				delete(want, m.MachineID)
			}
			if len(want) > 0 {
				t.Fatalf("not listed: %+v", want)
			}
		}},
		{"MachineUsage", []string{"GET /usage/machines/{id}"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			m, err := v.a.MachineUsage(ctx, v.fx.RunningMachine)
			want := api.MachineUsage{MachineID: v.fx.RunningMachine, MachineName: "Design Studio #1", UsageMinutes: 300, MachineType: "Volcano", UsageSource: api.UsageSourceMachine}
			if err != nil || *m != want {
				t.Fatalf("%+v %v", m, err)
			}
		}},
		{"AssignUsage", []string{"POST /usage/assign"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			r, err := v.a.AssignUsage(ctx, v.fx.RunningMachine, 25)
			if err != nil || *r != (api.AssignResult{AssignedMinutes: 25, MachineID: v.fx.RunningMachine, MachineType: "Volcano"}) {
				t.Fatalf("%+v %v", r, err)
			}
			u, err := v.a.Usage(ctx)
			if err != nil || u.UsageMinutes != 6000-25 {
				t.Fatalf("team balance after assigning 25: %+v %v", u, err)
			}
			m, err := v.a.MachineUsage(ctx, v.fx.RunningMachine)
			if err != nil || m.UsageMinutes != 300+25 {
				t.Fatalf("computer after assigning 25: %+v %v", m, err)
			}
		}},
		{"RetrieveUsage", []string{"POST /usage/retrieve"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			r, err := v.a.RetrieveUsage(ctx, v.fx.RunningMachine, 10)
			if err != nil || *r != (api.RetrieveResult{RetrievedMinutes: 10, MachineID: v.fx.RunningMachine, MachineType: "Volcano"}) {
				t.Fatalf("%+v %v", r, err)
			}
			u, err := v.a.Usage(ctx)
			if err != nil || u.UsageMinutes != 6000-25+10 {
				t.Fatalf("team balance after retrieving 10: %+v %v", u, err)
			}
			m, err := v.a.MachineUsage(ctx, v.fx.RunningMachine)
			if err != nil || m.UsageMinutes != 300+25-10 {
				t.Fatalf("computer after retrieving 10: %+v %v", m, err)
			}
		}},
		{"Software", []string{"GET /software"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			cat, err := v.a.Software(ctx)
			if err != nil || len(cat.Software) != 8 || len(cat.BaseImages) != 3 {
				t.Fatalf("%+v %v", cat, err)
			}
			i := slices.IndexFunc(cat.Software, func(s api.Software) bool { return s.ID == 105 })
			if i < 0 || cat.Software[i].Name != "Python 3.12" || cat.Software[i].Size != 130_000_000.5 {
				t.Fatalf("software 105 (fractional size): %+v", cat.Software)
			}
			if b := cat.BaseImages[2]; b != (api.BaseImage{ID: 203, Name: "Windows Server 2022", Size: 24e9, Type: "base_image"}) {
				t.Fatalf("latest base image %+v", b)
			}
		}},
		{"Images", []string{"GET /images"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			images, err := api.Collect(v.a.Images(ctx, ""))
			if err != nil || len(images) != 6 {
				t.Fatalf("%d images, %v", len(images), err)
			}
			want := map[int64]string{v.fx.AvailableImage: api.ImageAvailable, v.fx.LargeImage: api.ImageAvailable,
				v.fx.PendingImage: api.ImagePending, v.fx.BuildingImage: api.ImageBuilding, v.fx.FailedImage: api.ImageFailed}
			for _, im := range images {
				if w, ok := want[im.ID]; ok && im.Status != w {
					t.Errorf("image %d %q: status %q, want %q", im.ID, im.Name, im.Status, w)
				}
				if im.ID == v.fx.LargeImage && (im.Size != 200 || im.Name != "Huge dataset image") {
					t.Errorf("large image %+v", im)
				}
			}
			found, err := api.Collect(v.a.Images(ctx, "office"))
			if err != nil || len(found) != 1 || found[0].ID != v.fx.AvailableImage {
				t.Fatalf("q=office: %+v %v", found, err)
			}
		}},
		{"GetImage", []string{"GET /images/{id}"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			im, err := v.a.GetImage(ctx, v.fx.AvailableImage)
			if err != nil {
				t.Fatal(err)
			}
			size := roundGB((24e9 + 350e6 + 780e6) * 1.05)
			if im.ID != v.fx.AvailableImage || im.Type != "image" || im.Name != "Office suite" || im.Size != api.Size(size) ||
				im.Status != api.ImageAvailable || im.Source != api.ImageSourcePreInstallation ||
				!im.CreatedAt.Equal(contractT0.Add(-14*24*time.Hour)) || !im.UpdatedAt.Equal(contractT0.Add(-14*24*time.Hour+time.Hour)) {
				t.Fatalf("%+v (size want %v)", im, size)
			}
			want := []api.ImageSoftware{{ID: 101, Type: "software", Name: "Google Chrome", Size: 350e6}, {ID: 104, Type: "software", Name: "LibreOffice", Size: 780e6}}
			if !slices.Equal(im.Softwares, want) {
				t.Fatalf("softwares %+v", im.Softwares)
			}
		}},
		{"InstallImage", []string{"POST /images/install"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			im, err := v.a.InstallImage(ctx, api.InstallImageRequest{Name: "contract install", SoftwareIDs: []int64{105}, BaseImageID: 202})
			if err != nil {
				t.Fatal(err)
			}
			size := roundGB((9e9 + 130_000_000.5) * 1.05)
			if im.ID == 0 || im.Name != "contract install" || im.Status != api.ImagePending || im.Source != api.ImageSourcePreInstallation ||
				im.Size != api.Size(size) || !im.CreatedAt.Equal(v.clock.Now()) {
				t.Fatalf("%+v (size want %v)", im, size)
			}
			// The install answer wraps softwares as {"data": [...]}.
			if want := []api.ImageSoftware{{ID: 105, Type: "software", Name: "Python 3.12", Size: 130_000_000.5}}; !slices.Equal(im.Softwares, want) {
				t.Fatalf("softwares %+v", im.Softwares)
			}
			v.imageStatus(t, im.ID, api.ImagePending)
			v.steps(1)
			v.imageStatus(t, im.ID, api.ImageBuilding)
			v.steps(1)
			f.installed = v.imageStatus(t, im.ID, api.ImageAvailable)
		}},
		{"CreateImage", []string{"POST /images"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			im, err := v.a.CreateImage(ctx, v.fx.StoppedMachine, "contract snapshot")
			if err != nil {
				t.Fatal(err)
			}
			if im.ID == 0 || im.Name != "contract snapshot" || im.Status != api.ImagePending || im.Source != api.ImageSourceSeat || im.Size != 30 ||
				len(im.Softwares) != 2 || im.Softwares[0].ID != 101 {
				t.Fatalf("%+v", im)
			}
			v.imageStatus(t, im.ID, api.ImagePending)
			if s := v.seat(t, v.fx.StoppedMachine); s.FriendlyStatus != api.SeatInstalling {
				t.Fatalf("computer while its image is made: %q", s.FriendlyStatus)
			}
			v.steps(1)
			v.imageStatus(t, im.ID, api.ImageBuilding)
			v.steps(1)
			f.snapshot = v.imageStatus(t, im.ID, api.ImageAvailable)
			if s := v.seat(t, v.fx.StoppedMachine); !s.Stopped() {
				t.Fatalf("computer after its image is made: %q", s.FriendlyStatus)
			}
		}},
		{"AssignImage", []string{"POST /images/{id}/assign"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			if err := v.a.AssignImage(ctx, f.installed.ID, []int64{v.fx.StoppedMachine}); err != nil {
				t.Fatal(err)
			}
			s := v.seat(t, v.fx.StoppedMachine)
			if s.AssignedImageID == nil || *s.AssignedImageID != f.installed.ID || s.AssignedImageName == nil || *s.AssignedImageName != "contract install" {
				t.Fatalf("assigned %v %v", s.AssignedImageID, s.AssignedImageName)
			}
		}},
		{"DeleteImage", []string{"DELETE /images/{id}"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			if err := v.a.DeleteImage(ctx, f.snapshot.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := v.a.GetImage(ctx, f.snapshot.ID); !api.IsNotFound(err) {
				t.Fatalf("deleted image: %v", err)
			}
			images, err := api.Collect(v.a.Images(ctx, ""))
			if err != nil || len(images) != 7 || slices.ContainsFunc(images, func(im api.Image) bool { return im.ID == f.snapshot.ID }) {
				t.Fatalf("%d images after the delete, %v", len(images), err)
			}
		}},
		{"CreateSeats", []string{"POST /seats"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			res, err := v.a.CreateSeats(ctx, api.CreateSeatsRequest{SeatPlanID: 1, Quantity: 2,
				Permissions: &api.Permissions{ScreenRecordingEnabled: api.Bool(true)}})
			if err != nil || res.Count != 2 || len(res.Seats) != 2 || len(res.Raw) == 0 {
				t.Fatalf("%+v %v", res, err)
			}
			for _, s := range res.Seats {
				if s.ID == 0 || s.Name != fmt.Sprintf("Computer #%d", s.ID) || s.FriendlyStatus != api.SeatCreating || s.DiskSize != 75 ||
					s.Permissions.ScreenRecordingEnabled == nil || !*s.Permissions.ScreenRecordingEnabled ||
					s.Permissions.PublicInternetAccess == nil || !*s.Permissions.PublicInternetAccess ||
					s.Machine == nil || s.Machine.ID != s.ID {
					t.Fatalf("created %+v", s)
				}
				if got := v.seat(t, s.ID); got.FriendlyStatus != api.SeatCreating {
					t.Fatalf("listed while creating: %q", got.FriendlyStatus)
				}
			}
			v.steps(1)
			for _, s := range res.Seats {
				if got := v.seat(t, s.ID); !got.Stopped() {
					t.Fatalf("listed after a step: %q", got.FriendlyStatus)
				}
			}
			f.seat = res.Seats[0].ID
		}},
		{"Seats", []string{"GET /seats"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			seats, err := api.Collect(v.a.Seats(ctx, ""))
			if err != nil || len(seats) != 6 {
				t.Fatalf("%d seats, %v", len(seats), err)
			}
			s := v.seat(t, v.fx.RunningMachine)
			m := s.Machine
			if s.Type != "seat" || s.Name != "Design Studio #1" || s.Status != "active" || !s.Running() || s.DiskSize != 150 || s.FileStorageSize != 50 ||
				s.AutoStopThreshold != 900 || s.NetworkCredit != 10_000_000_000 || s.RemainingUsage != 315 || s.DepositedUsage != 625 ||
				s.UsageSource != api.UsageSourceMachine || s.User == nil || s.User.Email != "bea@org-a.example" || s.User.Name != "Bea Schröder" ||
				m == nil || m.ID != s.ID || m.Status != "running" || m.Region != "dublin" || m.MachineType != "Volcano" ||
				!m.LastSessionStartAt.Equal(contractT0.Add(-2*time.Hour)) || len(s.Task) == 0 || !bytes.Contains(s.Raw, []byte(`"Render batch #7"`)) {
				t.Fatalf("%+v machine %+v", s, m)
			}
			found, err := api.Collect(v.a.Seats(ctx, "build box"))
			if err != nil || len(found) != 2 {
				t.Fatalf("q=build box: %d %v", len(found), err)
			}
		}},
		{"StartMachine", []string{"POST /machines/{id}/start"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			if err := v.a.StartMachine(ctx, f.seat, api.StartOptions{}); err != nil {
				t.Fatal(err)
			}
			if s := v.seat(t, f.seat); s.FriendlyStatus != api.SeatTurningOn {
				t.Fatalf("after start: %q", s.FriendlyStatus)
			}
			v.steps(1)
			if s := v.seat(t, f.seat); !s.Running() || s.Machine.Status != "running" || !s.Machine.LastSessionStartAt.Equal(v.clock.Now()) {
				t.Fatalf("a step after start: %q %+v", s.FriendlyStatus, s.Machine)
			}
		}},
		{"MachineTypes", []string{"GET /machines/{id}/available-machine-types"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			types, err := v.a.MachineTypes(ctx, f.seat)
			if err != nil || len(types) != 4 {
				t.Fatalf("%+v %v", types, err)
			}
			if mt := types[3]; mt.ID != 4 || mt.Type != "machine_type" || mt.Name != "highmem-16" || mt.FriendlyName != "Glacier" || len(mt.Raw) == 0 {
				t.Fatalf("%+v", mt)
			}
		}},
		{"SetMachineType", []string{"POST /machines/{id}/machine-type"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			if err := v.a.SetMachineType(ctx, f.seat, 4); err != nil {
				t.Fatal(err)
			}
			if s := v.seat(t, f.seat); s.Machine.MachineType != "Glacier" {
				t.Fatalf("machine type %q", s.Machine.MachineType)
			}
			m, err := v.a.MachineUsage(ctx, f.seat)
			u, uerr := v.a.Usage(ctx)
			if err != nil || uerr != nil || m.MachineType != "Glacier" || m.UsageSource != api.UsageSourceTeamBalance || m.UsageMinutes != u.UsageMinutes {
				t.Fatalf("%+v %v; %+v %v", m, err, u, uerr)
			}
		}},
		{"AccessLink", []string{"POST /machines/{id}/access"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			l, err := v.a.AccessLink(ctx, f.seat, 30)
			if err != nil {
				t.Fatal(err)
			}
			if l.ID == "" || l.UID != l.ID || l.Type != "machine_access" || !strings.HasPrefix(l.ConnectionLink, "https://") ||
				!strings.Contains(l.ConnectionLink, fmt.Sprint(f.seat)) || !l.ExpiresAt.Equal(v.clock.Now().Add(30*time.Minute)) {
				t.Fatalf("%+v", l)
			}
		}},
		{"ListContent", []string{"POST /machines/{id}/list-content"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			entries, err := v.a.ListContent(ctx, v.fx.RunningMachine, `C:\Users`)
			if err != nil {
				t.Fatal(err)
			}
			want := []api.ContentEntry{{Path: `C:\Users\Public`, Name: "Public", IsDirectory: true},
				{Path: `C:\Users\Default`, Name: "Default", IsDirectory: true}, {Path: `C:\Users\bea`, Name: "bea", IsDirectory: true}}
			if !slices.Equal(entries, want) {
				t.Fatalf("%+v", entries)
			}
			entries, err = v.a.ListContent(ctx, v.fx.RunningMachine, `C:\Users\bea\Desktop`)
			if err != nil || !slices.Contains(entries, api.ContentEntry{Path: `C:\Users\bea\Desktop\Project notes.txt`, Name: "Project notes.txt"}) {
				t.Fatalf("%+v %v", entries, err)
			}
		}},
		{"StopMachine", []string{"POST /machines/{id}/stop"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			if err := v.a.StopMachine(ctx, f.seat, true); err != nil {
				t.Fatal(err)
			}
			if s := v.seat(t, f.seat); s.FriendlyStatus != api.SeatGracefulStopping || s.Machine.Status != "stopping" {
				t.Fatalf("after a graceful stop: %q", s.FriendlyStatus)
			}
			v.steps(1)
			if s := v.seat(t, f.seat); !s.Stopped() || s.Machine.Status != "stopped" {
				t.Fatalf("a step after stop: %q", s.FriendlyStatus)
			}
		}},
		{"ResetMachine", []string{"POST /machines/{id}/reset"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			if err := v.a.ResetMachine(ctx, f.seat); err != nil {
				t.Fatal(err)
			}
			if s := v.seat(t, f.seat); !s.Stopped() {
				t.Fatalf("after reset: %q", s.FriendlyStatus)
			}
		}},
		{"UserActionLogs", []string{"GET /user-action-logs"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			start, end := contractT0.Add(-time.Hour), v.clock.Now().Add(time.Minute)
			// Each action the rows above performed on the computer they created.
			for _, action := range []string{"machine_created", "machine_started", "machine_type_changed",
				"machine_external_access_created", "machine_stopped", "machine_reset"} {
				logs, err := v.a.UserActionLogs(ctx, api.LogsRequest{Start: start, End: end, ActionType: action, MachineID: f.seat})
				if err != nil || logs.Count != 1 || len(logs.Logs) != 1 || !logs.StartDate.Equal(start) || !logs.EndDate.Equal(end) {
					t.Fatalf("%s: %+v %v", action, logs, err)
				}
				l := logs.Logs[0]
				if l.ID == 0 || l.ActionType != action || l.UserID != 1 || l.UserEmail != "alex@org-a.example" || l.MachineID == nil || *l.MachineID != f.seat ||
					l.CreatedAt.Before(contractT0) || l.CreatedAt.After(v.clock.Now()) || !bytes.Contains(l.Metadata, []byte(`"machine_name"`)) {
					t.Fatalf("%s: %+v", action, l)
				}
			}
			// Filtered by action type only: the seed's records of the last
			// 30 days and the start above, all of that type.
			logs, err := v.a.UserActionLogs(ctx, api.LogsRequest{Start: contractT0.Add(-40 * 24 * time.Hour), End: end, ActionType: "machine_started"})
			if err != nil || logs.Count < 2 || int(logs.Count) != len(logs.Logs) {
				t.Fatalf("%+v %v", logs, err)
			}
			ours := 0
			for _, l := range logs.Logs {
				if l.ActionType != "machine_started" || l.CreatedAt.Before(contractT0.Add(-30*24*time.Hour)) {
					t.Fatalf("%+v", l)
				}
				if l.MachineID != nil && *l.MachineID == f.seat {
					ours++
				}
			}
			if ours != 1 {
				t.Fatalf("%d starts of computer %d", ours, f.seat)
			}
			// A window ending now holds an action of this very second.
			v.clock.Advance(500 * time.Millisecond)
			if _, err := v.a.AccessLink(ctx, f.seat, 5); err != nil {
				t.Fatal(err)
			}
			logs, err = v.a.UserActionLogs(ctx, api.LogsRequest{Start: start, End: v.clock.Now(), ActionType: "machine_external_access_created", MachineID: f.seat})
			if err != nil || len(logs.Logs) != 2 || !logs.Logs[0].CreatedAt.Equal(v.clock.Now()) {
				t.Fatalf("window ending at %v: %+v %v", v.clock.Now(), logs, err)
			}
			v.clock.Advance(500 * time.Millisecond) // back to whole seconds
			// By user: the usage moved above.
			logs, err = v.a.UserActionLogs(ctx, api.LogsRequest{Start: start, End: end, ActionType: "usage_assigned", UserEmail: "alex@org-a.example"})
			if err != nil || len(logs.Logs) != 1 || !bytes.Contains(logs.Logs[0].Metadata, []byte(`"minutes":25`)) {
				t.Fatalf("%+v %v", logs, err)
			}
		}},
		{"SharedFiles", []string{"GET /files"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			root := v.a.SharedFiles(ctx, api.ListFilesRequest{})
			files, err := root.Collect()
			if err != nil || len(files) != 8 || root.Count() != 8 || root.Current() != nil {
				t.Fatalf("root: %q count %d current %+v, %v", names(files), root.Count(), root.Current(), err)
			}
			w := byName(t, files, "Welcome.txt")
			if w.Details.Type != "file" || w.Size != 2048 || w.Details.ContentType != "text/plain" || w.ObjectType != api.ObjectFile || w.Details.Status != api.FileStatusUploadCompleted ||
				w.Details.Region != "eu-west-1" || w.Details.Path == nil || *w.Details.Path != "/Welcome.txt" || w.Details.MachineID != nil || w.FileStorageSize != nil ||
				w.Details.User == nil || w.Details.User.Email != "alex@org-a.example" || w.LastModified.IsZero() || w.IsDir() {
				t.Fatalf("%+v", w)
			}
			if d := byName(t, files, "small-files"); d.ID != v.fx.SmallFilesDir || !d.IsDir() || d.ObjectType != api.ObjectDirectory || d.Size != 0 {
				t.Fatalf("%+v", d)
			}
			small := v.a.SharedFiles(ctx, api.ListFilesRequest{ParentID: v.fx.SmallFilesDir})
			files, err = small.Collect() // 75 pages of 4
			if err != nil || len(files) != 300 || small.Count() != 300 {
				t.Fatalf("%d files, count %d, %v", len(files), small.Count(), err)
			}
			if cur := small.Current(); cur == nil || cur.ID != v.fx.SmallFilesDir || cur.Name != "small-files" || cur.ObjectType != api.ObjectDirectory {
				t.Fatalf("current %+v", cur)
			}
			seen := map[int64]bool{}
			for _, fl := range files {
				if seen[fl.ID] || fl.ParentID != v.fx.SmallFilesDir || fl.ObjectType != api.ObjectFile || fl.Details.Path == nil || *fl.Details.Path != "/small-files/"+fl.Name {
					t.Fatalf("%+v", fl)
				}
				seen[fl.ID] = true
			}
			found, err := v.a.SharedFiles(ctx, api.ListFilesRequest{Query: "big-sample"}).Collect()
			if err != nil || len(found) != 1 || found[0].ID != v.fx.BigFile || found[0].Size != 64<<20 {
				t.Fatalf("q=big-sample: %+v %v", found, err)
			}
			// The root's own record carries the storage size and usage.
			rootID, err := v.e.RootID(emulator.OrgA, 0)
			if err != nil {
				t.Fatal(err)
			}
			rl := v.a.SharedFiles(ctx, api.ListFilesRequest{ParentID: rootID})
			if _, err := rl.Collect(); err != nil {
				t.Fatal(err)
			}
			if cur := rl.Current(); cur == nil || cur.ObjectType != api.ObjectRoot || cur.FileStorageSize == nil || *cur.FileStorageSize != 100<<30 ||
				cur.FileStorageUsage == nil || *cur.FileStorageUsage < 64<<20 {
				t.Fatalf("root record %+v", cur)
			}
		}},
		{"MachineFiles", []string{"GET /machines/{id}/files"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			l := v.a.MachineFiles(ctx, v.fx.RunningMachine, api.ListFilesRequest{})
			files, err := l.Collect()
			if err != nil || !slices.Equal(names(files), []string{"Desktop backup", "Task output - Render batch #7", "notes ü.txt"}) || l.Count() != 3 {
				t.Fatalf("%q %v", names(files), err)
			}
			for _, fl := range files {
				if fl.Details.MachineID == nil || *fl.Details.MachineID != v.fx.RunningMachine {
					t.Fatalf("%+v", fl)
				}
			}
			out := byName(t, files, "Task output - Render batch #7")
			in := v.a.MachineFiles(ctx, v.fx.RunningMachine, api.ListFilesRequest{ParentID: out.ID})
			frames, err := in.Collect()
			if err != nil || len(frames) != 7 || in.Count() != 7 || in.Current() == nil || in.Current().ID != out.ID {
				t.Fatalf("%q %v", names(frames), err)
			}
			task, err := v.a.MachineFiles(ctx, v.fx.RunningMachine, api.ListFilesRequest{TaskID: v.fx.Task}).Collect()
			if err != nil || !slices.Equal(names(task), []string{"Task output - Render batch #7", "Session Render batch #7"}) {
				t.Fatalf("task folders %q %v", names(task), err)
			}
		}},
		{"Recordings", []string{"GET /files/recordings"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			all, err := v.a.Recordings(ctx, api.ListFilesRequest{}).Collect()
			if err != nil || len(all) != 3 {
				t.Fatalf("%q %v", names(all), err)
			}
			mine, err := v.a.Recordings(ctx, api.ListFilesRequest{MachineID: v.fx.RunningMachine}).Collect()
			want := fmt.Sprintf("Design Studio #1 - %d", v.fx.RunningMachine)
			if err != nil || len(mine) != 1 || mine[0].Name != want || mine[0].Details.MachineID == nil || *mine[0].Details.MachineID != v.fx.RunningMachine {
				t.Fatalf("%+v %v", mine, err)
			}
			l := v.a.Recordings(ctx, api.ListFilesRequest{ParentID: mine[0].ID})
			sessions, err := l.Collect()
			if err != nil || len(sessions) != 3 || l.Count() != 3 || l.Current() == nil || l.Current().Name != want ||
				!slices.Contains(names(sessions), "Session Render batch #7") {
				t.Fatalf("%q %v", names(sessions), err)
			}
		}},
		{"CreateDirectory", []string{"POST /files"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			d, err := v.a.CreateDirectory(ctx, api.CreateDirectoryRequest{Name: "contract dir"})
			if err != nil || d.ID == 0 || d.UID == "" || d.Recovered {
				t.Fatalf("%+v %v", d, err)
			}
			f.dir = d.ID
			root := v.a.SharedFiles(ctx, api.ListFilesRequest{})
			files, err := root.Collect()
			if err != nil || root.Count() != 9 {
				t.Fatalf("%q %v", names(files), err)
			}
			if got := byName(t, files, "contract dir"); got.ID != d.ID || got.ObjectType != api.ObjectDirectory || got.Details.ContentType != "directory" {
				t.Fatalf("%+v", got)
			}
			// A creation whose answer is lost is recovered by name in its
			// parent, not taken for an older namesake deeper in the tree
			// (the service's name search also matches below the folder).
			for _, parent := range []int64{0, d.ID} {
				older, err := v.e.CreateDir(emulator.OrgA, 0, v.fx.EmptyDir, "contract sub")
				if err != nil {
					t.Fatal(err)
				}
				v.e.InjectDrop("POST /files", 1)
				got, err := v.a.CreateDirectory(ctx, api.CreateDirectoryRequest{ParentID: parent, Name: "contract sub"})
				if err != nil || !got.Recovered || got.ID == older {
					t.Fatalf("parent %d: %+v %v (the older namesake is %d)", parent, got, err, older)
				}
				files, err := v.a.SharedFiles(ctx, api.ListFilesRequest{ParentID: parent}).Collect()
				if err != nil || byName(t, files, "contract sub").ID != got.ID {
					t.Fatalf("parent %d: recovered %d, listed %+v %v", parent, got.ID, files, err)
				}
				if err := v.a.DeleteFile(ctx, got.ID); err != nil {
					t.Fatal(err)
				}
				if err := v.e.DeleteFile(emulator.OrgA, older); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"CreateFile", []string{"POST /files"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			f.rawData = testkit.RandBytes(6<<20+123, 11)
			res, err := v.a.CreateFile(ctx, api.CreateFileRequest{ParentID: f.dir, Name: "raw.bin", Size: int64(len(f.rawData)), ChunkSizeMB: 5})
			if err != nil || res.ID == 0 || res.UID == "" || res.ChunkSize != 5 || len(res.UploadURLs) != 2 ||
				res.UploadURLs[0].PartNumber != 1 || res.UploadURLs[1].PartNumber != 2 {
				t.Fatalf("%+v %v", res, err)
			}
			f.raw = res.ID
			// Not listed before completion.
			if files, err := v.a.SharedFiles(ctx, api.ListFilesRequest{ParentID: f.dir}).Collect(); err != nil || len(files) != 0 {
				t.Fatalf("%q %v", names(files), err)
			}
			f.rawURLs, f.rawUID = res.UploadURLs, res.UID
		}},
		{"CompleteFile", []string{objectPUT, "POST /files/{id}/complete"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			chunk := 5 << 20
			var parts []api.Part
			for i, u := range f.rawURLs {
				part := f.rawData[i*chunk : min((i+1)*chunk, len(f.rawData))]
				parts = append(parts, api.Part{PartNumber: u.PartNumber, ETag: putRaw(t, u.URL, part)})
			}
			slices.Reverse(parts) // CompleteFile sends them in part number order
			res, err := v.a.CompleteFile(ctx, f.raw, parts)
			if err != nil || res.UID != f.rawUID || res.DownloadURL == "" {
				t.Fatalf("%+v %v", res, err)
			}
			if got := readAll(t, v.a, res.DownloadURL); !bytes.Equal(got, f.rawData) {
				t.Fatalf("content: %d bytes", len(got))
			}
			files, err := v.a.SharedFiles(ctx, api.ListFilesRequest{ParentID: f.dir}).Collect()
			if err != nil || len(files) != 1 || files[0].ID != f.raw || files[0].Size != int64(len(f.rawData)) || files[0].Details.ContentType != "application/octet-stream" {
				t.Fatalf("%+v %v", files, err)
			}
		}},
		{"Upload", []string{"POST /files", objectPUT, "POST /files/{id}/complete"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			f.upData = bytes.Repeat([]byte("contract upload line\n"), 500)
			res, err := v.a.Upload(ctx, api.UploadRequest{ParentID: f.dir, Name: "up.txt", ContentType: "text/plain",
				Size: int64(len(f.upData)), Body: bytes.NewReader(f.upData)})
			if err != nil || res.ID == 0 || res.UID == "" || res.DownloadURL == "" || res.Size != int64(len(f.upData)) || res.Parts != 1 {
				t.Fatalf("%+v %v", res, err)
			}
			f.up = res.ID
			files, err := v.a.SharedFiles(ctx, api.ListFilesRequest{ParentID: f.dir}).Collect()
			if err != nil || !slices.Equal(names(files), []string{"raw.bin", "up.txt"}) || files[1].Details.ContentType != "text/plain" || files[1].Size != int64(len(f.upData)) {
				t.Fatalf("%+v %v", files, err)
			}
		}},
		{"FileDownloadURL", []string{"GET /files/{id}/download"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			l, err := v.a.FileDownloadURL(ctx, f.up)
			if err != nil || l.URL == "" || l.Name != "up.txt" || l.Size == nil || *l.Size != int64(len(f.upData)) || l.ContentType != "text/plain" ||
				l.DownloadID != 0 || !l.ExpiresAt.Equal(v.clock.Now().Add(time.Hour)) {
				t.Fatalf("%+v %v", l, err)
			}
			f.upURL = l.URL
			if got := readAll(t, v.a, l.URL); !bytes.Equal(got, f.upData) {
				t.Fatalf("content %q", got)
			}
		}},
		{"ReadRange", []string{objectGET}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			rc, err := v.a.ReadRange(ctx, f.upURL, 100, 50)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, f.upData[100:150]) {
				t.Fatalf("%q %v", got, err)
			}
			if _, err := v.a.ReadRange(ctx, f.upURL, int64(len(f.upData)), 1); !errors.Is(err, api.ErrRangeNotSatisfiable) {
				t.Fatalf("past the end: %v", err)
			}
		}},
		{"ProbeRange", []string{objectGET}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			p, err := v.a.ProbeRange(ctx, f.upURL, 100, 50)
			if err != nil || !p.Partial || p.Total != int64(len(f.upData)) || !bytes.Equal(p.Data, f.upData[100:150]) {
				t.Fatalf("%+v %v", p, err)
			}
			// Across the end: the bytes there are.
			p, err = v.a.ProbeRange(ctx, f.upURL, int64(len(f.upData))-10, 100)
			if err != nil || !p.Partial || !bytes.Equal(p.Data, f.upData[len(f.upData)-10:]) {
				t.Fatalf("across the end: %+v %v", p, err)
			}
			if _, err := v.a.ProbeRange(ctx, f.upURL, int64(len(f.upData)), 1); !errors.Is(err, api.ErrRangeNotSatisfiable) {
				t.Fatalf("past the end: %v", err)
			}
		}},
		{"ReadRangeAt", []string{objectGET}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			w := &memWriterAt{buf: make([]byte, len(f.upData))}
			n, err := v.a.ReadRangeAt(ctx, f.upURL, w, 2000, 3000)
			if err != nil || n != 3000 || !bytes.Equal(w.buf[2000:5000], f.upData[2000:5000]) {
				t.Fatalf("%d %v", n, err)
			}
			// Asking past the end gives the bytes there are, with io.EOF.
			n, err = v.a.ReadRangeAt(ctx, f.upURL, w, int64(len(f.upData))-10, 100)
			if !errors.Is(err, io.EOF) || n != 10 || !bytes.Equal(w.buf[len(f.upData)-10:], f.upData[len(f.upData)-10:]) {
				t.Fatalf("%d %v", n, err)
			}
		}},
		{"DownloadTo", []string{"POST /files/download", objectGET}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			w := &memWriterAt{buf: make([]byte, len(f.rawData))}
			n, err := v.a.DownloadTo(ctx, api.DownloadToRequest{FileID: f.raw, Dst: w, BlockSize: 1 << 20, Parallel: 3})
			if err != nil || n != int64(len(f.rawData)) || !bytes.Equal(w.buf, f.rawData) {
				t.Fatalf("%d %v", n, err)
			}
		}},
		{"FileURL", []string{"POST /files/download"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			l, err := v.a.FileURL(ctx, f.raw)
			if err != nil || l.URL == "" || l.Name != "raw.bin" || l.Size == nil || *l.Size != int64(len(f.rawData)) ||
				l.DownloadID != 0 || !l.ExpiresAt.Equal(v.clock.Now().Add(time.Hour)) {
				t.Fatalf("%+v %v", l, err)
			}
		}},
		{"CreateDownload", []string{"POST /files/download"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			single, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: []int64{f.up}})
			if err != nil || single.URL == "" || single.DownloadID != 0 || single.Name != "up.txt" || single.Size == nil || *single.Size != int64(len(f.upData)) {
				t.Fatalf("single: %+v %v", single, err)
			}
			bundle, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{DirectoryID: f.dir})
			total := int64(len(f.rawData) + len(f.upData))
			if err != nil || bundle.URL != "" || bundle.DownloadID == 0 || bundle.Name != "contract dir.zip" || bundle.ContentType != "application/zip" ||
				bundle.Size == nil || *bundle.Size != total {
				t.Fatalf("bundle: %+v %v", bundle, err)
			}
			f.job = bundle.DownloadID
		}},
		{"DownloadStatus", []string{"GET /files/downloads/{id}"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			expires := v.clock.Now().Add(24 * time.Hour)
			total := int64(len(f.rawData) + len(f.upData))
			for i, want := range []string{api.DownloadPending, api.DownloadProcessing, api.DownloadUploaded} {
				j, err := v.a.DownloadStatus(ctx, f.job, true)
				if err != nil || j.ID != f.job || j.Type != "download" || j.Status != want || !j.ExpiresAt.Equal(expires) || j.Size == nil || *j.Size != total ||
					(j.DownloadURL != "") != (want == api.DownloadUploaded) || j.Done() != (want == api.DownloadUploaded) {
					t.Fatalf("step %d: %+v %v", i, j, err)
				}
				if want == api.DownloadUploaded {
					entries := testkit.Unzip(t, readAll(t, v.a, j.DownloadURL))
					if len(entries) != 2 || !bytes.Equal(entries["raw.bin"], f.rawData) || !bytes.Equal(entries["up.txt"], f.upData) {
						t.Fatalf("ZIP entries %d", len(entries))
					}
					if j, err := v.a.DownloadStatus(ctx, f.job, false); err != nil || j.Status != api.DownloadUploaded || j.DownloadURL != "" {
						t.Fatalf("without a URL: %+v %v", j, err)
					}
				}
				v.steps(1)
			}
		}},
		{"AbortDownload", []string{"DELETE /files/downloads/{id}"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			l, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: []int64{f.raw, f.up}})
			if err != nil || l.DownloadID == 0 || l.Name != fmt.Sprintf("files-%d.zip", l.DownloadID) {
				t.Fatalf("%+v %v", l, err)
			}
			if err := v.a.AbortDownload(ctx, l.DownloadID); err != nil {
				t.Fatal(err)
			}
			v.steps(2) // a cancelled job is never built
			if j, err := v.a.DownloadStatus(ctx, l.DownloadID, true); err != nil || j.Status != api.DownloadCancelled || j.DownloadURL != "" || !j.Done() {
				t.Fatalf("%+v %v", j, err)
			}
			if err := v.a.AbortDownload(ctx, l.DownloadID); !api.IsCode(err, api.CodeDownloadNotAbortable) {
				t.Fatalf("second abort: %v", err)
			}
		}},
		{"Bundle", []string{"POST /files/download", "GET /files/downloads/{id}", objectGET}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			// The fake clock moves a step every few milliseconds while Bundle polls.
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				tick := time.NewTicker(3 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						v.steps(1)
					}
				}
			})
			rc, job, err := v.a.Bundle(ctx, api.BundleRequest{TaskID: v.fx.Task, PollInterval: 5 * time.Millisecond, MaxPollInterval: 10 * time.Millisecond})
			close(done)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			zipped, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || job.ID == 0 || job.Status != api.DownloadUploaded || job.Size == nil {
				t.Fatalf("%+v %v", job, err)
			}
			entries := testkit.Unzip(t, zipped)
			var files []string
			var size int64
			for name, data := range entries {
				if data != nil {
					files = append(files, name)
					size += int64(len(data))
				}
			}
			sort.Strings(files)
			if len(files) != 8 || files[0] != "Session Render batch #7/recording.webm" || !strings.HasPrefix(files[1], "Task output - Render batch #7/frame_") ||
				entries["Task output - Render batch #7/"] != nil || size != *job.Size {
				t.Fatalf("%q, %d bytes of %d", files, size, *job.Size)
			}
			// Cancelled while a status poll is under way (every request
			// takes 100ms here), Bundle aborts the job and returns it.
			slow := startContractWith(t, emulator.Options{Seed: emulator.SeedEmpty, Latency: 100 * time.Millisecond}, 0)
			dir := slow.sharedDir(t, emulator.OrgA, "slow")
			slow.sharedFile(t, emulator.OrgA, dir, "a.txt", "a")
			cctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
			defer cancel()
			_, job, err = slow.a.Bundle(cctx, api.BundleRequest{DirectoryID: dir})
			if !errors.Is(err, context.DeadlineExceeded) || job == nil || job.ID == 0 {
				t.Fatalf("cancelled during a poll: %+v %v", job, err)
			}
			if j, err := slow.a.DownloadStatus(ctx, job.ID, false); err != nil || j.Status != api.DownloadCancelled {
				t.Fatalf("after the cancelled Bundle: %+v %v", j, err)
			}
		}},
		{"DeleteFile", []string{"DELETE /files/{id}"}, func(t *testing.T, v *contractEnv, f *contractFlow) {
			if err := v.a.DeleteFile(ctx, f.raw); err != nil {
				t.Fatal(err)
			}
			files, err := v.a.SharedFiles(ctx, api.ListFilesRequest{ParentID: f.dir}).Collect()
			if err != nil || !slices.Equal(names(files), []string{"up.txt"}) {
				t.Fatalf("%q %v", names(files), err)
			}
			if _, err := v.a.FileDownloadURL(ctx, f.raw); !api.IsNotFound(err) {
				t.Fatalf("deleted file: %v", err)
			}
			if err := v.a.DeleteFile(ctx, f.dir); err != nil {
				t.Fatal(err)
			}
			if _, err := v.a.FileDownloadURL(ctx, f.up); !api.IsNotFound(err) {
				t.Fatalf("file of a deleted folder: %v", err)
			}
			root := v.a.SharedFiles(ctx, api.ListFilesRequest{})
			if _, err := root.Collect(); err != nil || root.Count() != 8 {
				t.Fatalf("count %d, %v", root.Count(), err)
			}
		}},
	}
}

// errorHelpers are the classifying helpers of package api; each row of
// TestEveryErrorCode names the one that must hold (all others must not).
var errorHelpers = map[string]func(error) bool{
	"IsNotFound":     api.IsNotFound,
	"IsExists":       api.IsExists,
	"IsStorageFull":  api.IsStorageFull,
	"IsSizeMismatch": api.IsSizeMismatch,
	"IsPermission":   api.IsPermission,
	"IsUnauthorized": api.IsUnauthorized,
}

// errorRow provokes one error code through the client.
type errorRow struct {
	name   string
	code   int
	helper string // the key of errorHelpers that must hold; "" for none
	// shared: the row runs on one demo emulator shared with the other
	// shared rows, so it may only send requests that are refused (a
	// refusal changes nothing). Other rows get an emulator of their own
	// with the empty seed.
	shared  bool
	provoke func(t *testing.T, v *contractEnv) error
}

// The documented codes (organization-api.md, "Errors") and 401.
var documentedCodes = []int{400, 401, 403, 404, 450, 451, 452, 480, 482, 4208, 4209, 4210, 4211, 4212,
	4213, 4214, 4510, 4709, 4710, 4716, 4717, 4718, 4719, 4720, 4722}

// Setup helpers of the error rows.

// sharedFile makes a completed file of an organization's shared storage
// (server side) and returns its id.
func (v *contractEnv) sharedFile(t *testing.T, org string, parentID int64, name, content string) int64 {
	t.Helper()
	id, err := v.e.CreateFile(org, 0, parentID, name, strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// sharedDir makes a folder of an organization's shared storage (server side).
func (v *contractEnv) sharedDir(t *testing.T, org string, name string) int64 {
	t.Helper()
	id, err := v.e.CreateDir(org, 0, 0, name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// availableImage installs an image and lets it become available.
func (v *contractEnv) availableImage(t *testing.T, req api.InstallImageRequest) *api.Image {
	t.Helper()
	im, err := v.a.InstallImage(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	v.steps(2)
	return v.imageStatus(t, im.ID, api.ImageAvailable)
}

// uploadParts creates a file of declared bytes and PUTs data as its parts
// (chunkMB per part) to the presigned URLs with a plain HTTP client.
func (v *contractEnv) uploadParts(t *testing.T, req api.CreateFileRequest, data []byte) (*api.CreateFileResult, []api.Part) {
	t.Helper()
	res, err := v.a.CreateFile(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	chunk := int(res.ChunkSize) << 20
	var parts []api.Part
	for i, u := range res.UploadURLs {
		lo := min(i*chunk, len(data))
		hi := min(lo+chunk, len(data))
		if i == len(res.UploadURLs)-1 {
			hi = len(data)
		}
		parts = append(parts, api.Part{PartNumber: u.PartNumber, ETag: putRaw(t, u.URL, data[lo:hi])})
	}
	return res, parts
}

// listed reports whether a name is listed in a shared folder.
func (v *contractEnv) listed(t *testing.T, parentID int64, name string) bool {
	t.Helper()
	files, err := v.a.SharedFiles(context.Background(), api.ListFilesRequest{ParentID: parentID}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(names(files), name)
}

func errorRows() []errorRow {
	ctx := context.Background()
	return []errorRow{
		// 400
		{"400 list-content of a stopped computer", 400, "", false, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.ListContent(ctx, v.fx.StoppedMachine, `C:\Users`)
			return err
		}},
		{"400 complete with a part not uploaded", 400, "", false, func(t *testing.T, v *contractEnv) error {
			res, err := v.a.CreateFile(ctx, api.CreateFileRequest{Name: "never.bin", Size: 10})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.a.CompleteFile(ctx, res.ID, []api.Part{{PartNumber: 1, ETag: `"0123456789abcdef0123456789abcdef"`}})
			return err
		}},
		{"400 parent folder deleted", 400, "", false, func(t *testing.T, v *contractEnv) error {
			dir := v.sharedDir(t, emulator.OrgA, "gone")
			if err := v.e.DeleteFile(emulator.OrgA, dir); err != nil {
				t.Fatal(err)
			}
			_, err := v.a.CreateFile(ctx, api.CreateFileRequest{ParentID: dir, Name: "orphan.txt", Size: 3})
			return err
		}},
		{"400 logs ending before they start", 400, "", false, func(t *testing.T, v *contractEnv) error {
			now := v.clock.Now()
			_, err := v.a.UserActionLogs(ctx, api.LogsRequest{Start: now, End: now.Add(-time.Hour)})
			return err
		}},
		// 401
		{"401 wrong secret", 401, "IsUnauthorized", false, func(t *testing.T, v *contractEnv) error {
			creds := v.creds[0]
			creds.Secret = "not-the-secret-0123456789abcdef"
			_, err := v.client(t, creds, 0).Usage(ctx)
			if err != nil && strings.Contains(fmt.Sprintf("%v %+v", err, err), creds.Secret) {
				t.Errorf("error shows the wrong secret: %v", err)
			}
			return err
		}},
		// 403
		{"403 recordings list refused", 403, "IsPermission", false, func(t *testing.T, v *contractEnv) error {
			v.e.InjectError("GET /files/recordings", 403, 1)
			_, err := v.a.Recordings(ctx, api.ListFilesRequest{}).Collect()
			return err
		}},
		// 404
		{"404 unknown image", 404, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.GetImage(ctx, 999_999)
			return err
		}},
		{"404 computer of another organization", 404, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.MachineUsage(ctx, v.fxB.StoppedMachine)
			return err
		}},
		{"404 file of another organization", 404, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.FileDownloadURL(ctx, v.sharedFile(t, emulator.OrgB, 0, "theirs.txt", "not yours"))
			return err
		}},
		{"404 unknown base image", 404, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.InstallImage(ctx, api.InstallImageRequest{BaseImageID: 999})
			return err
		}},
		{"404 expired download job", 404, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			dir := v.sharedDir(t, emulator.OrgA, "old")
			v.sharedFile(t, emulator.OrgA, dir, "a.txt", "a")
			l, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{DirectoryID: dir})
			if err != nil {
				t.Fatal(err)
			}
			v.clock.Advance(24*time.Hour + time.Second) // temporary files live 24 hours
			_, err = v.a.DownloadStatus(ctx, l.DownloadID, true)
			return err
		}},
		{"404 task of another computer", 404, "IsNotFound", true, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.MachineFiles(ctx, v.fx.StoppedMachine, api.ListFilesRequest{TaskID: v.fx.Task}).Collect()
			return err
		}},
		// 450
		{"450 quota at upload creation", 450, "IsStorageFull", false, func(t *testing.T, v *contractEnv) error {
			if err := v.e.SetStorageQuota(emulator.OrgA, v.fx.StoppedMachine, 1000); err != nil {
				t.Fatal(err)
			}
			if _, err := v.a.CreateFile(ctx, api.CreateFileRequest{MachineID: v.fx.StoppedMachine, Name: "fits.bin", Size: 1000}); err != nil {
				t.Fatalf("a file of exactly the quota: %v", err)
			}
			_, err := v.a.CreateFile(ctx, api.CreateFileRequest{MachineID: v.fx.StoppedMachine, Name: "big.bin", Size: 1001})
			return err
		}},
		{"450 quota exceeded after upload", 450, "IsStorageFull", false, func(t *testing.T, v *contractEnv) error {
			if err := v.e.SetStorageQuota(emulator.OrgA, 0, 2000); err != nil {
				t.Fatal(err)
			}
			data := testkit.RandBytes(1200, 5)
			res, parts := v.uploadParts(t, api.CreateFileRequest{Name: "late.bin", Size: int64(len(data))}, data)
			// Meanwhile the storage fills up (quotas are not enforced server side).
			v.sharedFile(t, emulator.OrgA, 0, "filler.txt", strings.Repeat("x", 1000))
			_, err := v.a.CompleteFile(ctx, res.ID, parts)
			if v.listed(t, 0, "late.bin") {
				t.Error("the upload that exceeded the quota is listed")
			}
			return err
		}},
		{"450 delete the root folder", 450, "IsStorageFull", false, func(t *testing.T, v *contractEnv) error {
			root, err := v.e.RootID(emulator.OrgA, 0)
			if err != nil {
				t.Fatal(err)
			}
			return v.a.DeleteFile(ctx, root)
		}},
		// 451
		{"451 file exists", 451, "IsExists", false, func(t *testing.T, v *contractEnv) error {
			v.sharedFile(t, emulator.OrgA, 0, "exists.txt", "hello")
			_, err := v.a.CreateFile(ctx, api.CreateFileRequest{Name: "exists.txt", Size: 3})
			return err
		}},
		{"451 directory exists", 451, "IsExists", false, func(t *testing.T, v *contractEnv) error {
			v.sharedDir(t, emulator.OrgA, "taken")
			_, err := v.a.CreateDirectory(ctx, api.CreateDirectoryRequest{Name: "taken"})
			return err
		}},
		// 452
		{"452 parts shorter than the declared size", 452, "IsSizeMismatch", false, func(t *testing.T, v *contractEnv) error {
			data := testkit.RandBytes(6<<20, 6)
			res, parts := v.uploadParts(t, api.CreateFileRequest{Name: "short.bin", Size: int64(len(data)) + 1, ChunkSizeMB: 5}, data)
			if len(parts) != 2 {
				t.Fatalf("%d parts", len(parts))
			}
			_, err := v.a.CompleteFile(ctx, res.ID, parts)
			if v.listed(t, 0, "short.bin") {
				t.Error("the mismatched upload is listed")
			}
			// The file was deleted: completing again finds nothing.
			if _, err := v.a.CompleteFile(ctx, res.ID, parts); !api.IsNotFound(err) {
				t.Errorf("completing the deleted upload again: %v", err)
			}
			return err
		}},
		// 480
		{"480 assign more than the balance", 480, "", false, func(t *testing.T, v *contractEnv) error {
			u, err := v.a.Usage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.a.AssignUsage(ctx, v.fx.StoppedMachine, u.UsageMinutes+1)
			if after, uerr := v.a.Usage(ctx); uerr != nil || after.UsageMinutes != u.UsageMinutes {
				t.Errorf("balance %+v after a refused assign, was %d", after, u.UsageMinutes)
			}
			return err
		}},
		{"480 retrieve more than the computer has", 480, "", false, func(t *testing.T, v *contractEnv) error {
			if _, err := v.a.AssignUsage(ctx, v.fx.StoppedMachine, 10); err != nil {
				t.Fatal(err)
			}
			_, err := v.a.RetrieveUsage(ctx, v.fx.StoppedMachine, 11)
			return err
		}},
		// 482
		{"482 assign failed", 482, "", false, func(t *testing.T, v *contractEnv) error {
			v.e.InjectError("POST /usage/assign", 482, 1)
			_, err := v.a.AssignUsage(ctx, v.fx.StoppedMachine, 5)
			return err
		}},
		{"482 retrieve failed", 482, "", false, func(t *testing.T, v *contractEnv) error {
			v.e.InjectError("POST /usage/retrieve", 482, 1)
			_, err := v.a.RetrieveUsage(ctx, v.fx.StoppedMachine, 5)
			return err
		}},
		// Images and computers, on the demo's fixtures.
		{"4208 image of a computer never started", 4208, "", true, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.CreateImage(ctx, v.fx.NoImageMachine, "")
			return err
		}},
		{"4209 image of a running computer", 4209, "", true, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.CreateImage(ctx, v.fx.RunningMachine, "")
			return err
		}},
		{"4210 assign a pending image", 4210, "", true, func(t *testing.T, v *contractEnv) error {
			return v.a.AssignImage(ctx, v.fx.PendingImage, []int64{v.fx.StoppedMachine})
		}},
		{"4210 assign a building image", 4210, "", true, func(t *testing.T, v *contractEnv) error {
			return v.a.AssignImage(ctx, v.fx.BuildingImage, []int64{v.fx.StoppedMachine})
		}},
		{"4210 assign a failed image", 4210, "", true, func(t *testing.T, v *contractEnv) error {
			return v.a.AssignImage(ctx, v.fx.FailedImage, []int64{v.fx.StoppedMachine})
		}},
		{"4211 assign to a computer of another organization", 4211, "", true, func(t *testing.T, v *contractEnv) error {
			return v.a.AssignImage(ctx, v.fx.AvailableImage, []int64{v.fxB.StoppedMachine})
		}},
		{"4211 assign to no computer", 4211, "", true, func(t *testing.T, v *contractEnv) error {
			return v.a.AssignImage(ctx, v.fx.AvailableImage, nil)
		}},
		{"4212 image of a computer whose image is being created", 4212, "", true, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.CreateImage(ctx, v.fx.InstallingMachine, "")
			return err
		}},
		{"4213 delete a building image", 4213, "", true, func(t *testing.T, v *contractEnv) error {
			return v.a.DeleteImage(ctx, v.fx.BuildingImage)
		}},
		{"4214 assign to a computer with a pending image", 4214, "", true, func(t *testing.T, v *contractEnv) error {
			return v.a.AssignImage(ctx, v.fx.AvailableImage, []int64{v.fx.StoppedMachine, v.fx.InstallingMachine})
		}},
		{"4510 image larger than the disk", 4510, "", true, func(t *testing.T, v *contractEnv) error {
			return v.a.AssignImage(ctx, v.fx.LargeImage, []int64{v.fx.StoppedMachine})
		}},
		// The same states reached through the API on the empty seed.
		{"4209 image of a computer turning on", 4209, "", false, func(t *testing.T, v *contractEnv) error {
			if err := v.a.StartMachine(ctx, v.fx.StoppedMachine, api.StartOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := v.a.CreateImage(ctx, v.fx.StoppedMachine, "")
			return err
		}},
		{"4212 and 4214 while an image is made", 4214, "", false, func(t *testing.T, v *contractEnv) error {
			im := v.availableImage(t, api.InstallImageRequest{})
			if _, err := v.a.CreateImage(ctx, v.fx.StoppedMachine, "first"); err != nil {
				t.Fatal(err)
			}
			if _, err := v.a.CreateImage(ctx, v.fx.StoppedMachine, "second"); !api.IsCode(err, 4212) {
				t.Errorf("a second image of the computer: %v", err)
			}
			return v.a.AssignImage(ctx, im.ID, []int64{v.fx.StoppedMachine})
		}},
		{"4213 delete an installed image while it builds", 4213, "", false, func(t *testing.T, v *contractEnv) error {
			im, err := v.a.InstallImage(ctx, api.InstallImageRequest{Name: "slow"})
			if err != nil {
				t.Fatal(err)
			}
			v.steps(1)
			v.imageStatus(t, im.ID, api.ImageBuilding)
			return v.a.DeleteImage(ctx, im.ID)
		}},
		{"4510 installed image larger than the disk", 4510, "", false, func(t *testing.T, v *contractEnv) error {
			// 24 GB + 62 GB, plus 5%: more than the 75 GB disk of the seed's computer.
			im := v.availableImage(t, api.InstallImageRequest{SoftwareIDs: []int64{108}})
			if im.Size <= 75 {
				t.Fatalf("image of %v GB", im.Size)
			}
			return v.a.AssignImage(ctx, im.ID, []int64{v.fx.StoppedMachine})
		}},
		// 4709
		{"4709 machine without a seat", 4709, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.MachineUsage(ctx, v.fx.SeatlessMachine)
			return err
		}},
		// 4710
		{"4710 several files without multiple_file_download", 4710, "IsPermission", false, func(t *testing.T, v *contractEnv) error {
			f1 := v.sharedFile(t, emulator.OrgB, 0, "one.txt", "1")
			f2 := v.sharedFile(t, emulator.OrgB, 0, "two.txt", "2")
			if l, err := v.b.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: []int64{f1}}); err != nil || l.URL == "" {
				t.Fatalf("a single file needs no feature: %+v %v", l, err)
			}
			_, err := v.b.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: []int64{f1, f2}})
			return err
		}},
		// Downloads
		{"4716 abort an uploaded download", 4716, "", false, func(t *testing.T, v *contractEnv) error {
			dir := v.sharedDir(t, emulator.OrgA, "bundle")
			v.sharedFile(t, emulator.OrgA, dir, "a.txt", "a")
			l, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{DirectoryID: dir})
			if err != nil {
				t.Fatal(err)
			}
			v.steps(2)
			if j, err := v.a.DownloadStatus(ctx, l.DownloadID, false); err != nil || j.Status != api.DownloadUploaded {
				t.Fatalf("%+v %v", j, err)
			}
			return v.a.AbortDownload(ctx, l.DownloadID)
		}},
		{"4717 directory deleted", 4717, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			dir := v.sharedDir(t, emulator.OrgA, "gone")
			v.sharedFile(t, emulator.OrgA, dir, "a.txt", "a")
			if err := v.e.DeleteFile(emulator.OrgA, dir); err != nil {
				t.Fatal(err)
			}
			_, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{DirectoryID: dir})
			return err
		}},
		{"4717 single file not found", 4717, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.FileURL(ctx, 999_999)
			return err
		}},
		{"4717 single file still uploading", 4717, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			res, err := v.a.CreateFile(ctx, api.CreateFileRequest{Name: "pending.bin", Size: 10})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.a.FileURL(ctx, res.ID)
			return err
		}},
		{"4718 one of several files deleted", 4718, "IsNotFound", false, func(t *testing.T, v *contractEnv) error {
			f1 := v.sharedFile(t, emulator.OrgA, 0, "kept.txt", "k")
			f2 := v.sharedFile(t, emulator.OrgA, 0, "deleted.txt", "d")
			if err := v.a.DeleteFile(ctx, f2); err != nil {
				t.Fatal(err)
			}
			_, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: []int64{f1, f2}})
			return err
		}},
		{"4719 empty directory", 4719, "", false, func(t *testing.T, v *contractEnv) error {
			d, err := v.a.CreateDirectory(ctx, api.CreateDirectoryRequest{Name: "empty"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.a.CreateDirectory(ctx, api.CreateDirectoryRequest{ParentID: d.ID, Name: "empty too"}); err != nil {
				t.Fatal(err)
			}
			// An upload not completed is no file to bundle.
			if _, err := v.a.CreateFile(ctx, api.CreateFileRequest{ParentID: d.ID, Name: "pending.bin", Size: 10}); err != nil {
				t.Fatal(err)
			}
			_, _, err = v.a.Bundle(ctx, api.BundleRequest{DirectoryID: d.ID})
			return err
		}},
		{"4720 URL generation failed", 4720, "", false, func(t *testing.T, v *contractEnv) error {
			id := v.sharedFile(t, emulator.OrgA, 0, "a.txt", "a")
			v.e.InjectError("POST /files/download", 4720, 1)
			_, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{FileIDs: []int64{id}})
			return err
		}},
		{"4722 no selector", 4722, "", false, func(t *testing.T, v *contractEnv) error {
			_, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{})
			return err
		}},
		{"4722 two selectors", 4722, "", false, func(t *testing.T, v *contractEnv) error {
			dir := v.sharedDir(t, emulator.OrgA, "d")
			id := v.sharedFile(t, emulator.OrgA, dir, "a.txt", "a")
			_, err := v.a.CreateDownload(ctx, api.CreateDownloadRequest{DirectoryID: dir, FileIDs: []int64{id}})
			return err
		}},
	}
}

func TestEveryErrorCode(t *testing.T) {
	rows := errorRows()
	codes := map[int]bool{}
	for _, r := range rows {
		codes[r.code] = true
	}
	for _, c := range documentedCodes {
		if !codes[c] {
			t.Errorf("no row provokes %d", c)
		}
	}
	shared := startContract(t, emulator.SeedDemo, 0)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			v := shared
			if !r.shared {
				v = startContract(t, emulator.SeedEmpty, 0)
			}
			err := r.provoke(t, v)
			var ae *api.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v, want an *api.Error", err, err)
			}
			wantStatus := r.code // the emulator's choice: the code, or 400 for 4-digit codes
			if r.code >= 1000 {
				wantStatus = http.StatusBadRequest
			}
			if ae.Code != r.code || ae.HTTPStatus != wantStatus || ae.Message == "" || ae.Op == "" || ae.Err != nil {
				t.Fatalf("%+v (%v), want client_code %d", ae, err, r.code)
			}
			if !api.IsCode(err, r.code) || api.Temporary(err) {
				t.Errorf("IsCode %v, Temporary %v", api.IsCode(err, r.code), api.Temporary(err))
			}
			for name, is := range errorHelpers {
				if is(err) != (name == r.helper) {
					t.Errorf("%s(%v) = %v", name, err, is(err))
				}
			}
			text := fmt.Sprintf("%v|%+v|%s", err, err, err.Error())
			if !strings.Contains(text, fmt.Sprint(r.code)) {
				t.Errorf("error text lacks the code: %s", text)
			}
			for _, c := range v.creds {
				if strings.Contains(text, c.Secret) {
					t.Errorf("error text shows a secret: %s", text)
				}
			}
			if strings.Contains(text, "HMAC ") {
				t.Errorf("error text shows an Authorization header: %s", text)
			}
		})
	}
}
