package emulator

// Seeds. Both seeds create org-a (feature multiple_file_download) and org-b
// (without it), keys "org-a-key" and "org-b-key", secrets random per seeding
// (kept with the state when it is kept: persist.go).
//
// Seeded objects in a transitional state (a computer installing, an image
// pending or building) hold that state: they have no scheduled transition, so
// the error codes that need them stay reproducible whatever the clock does.
// States entered through the API advance one StepDelay per step.
//
// "empty": empty shared storage and recordings, one stopped computer each
// (off, already run once: an image can be made from it), a machine without a
// seat (4709), balances of 6000 (org-a) and 600 (org-b) minutes.
//
// "demo": org-a has four computers — "Design Studio #1" (ready, with a task),
// "Café Render" (off), "Build Box" (off, never started: 4208) and a second
// "Build Box" (installing, an image being created from it: 4212, 4214) — a
// machine without a seat, images in every status (available ×3, one of them
// 200 GB for 4510; pending; building; failed), a shared tree of about 380
// files (one of 64 MiB, "small-files/" with 300 small files, names with
// spaces, unicode and '#'), files in each computer's storage, recordings per
// computer, and five weeks of action logs. org-b is smaller: two computers,
// one image, a few files. Every file holds deterministic content of its type
// (package content): text that reads as text, JSON that parses, pictures that
// decode, PDFs and Office documents that open.

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/orgfs/orgfs/internal/emulator/content"
)

// Fixtures names the seeded objects that put an organization in the states
// the error codes need. Zero ids are absent from the seed.
type Fixtures struct {
	Org               string
	RunningMachine    int64 // ready: 4209 for POST /images; list-content works
	StoppedMachine    int64 // off, run before: POST /images and reset work; assign target
	NoImageMachine    int64 // off, never started: 4208
	InstallingMachine int64 // an image being created from it: 4212 (POST /images), 4214 (assign)
	SeatlessMachine   int64 // a machine without a seat: 4709 (GET /usage/machines/{id})
	AvailableImage    int64 // available, fits every disk
	LargeImage        int64 // available, 200 GB: 4510 on any computer of the seed
	PendingImage      int64 // pending (the InstallingMachine's image): 4210
	BuildingImage     int64 // building: 4213 (delete), 4210 (assign)
	FailedImage       int64 // failed: 4210
	Task              int64 // a task of RunningMachine with an output folder and a recording folder
	BigFile           int64 // the 64 MiB file of the shared storage
	SmallFilesDir     int64 // the shared folder of 300 small files
	EmptyDir          int64 // an empty shared folder: 4719
}

// Fixtures returns the seeded objects of an organization ("org-a", "org-b").
func (e *Emulator) Fixtures(org string) Fixtures {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fixtures[org]
}

// Credentials of an organization, for in-process use without Listen.
// endpoint is left empty.
func (e *Emulator) Credentials(org string) (OrgCredentials, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	o, err := e.orgByName(org)
	if err != nil {
		return OrgCredentials{}, err
	}
	return OrgCredentials{Name: o.name, Key: o.key, Secret: o.secret}, nil
}

// seedUser makes a user with ids derived from the e-mail address.
func seedUser(intID int64, email, name string) *user {
	h := sha256Hex(email)
	uuid := h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
	return &user{intID: intID, uuid: uuid, email: email, name: name}
}

// newOrg registers an organization with its storage roots. Called with mu held.
func (e *Emulator) newOrg(name string, features []string, users []*user, region, storage string, minutes int64, typeIDs []int64, sharedQuota int64, now time.Time) *org {
	o := &org{
		name: name, key: name + "-key", secret: randomHex(32), features: map[string]bool{},
		admin: users[0], users: users, region: region, storage: storage,
		usageMinutes: minutes, machineType: e.catalog.machineType(typeIDs[0]), typeIDs: typeIDs,
	}
	for _, f := range features {
		o.features[f] = true
	}
	o.shared = &area{kind: areaShared, org: o, quota: sharedQuota}
	o.shared.root = e.addNode(o.shared, nil, "root", kindRoot, nil, now)
	o.recordings = &area{kind: areaRecordings, org: o, quota: 1 << 50}
	o.recordings.root = e.addNode(o.recordings, nil, "root", kindRoot, nil, now)
	e.orgs = append(e.orgs, o)
	e.byKey[o.key] = o
	return o
}

