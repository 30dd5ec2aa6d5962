package emulator_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
)

// TestClockOffset: with Options.ClockOffset the emulator's clock runs that
// far off the machine's: a signature of the machine's time is refused, one
// of the emulator's accepted, and every answer (a refusal too) tells the
// emulator's time in its envelope and its Date header.
func TestClockOffset(t *testing.T) {
	const offset = 10 * time.Minute
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, ClockOffset: offset})
	creds := srv.Credentials()[0]
	get := func(at time.Time) (int, time.Time, time.Time) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.APIURL+emulator.Prefix+"/usage", nil)
		ts := strconv.FormatInt(at.UnixMilli(), 10)
		req.Header.Set("Authorization", api.AuthorizationHeader(creds.Key, creds.Secret, "GET", emulator.Prefix+"/usage", ts, emutest.Nonce(), nil))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env struct {
			Timestamp time.Time `json:"timestamp"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
			t.Fatal(err)
		}
		date, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			t.Fatalf("Date %q: %v", resp.Header.Get("Date"), err)
		}
		return resp.StatusCode, env.Timestamp, date
	}
	near := func(what string, got time.Time) {
		t.Helper()
		if d := got.Sub(time.Now().Add(offset)); d.Abs() > 2*time.Second {
			t.Errorf("%s %v is %v off the emulator's clock", what, got, d)
		}
	}
	status, stamp, date := get(time.Now())
	if status != 401 {
		t.Errorf("signed with the machine's clock: %d, want 401", status)
	}
	near("the refusal's timestamp", stamp)
	near("the refusal's Date", date)
	status, stamp, date = get(time.Now().Add(offset))
	if status != 200 {
		t.Errorf("signed with the emulator's clock: %d, want 200", status)
	}
	near("the answer's timestamp", stamp)
	near("the answer's Date", date)
}
