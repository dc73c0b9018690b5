package cvi

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"
)

// A graded composite Gauss–Legendre rule for expectations under N(m, v)
// whose integrand has narrow features — the censoring transition of a
// Tobit or censored Poisson term, the bend of the softplus link — that a
// Gauss–Hermite rule cannot resolve once q(f) is much wider than they are:
// log Φ((f−u)/σ) is analytic only within ~2.8σ of the real axis, so with
// √v = 10σ 20 Gauss–Hermite nodes err by ~10% and 128 by ~1%. Panels are
// graded geometrically away from each feature so that each lies well inside
// the region where the integrand is analytic; 16 nodes per panel then give
// ~1e-15 relative to the scale of E, dE/dm and d²E/dm² for any √v/σ.
const (
	splitRange = 10 // |x| ≤ 10 standard deviations: φ(10) ≈ 8e-23
	splitNodes = 16 // per panel
	splitGrade = 3  // growth of panel lengths away from a feature
)

// feature is a narrow transition of a log-likelihood at f = c with
// half-width about h (the distance of its complex singularities from the
// real axis).
type feature struct{ c, h float64 }

// splitBase are panel ends, relative to the centre of the integrand, that
// resolve the normal density itself.
var splitBase = [...]float64{-splitRange, -6, -3, 0, 3, 6, splitRange}

var glX, glW = legendre(splitNodes)

func legendre(n int) (x, w []float64) {
	x, w = make([]float64, n), make([]float64, n)
	quad.Legendre{}.FixedLocations(x, w, -1, 1)
	return x, w
}

// splitPoints writes into buf the sorted panel ends in standard-normal
// units x = (f−m)/s: the base ends around xc, plus x0 ± hx·3ᵏ around each
// feature, on [xc − splitRange, xc + splitRange] widened to take in
// features just beyond it.
func splitPoints(buf *[128]float64, m, s, xc float64, feats []feature) []float64 {
	pts := buf[:0]
	for _, b := range splitBase {
		pts = append(pts, xc+b)
	}
	lo, hi := xc-splitRange, xc+splitRange
	// Where q's mass lies on the flat side of a transition, E is tiny and
	// made near the transition, possibly beyond the base range: golden
	// E ≈ −1.4e-26 would lose 3e-4 relative without this.
	for _, ft := range feats {
		if x0, hx := (ft.c-m)/s, ft.h/s; ft.h > 0 {
			lo = math.Max(math.Min(lo, x0-3*hx), xc-4*splitRange)
			hi = math.Min(math.Max(hi, x0+3*hx), xc+4*splitRange)
		}
	}
	pts = append(pts, lo, hi)
	for _, ft := range feats {
		if !(ft.h > 0) {
			continue
		}
		x0, hx := (ft.c-m)/s, ft.h/s
		if x0 > lo && x0 < hi {
			pts = append(pts, x0)
		}
		for d := hx; d < 2*splitRange && len(pts) < len(buf)-2; d *= splitGrade {
			if x := x0 - d; x > lo && x < hi {
				pts = append(pts, x)
			}
			if x := x0 + d; x > lo && x < hi {
				pts = append(pts, x)
			}
		}
	}
	for i := 1; i < len(pts); i++ { // insertion sort: a few dozen points
		for j := i; j > 0 && pts[j] < pts[j-1]; j-- {
			pts[j], pts[j-1] = pts[j-1], pts[j]
		}
	}
	return pts
}

// expect3Split returns E[l], E[l′], E[l″] under N(m, v), v > 0, on the
// panels of splitPoints.
func expect3Split(m, v float64, fn func(f float64) (l, dl, d2l float64), feats ...feature) (e, dm, d2m float64) {
	s := math.Sqrt(v)
	var buf [128]float64
	pts := splitPoints(&buf, m, s, 0, feats)
	for k := 0; k+1 < len(pts); k++ {
		mid, half := 0.5*(pts[k]+pts[k+1]), 0.5*(pts[k+1]-pts[k])
		if half <= 0 {
			continue
		}
		for i, t := range glX {
			x := mid + half*t
			w := half * glW[i] * npdf(x)
			l, dl, d2l := fn(m + s*x)
			e += w * l
			dm += w * dl
			d2m += w * d2l
		}
	}
	return e, dm, d2m
}

// logExpectExpSplit returns log E[e^{fn(f)}] under N(m, v), v > 0, on the
// panels of splitPoints centred at xc (standard-normal units), by
// log-sum-exp. For a concave fn, centring at the mode xc of fn(m+sx) − x²/2
// bounds the integrand by its peak times e^{−(x−xc)²/2}, so the range
// xc ± splitRange loses nothing wherever the peak is. It evaluates fn
// twice per node rather than buffer a thousand values: it serves
// predictive densities, not the inner loop.
func logExpectExpSplit(m, v, xc float64, fn func(f float64) float64, feats ...feature) float64 {
	s := math.Sqrt(v)
	var buf [128]float64
	pts := splitPoints(&buf, m, s, xc, feats)
	// visit calls g with each node x and its Gauss–Legendre weight.
	visit := func(g func(x, w float64)) {
		for k := 0; k+1 < len(pts); k++ {
			mid, half := 0.5*(pts[k]+pts[k+1]), 0.5*(pts[k+1]-pts[k])
			if half <= 0 {
				continue
			}
			for i, t := range glX {
				g(mid+half*t, half*glW[i])
			}
		}
	}
	// The log-integrand is fn(f) − x²/2 − log √(2π).
	mx := math.Inf(-1)
	visit(func(x, _ float64) {
		if l := fn(m+s*x) - 0.5*x*x; l > mx || math.IsNaN(l) {
			mx = l
		}
	})
	if math.IsInf(mx, 0) || math.IsNaN(mx) {
		return mx
	}
	var sum float64
	visit(func(x, w float64) { sum += w * math.Exp(fn(m+s*x)-0.5*x*x-mx) })
	return mx + math.Log(sum) - logSqrt2Pi
}