func (e *Emulator) seed(which string) error {
	now := e.now()
	e.mu.Lock()
	a := e.newOrg(OrgA, []string{featureMultiDownload}, []*user{
		seedUser(1, "alex@org-a.example", "Alex Morgan"),
		seedUser(2, "bea@org-a.example", "Bea Schröder"),
		seedUser(3, "chen@org-a.example", "Chen Li"),
	}, "dublin", "eu-west-1", 6000, []int64{1, 2, 3, 4}, 100*gib, now)
	b := e.newOrg(OrgB, nil, []*user{
		seedUser(11, "dana@org-b.example", "Dana Okafor"),
		seedUser(12, "eli@org-b.example", "Eli Novak"),
	}, "frankfurt", "eu-central-1", 600, []int64{1, 2}, 10*gib, now)
	e.mu.Unlock()

	if which == SeedEmpty || which == SeedBench {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, o := range []*org{a, b} {
			s := e.addSeat(o, "Workstation", e.catalog.plans[0], now.Add(-72*time.Hour))
			s.hasDiskImage = true
			s.lastSession = now.Add(-48 * time.Hour)
			seatless := e.newID()
			e.seatless[seatless] = o
			e.fixtures[o.name] = Fixtures{Org: o.name, StoppedMachine: s.id, SeatlessMachine: seatless}
		}
		return nil
	}
	if err := e.seedDemo(a, now, 1, e.seedDemoA); err != nil {
		return err
	}
	if err := e.seedDemo(b, now, 3, e.seedDemoB); err != nil {
		return err
	}
	e.mu.Lock()
	sort.SliceStable(e.logs, func(i, j int) bool { return e.logs[i].created.Before(e.logs[j].created) })
	e.mu.Unlock()
	return nil
}

// seeder writes seed content deterministically.
type seeder struct {
	e      *Emulator
	now    time.Time
	rng    *rand.Rand
	writes *errgroup.Group // file contents being written
}

func newSeeder(e *Emulator, now time.Time, seed uint64) *seeder {
	g := &errgroup.Group{}
	g.SetLimit(8)
	return &seeder{e: e, now: now, rng: rand.New(rand.NewPCG(seed, seed+1)), writes: g}
}

func (sd *seeder) ago(d time.Duration) time.Time { return sd.now.Add(-d) }

// randomAge is a deterministic time in the last few weeks.
func (sd *seeder) randomAge() time.Time {
	return sd.now.Add(-time.Duration(sd.rng.Int64N(int64(28*24*time.Hour))) - time.Hour)
}

func (sd *seeder) dir(a *area, parentID int64, name string) (int64, error) {
	sd.e.mu.Lock()
	defer sd.e.mu.Unlock()
	id, err := sd.e.createDirIn(a, parentID, name, sd.randomAge())
	if err != nil {
		return 0, fmt.Errorf("seeding folder %q: %w", name, err)
	}
	return id, nil
}

// file reserves a file now (ids stay deterministic) and writes it in the
// background; flush waits for the writes.
func (sd *seeder) file(a *area, parentID int64, name string, size int64, u *user) (int64, error) {
	f, err := sd.e.reserveFile(a, parentID, name, "", u, sd.randomAge())
	if err != nil {
		return 0, fmt.Errorf("seeding file %q: %w", name, err)
	}
	sd.writes.Go(func() error {
		if err := sd.e.writeFile(f, content.New(name, size)); err != nil {
			return fmt.Errorf("seeding file %q: %w", name, err)
		}
		return nil
	})
	return f.id, nil
}

// flush waits for the files written in the background.
func (sd *seeder) flush() error { return sd.writes.Wait() }

// files creates several files with sizes in [lo, hi).
func (sd *seeder) files(a *area, parentID int64, users []*user, lo, hi int64, names ...string) error {
	for _, n := range names {
		size := lo
		if hi > lo {
			size += sd.rng.Int64N(hi - lo)
		}
		if _, err := sd.file(a, parentID, n, size, users[sd.rng.IntN(len(users))]); err != nil {
			return err
		}
	}
	return nil
}

const kib = 1 << 10

// seedDemo runs one organization's demo seed and waits for its files.
func (e *Emulator) seedDemo(o *org, now time.Time, seed uint64, f func(*seeder, *org) error) error {
	sd := newSeeder(e, now, seed)
	err := f(sd, o)
	if ferr := sd.flush(); err == nil {
		err = ferr
	}
	return err
}

