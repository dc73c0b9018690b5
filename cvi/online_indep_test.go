package cvi

import (
	"github.com/dcgpd/dcgpd/filter/kernel"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/filter"
)

// TestRefinedIndepMatchesGeneral: for independent products the per-product
// refinement gives the general (Woodbury) refinement's mean, variances and
// KL, including products without a site.
func TestRefinedIndepMatchesGeneral(t *testing.T) {
	const np = 6
	k, _ := kernel.NewMatern32(1, 2)
	m, _ := filter.NewModel(k, nil, nil, np)
	tb, _ := NewTobit(0.1)
	o, err := NewOnline(m, Factorised{tb}, DefaultOnlineOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !o.indep {
		t.Fatal("independent model with diagonal sites not recognised")
	}
	o.growJoint() // the general refinement's scratch
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20; trial++ {
		clear(o.pc)
		for a := 0; a < np; a++ {
			o.pm[a] = rng.NormFloat64()
			o.pv[a] = 0.1 + rng.Float64()
			o.pc[a*np+a] = o.pv[a]
			o.l1[a] = rng.NormFloat64() * 3
			o.l2[a] = math.Exp(3 * rng.NormFloat64())
		}
		o.l1[trial%np], o.l2[trial%np] = 0, 0
		if err := o.refined(); err != nil {
			t.Fatal(err)
		}
		qm, qv, kl := append([]float64(nil), o.qm...), append([]float64(nil), o.qv...), o.kl
		o.indep = false
		err := o.refined()
		o.indep = true
		if err != nil {
			t.Fatal(err)
		}
		for a := 0; a < np; a++ {
			if math.Abs(qm[a]-o.qm[a]) > 1e-12*(1+math.Abs(o.qm[a])) || math.Abs(qv[a]-o.qv[a]) > 1e-12*o.qv[a] {
				t.Fatalf("trial %d product %d: indep (%v, %v), general (%v, %v)", trial, a, qm[a], qv[a], o.qm[a], o.qv[a])
			}
		}
		if math.Abs(kl-o.kl) > 1e-10*(1+o.kl) {
			t.Fatalf("trial %d: KL indep %v, general %v", trial, kl, o.kl)
		}
	}
}
