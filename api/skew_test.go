package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// skewClient is a client of org-a whose log goes to the returned buffer.
func skewClient(t *testing.T, srv *emulator.Server) (*api.Client, *testkit.SyncBuffer) {
	t.Helper()
	buf := &testkit.SyncBuffer{}
	log := logrus.New()
	log.SetOutput(buf)
	log.SetLevel(logrus.WarnLevel)
	c, err := api.New(testkit.Creds(t, srv, emulator.OrgA), api.Options{Logger: log, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c, buf
}

// TestClockSkewCorrected: with the service's clock 10 minutes off the desk's
// (either way), the first request is refused for its timestamp, the client
// learns the offset from the refusal and sends it again, once, even for an
// operation never retried otherwise (moving minutes: they move once);
// every later request goes through at the first try; the skew is logged
// once with its size, and ClockSkew tells it.
func TestClockSkewCorrected(t *testing.T) {
	for _, tt := range []struct {
		offset time.Duration
		word   string
	}{{10 * time.Minute, "10m0s behind"}, {-10 * time.Minute, "10m0s ahead of"}} {
		t.Run(tt.offset.String(), func(t *testing.T) {
			ctx := context.Background()
			srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedDemo, ClockOffset: tt.offset, Log: testkit.Quiet()})
			machine := srv.Emulator.Fixtures(emulator.OrgA).StoppedMachine
			reader, _ := skewClient(t, srv)
			before, err := reader.Usage(ctx)
			if err != nil {
				t.Fatalf("the first call of a client on a clock 10 minutes off: %v", err)
			}
			c, log := skewClient(t, srv)
			if _, known := c.ClockSkew(); known {
				t.Fatal("a client that made no request knows the skew")
			}
			refused := srv.Emulator.Stats().Codes[401]
			if _, err := c.AssignUsage(ctx, machine, 5); err != nil {
				t.Fatalf("POST /usage/assign as the first call: %v", err)
			}
			if n := srv.Emulator.Stats().Codes[401] - refused; n != 1 {
				t.Errorf("%d refusals for the first call, want 1 (then signed with the service's time)", n)
			}
			after, err := reader.Usage(ctx)
			if err != nil || before.UsageMinutes-after.UsageMinutes != 5 {
				t.Fatalf("team balance %d then %d (%v): want 5 minutes moved, once", before.UsageMinutes, after.UsageMinutes, err)
			}
			skew, known := c.ClockSkew()
			if !known || (skew-tt.offset).Abs() > 2*time.Second {
				t.Errorf("ClockSkew %v (known %v), want about %v", skew, known, tt.offset)
			}
			refused = srv.Emulator.Stats().Codes[401]
			for range 3 {
				if _, err := c.Software(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if n := srv.Emulator.Stats().Codes[401] - refused; n != 0 {
				t.Errorf("%d refusals once the offset is known", n)
			}
			if n := strings.Count(log.String(), "clock is off"); n != 1 || !strings.Contains(log.String(), tt.word) {
				t.Errorf("want one warning of the skew, saying %q; the log:\n%s", tt.word, log)
			}
		})
	}
}

// TestClockSkewFollowsTheService: the offset is kept up to date from every
// answer, not only learned from refusals: a service clock that moves 3
// minutes between calls, twice, never gets a request refused (without the
// updates the third call would be signed 6 minutes off).
func TestClockSkewFollowsTheService(t *testing.T) {
	ctx := context.Background()
	clock := emutest.NewClock(time.Now().Add(10 * time.Minute))
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, Now: clock.Now, Log: testkit.Quiet()})
	c, _ := skewClient(t, srv)
	if _, err := c.Usage(ctx); err != nil {
		t.Fatal(err)
	}
	refused := srv.Emulator.Stats().Codes[401]
	for i, want := range []time.Duration{13 * time.Minute, 16 * time.Minute} {
		clock.Advance(3 * time.Minute)
		if _, err := c.Usage(ctx); err != nil {
			t.Fatalf("call %d: %v", i+2, err)
		}
		if skew, _ := c.ClockSkew(); (skew - want).Abs() > 2*time.Second {
			t.Errorf("after call %d ClockSkew is %v, want about %v", i+2, skew, want)
		}
	}
	if n := srv.Emulator.Stats().Codes[401] - refused; n != 0 {
		t.Errorf("%d refusals while the service's clock moved within the window", n)
	}
}
