package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orgfs/orgfs/internal/emulator/faults"
)

// call is one authenticated API request on its way through a handler.
type call struct {
	e     *Emulator
	ctx   context.Context
	r     *http.Request
	org   *org
	body  []byte
	now   time.Time
	route string

	// set by the handler
	handled bool
	result  any
	err     error
}

// apiFunc is an endpoint: it returns the resource fields of the answer (a
// struct or a map, merged with the envelope at the top level) or an error
// (*apiError for a refusal).
type apiFunc func(c *call) (any, error)

type callKey struct{}

// apiHandler runs the per-request pipeline: latency, faults, authentication,
// injected errors, routing, the answer, statistics and the debug log.
type apiHandler struct {
	e      *Emulator
	mux    *http.ServeMux
	routes map[string]bool // "GET /files", ...
}

// newHandler registers every route of the interface.
func (e *Emulator) newHandler() *apiHandler {
	h := &apiHandler{e: e, mux: http.NewServeMux(), routes: map[string]bool{}}
	h.locked("GET", "/usage", e.getUsage)
	h.locked("GET", "/usage/machines", e.getUsageMachines)
	h.locked("GET", "/usage/machines/{id}", e.getUsageMachine)
	h.locked("POST", "/usage/assign", e.postUsageAssign)
	h.locked("POST", "/usage/retrieve", e.postUsageRetrieve)

	h.locked("GET", "/images", e.getImages)
	if !e.dialect.NoGetImage {
		h.locked("GET", "/images/{id}", e.getImage)
	}
	h.locked("POST", "/images", e.postImage)
	h.locked("POST", "/images/install", e.postImageInstall)
	h.locked("POST", "/images/{id}/assign", e.postImageAssign)
	h.locked("DELETE", "/images/{id}", e.deleteImage)

	h.locked("GET", "/software", e.getSoftware)

	h.registerComputers()
	h.registerFiles()

	h.locked("GET", "/user-action-logs", e.getLogs)

	h.mux.Handle("/", h.adapt(func(c *call) (any, error) {
		return nil, errf(404, "no route %s %s", c.r.Method, strings.TrimPrefix(c.r.URL.Path, Prefix))
	}))
	return h
}

// locked registers a route whose handler runs with e.mu held and every state
// machine advanced.
func (h *apiHandler) locked(method, path string, f apiFunc) {
	e := h.e
	h.register(method, path, func(c *call) (any, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.tick(c.now)
		return f(c)
	})
}

// registerComputers registers the routes of computers: /seats and the
// per-computer routes.
func (h *apiHandler) registerComputers() {
	e := h.e
	h.locked("POST", "/seats", e.postSeats)
	h.locked("GET", "/seats", e.getSeats)
	// Both forms of every per-computer route are served (service-notes),
	// unless the dialect keeps one (dialect.go).
	both, others := e.dialect.computerBases()
	for _, base := range others {
		h.locked("POST", base+"/start", e.postStart)
		h.locked("POST", base+"/stop", e.postStop)
		h.locked("POST", base+"/access", e.postAccess)
		h.locked("POST", base+"/reset", e.postReset)
		h.locked("GET", base+"/available-machine-types", e.getMachineTypes)
		h.locked("POST", base+"/machine-type", e.postMachineType)
	}
	for _, base := range both {
		h.locked("POST", base+"/list-content", e.postListContent)
		h.locked("GET", base+"/files", e.getMachineFiles)
	}
}

