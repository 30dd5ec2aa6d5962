package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

func decodeOK(t *testing.T, body string, out any) {
	t.Helper()
	if _, err := decodeResponse("GET /x", 200, http.Header{}, []byte(body), out, time.Now()); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
}

func TestDecodeImageShapes(t *testing.T) {
	list := `{"client_code":200,"message":"OK","images":[{"id":"17","type":"image","attributes":{"id":17,"name":"Dev","size":52.5,
	  "status":"available","source":"pre_installation","created_at":"2025-01-02T03:04:05.123Z","updated_at":"2025-01-02T03:04:05Z",
	  "softwares":[{"id":"3","type":"software","attributes":{"id":3,"name":"Blender","size":1.5}}]}}],"count":1,"page":1,"next_page":null}`
	var p struct {
		Images   []Image     `json:"images"`
		NextPage *lenientInt `json:"next_page"`
	}
	decodeOK(t, list, &p)
	im := p.Images[0]
	if im.ID != 17 || im.Name != "Dev" || im.Size != 52.5 || im.Status != ImageAvailable || len(im.Softwares) != 1 ||
		im.Softwares[0].ID != 3 || im.Softwares[0].Size != 1.5e9 || im.CreatedAt.IsZero() || p.NextPage != nil { // 1.5 reads as GB
		t.Fatalf("%+v", im)
	}
	// The install endpoint's shape: softwares wrapped in {data}, a byte-scale size (read as GB), the id only as a string.
	install := `{"client_code":200,"id":"18","type":"image","attributes":{"name":"Tpl","size":13958643712,"status":"pending",
	  "source":"pre_installation","softwares":{"data":[{"id":"4","type":"software","attributes":{"id":4,"name":"Git","size":55000000}}]}}}`
	var a imageAnswer
	decodeOK(t, install, &a)
	if a.Image.ID != 18 || a.Image.Size != 13.96 || len(a.Image.Softwares) != 1 || a.Image.Softwares[0].Name != "Git" ||
		a.Image.Softwares[0].Size != 55000000 {
		t.Fatalf("%+v", a.Image)
	}
	// Null softwares; null times.
	decodeOK(t, `{"id":"19","attributes":{"softwares":null,"created_at":null,"size":null}}`, &a)
	if a.Image.ID != 19 || a.Image.Softwares != nil || !a.Image.CreatedAt.IsZero() {
		t.Fatalf("%+v", a.Image)
	}
	// Round trip through the flattened form.
	b, _ := json.Marshal(im)
	var back Image
	if err := json.Unmarshal(b, &back); err != nil || back.ID != 17 || back.Name != "Dev" || len(back.Softwares) != 1 || back.Softwares[0].ID != 3 {
		t.Fatalf("%s → %+v %v", b, back, err)
	}
}

func TestDecodeFileNullables(t *testing.T) {
	body := `{"files":[
	  {"id":"5","type":"file","attributes":{"name":"a.bin","size":1048576.0,"content_type":"application/octet-stream","region":"dublin",
	   "status":"upload_completed","object_type":"file","path":null,"parent_id":"2","last_modified_date":"2025-11-20T10:00:00Z",
	   "file_storage_size":null,"file_storage_usage":null,"user":null,"machine_id":null}},
	  {"id":6,"type":"file","attributes":{"name":"root","size":0,"content_type":"directory","object_type":"root","path":"/",
	   "parent_id":null,"file_storage_size":26843545600,"file_storage_usage":"1024","machine_id":"668",
	   "user":{"id":"0b5f0d0e-uuid","type":"user","attributes":{"email":"a@b.c","name":"Ann"}}}}],
	  "current":null,"count":2,"page":1,"next_page":null}`
	var p struct {
		Files   []File `json:"files"`
		Current *File  `json:"current"`
	}
	decodeOK(t, body, &p)
	f, r := p.Files[0], p.Files[1]
	fd, rd := p.Files[0].Details, p.Files[1].Details
	if f.ID != 5 || f.Size != 1048576 || fd.Path != nil || f.ParentID != 2 || fd.MachineID != nil || fd.User != nil ||
		f.FileStorageSize != nil || f.IsDir() || f.LastModified.IsZero() || p.Current != nil {
		t.Fatalf("%+v %+v", f, fd)
	}
	if r.ID != 6 || !r.IsDir() || rd.Path == nil || *rd.Path != "/" || *r.FileStorageSize != 26843545600 || *r.FileStorageUsage != 1024 ||
		*rd.MachineID != 668 || rd.User == nil || rd.User.Email != "a@b.c" || rd.User.Name != "Ann" {
		t.Fatalf("%+v %+v", r, rd)
	}
}

