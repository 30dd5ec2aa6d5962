package emulator

// The emulator's counters (Stats) and the unsigned endpoint that serves them
// (StatsPath).

import (
	"encoding/json"
	"net/http"

	"github.com/orgfs/orgfs/internal/emulator/faults"
	"github.com/orgfs/orgfs/internal/emulator/objstore"
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

// Stats are the emulator's counters.
type Stats struct {
	Requests map[string]int64 // API requests by route ("GET /files", "POST /files/download", ...; "unknown")
	Codes    map[int]int64    // API answers by client_code (dropped answers included)
	Faults   map[string]int64 // API faults injected by kind ("500", "503", "drop")
	Injected int64            // answers forced by InjectError or dropped by InjectDrop
	Objects  objstore.Stats   // the object store's counters
}

type statsCounters struct {
	requests map[string]int64
	codes    map[int]int64
	faults   map[string]int64
	injected int64
}

func (s *statsCounters) init() {
	s.requests = map[string]int64{}
	s.codes = map[int]int64{}
	s.faults = map[string]int64{}
}

func (s *statsCounters) count(route string, code int, fault faults.Kind) {
	s.requests[route]++
	s.codes[code]++
	if fault != faults.None {
		s.faults[fault.String()]++
	}
}

// Stats returns a copy of the counters.
func (e *Emulator) Stats() Stats {
	e.mu.Lock()
	st := Stats{Requests: map[string]int64{}, Codes: map[int]int64{}, Faults: map[string]int64{}, Injected: e.stats.injected}
	for k, v := range e.stats.requests {
		st.Requests[k] = v
	}
	for k, v := range e.stats.codes {
		st.Codes[k] = v
	}
	for k, v := range e.stats.faults {
		st.Faults[k] = v
	}
	e.mu.Unlock()
	st.Objects = e.store.Stats()
	return st
}
