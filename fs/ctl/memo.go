package ctl

// The memo: the service's answers that control files share (the image list,
// a computer's usage, machine types, live/ listings), kept for the listing
// cache time, a value in motion a second only.
//
// Locks: memo.mu, a leaf, for memory only; never held across a fetch.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// memo keeps the service's answers the control files share (the image
// list, a computer's usage) for the listing cache time; a fetch is shared by
// every caller asking at once.
type memo struct {
	ttl time.Duration
	sf  singleflight.Group

	mu  sync.Mutex
	gen uint64 // guarded by mu; bumped by drop, so a fetch begun before it is not kept
	m   map[string]memoEntry
}

type memoEntry struct {
	v     any
	at    time.Time
	brief bool // a value in motion (a computer starting, an image building): kept a second only
}

// briefTTL is how long a value in motion is kept, so that scripts waiting
// for a state see it when it comes.
const briefTTL = time.Second

func (m *memo) get(ctx context.Context, key string, fetch func(ctx context.Context) (any, error)) (any, error) {
	m.mu.Lock()
	if e, ok := m.m[key]; ok && time.Since(e.at) < m.ttl && (!e.brief || time.Since(e.at) < briefTTL) {
		m.mu.Unlock()
		return e.v, nil
	}
	gen := m.gen
	m.mu.Unlock()
	v, err, _ := m.sf.Do(fmt.Sprint(key, "\x00", gen), func() (any, error) {
		v, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		if m.gen == gen {
			b, _ := v.(interface{ moving() bool })
			m.m[key] = memoEntry{v: v, at: time.Now(), brief: b != nil && b.moving()}
		}
		m.mu.Unlock()
		return v, nil
	})
	return v, err
}

func (m *memo) drop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.m = map[string]memoEntry{}
}

// memoGet is memo.get with the value's type.
func memoGet[T any](ctx context.Context, m *memo, key string, fetch func(ctx context.Context) (T, error)) (T, error) {
	v, err := m.get(ctx, key, func(ctx context.Context) (any, error) { return fetch(ctx) })
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}
