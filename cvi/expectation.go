package cvi

import "math"

// Quadrature configures how a likelihood takes the expectations that have
// no closed form. The zero value uses DefaultNodes Gauss–Hermite nodes and
// switches to the graded Gauss–Legendre rule (split.go) where q(f) is wide
// compared with a narrow feature of the likelihood and overlaps it.
type Quadrature struct {
	gh      *GaussHermite
	noSplit bool
}

// SetNodes sets the number of Gauss–Hermite nodes, 1 ≤ n ≤ MaxNodes.
func (q *Quadrature) SetNodes(n int) error {
	g, err := NewGaussHermite(n)
	if err != nil {
		return err
	}
	q.gh = g
	return nil
}

// Nodes returns the number of Gauss–Hermite nodes.
func (q *Quadrature) Nodes() int { return q.rule().Len() }

// SetSplit enables (the default) or disables the graded rule; disabled,
// every expectation uses Gauss–Hermite, as the reference implementation did.
func (q *Quadrature) SetSplit(on bool) { q.noSplit = !on }

// Split reports whether the graded rule is enabled.
func (q *Quadrature) Split() bool { return !q.noSplit }

func (q *Quadrature) rule() *GaussHermite {
	if q.gh == nil {
		return gaussHermite(DefaultNodes)
	}
	return q.gh
}

// useSplit reports whether N(m, v) is wide compared with one of the
// features and overlaps it. Below √v = h/4 Gauss–Hermite is exact to
// rounding (measured for the Tobit term: ≤ 2e-15 at 20 nodes).
func (q *Quadrature) useSplit(m, v float64, feats []feature) bool {
	if q.noSplit {
		return false
	}
	s := math.Sqrt(v)
	for _, ft := range feats {
		if ft.h <= 0 || s <= 0.25*ft.h {
			continue
		}
		x0, hx := (ft.c-m)/s, ft.h/s
		if x0-3*hx < splitRange && x0+3*hx > -splitRange {
			return true
		}
	}
	return false
}

// expect3 returns E[l], E[l′], E[l″] under N(m, v) for a log-likelihood
// term with the given narrow features.
func (q *Quadrature) expect3(m, v float64, fn func(f float64) (l, dl, d2l float64), feats ...feature) (e, dm, d2m float64) {
	switch {
	case v == 0:
		return fn(m)
	case badVariance(v):
		return math.NaN(), math.NaN(), math.NaN()
	case q.useSplit(m, v, feats):
		return expect3Split(m, v, fn, feats...)
	}
	return q.rule().expect3(m, v, fn)
}

// logPredictive returns log ∫ e^{l(f)} N(f|m,v) df. The integrand can
// peak far out in the tail of q (a censored count far above the mean) and
// be much narrower than q, so the graded rule is centred on its mode f*
// and refined around it on the scale of its Laplace width s*. With the
// graded rule disabled it is plain Gauss–Hermite under q.
func (q *Quadrature) logPredictive(m, v float64, fn func(f float64) (l, dl, d2l float64), feats ...feature) float64 {
	switch {
	case v == 0:
		l, _, _ := fn(m)
		return l
	case badVariance(v):
		return math.NaN()
	}
	l := func(f float64) float64 {
		l, _, _ := fn(f)
		return l
	}
	if q.noSplit {
		return q.rule().logExpectExp(m, v, l)
	}
	c, cv := laplace(m, v, fn)
	var buf [4]feature
	all := append(append(buf[:0], feats...), feature{c, 2 * math.Sqrt(cv)})
	return logExpectExpSplit(m, v, (c-m)/math.Sqrt(v), l, all...)
}

// laplace returns the mode of l(f) + log N(f|m,v) and the inverse of its
// curvature there, by damped Newton from f = m. If the curvature is not
// negative (l not log-concave) it returns (m, v).
func laplace(m, v float64, fn func(f float64) (l, dl, d2l float64)) (mode, variance float64) {
	obj := func(f float64) (h, dh, d2h float64) {
		l, dl, d2l := fn(f)
		d := f - m
		return l - 0.5*d*d/v, dl - d/v, d2l - 1/v
	}
	f := m
	h, dh, d2h := obj(f)
	for it := 0; it < 100 && d2h < 0; it++ {
		step := -dh / d2h
		if math.Abs(step) <= 1e-12*(math.Sqrt(-1/d2h)+math.Abs(f)) {
			break
		}
		// Halve the step until the objective does not decrease.
		moved := false
		for k := 0; k < 60 && !moved; k++ {
			if hn, dhn, d2hn := obj(f + step); hn >= h {
				f, h, dh, d2h, moved = f+step, hn, dhn, d2hn, true
			}
			step /= 2
		}
		if !moved {
			break
		}
	}
	if !(d2h < 0) || math.IsNaN(f) || math.IsInf(h, 0) {
		return m, v
	}
	return f, -1 / d2h
}