// seedDemoA seeds org-a of the demo seed: computers and images, the shared
// storage, the computers' storage, recordings, a task and action logs.
func (e *Emulator) seedDemoA(sd *seeder, o *org) error {
	fx := Fixtures{Org: o.name}

	// Computers and images.
	e.mu.Lock()
	m := e.seedDemoAComputers(sd, o, &fx)
	e.seedDemoAImages(sd, o, m, &fx)
	e.mu.Unlock()

	if err := e.seedDemoAShared(sd, o, &fx); err != nil {
		return err
	}
	out, err := e.seedDemoAComputerStorage(sd, o, m)
	if err != nil {
		return err
	}
	taskRecording, err := e.seedDemoARecordings(sd, o, m)
	if err != nil {
		return err
	}

	e.mu.Lock()
	t := &task{id: e.newID(), org: o, seat: m.studio, name: "Render batch #7", output: e.nodes[out],
		recordings: []*node{e.nodes[taskRecording]}, created: sd.ago(6 * time.Hour)}
	e.tasks[t.id] = t
	m.studio.task = t
	fx.Task = t.id
	e.fixtures[o.name] = fx
	e.seedLogs(sd, o, []*seat{m.studio, m.cafe, m.fresh, m.busy}, m.seatless)
	e.mu.Unlock()
	return nil
}

// demoAComputers are org-a's computers in the demo seed, and its machine
// without a seat.
type demoAComputers struct {
	studio, cafe, fresh, busy *seat
	seatless                  int64
}

// seedDemoAComputers creates org-a's computers and its machine without a
// seat, and names them in fx. Called with mu held.
func (e *Emulator) seedDemoAComputers(sd *seeder, o *org, fx *Fixtures) demoAComputers {
	bea, chen := o.users[1], o.users[2]
	studio := e.addSeat(o, "Design Studio #1", e.catalog.plans[1], sd.ago(40*24*time.Hour))
	studio.status, studio.hasDiskImage, studio.lastSession = stReady, true, sd.ago(2*time.Hour)
	studio.remainingUsage, studio.depositedUsage, studio.usageSource = 300, 600, "machine"
	studio.user, studio.machineType = bea, e.catalog.machineType(3)
	cafe := e.addSeat(o, "Café Render", e.catalog.plans[0], sd.ago(30*24*time.Hour))
	cafe.hasDiskImage, cafe.lastSession, cafe.user = true, sd.ago(26*time.Hour), chen
	fresh := e.addSeat(o, "Build Box", e.catalog.plans[0], sd.ago(3*24*time.Hour))
	busy := e.addSeat(o, "Build Box", e.catalog.plans[0], sd.ago(20*24*time.Hour))
	busy.hasDiskImage, busy.lastSession, busy.status = true, sd.ago(5*time.Hour), stInstalling
	busy.perms.ScreenRecordingEnabled = true
	seatless := e.newID()
	e.seatless[seatless] = o
	fx.RunningMachine, fx.StoppedMachine, fx.NoImageMachine, fx.InstallingMachine = studio.id, cafe.id, fresh.id, busy.id
	fx.SeatlessMachine = seatless
	return demoAComputers{studio: studio, cafe: cafe, fresh: fresh, busy: busy, seatless: seatless}
}

// seedDemoAImages creates org-a's images, one in every status, assigns two
// of them, and names them in fx. Called with mu held.
func (e *Emulator) seedDemoAImages(sd *seeder, o *org, m demoAComputers, fx *Fixtures) {
	mk := func(name, status, source string, sizeGB float64, sw []*software, age time.Duration) *image {
		im := &image{id: e.newID(), org: o, name: name, status: status, source: source, sizeGB: sizeGB,
			software: sw, created: sd.ago(age), updated: sd.ago(age - time.Hour)}
		e.images[im.id] = im
		return im
	}
	cat := e.catalog
	design := mk("Design base", imgAvailable, "seat", 40, nil, 21*24*time.Hour)
	design.fromSeat = m.studio
	office := mk("Office suite", imgAvailable, "pre_installation",
		roundGB((float64(cat.baseImage(203).size)+cat.softwareByID(101).size+cat.softwareByID(104).size)*1.05),
		[]*software{cat.softwareByID(101), cat.softwareByID(104)}, 14*24*time.Hour)
	huge := mk("Huge dataset image", imgAvailable, "pre_installation", 200, []*software{cat.softwareByID(108)}, 10*24*time.Hour)
	pending := mk("Build Box snapshot", imgPending, "seat", 30, nil, 2*time.Hour)
	pending.fromSeat, m.busy.creatingImage = m.busy, pending
	building := mk("Nightly CI image", imgBuilding, "pre_installation", 27.3, []*software{cat.softwareByID(102), cat.softwareByID(106)}, 3*time.Hour)
	failed := mk("Broken experiment", imgFailed, "pre_installation", 31.9, []*software{cat.softwareByID(103)}, 6*24*time.Hour)
	m.studio.assigned = design
	m.cafe.assigned = office
	fx.AvailableImage, fx.LargeImage, fx.PendingImage, fx.BuildingImage, fx.FailedImage = office.id, huge.id, pending.id, building.id, failed.id
}

