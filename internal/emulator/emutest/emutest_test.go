package emutest_test

import (
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
)

// A GET whose answer the emulator drops (it executed the request, consuming
// the nonce, and closed the connection) must show as a lost answer, never as
// an answer to a re-sent copy: Go's transport silently re-sends a bodiless
// GET whose reused keep-alive connection breaks, with the same
// Authorization header, and the emulator refuses that copy as a replayed
// nonce (401).
func TestDroppedGETIsNotResentWithTheSameNonce(t *testing.T) {
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty})
	c := emutest.NewClient(t, srv, emulator.OrgA)
	for i := range 3 {
		// A first request leaves an idle keep-alive connection to reuse.
		if r := c.Must(t, "GET", "/usage", nil); r.Code() != 200 {
			t.Fatalf("round %d: warm-up answered %d %s", i, r.Status, r.Body)
		}
		srv.Emulator.InjectDrop("GET /usage", 1)
		if r, err := c.Do("GET", "/usage", nil); err == nil {
			t.Fatalf("round %d: dropped GET answered %d %s", i, r.Status, r.Body)
		}
	}
	if st := srv.Emulator.Stats(); st.Codes[401] != 0 {
		t.Fatalf("%d requests refused as unauthorized (a re-sent nonce): %v", st.Codes[401], st.Codes)
	}
	if r := c.Must(t, "GET", "/usage", nil); r.Code() != 200 {
		t.Fatalf("after the drops: %d %s", r.Status, r.Body)
	}
}
