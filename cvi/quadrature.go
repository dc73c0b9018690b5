package cvi

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"
)

// DefaultNodes is the number of Gauss–Hermite nodes used for expectations
// without a closed form (as in the reference implementation).
const DefaultNodes = 20

// MaxNodes is the largest supported rule; gonum tabulates the nodes up to
// this size; its 200-point entry is less accurate, so stop well short.
const MaxNodes = 128

// GaussHermite is an n-point Gauss–Hermite rule for expectations under a
// normal distribution: E_{N(m,v)}[g(f)] ≈ Σ_i W_i g(m + √v·X_i). It is exact
// for polynomials g of degree up to 2n−1. Rules are immutable and shared.
type GaussHermite struct {
	x []float64 // nodes for the standard normal: √2 × the roots of H_n
	w []float64 // weights for the standard normal, summing to 1
}

var ghCache sync.Map // int → *GaussHermite

// NewGaussHermite returns the n-point rule for 1 ≤ n ≤ MaxNodes. Rules are
// built once per n and cached, so repeated calls are cheap.
func NewGaussHermite(n int) (*GaussHermite, error) {
	if n < 1 || n > MaxNodes {
		return nil, fmt.Errorf("cvi: Gauss–Hermite nodes must be in [1, %d], got %d", MaxNodes, n)
	}
	return gaussHermite(n), nil
}

// gaussHermite returns the cached n-point rule, building it on first use;
// n must be in [1, MaxNodes].
func gaussHermite(n int) *GaussHermite {
	if g, ok := ghCache.Load(n); ok {
		return g.(*GaussHermite)
	}
	// gonum's rule is for the weight e^{−t²} on the real line (tabulated
	// Chebfun values); f = m + √(2v)·t turns it into N(m, v).
	t := make([]float64, n)
	w := make([]float64, n)
	quad.Hermite{}.FixedLocations(t, w, math.Inf(-1), math.Inf(1))
	for i := range t {
		t[i] *= math.Sqrt2
		w[i] /= math.SqrtPi
	}
	g, _ := ghCache.LoadOrStore(n, &GaussHermite{x: t, w: w})
	return g.(*GaussHermite)
}

// Len returns the number of nodes n.
func (g *GaussHermite) Len() int { return len(g.x) }

// Node returns the i-th standard-normal node and its weight.
func (g *GaussHermite) Node(i int) (x, w float64) { return g.x[i], g.w[i] }

// Expect returns Σ_i W_i fn(m + √v·X_i) ≈ E_{N(m,v)}[fn(f)]. For v = 0 it
// returns fn(m); for negative or NaN v it returns NaN.
func (g *GaussHermite) Expect(m, v float64, fn func(f float64) float64) float64 {
	switch {
	case v == 0:
		return fn(m)
	case !(v > 0):
		return math.NaN()
	}
	s := math.Sqrt(v)
	var e float64
	for i, x := range g.x {
		e += g.w[i] * fn(m+s*x)
	}
	return e
}

// expect3 is Expect for a log-likelihood with its first two derivatives,
// summed at the same nodes: it returns E[l], E[l′] = dE/dm and
// E[l″] = d²E/dm² under N(m, v).
func (g *GaussHermite) expect3(m, v float64, fn func(f float64) (l, dl, d2l float64)) (e, dm, d2m float64) {
	switch {
	case v == 0:
		return fn(m)
	case !(v > 0):
		return math.NaN(), math.NaN(), math.NaN()
	}
	s := math.Sqrt(v)
	for i, x := range g.x {
		l, dl, d2l := fn(m + s*x)
		w := g.w[i]
		e += w * l
		dm += w * dl
		d2m += w * d2l
	}
	return e, dm, d2m
}

// logExpectExp returns log Σ_i W_i exp(fn(f_i)) ≈ log E_{N(m,v)}[e^{fn(f)}]
// without overflow or underflow (log-sum-exp), for predictive densities.
func (g *GaussHermite) logExpectExp(m, v float64, fn func(f float64) float64) float64 {
	switch {
	case v == 0:
		return fn(m)
	case !(v > 0):
		return math.NaN()
	}
	var buf [MaxNodes]float64 // on the stack: no allocation
	ls := buf[:len(g.x)]
	s := math.Sqrt(v)
	mx := math.Inf(-1)
	for i, x := range g.x {
		ls[i] = fn(m + s*x)
		if ls[i] > mx || math.IsNaN(ls[i]) {
			mx = ls[i]
		}
	}
	if math.IsInf(mx, 0) || math.IsNaN(mx) {
		return mx
	}
	var sum float64
	for i, l := range ls {
		sum += g.w[i] * math.Exp(l-mx)
	}
	return mx + math.Log(sum)
}
