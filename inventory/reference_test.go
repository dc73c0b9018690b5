package inventory

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// The reference route for the integration rule: the documented model's
// expectations by quadrature exact across the kinks, written apart from
// the rule (its nodes from gonum, its sums over nodes here), the chain
// at each node solved by RiskAtRates or the chain's sweeps (both checked
// against matrix exponentials and event-by-event simulation).
//
//   - ρ = 1: each flow's rates are max(m_k + σ_k z, 0), piecewise linear
//     in z with kinks at −m_k/σ_k; the z line over [−refReach, refReach]
//     is cut at every kink and into panels at most refPanel wide, each
//     with refGL Gauss–Legendre points (weight φ(z) dz), and RiskAtRates
//     is solved at every pair of the two flows' points. The integrand is
//     analytic on each panel, so the sum converges geometrically.
//   - ρ < 1: given the shared shocks the bins' own shocks are
//     independent, so the expected transition of each bin is averaged
//     over its own shocks bin by bin (as the model says), here over a
//     node of rate 0 weighted by P(W < w*) (the rate is 0 below the
//     bin's kink w*) and refGL Gauss–Legendre points on panels at most
//     refPanel wide from w* to refReach; the shared shocks (the outlook
//     is smooth in them) by refHermite Gauss–Hermite points per flow.
type refSettings struct {
	reach, panel float64
	gl, hermite  int
	// ownPanel is the panel width over a bin's own shock: the one-bin
	// transition is smooth in its rate, so it needs no fine panels.
	ownPanel float64
}

// refDefault is the reference's resolution. At ρ = 1 the outlook is
// nearly a step in the two shocks' difference where the forecast sd is
// large (σ = 3 a bin moves 24 bins' net flow by 72 trips per unit of
// z): panels of 1 were 0.012 off; halving 0.25 to 0.125 changed no
// probability by more than 0.00025 and no count by more than 0.002%
// (quiet and drain stations of accStations with sd 3, measured once:
// see TestReferenceConverges for the check that runs).
var refDefault = refSettings{reach: 7, panel: 0.25, gl: 4, hermite: 12, ownPanel: 1}

// flatten writes a Risk's outputs into one vector: the four
// probabilities at every horizon (the first 4H entries), then unmet
// pickups, unmet returns and UDF(s) for every s.
func flatten(buf []float64, r *Risk) []float64 {
	buf = append(buf[:0], r.EmptyWithin...)
	buf = append(buf, r.FullWithin...)
	buf = append(buf, r.EmptyAt...)
	buf = append(buf, r.FullAt...)
	buf = append(buf, r.UnmetPickups, r.UnmetReturns)
	return append(buf, r.UDF...)
}

// panelNodes returns Gauss–Legendre points and weights × φ over
// [lo, hi] cut at the breaks and into panels at most rs.panel wide.
func panelNodes(rs refSettings, lo, hi float64, breaks []float64) (z, w []float64) {
	cuts := []float64{lo, hi}
	for _, b := range breaks {
		if b > lo && b < hi {
			cuts = append(cuts, b)
		}
	}
	slices.Sort(cuts)
	x, xw := make([]float64, rs.gl), make([]float64, rs.gl)
	// Beyond |z| = 4 (probability 6e-5) panels of 1 suffice.
	for _, c := range []float64{-4, 4} {
		if c > lo && c < hi {
			cuts = append(cuts, c)
		}
	}
	slices.Sort(cuts)
	quad.Legendre{}.FixedLocations(x, xw, -1, 1)
	for c := 0; c+1 < len(cuts); c++ {
		a, b := cuts[c], cuts[c+1]
		width := rs.panel
		if a >= 4 || b <= -4 {
			width = math.Max(width, 1)
		}
		np := int(math.Ceil((b - a) / width))
		for q := range np {
			pa := a + (b-a)*float64(q)/float64(np)
			pb := a + (b-a)*float64(q+1)/float64(np)
			for i := range x {
				zz := (pa+pb)/2 + (pb-pa)/2*x[i]
				z = append(z, zz)
				w = append(w, (pb-pa)/2*xw[i]*math.Exp(-zz*zz/2)/math.Sqrt(2*math.Pi))
			}
		}
	}
	return z, w
}

