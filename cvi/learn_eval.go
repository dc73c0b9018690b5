package cvi

import "math"

// grad returns dELBO/du at x: the envelope gradient, or in fdMode the
// central difference of the ELBO.
//
// The envelope gradient is exact when the CVI fixed point maximises the
// ELBO over q. With Gauss–Newton curvature (the diffusion likelihood) it
// is not, and the envelope gradient can disagree with the ELBO it should
// differentiate; with opts.Fallback, when the search stops with a large
// gradient, learning continues with central differences of the ELBO at
// the CVI fixed point (fdMode), each a warm-started CVI solve.
func (l *learner) grad(x []float64) ([]float64, error) {
	if l.fdMode {
		return l.fdGrad(x)
	}
	return l.e.gradient(l.free, l.nm, l.opts.FDStep, x, l.pm)
}

// fdGrad is the central difference of the ELBO at x in every free
// variable, each side a CVI solve warm-started from the sites at x; the
// engine is left at x with those sites.
func (l *learner) fdGrad(x []float64) ([]float64, error) {
	e := l.e
	c1 := append([]float64(nil), e.sites.Nat1...)
	c2 := append([]float64(nil), e.sites.Nat2...)
	defer func() {
		copy(e.sites.Nat1, c1)
		copy(e.sites.Nat2, c2)
		_ = l.set(x)
		e.invalidate()
	}()
	g := make([]float64, len(l.free))
	xp := make([]float64, len(x))
	for j := range l.free {
		var f [2]float64
		for s, sign := range []float64{1, -1} {
			copy(xp, x)
			xp[j] += sign * fdELBOStep
			copy(e.sites.Nat1, c1)
			copy(e.sites.Nat2, c2)
			if err := l.set(xp); err != nil {
				return nil, err
			}
			n, elbo, err := e.Converge(l.opts.Beta, l.opts.InnerTol, l.opts.InnerMax)
			l.res.CVISteps += n
			if err != nil {
				return nil, err
			}
			f[s] = elbo
		}
		g[j] = (f[0] - f[1]) / (2 * fdELBOStep)
	}
	return g, nil
}

// eval solves CVI at x and records −ELBO and its gradient for the
// optimiser (lastF, lastG), or an infeasible point; it keeps the best
// point seen. A repeated x is not evaluated again.
func (l *learner) eval(x []float64) {
	if l.lastX != nil && equal(x, l.lastX) {
		return
	}
	e := l.e
	l.lastX = append(l.lastX[:0], x...)
	l.lastG = make([]float64, len(l.free))
	if err := l.ctx.Err(); err != nil {
		l.evalErr, l.lastF = err, math.Inf(1)
		return
	}
	if err := l.set(x); err != nil {
		l.infeasible()
		return
	}
	l.res.Evals++
	itol := l.rec.innerTol(l.opts.InnerTol)
	if l.fdMode {
		itol = l.opts.InnerTol
	}
	n, elbo, err := e.Converge(l.opts.Beta, itol, l.opts.InnerMax)
	l.res.CVISteps += n
	if err != nil || math.IsNaN(elbo) || math.IsInf(elbo, 0) {
		l.infeasible()
		return
	}
	g, err := l.grad(x)
	if err != nil {
		l.infeasible()
		return
	}
	for j := range g {
		if math.IsNaN(g[j]) || math.IsInf(g[j], 0) {
			l.infeasible()
			return
		}
		l.lastG[j] = -g[j]
	}
	l.lastF = -elbo
	copy(l.good1, e.sites.Nat1)
	copy(l.good2, e.sites.Nat2)
	if elbo > l.bestELBO {
		l.bestELBO, l.bestX, l.bestG = elbo, append(l.bestX[:0], x...), append(l.bestG[:0], g...)
	}
}