// The strings a listing repeats for every file (type, content type,
// region, status, object type, the user's) are decoded once and shared by
// the records; a file's name is its own. Times in the same fixed zone share
// one *time.Location (time.Parse makes one a time, for an offset
// not the desk's own: +05:45 is Nepal's).
func TestDecodeFileSharesRepeatedValues(t *testing.T) {
	file := func(id int, name string) string {
		return `{"id":"` + strconv.Itoa(id) + `","type":"file","attributes":{"name":"` + name + `","size":1,
		  "content_type":"application/octet-stream","region":"dublin","status":"upload_completed","object_type":"file",
		  "path":"/a/` + name + `","parent_id":2,"last_modified_date":"2025-11-20T10:00:00+05:45","machine_id":7,
		  "user":{"id":"0b5f0d0e-uuid","type":"user","attributes":{"email":"a@b.c","name":"Ann"}}}}`
	}
	var p struct {
		Files []File `json:"files"`
	}
	// Two documents, as two pages: nothing of the first's bytes is shared.
	decodeOK(t, `{"files":[`+file(1, "x.bin")+`]}`, &p)
	af := p.Files[0]
	decodeOK(t, `{"files":[`+file(2, "y.bin")+`]}`, &p)
	bf := p.Files[0]
	a, b := af.Details, bf.Details
	same := func(what, x, y string) {
		t.Helper()
		if x != y || x == "" || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one shared string", what, x, y)
		}
	}
	same("type", a.Type, b.Type)
	same("content type", a.ContentType, b.ContentType)
	same("region", a.Region, b.Region)
	same("status", a.Status, b.Status)
	same("object type", af.ObjectType, bf.ObjectType)
	same("user id", a.User.ID, b.User.ID)
	same("user e-mail", a.User.Email, b.User.Email)
	same("user name", a.User.Name, b.User.Name)
	if af.Name != "x.bin" || bf.Name != "y.bin" || *a.Path != "/a/x.bin" || *b.Path != "/a/y.bin" || *a.MachineID != 7 {
		t.Errorf("the records' own values: %+v %+v %+v %+v", af, a, bf, b)
	}
	if _, off := af.LastModified.Zone(); off != 5*3600+45*60 || af.LastModified.Location() != bf.LastModified.Location() ||
		!af.LastModified.Equal(time.Date(2025, 11, 20, 4, 15, 0, 0, time.UTC)) {
		t.Errorf("modification times %v and %v: want 04:15 UTC in one shared +05:45 zone", af.LastModified, bf.LastModified)
	}
}

