package api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/orgfs/orgfs/internal/logging"
)

// fakeService is a small HTTP-level stand-in for the service and its object
// store, enough for the upload and download helpers.
type fakeService struct {
	t       *testing.T
	api     *httptest.Server
	objects *httptest.Server

	mu          sync.Mutex
	objs        map[string][]byte // key → content
	nextID      int64
	uploads     map[int64]*fakeUpload
	deleted     []int64
	authSeen    atomic.Int32 // object requests carrying Authorization
	failPut     map[int]int  // part number → failures to inject
	answerChunk int64        // chunk_size answered (MB); 0 = echo the request
	expired     atomic.Int32 // GETs to answer 403 before serving
	breakGet    atomic.Int32 // GETs whose body is cut in the middle
	jobPolls    int
	jobStatus   []string // statuses answered by successive polls
	aborted     []int64
	completeHit atomic.Int32
	// putGate holds each part PUT until that many are in flight (5 s at
	// most); putsIn counts those in flight and putsMax the most at once.
	putGate         int32
	putsIn, putsMax atomic.Int32
}

type fakeUpload struct {
	size, chunk int64
	parts       int
	name        string
}

func newFakeService(t *testing.T) *fakeService {
	f := &fakeService{t: t, objs: map[string][]byte{}, uploads: map[int64]*fakeUpload{}, failPut: map[int]int{}, nextID: 100}
	f.objects = httptest.NewServer(http.HandlerFunc(f.serveObject))
	f.api = httptest.NewServer(http.HandlerFunc(f.serveAPI))
	t.Cleanup(f.objects.Close)
	t.Cleanup(f.api.Close)
	return f
}

