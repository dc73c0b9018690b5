package inventory

import (
	"math"
	"testing"
)

// TestReferenceClosedForms checks the reference route where the
// documented model has a closed form across the kink, at ρ = 1 and 0:
//
//   - capacity 1 starting full: the station runs empty at the first
//     pickup whatever the returns do, so P(empty within h) =
//     1 − E exp(−Σ_{k≤h} λ_k); with λ = max(m + σZ, 0) and ρ = 1,
//     E e^{−hλ} = Φ(−m/σ) + e^{−hm + h²σ²/2} Φ(m/σ − hσ); with ρ = 0 the
//     bins' factors multiply;
//   - capacity 0: every pickup and return is unmet, so the unmet counts
//     are Σ_k E max(m_k + σ_k Z, 0) = Σ_k m_k Φ(m_k/σ_k) + σ_k φ(m_k/σ_k);
//   - no variance: the reference is the chain at the clamped means.
//
// Tolerance 1e-7 absolute on probabilities, 1e-7 relative on counts.
func TestReferenceClosedForms(t *testing.T) {
	const h, m, s = 6, 0.5, 1.5
	rs := refDefault
	lf := Forecast{Mean: flat(h, m), Var: flat(h, s*s)}
	mf := Forecast{Mean: flat(h, 0.3), Var: flat(h, 0.16)}
	oneBin := func(t float64) float64 { // E e^{−tλ}
		return normCDF(-m/s) + math.Exp(-t*m+t*t*s*s/2)*normCDF(m/s-t*s)
	}
	for _, rho := range []float64{1, 0} {
		ref := referenceRisk(t, rs, Station{Capacity: 1, Bikes: 1}, lf, mf, rho)
		for k := range h {
			want := 1 - oneBin(float64(k+1))
			if rho == 0 {
				want = 1 - math.Pow(oneBin(1), float64(k+1))
			}
			check(t, "EmptyWithin (C = 1)", k+1, ref[k], want, 1e-7)
		}
	}
	means := []float64{-1.2, -0.3, 0, 0.4, 2, 6}
	sds := []float64{0.5, 1.5, 3, 1, 2.5, 0.7}
	lf = Forecast{Mean: means, Var: make([]float64, len(means))}
	want := 0.0
	for k, x := range means {
		lf.Var[k] = sds[k] * sds[k]
		want += x*normCDF(x/sds[k]) + sds[k]*normPDF(x/sds[k])
	}
	for _, rho := range []float64{1, 0} {
		ref := referenceRisk(t, rs, Station{}, lf, lf, rho)
		n := len(means)
		check(t, "UnmetPickups (C = 0)", 0, ref[4*n], want, 1e-7*want)
		check(t, "UnmetReturns (C = 0)", 0, ref[4*n+1], want, 1e-7*want)
	}
	certainF := Forecast{Mean: means, Var: make([]float64, len(means))}
	pl, err := NewPlanner(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var r Risk
	st := Station{Capacity: 9, Bikes: 4}
	if err := pl.RiskAtRates(&r, st, clamp(means), clamp(means)); err != nil {
		t.Fatal(err)
	}
	plug := flatten(nil, &r)
	for _, rho := range []float64{1, 0} {
		ref := referenceRisk(t, rs, st, certainF, certainF, rho)
		for i := range plug {
			check(t, "no variance", i, ref[i], plug[i], 1e-12*math.Max(1, plug[i]))
		}
	}
}

// TestReferenceConverges: halving the reference's panels moves no
// probability by more than 0.001 (a tenth of the rule's bound) and no
// count by more than 0.1%, at ρ = 1 on a quiet station with forecast sd
// 3 a bin (the sharpest ridge of the accuracy table; 8 bins to keep it
// fast) and at ρ = 0.
func TestReferenceConverges(t *testing.T) {
	const h = 8
	st := Station{Capacity: 10, Bikes: 3}
	f := Forecast{Mean: flat(h, 0.5), Var: flat(h, 9)}
	g := Forecast{Mean: wave(h, 0.6, 2), Var: flat(h, 9)}
	fine := refDefault
	fine.panel, fine.ownPanel = refDefault.panel/2, refDefault.ownPanel/2
	for _, rho := range []float64{1, 0} {
		a := referenceRisk(t, refDefault, st, f, g, rho)
		b := referenceRisk(t, fine, st, f, g, rho)
		e := compare(a, b, h)
		t.Logf("ρ = %v: default against finer panels: |Δp| %.2g (%s), Δcount %.2g%% (%s)", rho, e.prob, e.probAt, 100*e.count, e.countAt)
		if e.prob > probBound/10 || e.marginal > probBound/10 || e.count > countRel/10 {
			t.Errorf("ρ = %v: the reference moves by %.3g in probability, %.3g%% in counts with finer panels", rho, math.Max(e.prob, e.marginal), 100*e.count)
		}
	}
}

// TestStoredReferenceIsCurrent recomputes two stations of referenceFile
// with the reference code: the stored figures are what it gives.
func TestStoredReferenceIsCurrent(t *testing.T) {
	refs, _ := readReference(t)
	checked := 0
	for _, a := range accStations() {
		if a.regime != "quiet" || a.sd != 0.5 || a.rho == 0.5 {
			continue
		}
		stored, ok := refs[normName(a.name())]
		if !ok {
			t.Fatalf("%s is not in %s", a.name(), referenceFile)
		}
		got := referenceRisk(t, refDefault, a.st, a.lf, a.mf, a.rho)
		for i := range got {
			check(t, a.name(), i, got[i], stored[i], 1e-9*math.Max(1, math.Abs(stored[i])))
		}
		checked++
	}
	if checked != 2 {
		t.Fatalf("checked %d stations", checked)
	}
}