// seedDemoAShared fills org-a's shared storage and names its big file,
// small-files folder and empty folder in fx.
func (e *Emulator) seedDemoAShared(sd *seeder, o *org, fx *Fixtures) error {
	sh, users := o.shared, o.users
	alex, bea, chen := users[0], users[1], users[2]
	if _, err := sd.file(sh, 0, "Welcome.txt", 2*kib, alex); err != nil {
		return err
	}
	if _, err := sd.file(sh, 0, "Q3 Report – final.docx", 180*kib, bea); err != nil {
		return err
	}
	if err := e.seedDemoAProjects(sd, sh, users); err != nil {
		return err
	}
	if err := e.seedDemoAMarketing(sd, sh, users); err != nil {
		return err
	}
	big, err := e.seedDemoADatasets(sd, sh, users, chen)
	if err != nil {
		return err
	}
	fx.BigFile = big
	small, err := e.seedDemoASmallFiles(sd, sh, users)
	if err != nil {
		return err
	}
	fx.SmallFilesDir = small
	team, err := sd.dir(sh, 0, "Shared with #team")
	if err != nil {
		return err
	}
	if err := sd.files(sh, team, users, 1*kib, 4*kib, "README.txt", "on-call schedule.md"); err != nil {
		return err
	}
	if fx.EmptyDir, err = sd.dir(sh, 0, "Archive (empty)"); err != nil {
		return err
	}
	return nil
}

// seedDemoAProjects creates the shared folder Projects: a menu with photos,
// a website with assets, and a render farm's scenes and output.
func (e *Emulator) seedDemoAProjects(sd *seeder, sh *area, users []*user) error {
	projects, err := sd.dir(sh, 0, "Projects")
	if err != nil {
		return err
	}
	menu, err := sd.dir(sh, projects, "Café Menu 2025")
	if err != nil {
		return err
	}
	if err := sd.files(sh, menu, users, 20*kib, 300*kib, "menu.pdf", "notes.md", "prices.csv"); err != nil {
		return err
	}
	photos, err := sd.dir(sh, menu, "photos")
	if err != nil {
		return err
	}
	for i := 1; i <= 12; i++ {
		if err := sd.files(sh, photos, users, 100*kib, 600*kib, fmt.Sprintf("dish %02d.jpg", i)); err != nil {
			return err
		}
	}
	site, err := sd.dir(sh, projects, "Website #3")
	if err != nil {
		return err
	}
	if err := sd.files(sh, site, users, 1*kib, 30*kib, "index.html", "about.html", "style.css", "app.js"); err != nil {
		return err
	}
	assets, err := sd.dir(sh, site, "assets")
	if err != nil {
		return err
	}
	for i := 1; i <= 15; i++ {
		if err := sd.files(sh, assets, users, 5*kib, 200*kib, fmt.Sprintf("icon-%02d.png", i)); err != nil {
			return err
		}
	}
	render, err := sd.dir(sh, projects, "Render farm")
	if err != nil {
		return err
	}
	scenes, err := sd.dir(sh, render, "scenes")
	if err != nil {
		return err
	}
	if err := sd.files(sh, scenes, users, 500*kib, 3*mib, "kitchen.blend", "street at night.blend", "logo spin.blend"); err != nil {
		return err
	}
	frames, err := sd.dir(sh, render, "output")
	if err != nil {
		return err
	}
	for i := 1; i <= 24; i++ {
		if err := sd.files(sh, frames, users, 50*kib, 250*kib, fmt.Sprintf("frame_%04d.png", i)); err != nil {
			return err
		}
	}
	return nil
}