// referenceRisk returns the reference's flattened outlook of the
// station at ρ.
func referenceRisk(t testing.TB, rs refSettings, st Station, lf, mf Forecast, rho float64) []float64 {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Shared = rho
	pl, err := NewPlanner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rho == 1 {
		return referenceShared(t, rs, pl, st, lf, mf)
	}
	return referenceOwn(t, rs, pl, st, lf, mf, rho)
}

// sharedNodes are a flow's ρ = 1 points: the line cut at every kink.
func sharedNodes(rs refSettings, f Forecast) (z, w []float64) {
	var kinks []float64
	any := false
	for k, m := range f.Mean {
		if s := math.Sqrt(f.Var[k]); s > 0 {
			any = true
			kinks = append(kinks, -m/s)
		}
	}
	if !any {
		return []float64{0}, []float64{1}
	}
	return panelNodes(rs, -rs.reach, rs.reach, kinks)
}

func referenceShared(t testing.TB, rs refSettings, pl *Planner, st Station, lf, mf Forecast) []float64 {
	zl, wl := sharedNodes(rs, lf)
	zm, wm := sharedNodes(rs, mf)
	h := len(lf.Mean)
	lam, mu := make([]float64, h), make([]float64, h)
	var r Risk
	var sum, buf []float64
	for i, a := range zl {
		for k := range h {
			lam[k] = math.Max(lf.Mean[k]+math.Sqrt(lf.Var[k])*a, 0)
		}
		for j, b := range zm {
			for k := range h {
				mu[k] = math.Max(mf.Mean[k]+math.Sqrt(mf.Var[k])*b, 0)
			}
			if err := pl.RiskAtRates(&r, st, lam, mu); err != nil {
				t.Fatal(err)
			}
			buf = flatten(buf, &r)
			if sum == nil {
				sum = make([]float64, len(buf))
			}
			for x, v := range buf {
				sum[x] += wl[i] * wm[j] * v
			}
		}
	}
	return sum
}

// ownRule is bin k's own points at shared shock z: (rate, weight).
func ownRule(rs refSettings, f Forecast, k int, rho, z float64) (rate, w []float64) {
	s := math.Sqrt(f.Var[k])
	c, so := f.Mean[k]+s*math.Sqrt(rho)*z, s*math.Sqrt(1-rho)
	if so == 0 {
		return []float64{math.Max(c, 0)}, []float64{1}
	}
	kink := -c / so
	rate, w = []float64{0}, []float64{0.5 * math.Erfc(-kink/math.Sqrt2)}
	if kink < rs.reach {
		own := rs
		own.panel = rs.ownPanel
		pz, pw := panelNodes(own, math.Max(kink, -rs.reach), rs.reach, nil)
		for i := range pz {
			rate, w = append(rate, c+so*pz[i]), append(w, pw[i])
		}
	}
	return rate, w
}

