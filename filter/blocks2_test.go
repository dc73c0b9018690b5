package filter

import (
	"github.com/dcgpd/dcgpd/filter/kernel"
	"math/rand/v2"
	"testing"
)

// TestSandwich2MatchesBlocks: for a transition of 2×2
// and 1×1 blocks (Matérn-3/2 + periodic harmonics, in one and in three
// copies; Matérn-1/2 + periodic) the
// one-pass sandwich2 gives the general block code's T·P·Tᵀ (+ I⊗Q) and
// T·x to the last bit, with and without Q and for the transpose.
func TestSandwich2MatchesBlocks(t *testing.T) {
	must := mustT(t)
	rng := rand.New(rand.NewPCG(6, 7))
	for _, kern := range []kernel.Temporal{
		must(kernel.NewSum(must(kernel.NewMatern32(1.3, 2.0)), must(kernel.NewPeriodic(0.8, 1.1, 7.0, 3)))),
		must(kernel.NewSum(must(kernel.NewMatern12(1.3, 2.0)), must(kernel.NewPeriodic(0.8, 1.1, 7.0, 2)))),
	} {
		d := kern.Dim()
		a, q := make([]float64, d*d), make([]float64, d*d)
		kern.Transition(a, 0.7)
		kernel.ProcessNoise(kern, q, 0.7, make([]float64, 3*d*d))
		sandwich2Case(t, rng, a, q, d)
	}
}

func sandwich2Case(t *testing.T, rng *rand.Rand, a, q []float64, d int) {
	for _, m := range []int{1, 3} {
		for _, tr := range []bool{false, true} {
			for _, withQ := range []bool{false, true} {
				var tb tblocks
				tb.set(a, q, d, m, tr)
				if !tb.all2 {
					t.Fatal("not cut into blocks of one and two")
				}
				D := m * d
				L := make([]float64, D*D)
				for i := range L {
					L[i] = rng.NormFloat64()
				}
				P := make([]float64, D*D)
				for i := 0; i < D; i++ {
					for j := 0; j < D; j++ {
						for k := 0; k < D; k++ {
							P[i*D+j] += L[i*D+k] * L[j*D+k]
						}
					}
				}
				x := make([]float64, D)
				for i := range x {
					x[i] = rng.NormFloat64()
				}
				got, y, tmp := make([]float64, D*D), make([]float64, D), make([]float64, D*D)
				tb.sandwich(got, P, tmp, withQ, y, x)
				want, wantY := make([]float64, D*D), make([]float64, D)
				for b := len(tb.blk) - 1; b >= 0; b-- {
					bk := tb.blk[b]
					qb := bk.q
					if !withQ {
						qb = nil
					}
					leftBlock(tmp, P, bk.a, bk.o, bk.n, D)
					rightBlock(want, tmp, bk.a, qb, bk.o, bk.n, D)
					mulBlock(wantY, x, bk.a, bk.o, bk.n)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("m=%d transposed=%v Q=%v: entry %d is %v, blocks give %v", m, tr, withQ, i, got[i], want[i])
					}
				}
				for i := range wantY {
					if y[i] != wantY[i] {
						t.Fatalf("m=%d transposed=%v: T·x[%d] is %v, blocks give %v", m, tr, i, y[i], wantY[i])
					}
				}
			}
		}
	}
}