// seedDemoAMarketing creates the shared folder Marketing: a brand guide,
// logos and a campaign.
func (e *Emulator) seedDemoAMarketing(sd *seeder, sh *area, users []*user) error {
	mkt, err := sd.dir(sh, 0, "Marketing")
	if err != nil {
		return err
	}
	if err := sd.files(sh, mkt, users, 100*kib, 2*mib, "Brand guide.pdf"); err != nil {
		return err
	}
	logos, err := sd.dir(sh, mkt, "logos")
	if err != nil {
		return err
	}
	if err := sd.files(sh, logos, users, 10*kib, 90*kib, "logo.png", "logo dark.png", "logo #small.png", "favicon.png", "wordmark.png"); err != nil {
		return err
	}
	camp, err := sd.dir(sh, mkt, "Campagne été 2025")
	if err != nil {
		return err
	}
	if err := sd.files(sh, camp, users, 20*kib, 400*kib, "plan.docx", "budget.xlsx", "contacts.csv", "résumé.md"); err != nil {
		return err
	}
	return nil
}

// seedDemoADatasets creates the shared folder Datasets, with the 64 MiB file
// (owned by owner) whose id it returns.
func (e *Emulator) seedDemoADatasets(sd *seeder, sh *area, users []*user, owner *user) (big int64, err error) {
	data, err := sd.dir(sh, 0, "Datasets")
	if err != nil {
		return 0, err
	}
	big, err = sd.file(sh, data, "big-sample.bin", 64*mib, owner)
	if err != nil {
		return 0, err
	}
	if err := sd.files(sh, data, users, 1*mib, 3*mib, "sales 2024.csv"); err != nil {
		return 0, err
	}
	if err := sd.files(sh, data, users, 100*kib, 600*kib, "sensors.json", "README.md"); err != nil {
		return 0, err
	}
	return big, nil
}

// seedDemoASmallFiles creates the shared folder small-files, with 300 small
// files (names with spaces, '#' and unicode among them), and returns its id.
func (e *Emulator) seedDemoASmallFiles(sd *seeder, sh *area, users []*user) (int64, error) {
	small, err := sd.dir(sh, 0, "small-files")
	if err != nil {
		return 0, err
	}
	for i := 1; i <= 300; i++ {
		var name string
		switch {
		case i%50 == 0:
			name = fmt.Sprintf("résumé %03d.txt", i)
		case i%25 == 0:
			name = fmt.Sprintf("item #%03d.txt", i)
		case i%10 == 0:
			name = fmt.Sprintf("note with spaces %03d.txt", i)
		case i%7 == 0:
			name = fmt.Sprintf("config-%03d.json", i)
		default:
			name = fmt.Sprintf("note-%03d.txt", i)
		}
		if err := sd.files(sh, small, users, 100, 8*kib, name); err != nil {
			return 0, err
		}
	}
	return small, nil
}

// seedDemoAComputerStorage fills the storage of org-a's computers and
// returns the id of the studio's task output folder.
func (e *Emulator) seedDemoAComputerStorage(sd *seeder, o *org, m demoAComputers) (out int64, err error) {
	users := o.users
	studio, cafe := m.studio.area, m.cafe.area
	out, err = sd.dir(studio, 0, "Task output - Render batch #7")
	if err != nil {
		return 0, err
	}
	for i := 1; i <= 6; i++ {
		if err := sd.files(studio, out, users, 80*kib, 300*kib, fmt.Sprintf("frame_%04d.png", i)); err != nil {
			return 0, err
		}
	}
	if err := sd.files(studio, out, users, 2*kib, 10*kib, "render.log"); err != nil {
		return 0, err
	}
	backup, err := sd.dir(studio, 0, "Desktop backup")
	if err != nil {
		return 0, err
	}
	if err := sd.files(studio, backup, users, 1*kib, 200*kib, "moodboard.png", "todo.txt", "shortcuts.md"); err != nil {
		return 0, err
	}
	if err := sd.files(studio, 0, users, 1*kib, 20*kib, "notes ü.txt"); err != nil {
		return 0, err
	}
	renders, err := sd.dir(cafe, 0, "renders")
	if err != nil {
		return 0, err
	}
	if err := sd.files(cafe, renders, users, 100*kib, 900*kib, "table 1.png", "table 2.png", "bar #3.png"); err != nil {
		return 0, err
	}
	if err := sd.files(cafe, 0, users, 1*kib, 4*kib, "settings.json"); err != nil {
		return 0, err
	}
	if err := sd.files(m.fresh.area, 0, users, 1*kib, 2*kib, "readme.txt"); err != nil {
		return 0, err
	}
	if err := sd.files(m.busy.area, 0, users, 10*kib, 60*kib, "build.log"); err != nil {
		return 0, err
	}
	return out, nil
}

