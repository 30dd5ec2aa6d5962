// Package faults decides, deterministically from a seed, which requests of the
// emulator misbehave: a 500 or 503 answer, a connection reset in the middle of a
// body, or a request that is executed but whose answer is dropped.
package faults

import (
	"math/rand"
	"sync"
)

// Kind is one way a request can fail.
type Kind int

const (
	// None: the request is served normally.
	None Kind = iota
	// Status500: answered 500 before anything is executed.
	Status500
	// Status503: answered 503 before anything is executed.
	Status503
	// Reset: the connection is cut in the middle of the body (object transfers).
	Reset
	// Drop: the request is executed, then the connection is closed without an answer.
	Drop
)

func (k Kind) String() string {
	return [...]string{"none", "500", "503", "reset", "drop"}[k]
}

// Injector rolls faults at a rate. The zero value and a nil *Injector inject nothing.
type Injector struct {
	mu     sync.Mutex
	rate   float64    // guarded by mu
	rng    *rand.Rand // guarded by mu
	counts [5]int64   // guarded by mu
}

// New returns an injector that fails a fraction rate (0..1) of requests,
// deterministically for a given seed.
func New(rate float64, seed int64) *Injector {
	return &Injector{rate: rate, rng: rand.New(rand.NewSource(seed))}
}

// SetRate changes the fault rate (tests turn faults on and off).
// Rate returns the fault rate in force.
func (f *Injector) Rate() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rate
}

func (f *Injector) SetRate(rate float64) {
	f.mu.Lock()
	f.rate = rate
	f.mu.Unlock()
}

// Roll decides the fate of one request. kinds lists the faults that fit the
// request (an API call cannot be reset mid-body in a useful way, an object
// transfer can); one of them is picked uniformly when the roll fails.
func (f *Injector) Roll(kinds ...Kind) Kind {
	if f == nil || len(kinds) == 0 {
		return None
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng == nil || f.rate <= 0 || f.rng.Float64() >= f.rate {
		return None
	}
	k := kinds[f.rng.Intn(len(kinds))]
	f.counts[k]++
	return k
}

// Intn gives a deterministic random number in [0,n) from the same source
// (where in a body to cut a connection, say).
func (f *Injector) Intn(n int) int {
	if f == nil || n <= 0 {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng == nil {
		return 0
	}
	return f.rng.Intn(n)
}

// Count reports how many faults of a kind were injected.
func (f *Injector) Count(k Kind) int64 {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[k]
}
