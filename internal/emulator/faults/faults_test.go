package faults

import "testing"

func TestRollRateAndDeterminism(t *testing.T) {
	roll := func(seed int64) []Kind {
		f := New(0.2, seed)
		out := make([]Kind, 10000)
		for i := range out {
			out[i] = f.Roll(Status500, Status503, Drop)
		}
		return out
	}
	a, b := roll(7), roll(7)
	failed := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("roll %d differs for the same seed: %v vs %v", i, a[i], b[i])
		}
		if a[i] == Reset {
			t.Fatalf("roll %d gave a kind not offered: %v", i, a[i])
		}
		if a[i] != None {
			failed++
		}
	}
	if failed < 1800 || failed > 2200 {
		t.Fatalf("%d of 10000 failed at rate 0.2", failed)
	}
	var nilInj *Injector
	if nilInj.Roll(Status500) != None {
		t.Fatal("nil injector injected a fault")
	}
	f := New(1, 1)
	f.SetRate(0)
	if f.Roll(Status500) != None {
		t.Fatal("rate 0 injected a fault")
	}
}