// seedDemoARecordings creates org-a's recordings: a folder per computer, a
// folder per session. It returns the id of the studio's task recording
// folder.
func (e *Emulator) seedDemoARecordings(sd *seeder, o *org, m demoAComputers) (taskRecording int64, err error) {
	for _, s := range []*seat{m.studio, m.cafe, m.busy} {
		mf, err := sd.recordingDir(o, 0, s.name+" - "+itoa(s.id), s.id)
		if err != nil {
			return 0, err
		}
		for k := 0; k < 2; k++ {
			day := sd.ago(time.Duration(3+7*k) * 24 * time.Hour)
			sess, err := sd.recordingDir(o, mf, "Session "+day.UTC().Format("2006-01-02 15.04"), s.id)
			if err != nil {
				return 0, err
			}
			if err := sd.recordingFiles(o, sess, o.users, "recording.webm", "input-log.json"); err != nil {
				return 0, err
			}
		}
		if s == m.studio {
			if taskRecording, err = sd.recordingDir(o, mf, "Session Render batch #7", s.id); err != nil {
				return 0, err
			}
			if err := sd.recordingFiles(o, taskRecording, o.users, "recording.webm"); err != nil {
				return 0, err
			}
		}
	}
	return taskRecording, nil
}

func (e *Emulator) seedDemoB(sd *seeder, o *org) error {
	fx := Fixtures{Org: o.name}
	e.mu.Lock()
	reception := e.addSeat(o, "Reception PC", e.catalog.plans[0], sd.ago(60*24*time.Hour))
	reception.hasDiskImage, reception.lastSession = true, sd.ago(20*time.Hour)
	lab := e.addSeat(o, "Lab #2", e.catalog.plans[0], sd.ago(50*24*time.Hour))
	lab.status, lab.hasDiskImage, lab.lastSession, lab.user = stReady, true, sd.ago(time.Hour), o.users[1]
	lab.remainingUsage, lab.depositedUsage, lab.usageSource = 120, 120, "machine"
	seatless := e.newID()
	e.seatless[seatless] = o
	im := &image{id: e.newID(), org: o, name: "Lab template", status: imgAvailable, source: "seat", sizeGB: 25,
		created: sd.ago(9 * 24 * time.Hour), updated: sd.ago(9 * 24 * time.Hour)}
	e.images[im.id] = im
	lab.assigned = im
	fx.RunningMachine, fx.StoppedMachine, fx.SeatlessMachine, fx.AvailableImage = lab.id, reception.id, seatless, im.id
	e.mu.Unlock()

	sh, users := o.shared, o.users
	if err := sd.files(sh, 0, users, 1*kib, 50*kib, "Opening hours.txt", "Price list.pdf"); err != nil {
		return err
	}
	docs, err := sd.dir(sh, 0, "Documents")
	if err != nil {
		return err
	}
	if err := sd.files(sh, docs, users, 5*kib, 200*kib, "contract #12.pdf", "inventory.xlsx", "Übersicht.docx", "visitors.csv"); err != nil {
		return err
	}
	scans, err := sd.dir(sh, docs, "scans")
	if err != nil {
		return err
	}
	for i := 1; i <= 8; i++ {
		if err := sd.files(sh, scans, users, 50*kib, 400*kib, fmt.Sprintf("scan %02d.png", i)); err != nil {
			return err
		}
	}
	if fx.EmptyDir, err = sd.dir(sh, 0, "Empty"); err != nil {
		return err
	}
	if err := sd.files(reception.area, 0, users, 1*kib, 8*kib, "desk notes.txt"); err != nil {
		return err
	}
	if err := sd.files(lab.area, 0, users, 10*kib, 100*kib, "results.csv", "protocol.md"); err != nil {
		return err
	}
	mf, err := sd.recordingDir(o, 0, lab.name+" - "+itoa(lab.id), lab.id)
	if err != nil {
		return err
	}
	sess, err := sd.recordingDir(o, mf, "Session "+sd.ago(2*24*time.Hour).UTC().Format("2006-01-02 15.04"), lab.id)
	if err != nil {
		return err
	}
	if err := sd.recordingFiles(o, sess, users, "recording.webm"); err != nil {
		return err
	}
	e.mu.Lock()
	e.fixtures[o.name] = fx
	e.seedLogs(sd, o, []*seat{reception, lab}, seatless)
	e.mu.Unlock()
	return nil
}