func (f *fakeService) client(mods ...func(*Options)) *Client {
	opts := Options{Logger: logging.Discard(), BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	for _, m := range mods {
		m(&opts)
	}
	c, err := New(Credentials{Endpoint: f.api.URL, Key: testKey, Secret: testSecret}, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fakeService) presign(key string) string {
	return f.objects.URL + "/bucket/" + key + "?expires=" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + "&signature=SIGSECRET"
}

func (f *fakeService) serveObject(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
		f.authSeen.Add(1)
		http.Error(w, "credentials sent to object storage", 400)
		return
	}
	if r.URL.Query().Get("signature") != "SIGSECRET" {
		http.Error(w, "<Error><Code>AccessDenied</Code><Message>bad signature</Message></Error>", http.StatusForbidden)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/bucket/")
	switch r.Method {
	case http.MethodPut:
		var part int
		fmt.Sscanf(key[strings.LastIndex(key, "/")+1:], "%d", &part)
		f.mu.Lock()
		fail := f.failPut[part] > 0
		if fail {
			f.failPut[part]--
		}
		f.mu.Unlock()
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if n := f.putsIn.Add(1); f.putGate > 0 {
			for m := f.putsMax.Load(); n > m && !f.putsMax.CompareAndSwap(m, n); m = f.putsMax.Load() {
			}
			for end := time.Now().Add(5 * time.Second); f.putsIn.Load() < f.putGate && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // more would come now, were they let
		}
		f.putsIn.Add(-1)
		if fail {
			http.Error(w, "<Error><Code>InternalError</Code><Message>try again</Message></Error>", 500)
			return
		}
		if int64(len(data)) != r.ContentLength {
			http.Error(w, "length", 400)
			return
		}
		sum := md5.Sum(data)
		f.mu.Lock()
		f.objs[key] = data
		f.mu.Unlock()
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
	case http.MethodGet:
		if f.expired.Load() > 0 {
			f.expired.Add(-1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(403)
			io.WriteString(w, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>")
			return
		}
		f.mu.Lock()
		data, ok := f.objs[key]
		f.mu.Unlock()
		if !ok {
			http.Error(w, "<Error><Code>NoSuchKey</Code></Error>", 404)
			return
		}
		if f.breakGet.Load() > 0 && len(data) > 10 {
			f.breakGet.Add(-1)
			// Announce the whole range, send half of it, drop the connection.
			rec := httptest.NewRecorder()
			http.ServeContent(rec, r, key, time.Time{}, bytes.NewReader(data))
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			b := rec.Body.Bytes()
			w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		http.ServeContent(w, r, key, time.Time{}, bytes.NewReader(data))
	}
}

func (f *fakeService) serveAPI(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if _, err := verifySignature(r, body); err != nil {
		writeJSON(w, 401, errBody(401, err.Error()))
		return
	}
	path := strings.TrimPrefix(r.URL.Path, PathPrefix)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == "POST" && path == "/files":
		var req struct {
			FileName   string `json:"file_name"`
			ObjectType string `json:"object_type"`
			Size       int64  `json:"size"`
			ChunkSize  int64  `json:"chunk_size"`
		}
		json.Unmarshal(body, &req)
		f.nextID++
		id := f.nextID
		chunk := req.ChunkSize
		if f.answerChunk != 0 {
			chunk = f.answerChunk
		}
		n := int(max(1, (req.Size+chunk*mib-1)/(chunk*mib)))
		urls := []any{}
		for i := n; i >= 1; i-- { // out of order on purpose
			urls = append(urls, map[string]any{"part_number": i, "url": f.presign(fmt.Sprintf("up/%d/%d", id, i))})
		}
		f.uploads[id] = &fakeUpload{size: req.Size, chunk: chunk, parts: n, name: req.FileName}
		writeJSON(w, 200, okBody(map[string]any{"id": id, "uid": "uid-" + strconv.FormatInt(id, 10), "upload_urls": urls, "chunk_size": chunk}))
	case r.Method == "POST" && strings.HasSuffix(path, "/complete"):
		f.completeHit.Add(1)
		var id int64
		fmt.Sscanf(path, "/files/%d/complete", &id)
		up := f.uploads[id]
		var req struct {
			Parts []Part `json:"parts"`
		}
		json.Unmarshal(body, &req)
		if up == nil || len(req.Parts) != up.parts {
			writeJSON(w, 400, errBody(400, "invalid parts format"))
			return
		}
		var all []byte
		for i, p := range req.Parts {
			data := f.objs[fmt.Sprintf("up/%d/%d", id, i+1)]
			sum := md5.Sum(data)
			if p.PartNumber != i+1 || p.ETag != `"`+hex.EncodeToString(sum[:])+`"` {
				writeJSON(w, 400, errBody(400, "etag mismatch"))
				return
			}
			all = append(all, data...)
		}
		if int64(len(all)) != up.size {
			writeJSON(w, 452, errBody(452, "size mismatch"))
			return
		}
		f.objs[fmt.Sprintf("files/%d", id)] = all
		writeJSON(w, 200, okBody(map[string]any{"uid": fmt.Sprintf("uid-%d", id), "download_url": f.presign(fmt.Sprintf("files/%d", id))}))
	case r.Method == "DELETE" && strings.HasPrefix(path, "/files/downloads/"):
		var id int64
		fmt.Sscanf(path, "/files/downloads/%d", &id)
		f.aborted = append(f.aborted, id)
		writeJSON(w, 200, okBody(nil))
	case r.Method == "DELETE" && strings.HasPrefix(path, "/files/"):
		var id int64
		fmt.Sscanf(path, "/files/%d", &id)
		f.deleted = append(f.deleted, id)
		writeJSON(w, 200, okBody(nil))
	case r.Method == "POST" && path == "/files/download":
		var req struct {
			FileIDs     []int64 `json:"file_ids"`
			DirectoryID int64   `json:"directory_id"`
		}
		json.Unmarshal(body, &req)
		if len(req.FileIDs) == 1 {
			key := fmt.Sprintf("files/%d", req.FileIDs[0])
			data, ok := f.objs[key]
			if !ok {
				writeJSON(w, 400, errBody(4717, "file not found"))
				return
			}
			writeJSON(w, 200, okBody(map[string]any{"url": f.presign(key), "size": len(data), "name": "n", "content_type": "application/octet-stream", "download_id": nil}))
			return
		}
		writeJSON(w, 200, okBody(map[string]any{"url": nil, "size": 10, "name": nil, "content_type": nil, "download_id": 55}))
	case r.Method == "GET" && strings.HasPrefix(path, "/files/downloads/"):
		st := "processing"
		if f.jobPolls < len(f.jobStatus) {
			st = f.jobStatus[f.jobPolls]
		}
		f.jobPolls++
		attrs := map[string]any{"status": st, "expires_at": "2030-01-01T00:00:00Z", "size": nil}
		if st == "uploaded" && r.URL.Query().Get("generate_download_url") == "true" {
			attrs["download_url"] = f.presign("zips/55")
		}
		writeJSON(w, 200, okBody(map[string]any{"id": "55", "type": "download", "attributes": attrs}))
	default:
		writeJSON(w, 404, errBody(404, "no route "+r.Method+" "+path))
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Uploads at once share Slots: the parts in flight of all of them together
// are never more, while each still has Parallel of its own. Each PUT waits
// until as many as the case wants are in flight, so that the most at once
// is reached however slow the machine, and exceeded if the slots let more.
func TestUploadsShareSlots(t *testing.T) {
	for _, c := range []struct {
		slots int64 // 0: none shared
		want  int32
		mibs  [2]int // the files' sizes: parts in all a multiple of want (none waits for a gate never reached)
	}{{0, 8, [2]int{4, 4}}, {3, 3, [2]int{4, 5}}} {
		f := newFakeService(t)
		f.answerChunk = 1 // parts of 1 MiB
		f.putGate = c.want
		cl := f.client()
		var slots *semaphore.Weighted
		if c.slots > 0 {
			slots = semaphore.NewWeighted(c.slots)
		}
		datas := [][]byte{randomBytes(c.mibs[0] * mib), randomBytes(c.mibs[1] * mib)} // made before: both uploads start together
		var g errgroup.Group
		for i, data := range datas {
			g.Go(func() error {
				_, err := cl.Upload(context.Background(), UploadRequest{
					Name: fmt.Sprintf("f%d", i), Size: int64(len(data)), Body: bytes.NewReader(data), Parallel: 4, Slots: slots,
				})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := f.putsMax.Load(); got != c.want {
			t.Errorf("shared slots %d: %d parts in flight at most, want %d", c.slots, got, c.want)
		}
	}
}

// An upload of one part takes no shared slot: a small file goes up while
// big files' parts hold them all.
func TestUploadOfOnePartTakesNoSlot(t *testing.T) {
	f := newFakeService(t)
	slots := semaphore.NewWeighted(1)
	if !slots.TryAcquire(1) {
		t.Fatal("no slot")
	}
	defer slots.Release(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	data := randomBytes(1000)
	res, err := f.client().Upload(ctx, UploadRequest{Name: "small", Size: int64(len(data)), Body: bytes.NewReader(data), Parallel: 4, Slots: slots})
	if err != nil || res.Parts != 1 {
		t.Fatalf("upload of one part with every slot taken: %+v, %v", res, err)
	}
}

func TestUploadMultipart(t *testing.T) {
	f := newFakeService(t)
	f.answerChunk = 1 // parts of 1 MiB: boundaries follow the answered chunk_size
	f.failPut[2] = 2  // part 2 fails twice: retried on its own
	var logBuf safeBuffer
	log := logrus.New()
	log.SetOutput(&logBuf)
	log.SetLevel(logrus.DebugLevel)
	c := f.client(func(o *Options) { o.Logger = log })
	data := randomBytes(3*mib + 12345)
	var last, calls atomic.Int64
	var mono atomic.Bool
	mono.Store(true)
	res, err := c.Upload(context.Background(), UploadRequest{
		Name: "big.bin", Size: int64(len(data)), Body: bytes.NewReader(data), Parallel: 3,
		Progress: func(done, total int64) {
			if done < last.Load() || total != int64(len(data)) {
				mono.Store(false)
			}
			last.Store(done)
			calls.Add(1)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Parts != 4 || res.PartSize != mib || res.ID == 0 || res.UID == "" {
		t.Fatalf("%+v", res)
	}
	f.mu.Lock()
	got := f.objs[fmt.Sprintf("files/%d", res.ID)]
	f.mu.Unlock()
	if !bytes.Equal(got, data) {
		t.Fatal("uploaded content differs")
	}
	if !mono.Load() || last.Load() != int64(len(data)) || calls.Load() < 5 {
		t.Fatalf("progress: last %d calls %d monotonic %v", last.Load(), calls.Load(), mono.Load())
	}
	if f.authSeen.Load() != 0 {
		t.Fatal("Authorization sent to the object store")
	}
	st := c.Stats()
	if st.Ops[opObjectPutPart].Retries != 2 || st.BytesUploaded != int64(len(data)) {
		t.Fatalf("%+v", st)
	}
	// Debug logs name requests but never a secret, a signature or a presigned query.
	logs := logBuf.String()
	for _, leak := range []string{testSecret, "SIGSECRET", "signature=", "HMAC ", "expires="} {
		if strings.Contains(logs, leak) {
			t.Errorf("log contains %q", leak)
		}
	}
	if !strings.Contains(logs, "/bucket/up/") || !strings.Contains(logs, "client_code=200") {
		t.Errorf("logs lack request lines:\n%s", logs)
	}
	// Downloading it back: the link, ranged reads, parallel download.
	link, err := c.FileURL(context.Background(), res.ID)
	if err != nil || link.Size == nil || *link.Size != int64(len(data)) || link.ExpiresAt.IsZero() {
		t.Fatal(link, err)
	}
	buf := &writerAt{}
	n, err := c.DownloadTo(context.Background(), DownloadToRequest{FileID: res.ID, Dst: buf, BlockSize: 512 << 10, Parallel: 4})
	if err != nil || n != int64(len(data)) || !bytes.Equal(buf.bytes(), data) {
		t.Fatal(n, err)
	}
}

func TestUploadEmptyAndSmall(t *testing.T) {
	f := newFakeService(t)
	c := f.client()
	for _, size := range []int{0, 1, 100} {
		data := randomBytes(size)
		res, err := c.Upload(context.Background(), UploadRequest{Name: "s", Size: int64(size), Body: bytes.NewReader(data)})
		if err != nil || res.Parts != 1 {
			t.Fatal(size, res, err)
		}
	}
}

func TestUploadFailureDeletesRecord(t *testing.T) {
	f := newFakeService(t)
	f.answerChunk = 1
	f.failPut[1] = 100 // part 1 always fails
	c := f.client(func(o *Options) { o.MaxAttempts = 3 })
	data := randomBytes(2 * mib)
	_, err := c.Upload(context.Background(), UploadRequest{Name: "x", Size: int64(len(data)), Body: bytes.NewReader(data)})
	var oe *ObjectError
	if err == nil || !Temporary(err) || !errorsAs(err, &oe) || oe.HTTPStatus != 500 || strings.Contains(err.Error(), "SIGSECRET") {
		t.Fatalf("%v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.deleted) != 1 || f.completeHit.Load() != 0 {
		t.Fatalf("deleted %v, complete %d", f.deleted, f.completeHit.Load())
	}
}

// A body shorter than the declared size fails the part for good (no retry storm).
func TestUploadShortBody(t *testing.T) {
	f := newFakeService(t)
	c := f.client()
	_, err := c.Upload(context.Background(), UploadRequest{Name: "x", Size: 1000, Body: bytes.NewReader(make([]byte, 10))})
	if err == nil {
		t.Fatal("no error")
	}
}

func TestChunkSizeChoice(t *testing.T) {
	for _, tt := range []struct{ size, want int64 }{
		{0, 8 * mib}, {1, 8 * mib}, {100 * mib, 13 * mib}, {1 << 30, 128 * mib}, {100 << 30, 250 * mib}, {5 << 40, 525 * mib},
	} {
		got := chooseChunkSize(tt.size, 4)
		if got != tt.want || got%mib != 0 || partsFor(tt.size, got) > maxUploadParts {
			t.Errorf("chooseChunkSize(%d) = %d MiB, want %d MiB", tt.size, got/mib, tt.want/mib)
		}
	}
	// Part boundaries: MiB, decimal MB, or even split, whichever matches the URL count.
	for _, tt := range []struct {
		size, answered, requested int64
		n                         int
		want                      int64
	}{
		{10 * mib, 5, 5, 2, 5 * mib},
		{10_000_000, 5, 5, 2, 5 * mib},
		{10*mib + 1, 5, 5, 3, 5 * mib},
		{10_000_001, 0, 5, 3, 5_000_000},
		{12 * mib, 0, 0, 3, 4 * mib},
		{0, 5, 5, 1, 5 * mib},
	} {
		got, _, err := planPartSize(tt.size, tt.answered, tt.requested, tt.n, 0)
		if err != nil || got != tt.want {
			t.Errorf("planPartSize(%+v) = %d, %v", tt, got, err)
		}
	}
	// The unit the count proves is told; where both fit, the one given wins.
	if got, told, _ := planPartSize(10_000_001, 0, 5, 3, 0); got != 5_000_000 || told != unitMB {
		t.Errorf("three 5 MB parts: %d, told %d", got, told)
	}
	if got, told, _ := planPartSize(10_000_000, 5, 5, 2, unitMB); got != 5_000_000 || told != 0 {
		t.Errorf("two parts either way, MB told before: %d, told %d", got, told)
	}
	if _, _, err := planPartSize(10, 5, 5, 0, 0); err == nil {
		t.Error("no URLs accepted")
	}
}

func TestReadRange(t *testing.T) {
	f := newFakeService(t)
	data := randomBytes(100_000)
	f.objs["obj"] = data
	c := f.client()
	u := f.presign("obj")
	ctx := context.Background()

	read := func(off, n int64) ([]byte, error) {
		rc, err := c.ReadRange(ctx, u, off, n)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	if b, err := read(10, 100); err != nil || !bytes.Equal(b, data[10:110]) {
		t.Fatal(len(b), err)
	}
	if b, err := read(99_990, 100); err != nil || !bytes.Equal(b, data[99_990:]) {
		t.Fatal(len(b), err) // clipped at the end of the object
	}
	if b, err := read(0, -1); err != nil || !bytes.Equal(b, data) {
		t.Fatal(len(b), err)
	}
	retries := c.Stats().Ops[opObjectGet].Retries
	if _, err := read(100_000, 10); !errorsIs(err, io.EOF) || !errorsIs(err, ErrRangeNotSatisfiable) || Temporary(err) {
		t.Fatal(err)
	}
	if c.Stats().Ops[opObjectGet].Retries != retries {
		t.Fatal("416 retried")
	}
	// A broken stream is resumed where it stopped.
	f.breakGet.Store(1)
	before := c.Stats().Ops[opObjectGet].Requests
	if b, err := read(1000, 50_000); err != nil || !bytes.Equal(b, data[1000:51_000]) {
		t.Fatal(len(b), err)
	}
	if f.breakGet.Load() != 0 || c.Stats().Ops[opObjectGet].Requests != before+2 {
		t.Fatal("the stream was not broken and resumed")
	}
	// ReadRangeAt: ReaderAt semantics.
	w := &writerAt{}
	if n, err := c.ReadRangeAt(ctx, u, w, 99_000, 5000); n != 1000 || !errorsIs(err, io.EOF) || !bytes.Equal(w.bytes()[99_000:], data[99_000:]) {
		t.Fatal(n, err)
	}
	// An expired URL: a typed error, without the query.
	f.expired.Store(1)
	_, err := read(0, 10)
	if !IsURLExpired(err) || strings.Contains(err.Error(), "SIGSECRET") || !strings.Contains(err.Error(), "Request has expired") {
		t.Fatal(err)
	}
	if f.authSeen.Load() != 0 {
		t.Fatal("Authorization sent to the object store")
	}
}

// ProbeRange tells a store that honours Range (206) from one that sends the
// whole object (200), and gives the bytes asked for either way.
func TestProbeRangeTellsAWholeObject(t *testing.T) {
	data := randomBytes(10_000)
	for _, honour := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !honour {
				r.Header.Del("Range")
			}
			http.ServeContent(w, r, "obj", time.Time{}, bytes.NewReader(data))
		}))
		c, err := New(Credentials{Endpoint: srv.URL, Key: testKey, Secret: testSecret}, Options{Logger: logging.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.ProbeRange(context.Background(), srv.URL+"/obj?X-Sig=1", 1000, 100)
		srv.Close()
		if err != nil || p.Partial != honour || p.Total != int64(len(data)) || !bytes.Equal(p.Data, data[1000:1100]) {
			t.Fatalf("Range honoured %v: %+v %v", honour, p, err)
		}
	}
}

// DownloadTo renews an expired URL through FileURL.
func TestDownloadToRenewsURL(t *testing.T) {
	f := newFakeService(t)
	data := randomBytes(3 * mib)
	f.objs["files/7"] = data
	c := f.client()
	f.expired.Store(1)
	w := &writerAt{}
	n, err := c.DownloadTo(context.Background(), DownloadToRequest{URL: f.presign("files/7"), FileID: 7, Dst: w, BlockSize: mib})
	if err != nil || n != int64(len(data)) || !bytes.Equal(w.bytes(), data) {
		t.Fatal(n, err)
	}
	// Without a file id the expiry is returned.
	f.expired.Store(1)
	if _, err := c.DownloadTo(context.Background(), DownloadToRequest{URL: f.presign("files/7"), Dst: &writerAt{}, Size: int64(len(data))}); !IsURLExpired(err) {
		t.Fatal(err)
	}
}

func TestBundle(t *testing.T) {
	f := newFakeService(t)
	f.objs["zips/55"] = []byte("PK\x03\x04 zip bytes")
	f.jobStatus = []string{"pending", "processing", "uploaded"}
	c := f.client()
	rc, job, err := c.Bundle(context.Background(), BundleRequest{DirectoryID: 3, PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(b) != "PK\x03\x04 zip bytes" || job.ID != 55 || job.Status != DownloadUploaded {
		t.Fatal(string(b), err, job)
	}

	// Failed job.
	f.mu.Lock()
	f.jobPolls, f.jobStatus = 0, []string{"processing", "failed"}
	f.mu.Unlock()
	if _, _, err := c.Bundle(context.Background(), BundleRequest{DirectoryID: 3, PollInterval: time.Millisecond}); !errorsIs(err, ErrDownloadFailed) {
		t.Fatal(err)
	}

	// Cancelled while processing: aborted with DELETE.
	f.mu.Lock()
	f.jobPolls, f.jobStatus = 0, nil
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := c.Bundle(ctx, BundleRequest{DirectoryID: 3, PollInterval: 5 * time.Millisecond}); !errorsIs(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.aborted) != 1 || f.aborted[0] != 55 {
		t.Fatalf("aborted %v", f.aborted)
	}
}

// writerAt is an in-memory io.WriterAt.
type writerAt struct {
	mu  sync.Mutex
	buf []byte
}

func (w *writerAt) WriteAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if end := off + int64(len(p)); end > int64(len(w.buf)) {
		w.buf = append(w.buf, make([]byte, end-int64(len(w.buf)))...)
	}
	copy(w.buf[off:], p)
	return len(p), nil
}

func (w *writerAt) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf...)
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
