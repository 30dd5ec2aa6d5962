package emulator

import (
	"encoding/json"
	"net/http"
)

// StatsPath serves the emulator's counters (Stats) as JSON, unsigned, beside
// the API of a listening emulator: benchmarks and scripts that run the
// emulator as its own process read how many requests a run made. It is the
// emulator's, not part of the service's interface.
const StatsPath = "/_emulator/stats"

func (e *Emulator) serveStats(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(e.Stats())
}