// registerFiles registers the routes of files: listings, uploads, deletion
// and downloads.
func (h *apiHandler) registerFiles() {
	e := h.e
	h.locked("GET", "/files", e.getFiles)
	h.locked("GET", "/files/recordings", e.getRecordings)
	h.locked("POST", "/files", e.postFiles)
	// unlocked: the handler does object-store I/O and takes e.mu itself.
	h.register("POST", "/files/{id}/complete", e.postComplete)
	h.locked("DELETE", "/files/{id}", e.deleteFile)
	h.locked("POST", "/files/download", e.postDownload)
	h.locked("DELETE", "/files/downloads/{id}", e.deleteDownload)
	// GET /files/{id}/download and GET /files/downloads/{id} overlap as
	// ServeMux patterns (/files/downloads/download matches both), so one
	// pattern serves both and routeName tells them apart.
	h.routes["GET /files/{id}/download"] = true
	h.routes["GET /files/downloads/{id}"] = true
	h.mux.Handle("GET "+Prefix+"/files/{a}/{b}", h.adapt(func(c *call) (any, error) {
		switch c.route {
		case "GET /files/downloads/{id}":
			return e.getDownloadJob(c)
		case "GET /files/{id}/download":
			e.mu.Lock()
			defer e.mu.Unlock()
			e.tick(c.now)
			return e.getFileDownload(c)
		}
		return nil, errf(404, "no route %s %s", c.r.Method, strings.TrimPrefix(c.r.URL.Path, Prefix))
	}))
}

func (h *apiHandler) register(method, path string, f apiFunc) {
	h.routes[method+" "+path] = true
	h.mux.Handle(method+" "+Prefix+path, h.adapt(f))
}

// adapt runs f on the request's call, keeping its outcome in the call.
func (h *apiHandler) adapt(f apiFunc) http.Handler {
	return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(callKey{}).(*call)
		c.r = r
		c.handled = true
		c.result, c.err = f(c)
	})
}

// routeName names the route a request takes: "METHOD /path/{id}", or
// "unknown".
func (h *apiHandler) routeName(r *http.Request) string {
	if !strings.HasPrefix(r.URL.Path, Prefix+"/") {
		return "unknown"
	}
	_, pattern := h.mux.Handler(r)
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return "unknown"
	}
	path = strings.TrimPrefix(path, Prefix)
	if path == "/files/{a}/{b}" {
		segs := strings.Split(strings.TrimPrefix(r.URL.Path, Prefix+"/"), "/")
		switch {
		case len(segs) == 3 && segs[1] == "downloads":
			return "GET /files/downloads/{id}"
		case len(segs) == 3 && segs[2] == "download":
			return "GET /files/{id}/download"
		}
		return "unknown"
	}
	return method + " " + path
}