// recordingDir creates a recordings folder belonging to a computer.
func (sd *seeder) recordingDir(o *org, parentID int64, name string, machineID int64) (int64, error) {
	id, err := sd.dir(o.recordings, parentID, name)
	if err != nil {
		return 0, err
	}
	sd.e.mu.Lock()
	sd.e.nodes[id].machineID = machineID
	sd.e.mu.Unlock()
	return id, nil
}

// recordingFiles creates fake session recordings (they take the machine id of their folder).
func (sd *seeder) recordingFiles(o *org, parentID int64, users []*user, names ...string) error {
	for _, n := range names {
		lo, hi := int64(256*kib), int64(2*mib)
		if strings.HasSuffix(n, ".json") {
			lo, hi = 2*kib, 20*kib
		}
		if err := sd.files(o.recordings, parentID, users, lo, hi, n); err != nil {
			return err
		}
	}
	return nil
}

// seedLogs writes five weeks of believable action logs. Called with mu held.
func (e *Emulator) seedLogs(sd *seeder, o *org, seats []*seat, seatless int64) {
	at := func(d time.Duration) time.Time { return sd.now.Add(-d) }
	day := 24 * time.Hour
	for i, s := range seats {
		e.appendLog(o, "machine_created", o.admin, s.id, map[string]any{"machine_name": s.name}, at(time.Duration(35+i)*day))
	}
	e.appendLog(o, "machine_created", o.admin, seatless, map[string]any{"machine_name": "Old laptop bridge"}, at(40*day))
	e.appendLog(o, "machine_started", o.admin, seatless, map[string]any{"machine_name": "Old laptop bridge"}, at(39*day))
	for d := 34; d >= 0; d-- {
		base := at(time.Duration(d)*day + 9*time.Hour)
		for _, u := range o.users {
			if sd.rng.IntN(3) > 0 {
				e.appendLog(o, "user_login", u, 0, map[string]any{"ip": fmt.Sprintf("192.0.2.%d", 10+u.intID)}, base.Add(time.Duration(sd.rng.IntN(60))*time.Minute))
			}
		}
		for _, s := range seats {
			if sd.rng.IntN(2) == 0 || !s.hasDiskImage {
				continue
			}
			u := o.users[sd.rng.IntN(len(o.users))]
			start := base.Add(time.Duration(1+sd.rng.IntN(3)) * time.Hour)
			e.appendLog(o, "machine_started", u, s.id, map[string]any{"machine_name": s.name, "machine_type": s.machineType.friendly}, start)
			switch sd.rng.IntN(6) {
			case 0:
				e.appendLog(o, "file_uploaded", u, s.id, map[string]any{"file_name": fmt.Sprintf("export %d.csv", d), "size": 1000 + sd.rng.IntN(100000)}, start.Add(30*time.Minute))
			case 1:
				e.appendLog(o, "file_downloaded", u, s.id, map[string]any{"file_name": "render.log"}, start.Add(40*time.Minute))
			case 2:
				e.appendLog(o, "machine_external_access_created", u, s.id, map[string]any{"machine_name": s.name, "expires_in": 60}, start.Add(5*time.Minute))
			case 3:
				e.appendLog(o, "folder_created", u, 0, map[string]any{"file_name": fmt.Sprintf("drafts %d", d)}, start.Add(10*time.Minute))
			}
			e.appendLog(o, "machine_stopped", u, s.id, map[string]any{"machine_name": s.name, "gracefully": sd.rng.IntN(2) == 0}, start.Add(time.Duration(2+sd.rng.IntN(5))*time.Hour))
		}
	}
	if len(seats) > 1 {
		e.appendLog(o, "machine_type_changed", o.admin, seats[0].id, map[string]any{"machine_name": seats[0].name, "from": "Lake", "to": seats[0].machineType.friendly}, at(12*day))
		e.appendLog(o, "machine_reset", o.admin, seats[1].id, map[string]any{"machine_name": seats[1].name}, at(8*day))
		e.appendLog(o, "file_deleted", o.users[len(o.users)-1], 0, map[string]any{"file_name": "old draft.docx"}, at(4*day))
	}
}