func referenceOwn(t testing.TB, rs refSettings, pl *Planner, st Station, lf, mf Forecast, rho float64) []float64 {
	zl, wl := []float64{0}, []float64{1}
	if rho > 0 {
		zl, wl = make([]float64, rs.hermite), make([]float64, rs.hermite)
		quad.Hermite{}.FixedLocations(zl, wl, math.Inf(-1), math.Inf(1))
		for i := range zl {
			zl[i], wl[i] = zl[i]*math.Sqrt2, wl[i]/math.SqrtPi
		}
	}
	h, c := len(lf.Mean), st.Capacity
	n := c + 1
	out := make([]float64, 4*h+2+n)
	ch := chain{tol: 1e-12}
	ch.resize(c)
	vec := func() []float64 { return make([]float64, n) }
	p, e, f, pn, en, fn, tmp, v, vn := vec(), vec(), vec(), vec(), vec(), vec(), vec(), vec(), vec()
	for i, a := range zl {
		for j, b := range zl {
			wt := wl[i] * wl[j]
			lr, lwt, mr, mwt := make([][]float64, h), make([][]float64, h), make([][]float64, h), make([][]float64, h)
			for k := range h {
				lr[k], lwt[k] = ownRule(rs, lf, k, rho, a)
				mr[k], mwt[k] = ownRule(rs, mf, k, rho, b)
			}
			for _, x := range [][]float64{p, e, f} {
				clear(x)
				x[st.Bikes] = 1
			}
			for k := range h {
				clear(pn)
				clear(en)
				clear(fn)
				for x, lam := range lr[k] {
					for y, mu := range mr[k] {
						u := lwt[k][x] * mwt[k][y]
						copy(tmp, p)
						i0, iC := ch.forward(tmp, lam, mu, false, false)
						axpy(pn, u, tmp)
						out[4*h] += wt * u * lam * i0
						out[4*h+1] += wt * u * mu * iC
						copy(tmp, e)
						ch.forward(tmp, lam, mu, true, false)
						axpy(en, u, tmp)
						copy(tmp, f)
						ch.forward(tmp, lam, mu, false, true)
						axpy(fn, u, tmp)
					}
				}
				p, pn, e, en, f, fn = pn, p, en, e, fn, f
				out[k] += wt * e[0]
				out[h+k] += wt * f[c]
				out[2*h+k] += wt * p[0]
				out[3*h+k] += wt * p[c]
			}
			clear(v)
			for k := h - 1; k >= 0; k-- {
				clear(vn)
				for x, lam := range lr[k] {
					for y, mu := range mr[k] {
						copy(tmp, v)
						ch.backward(tmp, lam, mu, 1, 1)
						axpy(vn, lwt[k][x]*mwt[k][y], tmp)
					}
				}
				v, vn = vn, v
			}
			axpy(out[4*h+2:], wt, v)
		}
		if rho == 0 {
			break
		}
	}
	return out
}

// referenceSampled is the reference at 0 < ρ < 1, where the fine
// quadrature of both shocks costs too much: Monte Carlo of the
// documented model, the chain solved at each sampled rate path by
// RiskAtRates. reps independent replicates of k² paths each, the two
// flows' shared shocks stratified on a k × k grid of equiprobable cells
// (one uniform point per cell) and each bin's own shocks by Latin
// hypercube over the replicate's paths; the estimate is the replicates'
// mean, se its standard error (their spread over √reps). Fixed seed.
func referenceSampled(t testing.TB, st Station, lf, mf Forecast, rho float64, k, reps int, seed uint64) (mean, se []float64) {
	t.Helper()
	pl, err := NewPlanner(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h, m := len(lf.Mean), k*k
	rng := rand.New(rand.NewPCG(seed, 39))
	lam, mu := make([]float64, h), make([]float64, h)
	perms := make([][]int, 2*h)
	q := func(u float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*u) }
	a, b := math.Sqrt(rho), math.Sqrt(1-rho)
	var r Risk
	var buf, sum, sum2, rep []float64
	for range reps {
		for d := range perms {
			perms[d] = rng.Perm(m)
		}
		clear(rep)
		for p := range m {
			zl := q((float64(p/k) + rng.Float64()) / float64(k))
			zm := q((float64(p%k) + rng.Float64()) / float64(k))
			for x := range h {
				ol := q((float64(perms[x][p]) + rng.Float64()) / float64(m))
				om := q((float64(perms[h+x][p]) + rng.Float64()) / float64(m))
				lam[x] = math.Max(lf.Mean[x]+math.Sqrt(lf.Var[x])*(a*zl+b*ol), 0)
				mu[x] = math.Max(mf.Mean[x]+math.Sqrt(mf.Var[x])*(a*zm+b*om), 0)
			}
			if err := pl.RiskAtRates(&r, st, lam, mu); err != nil {
				t.Fatal(err)
			}
			buf = flatten(buf, &r)
			if rep == nil {
				rep, sum, sum2 = make([]float64, len(buf)), make([]float64, len(buf)), make([]float64, len(buf))
			}
			for i, x := range buf {
				rep[i] += x / float64(m)
			}
		}
		for i, x := range rep {
			sum[i] += x
			sum2[i] += x * x
		}
	}
	n := float64(reps)
	mean, se = make([]float64, len(sum)), make([]float64, len(sum))
	for i := range sum {
		mean[i] = sum[i] / n
		se[i] = math.Sqrt(math.Max(sum2[i]/n-mean[i]*mean[i], 0) / (n - 1))
	}
	return mean, se
}