// A mount keeps a File for every entry listed and every file node: the
// record stays at 120 bytes, what a mount reads of it (104, and the 16 of
// the mode and time its writer gave it: Written), with the rest of the
// service's record behind one pointer. Marshalled, it is the flattened
// form, Details side by side with the rest, which decodes back whole; a
// File without Details (a listing's) keeps its Written.
func TestFileRecordIsSmallAndRoundTrips(t *testing.T) {
	if n := unsafe.Sizeof(File{}); n > 120 {
		t.Errorf("a File takes %d bytes, want at most 120", n)
	}
	listed := File{ID: 6, Name: "run.sh", Written: WrittenOf("text/x-shellscript; x-orgfs-mode=0755; x-orgfs-mtime=1732849445.5")}
	b, err := json.Marshal(listed)
	if err != nil {
		t.Fatal(err)
	}
	var lback File
	if err := json.Unmarshal(b, &lback); err != nil || lback.Written != listed.Written || lback.Written.IsZero() {
		t.Fatalf("%s decoded as %+v, %v; want its Written %+v", b, lback, err, listed.Written)
	}
	path, machine := "/a/x.bin", int64(7)
	f := File{ID: 5, Name: "x.bin", Size: 3, ObjectType: ObjectFile, ParentID: 2,
		LastModified: time.Date(2025, 11, 20, 10, 0, 0, 0, time.UTC),
		Details: &FileDetails{Type: "file", ContentType: "text/plain", Region: "dublin", Status: FileStatusUploadCompleted,
			Path: &path, User: &User{ID: "u", Email: "a@b.c", Name: "Ann"}, MachineID: &machine}}
	b, err = json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back File
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	d, bd := f.Details, back.Details
	f.Details, back.Details = nil, nil
	if f != back || bd == nil || bd.Type != d.Type || bd.ContentType != d.ContentType || bd.Region != d.Region ||
		bd.Status != d.Status || *bd.Path != path || *bd.User != *d.User || *bd.MachineID != machine {
		t.Errorf("%s decoded as %+v %+v", b, back, bd)
	}
}

func TestDecodeSeatRecord(t *testing.T) {
	body := `{"seats":[{"id": "668", "type": "seat", "attributes": {
	   "name": "Computer #668", "status": "active", "friendly_status": "off",
	   "auto_stop_threshold": 900, "file_storage_size": 25, "disk_size": 75.5,
	   "network_credit": 10637356601, "remaining_usage": 1514, "deposited_usage": 0,
	   "assigned_image_id": null, "assigned_image_name": null, "usage_source": "machine",
	   "permissions": {"public_internet_access": true, "clipboard_enabled": "false"},
	   "user": {"id": "u-1", "type": "user", "attributes": {"email": "e@x", "name": "N"}},
	   "machine": {"id": "668", "type": "machine", "attributes": {
	       "status": "stopped", "name": "m", "region": "dublin",
	       "last_session_start_at": "2024-09-30T07:29:37.108Z", "machine_type": "Lake"}},
	   "task": null, "unknown_field": [1,2]}}],"count":1,"next_page":null}`
	var p struct {
		Seats []Seat `json:"seats"`
	}
	decodeOK(t, body, &p)
	s := p.Seats[0]
	if s.ID != 668 || !s.Stopped() || s.Running() || s.DiskSize != 75.5 || s.NetworkCredit != 10637356601 || s.AssignedImageID != nil ||
		s.Machine == nil || s.Machine.ID != 668 || s.Machine.MachineType != "Lake" || s.Machine.LastSessionStartAt.IsZero() ||
		s.Permissions.PublicInternetAccess == nil || !*s.Permissions.PublicInternetAccess ||
		s.Permissions.ClipboardEnabled == nil || *s.Permissions.ClipboardEnabled || s.Permissions.InputRecordingEnabled != nil ||
		s.Task != nil || len(s.Raw) == 0 || s.User.Name != "N" {
		t.Fatalf("%+v", s)
	}
}

func TestDecodeDownloadIDs(t *testing.T) {
	var l DownloadLink
	decodeOK(t, `{"client_code":200,"url":null,"size":12345,"name":null,"content_type":null,"download_id":77}`, &l)
	if l.DownloadID != 77 || l.URL != "" || l.Size == nil || *l.Size != 12345 {
		t.Fatalf("%+v", l)
	}
	decodeOK(t, `{"url":"https://obj.example/k?expires=1763781600&signature=ab","size":null,"name":"a.txt","content_type":"text/plain","download_id":null}`, &l)
	l.fillExpiry()
	if l.DownloadID != 0 || l.Size != nil || l.Name != "a.txt" || !l.ExpiresAt.Equal(time.Unix(1763781600, 0)) {
		t.Fatalf("%+v", l)
	}
	var j DownloadJob
	decodeOK(t, `{"id":"77","type":"download","attributes":{"status":"uploaded","download_url":"https://x/y","expires_at":"2025-11-23T00:00:00Z","size":null}}`, &j)
	if j.ID != 77 || j.Status != DownloadUploaded || !j.Done() || j.Size != nil || j.ExpiresAt.IsZero() {
		t.Fatalf("%+v", j)
	}
}

