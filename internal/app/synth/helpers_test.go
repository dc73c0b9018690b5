package synth

import (
	"reflect"
	"testing"
)

// checkDeterministic builds a dataset twice with the same seed and once
// with another, and fails unless the first two are identical and the third
// differs.
func checkDeterministic(t *testing.T, gen func(seed uint64) (*Dataset, error)) {
	t.Helper()
	a, err := gen(7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gen(7)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gen(8)
	if err != nil {
		t.Fatal(err)
	}
	// reflect.DeepEqual treats NaN as unequal; compare NaN-free fields.
	if !reflect.DeepEqual(a.Train.TrueY, b.Train.TrueY) || !reflect.DeepEqual(a.Train.Obs, b.Train.Obs) ||
		!reflect.DeepEqual(a.Test.TrueY, b.Test.TrueY) || !reflect.DeepEqual(a.Train.Supply, b.Train.Supply) ||
		!reflect.DeepEqual(a.Train.Censored, b.Train.Censored) || !reflect.DeepEqual(a.Features, b.Features) ||
		!reflect.DeepEqual(a.Transfer, b.Transfer) || !reflect.DeepEqual(a.Train.Index, b.Train.Index) {
		t.Fatal("same seed gave different data")
	}
	if reflect.DeepEqual(a.Train.TrueY, c.Train.TrueY) {
		t.Fatal("different seeds gave identical data")
	}
}

// checkCapped fails unless every observation of s is at most its supply.
func checkCapped(t *testing.T, s *Split) {
	t.Helper()
	for i := range s.Obs {
		for k, v := range s.Obs[i] {
			if v > s.Supply[i][k] {
				t.Fatalf("row %d product %d: obs %v above supply %v", i, k, v, s.Supply[i][k])
			}
		}
	}
}

// checkIncoming verifies the one-step transfer identity per row: the
// demand received, Σ_k (obs − min(y, u)), equals Σ_i e_i Σ_j T_ij, which is
// (1 − sink)·Σ e when every row of T sums to 1 − sink.
func checkIncoming(t *testing.T, s *Split, tr [][]float64, sink float64) {
	t.Helper()
	for i := range s.TrueY {
		in, ex := 0.0, 0.0
		for k, y := range s.TrueY[i] {
			u := s.Supply[i][k]
			in += s.Obs[i][k] - min(y, u)
			ex += max(y-u, 0)
		}
		if !near(in, (1-sink)*ex, 1e-12*(1+ex)) {
			t.Fatalf("row %d: received %v, want (1−%v)·%v", i, in, sink, ex)
		}
	}
}
