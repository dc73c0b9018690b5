package cvi

import (
	"fmt"
	"math"
	"os"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"

	"github.com/dcgpd/dcgpd/diffusion"
)

// TestMomentMatchedInflowError measures, on BenchmarkOnlineBin/City2000's
// bins 64–74 (every other one, at the refined marginal the online step
// left), the error of the expectation's gradient in the means when each
// station's inflow D_j = Σ_i T_ij·max(f_i − u_i, 0) is replaced by the
// Gaussian of the same mean and variance (moment-matched; the rectified
// Gaussians' moments are closed-form and independent under the mean-field
// q), against a 4,096-point rule, beside the 64-point rule's and a
// 1,024-point rule's (another scramble) errors. Errors are |Δ∂E/∂m_a|·sd_a:
// about the shift of a Newton step's mean in standard deviations. A
// measurement for docs/city-scale.md ("Per-bin cost"), 45 s: it runs with
// DCGPD_MM_MEASURE=1 only, and checks that the moment-matched gradient is
// closer to the 4,096-point rule's than the 64-point rule's is.
func TestMomentMatchedInflowError(t *testing.T) {
	if os.Getenv("DCGPD_MM_MEASURE") != "1" {
		t.Skip("a 45 s measurement: set DCGPD_MM_MEASURE=1")
	}
	const np = 2000
	on, bins := cityOnline(t, np, 7)
	d := on.lik.(*Diffusion)
	rules := []*Diffusion{d} // 64 points, 4,096, 1,024
	for _, o := range []DiffusionOptions{{Points: 4096}, {Points: 1024, Seed: 5}} {
		o.Explicit, o.Variance, o.Sites = d.trans, 1, DiagonalSites
		r, err := NewDiffusion(o)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	mm := newMomentMatched(d.trans, np)
	var errs [4]errStats // moment-matched, 64, 1,024; moment-matched at censored stations
	var res BinResult
	for b := 0; b < 75; b++ {
		obs := bins[b%len(bins)]
		if err := on.Step(float64(b+1), obs, &res); err != nil {
			t.Fatal(err)
		}
		if b < 64 || b%2 == 1 {
			continue
		}
		qm, qv := append([]float64(nil), on.qm...), append([]float64(nil), on.qv...)
		var g [3][]float64
		for i, r := range rules {
			g[i] = make([]float64, np)
			if _, _, ok := r.expectCoupledSparse(obs, qm, qv, g[i], false); !ok {
				t.Fatal("no sparse expectation")
			}
		}
		gmm := mm.grad(obs, qm, qv)
		for a := 0; a < np; a++ {
			sd := math.Sqrt(qv[a])
			errs[0].add(math.Abs(gmm[a]-g[1][a]) * sd)
			errs[1].add(math.Abs(g[0][a]-g[1][a]) * sd)
			errs[2].add(math.Abs(g[2][a]-g[1][a]) * sd)
			if obs[a].Censored {
				errs[3].add(math.Abs(gmm[a]-g[1][a]) * sd)
			}
		}
		t.Logf("to bin %d, gradient error × sd against 4,096 points (max, rms): moment-matched %s; 64-point rule %s; 1,024-point rule %s; moment-matched at the censored stations %s", b, &errs[0], &errs[1], &errs[2], &errs[3])
	}
	if !(errs[0].max < errs[1].max) || !(errs[0].sq < errs[1].sq) {
		t.Errorf("moment-matched gradient error %s, 64-point rule %s", &errs[0], &errs[1])
	}
}

// errStats accumulates the largest and the root mean square error.
type errStats struct {
	max, sq float64
	n       int
}

func (e *errStats) add(x float64) {
	e.max, e.sq, e.n = math.Max(e.max, x), e.sq+x*x, e.n+1
}

func (e *errStats) String() string {
	return fmt.Sprintf("%.3g, %.3g", e.max, math.Sqrt(e.sq/float64(max(e.n, 1))))
}

// momentMatched is the moment-matched inflow's expectation gradient (see
// TestMomentMatchedInflowError) for noise variance 1.
type momentMatched struct {
	np       int
	inC      [][]int // per station j: the stations i with T_ij ≠ 0
	inV      [][]float64
	hx, hw   []float64 // Gauss–Hermite nodes and weights (weight e^{−x²})
	lx, lw   []float64 // Gauss–Legendre on [−1, 1]
	ee, ve   []float64 // per station: E and Var of its excess
	dee, dve []float64 // and their derivatives in its mean
	mu, s2   []float64 // per station: E and Var of its inflow
}

func newMomentMatched(T *diffusion.Transition, np int) *momentMatched {
	m := &momentMatched{np: np, inC: make([][]int, np), inV: make([][]float64, np)}
	for a := 0; a < np; a++ {
		cols, vals := T.Row(a)
		for p, j := range cols {
			m.inC[j] = append(m.inC[j], a)
			m.inV[j] = append(m.inV[j], vals[p])
		}
	}
	m.hx, m.hw = make([]float64, 64), make([]float64, 64)
	quad.Hermite{}.FixedLocations(m.hx, m.hw, math.Inf(-1), math.Inf(1))
	m.lx, m.lw = make([]float64, 48), make([]float64, 48)
	quad.Legendre{}.FixedLocations(m.lx, m.lw, -1, 1)
	for _, p := range []*[]float64{&m.ee, &m.ve, &m.dee, &m.dve, &m.mu, &m.s2} {
		*p = make([]float64, np)
	}
	return m
}

// moments fills the excesses' and inflows' moments at the marginal.
func (m *momentMatched) moments(obs []Obs, qm, qv []float64) {
	for i := 0; i < m.np; i++ {
		m.ee[i], m.ve[i], m.dee[i], m.dve[i] = 0, 0, 0, 0
		if u := obs[i].Supply; !math.IsInf(u, 1) {
			s, mu := math.Sqrt(qv[i]), qm[i]-u
			al := mu / s
			phiC, phi := 0.5*math.Erfc(-al/math.Sqrt2), npdf(al)
			e1 := mu*phiC + s*phi
			e2 := (mu*mu+s*s)*phiC + mu*s*phi
			m.ee[i], m.ve[i] = e1, e2-e1*e1
			m.dee[i], m.dve[i] = phiC, 2*e1*(1-phiC)
		}
	}
	for j := 0; j < m.np; j++ {
		m.mu[j], m.s2[j] = 0, 0
		for p, a := range m.inC[j] {
			t := m.inV[j][p]
			m.mu[j] += t * m.ee[a]
			m.s2[j] += t * t * m.ve[a]
		}
	}
}

// grad returns ∂E/∂m of the moment-matched expectation: each term's
// derivatives in its own mean and in its inflow's moments, the latter
// chained to the in-neighbours' means.
func (m *momentMatched) grad(obs []Obs, qm, qv []float64) []float64 {
	m.moments(obs, qm, qv)
	g := make([]float64, m.np)
	dMu, dS2 := make([]float64, m.np), make([]float64, m.np)
	for j, o := range obs {
		switch {
		case math.IsNaN(o.Y):
			continue
		case !o.Censored:
			// Infinite supply: g = f + D, E = c − ((y − m − μ)² + v + s²)/2.
			r := o.Y - qm[j] - m.mu[j]
			g[j] += r
			dMu[j], dS2[j] = r, -0.5
			continue
		}
		e := func(mj, mu, s2 float64) float64 { return m.censored(mj, qv[j], mu, s2, o.Supply) }
		h := 1e-4 * math.Sqrt(qv[j])
		g[j] += (e(qm[j]+h, m.mu[j], m.s2[j]) - e(qm[j]-h, m.mu[j], m.s2[j])) / (2 * h)
		hm := 1e-4 * math.Max(math.Sqrt(m.s2[j]), 1e-3)
		dMu[j] = (e(qm[j], m.mu[j]+hm, m.s2[j]) - e(qm[j], m.mu[j]-hm, m.s2[j])) / (2 * hm)
		hs := 1e-4 * math.Max(m.s2[j], 1e-6)
		lo := math.Max(m.s2[j]-hs, 0)
		dS2[j] = (e(qm[j], m.mu[j], m.s2[j]+hs) - e(qm[j], m.mu[j], lo)) / (m.s2[j] + hs - lo)
	}
	for j := range obs {
		if math.IsNaN(obs[j].Y) {
			continue
		}
		for p, a := range m.inC[j] {
			t := m.inV[j][p]
			g[a] += dMu[j]*t*m.dee[a] + dS2[j]*t*t*m.dve[a]
		}
	}
	return g
}

// censored returns E[log Φ(g − u)] for g = max(f, min(f, u) + D), f ~
// N(mj, v), D ~ N(mu, s2): Gauss–Hermite over D and, given D, Gauss–
// Legendre over f on the pieces between g's kinks (f + D below u, u + D
// up to u + D, f above).
func (m *momentMatched) censored(mj, v, mu, s2, u float64) float64 {
	sd, sdD := math.Sqrt(v), math.Sqrt(math.Max(s2, 0))
	inner := func(D float64) float64 {
		below := m.piece(math.Inf(-1), u, mj, sd, u, func(f float64) float64 { return f + D })
		if D <= 0 {
			return below + m.piece(u, math.Inf(1), mj, sd, u, func(f float64) float64 { return f })
		}
		return below + m.piece(u, u+D, mj, sd, u, func(float64) float64 { return u + D }) +
			m.piece(u+D, math.Inf(1), mj, sd, u, func(f float64) float64 { return f })
	}
	if sdD == 0 {
		return inner(mu)
	}
	var e float64
	for i, x := range m.hx {
		e += m.hw[i] / math.SqrtPi * inner(mu+math.Sqrt2*sdD*x)
	}
	return e
}

// piece returns ∫_a^b log Φ(g(f) − u)·N(f; mj, sd²) df over [a, b] cut
// to 10 sd around mj.
func (m *momentMatched) piece(a, b, mj, sd, u float64, g func(float64) float64) float64 {
	a, b = math.Max(a, mj-10*sd), math.Min(b, mj+10*sd)
	if !(b > a) {
		return 0
	}
	var s float64
	for i, x := range m.lx {
		f := 0.5*(a+b) + 0.5*(b-a)*x
		l, _, _ := survival(u - g(f))
		s += m.lw[i] * l * npdf((f-mj)/sd) / sd
	}
	return 0.5 * (b - a) * s
}