func TestDecodeSoftwareAndOthers(t *testing.T) {
	var cat struct {
		Software   []Software  `json:"software"`
		BaseImages []BaseImage `json:"base_images"`
	}
	decodeOK(t, `{"software":[{"id":1,"name":"A","size":123000000.75},{"id":5,"name":"B","size":0.35}],"base_images":[{"id":"2","name":"Win","size":30000000000,"type":"base_image"}]}`, &cat)
	if cat.Software[0].Size != 123000000.75 || cat.Software[1].Size != 350000000 || cat.BaseImages[0].ID != 2 || cat.BaseImages[0].Size.Int64() != 30000000000 {
		t.Fatalf("%+v", cat)
	}
	var mt struct {
		MachineTypes []MachineType `json:"machine_types"`
	}
	decodeOK(t, `{"machine_types":[{"id":"3","type":"machine_type","attributes":{"name":"lake","friendly_name":"Lake","cpus":8}}]}`, &mt)
	if mt.MachineTypes[0].ID != 3 || mt.MachineTypes[0].FriendlyName != "Lake" || len(mt.MachineTypes[0].Raw) == 0 {
		t.Fatalf("%+v", mt)
	}
	var acc accessAnswer
	decodeOK(t, `{"id":"a1","type":"machine_access","attributes":{"uid":"u","connection_link":"https://c/x","expires_at":"2025-01-01T00:00:00Z"}}`, &acc)
	if acc.link.ConnectionLink != "https://c/x" || acc.link.ID != "a1" {
		t.Fatalf("%+v", acc.link)
	}
	var logs Logs
	decodeOK(t, `{"logs":[{"id":1,"action_type":"file_uploaded","user_id":"uuid-not-int","user_email":"e","machine_id":null,"metadata":{"file_id":5},"created_at":"2025-11-01T00:00:00Z"}],"count":1}`, &logs)
	if len(logs.Logs) != 1 || logs.Logs[0].MachineID != nil || string(logs.Logs[0].Metadata) != `{"file_id":5}` || logs.Logs[0].UserID != 0 {
		t.Fatalf("%+v", logs)
	}
	var cr CreateFileResult
	decodeOK(t, `{"id":"41","uid":"x","upload_urls":null,"chunk_size":250}`, &cr)
	if cr.ID != 41 || cr.UploadURLs != nil || cr.ChunkSize != 250 {
		t.Fatalf("%+v", cr)
	}
}

func TestFlexNumbers(t *testing.T) {
	good := map[string]int64{`12`: 12, `"12"`: 12, `12.0`: 12, `1.6`: 2, `null`: 0, `""`: 0, `" 7 "`: 7, `1e3`: 1000, `9007199254740993`: 9007199254740993}
	for in, want := range good {
		var v flexInt
		if err := json.Unmarshal([]byte(in), &v); err != nil || int64(v) != want {
			t.Errorf("%s → %d %v", in, v, err)
		}
	}
	for _, in := range []string{`true`, `{}`, `[1]`, `"abc"`, `"0x10"`, `"Inf"`, `"NaN"`, `1e300`} {
		var v flexInt
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("%s accepted as %d", in, v)
		}
	}
	var s Size
	if err := json.Unmarshal([]byte(`"2.5"`), &s); err != nil || s != 2.5 {
		t.Error(s, err)
	}
}