// ServeHTTP sleeps Latency, rolls a fault (500/503 answer before anything
// runs; Drop runs the request and closes the connection without an answer),
// authenticates, applies injected errors, runs the route and answers JSON.
func (h *apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := h.e
	start := time.Now()
	if d := e.net.apiLatency(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	route := h.routeName(r)
	fault := e.faults.Roll(faults.Status500, faults.Status503, faults.Drop)
	now := e.now()

	status, payload, drop := h.answer(r, route, fault, now)

	e.mu.Lock()
	e.stats.count(route, payload.code(), fault)
	if changesState(r.Method, route) {
		e.changed()
	}
	e.mu.Unlock()

	if fault == faults.Drop || drop {
		// Executed; the answer is dropped.
		e.log.WithFields(map[string]any{"method": r.Method, "route": route, "dropped": true,
			"client_code": payload.code(), "duration": time.Since(start)}).Debug("api request")
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if code := payload.code(); code != 200 && code != 0 {
		status = e.dialect.errorStatus(code)
	}
	status, b, err := e.dialect.render(status, payload)
	if err != nil {
		e.log.WithError(err).Error("encoding an answer")
		status = 500
		b = []byte(`{"client_code":500,"message":"encoding the answer failed","timestamp":"` + isoTime(now) + `"}`)
	}
	if b != nil {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
	e.log.WithFields(map[string]any{"method": r.Method, "route": route, "status": status,
		"client_code": payload.code(), "duration": time.Since(start)}).Debug("api request")
}

// changesState reports whether a request of route may change the state that
// is saved: every method but GET, and the GETs that log (a file's download
// URL) or build (a download job's ZIP).
func changesState(method, route string) bool {
	return method != http.MethodGet && method != http.MethodHead ||
		route == "GET /files/{id}/download" || route == "GET /files/downloads/{id}"
}

// answer computes the HTTP status and the JSON object of the answer.
// drop is set when InjectDrop asks for the answer to be dropped.
func (h *apiHandler) answer(r *http.Request, route string, fault faults.Kind, now time.Time) (status int, payload envelope, drop bool) {
	status, payload = h.execute(r, route, fault, now, &drop)
	return status, payload, drop
}

// execute runs the request (unless a fault or an injected error answers
// first) and returns its HTTP status and body.
func (h *apiHandler) execute(r *http.Request, route string, fault faults.Kind, now time.Time, drop *bool) (int, envelope) {
	e := h.e
	switch fault {
	case faults.Status500:
		return 500, errorEnvelope(errf(500, "internal server error (injected)"), now)
	case faults.Status503:
		return 503, errorEnvelope(errf(503, "service unavailable (injected)"), now)
	}
	if !strings.HasPrefix(r.URL.Path, Prefix+"/") {
		return 404, errorEnvelope(errf(404, "no route %s %s", r.Method, r.URL.Path), now)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return 400, errorEnvelope(badRequest("reading the body: %v", err), now)
	}
	if len(body) > maxBodyBytes {
		return 400, errorEnvelope(badRequest("body larger than %d bytes", maxBodyBytes), now)
	}
	e.mu.Lock()
	o, aerr := e.authenticate(r, body, now)
	var injected int
	if aerr == nil {
		if codes := e.injected[route]; len(codes) > 0 {
			injected = codes[0]
			e.injected[route] = codes[1:]
			e.stats.injected++
		}
		if injected == 0 && e.drops[route] > 0 {
			e.drops[route]--
			e.stats.injected++
			*drop = true
		}
	}
	e.mu.Unlock()
	if aerr != nil {
		return aerr.status(), errorEnvelope(aerr, now)
	}
	if injected != 0 {
		ae := errf(injected, "%s (injected)", defaultMessage(injected))
		return ae.status(), errorEnvelope(ae, now)
	}
	c := &call{e: e, org: o, body: body, now: now, route: route}
	ctx := context.WithValue(r.Context(), callKey{}, c)
	c.ctx = ctx
	r2 := r.WithContext(ctx)
	r2.Body = io.NopCloser(bytes.NewReader(body))
	h.mux.ServeHTTP(discardWriter{}, r2)
	if !c.handled { // the mux redirected (an unclean path)
		return 404, errorEnvelope(errf(404, "no route %s %s", r.Method, r.URL.Path), now)
	}
	if c.err != nil {
		var ae *apiError
		if !errors.As(c.err, &ae) {
			e.log.WithError(c.err).WithField("route", route).Error("internal error")
			ae = errf(500, "internal error")
		}
		return ae.status(), errorEnvelope(ae, now)
	}
	env, err := successEnvelope(c.result, now)
	if err != nil {
		e.log.WithError(err).WithField("route", route).Error("encoding a result")
		return 500, errorEnvelope(errf(500, "internal error"), now)
	}
	return 200, env
}

// envelope is an answer body: the envelope fields and the resource fields at
// the top level.
type envelope map[string]any

func (v envelope) code() int {
	if c, ok := v["client_code"].(int); ok {
		return c
	}
	return 0
}

func errorEnvelope(ae *apiError, now time.Time) envelope {
	return envelope{"client_code": ae.code, "message": ae.msg, "timestamp": isoTime(now)}
}

// successEnvelope merges the resource fields of result (a struct or map
// encoding to a JSON object, or nil) with the envelope.
func successEnvelope(result any, now time.Time) (envelope, error) {
	env := envelope{}
	if result != nil {
		b, err := json.Marshal(result)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("result is not a JSON object: %w", err)
		}
		for k, v := range m {
			env[k] = v
		}
	}
	env["client_code"] = 200
	env["message"] = "OK"
	env["timestamp"] = isoTime(now)
	return env, nil
}

// discardWriter is the ResponseWriter handed to the mux: handlers leave their
// outcome in the call, never write.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

// Request helpers.

// decode unmarshals the JSON body into v; an empty body leaves v as it is.
// Malformed JSON and wrong types answer 400.
func (c *call) decode(v any) error {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(c.body))
	if err := d.Decode(v); err != nil {
		return badRequest("invalid JSON body: %v", err)
	}
	if d.More() {
		return badRequest("invalid JSON body: trailing data")
	}
	return nil
}

// pathID is an integer path value; anything else answers 400.
func (c *call) pathID(name string) (int64, error) {
	s := c.r.PathValue(name)
	if s == "" && c.route != "" {
		// The shared GET /files/{a}/{b} pattern.
		segs := strings.Split(strings.TrimPrefix(c.r.URL.Path, Prefix+"/"), "/")
		if len(segs) == 3 {
			if segs[1] == "downloads" {
				s = segs[2]
			} else {
				s = segs[1]
			}
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badRequest("invalid id %q", s)
	}
	return id, nil
}

// queryInt reads an integer query parameter; present is false when absent or empty.
func (c *call) queryInt(name string) (v int64, present bool, err error) {
	s := c.r.URL.Query().Get(name)
	if s == "" {
		return 0, false, nil
	}
	v, perr := strconv.ParseInt(s, 10, 64)
	if perr != nil {
		return 0, false, badRequest("invalid %s %q: not an integer", name, s)
	}
	return v, true, nil
}

// pageParams reads page (default 1) and per_page (default def, clamped to
// 1000, or to 100 in the dialect per-page-100).
func (c *call) pageParams(def int) (page, perPage int, err error) {
	p, ok, err := c.queryInt("page")
	if err != nil {
		return 0, 0, err
	}
	page = 1
	if ok {
		if p < 1 {
			return 0, 0, badRequest("page must be at least 1")
		}
		page = int(min(p, 1<<31))
	}
	pp, ok, err := c.queryInt("per_page")
	if err != nil {
		return 0, 0, err
	}
	perPage = def
	if ok {
		if pp < 1 {
			return 0, 0, badRequest("per_page must be at least 1")
		}
		perPage = int(min(pp, int64(c.e.dialect.perPageMax())))
	}
	return page, perPage, nil
}

// paginate slices one page of items; next is the next page number or nil on
// the last page.
func paginate[T any](items []T, page, perPage int) (out []T, next any) {
	start := (page - 1) * perPage
	if start > len(items) || start < 0 {
		start = len(items)
	}
	end := min(start+perPage, len(items))
	out = items[start:end]
	if out == nil {
		out = []T{}
	}
	if end < len(items) {
		next = page + 1
	}
	return out, next
}

// containsFold reports whether name contains q, case-insensitively.
func containsFold(name, q string) bool {
	return strings.Contains(strings.ToLower(name), strings.ToLower(q))
}

// Faults and injected answers.

// SetFaultRate changes the fault rate of the API and of the object store.
func (e *Emulator) SetFaultRate(rate float64) {
	e.faults.SetRate(rate)
	e.objFaults.SetRate(rate)
}

// Routes lists the route names InjectError and Stats use, sorted.
func (e *Emulator) Routes() []string {
	h := e.handler.(*apiHandler)
	out := make([]string, 0, len(h.routes))
	for r := range h.routes {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// InjectError makes the next n authenticated requests of route answer code
// (with its usual HTTP status) without executing anything. route is
// "METHOD /path" with every path id written {id}, as Routes lists them, e.g.
// "POST /usage/assign", "GET /files/{id}/download", "POST /machines/{id}/start".
// It panics on a route the emulator does not serve.
func (e *Emulator) InjectError(route string, code int, n int) {
	h := e.handler.(*apiHandler)
	if !h.routes[route] {
		panic(fmt.Sprintf("emulator: InjectError: no route %q", route))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for range n {
		e.injected[route] = append(e.injected[route], code)
	}
}

// InjectDrop makes the next n authenticated requests of route execute fully
// and then lose their answer: the connection is closed without a response
// (as the Drop fault does). route is named as for InjectError. It panics on a
// route the emulator does not serve.
func (e *Emulator) InjectDrop(route string, n int) {
	h := e.handler.(*apiHandler)
	if !h.routes[route] {
		panic(fmt.Sprintf("emulator: InjectDrop: no route %q", route))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drops[route] += n
}
