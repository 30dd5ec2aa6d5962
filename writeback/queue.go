package writeback

import (
	"slices"
	"time"
)

// Locks: Staging.mu (a leaf, docs/ARCHITECTURE.md): every function here is called with
// it held (the timers' functions take it), and does no I/O but an fstat.

// smallFile is the size up to which a staged file is small. A small file
// waits a tenth of the write-back delay after its last close (sending it
// again, should it change, costs little; a folder of small files goes up
// while it is still being copied), and has more upload workers: its upload
// is three requests' latency, not bandwidth, so Transfers files of any size
// go at once, and small ones beside them up to smallLanes times as many.
const (
	smallFile  = 1 << 20
	smallLanes = 4
)

// sizeLocked is st's local size now (the last seen once it is closed).
func (s *Staging) sizeLocked(st *Staged) int64 {
	if !st.closedFile {
		if fi, err := st.f.Stat(); err == nil {
			st.lastSize = fi.Size()
		}
	}
	return st.lastSize
}

// delayLocked is the write-back delay of st: a tenth for a small file.
func (s *Staging) delayLocked(st *Staged) time.Duration {
	if s.sizeLocked(st) <= smallFile {
		return s.writeBack / 10
	}
	return s.writeBack
}

// waitLocked puts a changed file in the waiting state: queued at once when
// draining or flushed, after the write-back delay when nobody has it open.
func (s *Staging) waitLocked(st *Staged) {
	st.state = stWaiting
	switch {
	case s.closed:
	case s.draining > 0 || st.flushers > 0:
		s.enqueueLocked(st, st.flushers > 0)
	case st.writers == 0:
		s.armLocked(st, s.delayLocked(st))
	default:
		s.stopTimerLocked(st)
	}
}

// armLocked (re)starts st's timer: when it fires, st is queued, unless a
// writer opened it meanwhile (then it waits for the last close).
func (s *Staging) armLocked(st *Staged, d time.Duration) {
	s.stopTimerLocked(st)
	var tm *time.Timer
	tm = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if st.timer != tm || s.closed || st.unstagedLocked() {
			return
		}
		st.timer = nil
		if st.state != stWaiting && st.state != stRetrying {
			return
		}
		if st.writers > 0 && st.flushers == 0 && s.draining == 0 {
			st.state = stWaiting
			return
		}
		s.enqueueLocked(st, false)
	})
	st.timer = tm
}

func (s *Staging) stopTimerLocked(st *Staged) {
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
}

// enqueueLocked queues st (first when front) and wakes the workers.
func (s *Staging) enqueueLocked(st *Staged, front bool) {
	s.stopTimerLocked(st)
	if st.state == stUploading || st.unstagedLocked() || s.closed {
		return
	}
	if st.state == stQueued {
		if front {
			s.moveFrontLocked(st)
		}
		return
	}
	st.state = stQueued
	st.small = s.sizeLocked(st) <= smallFile
	if front {
		s.queue = slices.Insert(s.queue, 0, st)
	} else {
		s.queue = append(s.queue, st)
	}
	s.cond.Broadcast()
}

func (s *Staging) moveFrontLocked(st *Staged) {
	if i := slices.Index(s.queue, st); i > 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
		s.queue = slices.Insert(s.queue, 0, st)
	}
}

func (s *Staging) dequeueLocked(st *Staged) {
	if i := slices.Index(s.queue, st); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// settleLocked wakes the Flush calls waiting on st, and Drain.
func (s *Staging) settleLocked(st *Staged) {
	close(st.settled)
	st.settled = make(chan struct{})
	s.notifyLocked()
}

func (s *Staging) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// takeLocked removes from the queue the first file whose target has no
// upload in flight (uploads to one name never overlap) and, unless small,
// while fewer than Transfers files that are not small upload; or returns nil.
func (s *Staging) takeLocked() *Staged {
	for i, st := range s.queue {
		if s.busy[st.target] == 0 && (st.small || s.bigBusy < s.transfers) {
			s.queue = slices.Delete(s.queue, i, i+1)
			return st
		}
	}
	return nil
}
