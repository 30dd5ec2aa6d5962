package emulator_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
)

// raw sends a request with an explicit Authorization header.
func raw(t *testing.T, v *env, method, path, auth string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, v.srv.APIURL+emulator.Prefix+path, bytes.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAuthRefusals(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	creds := v.a.Creds
	ms := func(d time.Duration) string { return strconv.FormatInt(v.clock.Now().Add(d).UnixMilli(), 10) }
	path := emulator.Prefix + "/files"
	good := func(nonce, ts string) string {
		return api.AuthorizationHeader(creds.Key, creds.Secret, "GET", path, ts, nonce, nil)
	}
	tests := []struct {
		name string
		auth string
	}{
		{"missing header", ""},
		{"malformed", "Bearer abc"},
		{"three parts", "HMAC a:b:c"},
		{"unknown key", api.AuthorizationHeader("nobody", creds.Secret, "GET", path, ms(0), emutest.Nonce(), nil)},
		{"wrong secret", api.AuthorizationHeader(creds.Key, "not-the-secret", "GET", path, ms(0), emutest.Nonce(), nil)},
		{"wrong method signed", api.AuthorizationHeader(creds.Key, creds.Secret, "POST", path, ms(0), emutest.Nonce(), nil)},
		{"wrong path signed", api.AuthorizationHeader(creds.Key, creds.Secret, "GET", path+"/recordings", ms(0), emutest.Nonce(), nil)},
		{"body signed but not sent", api.AuthorizationHeader(creds.Key, creds.Secret, "GET", path, ms(0), emutest.Nonce(), []byte("{}"))},
		{"stale timestamp", good(emutest.Nonce(), ms(-6*time.Minute))},
		{"future timestamp", good(emutest.Nonce(), ms(6*time.Minute))},
		{"other org's secret", api.AuthorizationHeader(creds.Key, v.b.Creds.Secret, "GET", path, ms(0), emutest.Nonce(), nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := raw(t, v, "GET", "/files", tt.auth, nil)
			if status != 401 || !strings.Contains(body, `"client_code":401`) || !strings.Contains(body, `"message"`) {
				t.Fatalf("got %d %s, want 401", status, body)
			}
			if strings.Contains(body, creds.Secret) {
				t.Fatalf("answer leaks the secret: %s", body)
			}
		})
	}

	t.Run("within the window", func(t *testing.T) {
		if status, body := raw(t, v, "GET", "/files", good(emutest.Nonce(), ms(-4*time.Minute)), nil); status != 200 {
			t.Fatalf("got %d %s", status, body)
		}
	})
	t.Run("query string not signed", func(t *testing.T) {
		if status, body := raw(t, v, "GET", "/files?page=1&per_page=5", good(emutest.Nonce(), ms(0)), nil); status != 200 {
			t.Fatalf("got %d %s", status, body)
		}
	})
	t.Run("replayed nonce", func(t *testing.T) {
		h := good(emutest.Nonce(), ms(0))
		if status, body := raw(t, v, "GET", "/files", h, nil); status != 200 {
			t.Fatalf("first use: %d %s", status, body)
		}
		if status, body := raw(t, v, "GET", "/files", h, nil); status != 401 || !strings.Contains(body, "nonce") {
			t.Fatalf("replay: %d %s", status, body)
		}
	})
	t.Run("signed body must be the exact bytes", func(t *testing.T) {
		body := []byte(`{"file_name":"x","object_type":"directory"}`)
		h := api.AuthorizationHeader(creds.Key, creds.Secret, "POST", path, ms(0), emutest.Nonce(), body)
		if status, b := raw(t, v, "POST", "/files", h, []byte(`{"file_name":"y","object_type":"directory"}`)); status != 401 {
			t.Fatalf("altered body: %d %s", status, b)
		}
		h = api.AuthorizationHeader(creds.Key, creds.Secret, "POST", path, ms(0), emutest.Nonce(), body)
		if status, b := raw(t, v, "POST", "/files", h, body); status != 200 {
			t.Fatalf("exact body: %d %s", status, b)
		}
	})
}

func TestOrganizationScoping(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	fa, fb := v.e.Fixtures(emulator.OrgA), v.e.Fixtures(emulator.OrgB)
	dir := v.mkdir(v.a, 0, 0, "private")
	file := v.upload(v.a, 0, 0, "secret.txt", []byte("hello"), 5, false)
	rootB, _ := v.e.RootID(emulator.OrgB, 0)
	for _, p := range []struct{ method, path string }{
		{"GET", fmt.Sprintf("/files?parent_id=%d", dir)},
		{"GET", fmt.Sprintf("/files/%d/download", file)},
		{"DELETE", fmt.Sprintf("/files/%d", file)},
		{"GET", fmt.Sprintf("/machines/%d/files", fa.StoppedMachine)},
		{"POST", fmt.Sprintf("/machines/%d/start", fa.StoppedMachine)},
		{"GET", fmt.Sprintf("/usage/machines/%d", fa.StoppedMachine)},
		{"GET", fmt.Sprintf("/usage/machines/%d", fa.SeatlessMachine)},
	} {
		v.call(v.b, 404, p.method, p.path, nil)
	}
	v.call(v.b, 404, "POST", "/files/download", map[string]any{"file_ids": []int64{file}})
	v.call(v.b, 404, "POST", "/usage/assign", map[string]any{"machine_id": fa.StoppedMachine, "minutes": 1})
	v.call(v.b, 404, "POST", "/files", map[string]any{"file_name": "x", "object_type": "directory", "parent_id": dir})
	v.call(v.b, 404, "POST", fmt.Sprintf("/files/%d/complete", file), map[string]any{"parts": []any{}})
	v.call(v.a, 404, "GET", fmt.Sprintf("/files?parent_id=%d", rootB), nil)
	// The owner still sees everything.
	v.ok(v.a, "GET", fmt.Sprintf("/files?parent_id=%d", dir), nil)
	v.ok(v.b, "GET", fmt.Sprintf("/usage/machines/%d", fb.StoppedMachine), nil)
	// Ids are unique across both organizations.
	if fa.StoppedMachine == fb.StoppedMachine || fa.SeatlessMachine == fb.SeatlessMachine {
		t.Fatalf("ids shared between organizations: %+v %+v", fa, fb)
	}
}

func TestRoutingAndEnvelope(t *testing.T) {
	v := start(t, emulator.SeedEmpty)
	v.call(v.a, 404, "GET", "/no-such-thing", nil)
	v.call(v.a, 404, "PUT", "/files", nil)
	v.call(v.a, 400, "POST", "/files", "{not json")
	v.call(v.a, 400, "POST", "/files", map[string]any{"file_name": 12, "object_type": "file"})
	v.call(v.a, 400, "GET", "/files?page=x", nil)
	v.call(v.a, 400, "GET", "/images/abc", nil)
	r := v.ok(v.a, "GET", "/usage", nil)
	if r["message"] != "OK" {
		t.Fatalf("message %v", r["message"])
	}
	if _, err := time.Parse(time.RFC3339, r["timestamp"].(string)); err != nil {
		t.Fatalf("timestamp %v: %v", r["timestamp"], err)
	}
	// Every route answers its envelope through both computer path forms.
	fa := v.e.Fixtures(emulator.OrgA)
	for _, base := range []string{"/machines", "/seats"} {
		v.ok(v.a, "GET", fmt.Sprintf("%s/%d/available-machine-types", base, fa.StoppedMachine), nil)
		v.ok(v.a, "GET", fmt.Sprintf("%s/%d/files", base, fa.StoppedMachine), nil)
	}
	st := v.e.Stats()
	if st.Requests["GET /usage"] != 1 || st.Requests["POST /files"] != 2 || st.Requests["GET /machines/{id}/files"] != 1 {
		t.Fatalf("stats: %v", st.Requests)
	}
}
