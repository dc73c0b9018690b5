package cvi

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// sqrtCov writes a factor L with L·Lᵀ = P (Cholesky, or the symmetric
// square root when P is only semi-definite) into dst (NP×NP).
func sqrtCov(dst, P []float64, np int) error {
	if linalg.CholeskySym(dst, P, np) {
		return nil
	}
	vals, v, err := eigenScaled(P, np, 1)
	if err != nil {
		return fmt.Errorf("cvi: %w: the posterior covariance of a bin cannot be factorised: %w", ErrNumerical, err)
	}
	for i := 0; i < np; i++ {
		for j := 0; j < np; j++ {
			dst[i*np+j] = v.At(i, j) * math.Sqrt(math.Max(vals[j], 0))
		}
	}
	return nil
}

// expectJoint integrates over q(f) = N(mean, P) with antithetic pairs of
// quasi-Monte Carlo points: E = avg Σ_k log p(y_k | g_k(f)),
// ∇E = avg Jᵀ∂log p, curvature per d.opts.Curvature, parameter gradients
// through σ², ∂g/∂ℓ and ∂g/∂π.
//
// With diagonal sites (d.diagonal()) P holds the NP marginal variances
// and q is their product N(mean, diag(P)) (mean field); the points,
// the map and the chain rule are the same, and curv receives the NP
// diagonal entries of the curvature only.
func (d *Diffusion) expectJoint(op diffusion.Operator, obs []Obs, mean, P, grad, curv, pgrad []float64) (float64, error) {
	np := d.np
	jp := jointPass{d: d, obs: obs, mean: mean, grad: grad, curv: curv, diag: d.diagonal(), wantParams: pgrad != nil}
	jp.stride = np + 1 // P[k*stride] is product k's variance
	cw := np * np      // curvature entries
	if jp.diag {
		jp.stride, cw = 1, np
	}
	// Without edges (one product) the map is the identity; where no
	// product can exceed its supply it is the identity almost surely.
	// Either way the expectation is a sum of exact 1-D Tobit terms.
	if op.T.NNZ() == 0 || d.excessNegligible(obs, mean, P, jp.stride) {
		return d.expectFactorised(obs, mean, P, jp.stride, grad, curv, pgrad), nil
	}
	L, err := d.pointFactor(mean, P, jp.diag)
	if err != nil {
		return 0, err
	}
	if jp.diag && op.Steps == 1 && (pgrad == nil || d.meanFieldParams()) {
		npts, _ := d.z.Dims()
		e, err := d.expectMeanField(op, obs, mean, P, L[:np], grad, curv, mfDiag, npts)
		if err == nil && pgrad != nil {
			d.addParamGrad(pgrad, 1/float64(2*npts), d.mf.ps2, d.mf.pc, 0, 0)
		}
		return e, err
	}
	// The dense Jacobian of the map, built for the first bin that needs it
	// (diagonal sites need it only for ℓ and π gradients or several steps).
	if len(d.jac) != np*np {
		d.jac = make([]float64, np*np)
	}
	// Validated once per bin: every point below is finite.
	if jp.bound, err = op.Prepare(d.u, d.ws); err != nil {
		return 0, err
	}
	if grad != nil {
		clear(grad[:np])
	}
	if curv != nil {
		clear(curv[:cw])
	}
	jp.exact = curv != nil && d.opts.Curvature == ExactCurvature
	if jp.exact {
		jp.stein = make([]float64, cw)
	}
	npts, _ := d.z.Dims()
	for i := 0; i < npts; i++ {
		d.pointOffset(d.z.RawRowView(i), L, jp.diag)
		for _, sign := range [2]float64{1, -1} {
			if err := jp.at(sign); err != nil {
				return 0, err
			}
		}
	}
	w := 1 / float64(2*npts)
	if grad != nil {
		for a := range grad[:np] {
			grad[a] *= w
		}
	}
	if curv != nil && !jp.exact {
		for a := range curv[:cw] {
			curv[a] *= w
		}
	}
	if jp.exact {
		if err := d.exactCurvature(curv, P, jp.stein, w, jp.diag); err != nil {
			return 0, err
		}
	}
	if jp.wantParams {
		d.addParamGrad(pgrad, w, jp.ps2, jp.pc, jp.pell, jp.ppi)
	}
	return jp.sum * w, nil
}

// meanFieldParams reports whether the mean-field route gives this
// likelihood's parameter gradient (see DiffusionRoutes.MeanFieldParamsMin).
func (d *Diffusion) meanFieldParams() bool {
	return d.np >= d.opts.Routes.MeanFieldParamsMin && !(d.learnable() && !d.fixedDiffusion)
}

// pointFactor returns the factor L of q's covariance that maps standard
// normal points to offsets from the mean (L·Lᵀ = P; with diagonal sites
// the NP standard deviations), after checking the mean and L are finite.
func (d *Diffusion) pointFactor(mean, P []float64, diag bool) ([]float64, error) {
	np := d.np
	L := d.lfac
	if diag {
		for a := 0; a < np; a++ {
			L[a] = math.Sqrt(math.Max(P[a], 0))
		}
	} else if err := sqrtCov(L, P, np); err != nil {
		return nil, err
	}
	for a, m := range mean {
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return nil, fmt.Errorf("cvi: %w: the posterior mean is not finite", ErrNumerical)
		}
		row := L[a : a+1]
		if !diag {
			row = L[a*np : (a+1)*np]
		}
		for _, l := range row {
			if math.IsNaN(l) || math.IsInf(l, 0) {
				return nil, fmt.Errorf("cvi: %w: the posterior covariance is not finite", ErrNumerical)
			}
		}
	}
	return L, nil
}

// pointOffset writes the offset L·z of the standard normal point z into
// d.delta.
func (d *Diffusion) pointOffset(z, L []float64, diag bool) {
	np := d.np
	for a := 0; a < np; a++ {
		if diag {
			d.delta[a] = L[a] * z[a]
			continue
		}
		var s float64
		for b, lb := range L[a*np : (a+1)*np] {
			s += lb * z[b]
		}
		d.delta[a] = s
	}
}

// jointPass is one bin's pass of expectJoint over the points: what every
// point needs and the running sums the points add into.
type jointPass struct {
	d     *Diffusion
	bound diffusion.Prepared
	obs   []Obs
	// mean is q's; grad and curv receive the sums of the mean derivatives
	// (nil: not wanted).
	mean, grad, curv []float64
	stride           int  // P[k*stride] is product k's variance
	diag             bool // diagonal sites (mean field)
	exact            bool // ExactCurvature: curv comes from stein
	wantParams       bool
	// Running sums: Σ log p, Σ ∂log p/∂σ², Σ ∂log p/∂ℓ, Σ ∂log p/∂π, and
	// stein = Σ (f − m)(Jᵀ∂log p)ᵀ (its diagonal with diagonal sites).
	sum, ps2, pell, ppi float64
	stein               []float64
	// pc sums ∂log p/∂c, the level noise's slope.
	pc float64
}

// at evaluates the bin at the point f = mean + sign·d.delta through the
// diffusion map linearised there, and adds into the running sums, grad
// and curv.
func (jp *jointPass) at(sign float64) error {
	d := jp.d
	np := d.np
	for a := 0; a < np; a++ {
		d.f[a] = jp.mean[a] + sign*d.delta[a]
	}
	active, err := jp.bound.Linearise(d.g, d.jac, d.f)
	if err != nil {
		return err
	}
	for k, o := range jp.obs {
		if math.IsNaN(o.Y) {
			d.dl[k], d.d2l[k] = 0, 0
			continue
		}
		l, dl, d2l, ds2 := d.point(k, o, d.g[k])
		jp.sum += l
		d.dl[k], d.d2l[k] = dl, d2l
		jp.ps2 += ds2
		if d.binNoise != nil {
			jp.pc += ds2 * d.noiseWeight(k)
		}
	}
	if jp.grad != nil || jp.exact {
		jp.addGradient(sign, active)
	}
	if jp.curv != nil && !jp.exact {
		jp.addGaussNewton(active)
	}
	if jp.wantParams && active && d.learnable() && !d.fixedDiffusion {
		if err := jp.bound.ParamGrad(d.dge, d.dgp, d.f); err != nil {
			return err
		}
		for k := 0; k < np; k++ {
			jp.pell += d.dl[k] * d.dge[k]
			jp.ppi += d.dl[k] * d.dgp[k]
		}
	}
	return nil
}

// addGradient adds the point's gradient in f, Jᵀ·∂log p, into grad and,
// for the exact curvature, its product with the offset into stein.
func (jp *jointPass) addGradient(sign float64, active bool) {
	d := jp.d
	np := d.np
	// gf = Jᵀ·dl (J = I when nothing is in excess).
	if !active {
		copy(d.gf, d.dl)
	} else {
		for a := range d.gf {
			d.gf[a] = 0
		}
		for k, v := range d.dl {
			if v == 0 {
				continue
			}
			for a, jka := range d.jac[k*np : (k+1)*np] {
				d.gf[a] += jka * v
			}
		}
	}
	if jp.grad != nil {
		for a := 0; a < np; a++ {
			jp.grad[a] += d.gf[a]
		}
	}
	if jp.exact && jp.diag {
		for a := 0; a < np; a++ {
			jp.stein[a] += sign * d.delta[a] * d.gf[a]
		}
	} else if jp.exact {
		for a := 0; a < np; a++ {
			da := sign * d.delta[a]
			for b := 0; b < np; b++ {
				jp.stein[a*np+b] += da * d.gf[b]
			}
		}
	}
}

// addGaussNewton adds the point's Gauss–Newton curvature Jᵀ diag(∂²log p) J
// into curv (its diagonal with diagonal sites).
func (jp *jointPass) addGaussNewton(active bool) {
	d := jp.d
	np := d.np
	curv, J := jp.curv, d.jac
	switch {
	case !active:
		for k := 0; k < np; k++ {
			curv[k*jp.stride] += d.d2l[k]
		}
	case jp.diag:
		// curv_a += Σ_k d2l_k J_ka²: the diagonal of Jᵀ diag(d2l) J.
		for k := 0; k < np; k++ {
			h := d.d2l[k]
			if h == 0 {
				continue
			}
			for a, ja := range J[k*np : (k+1)*np] {
				curv[a] += h * ja * ja
			}
		}
	default:
		// curv += Jᵀ diag(d2l) J.
		for k := 0; k < np; k++ {
			h := d.d2l[k]
			if h == 0 {
				continue
			}
			row := J[k*np : (k+1)*np]
			for a, ja := range row {
				if ja == 0 {
					continue
				}
				ha := h * ja
				for b, jb := range row {
					curv[a*np+b] += ha * jb
				}
			}
		}
	}
}

// exactCurvature writes the exact curvature by the Stein identity,
// H = P⁻¹·E[(f − m) gᵀ] symmetrised, from stein = Σ (f − m) gᵀ over the
// points and the weight w of each (per product with diagonal sites).
func (d *Diffusion) exactCurvature(curv, P, stein []float64, w float64, diag bool) error {
	np := d.np
	if diag {
		// H_aa = E[(f_a − m_a) g_a] / v_a.
		for a := 0; a < np; a++ {
			if !(P[a] > 0) {
				return errors.New("cvi: exact curvature needs positive variances")
			}
			curv[a] = w * stein[a] / P[a]
		}
		return nil
	}
	sym := mat.NewSymDense(np, nil)
	for a := 0; a < np; a++ {
		for b := a; b < np; b++ {
			sym.SetSym(a, b, 0.5*(P[a*np+b]+P[b*np+a]))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(sym) {
		return errors.New("cvi: exact curvature needs a positive definite covariance")
	}
	A := mat.NewDense(np, np, stein)
	A.Scale(w, A)
	var H mat.Dense
	if err := ch.SolveTo(&H, A); err != nil {
		return err
	}
	for a := 0; a < np; a++ {
		for b := 0; b < np; b++ {
			curv[a*np+b] = 0.5 * (H.At(a, b) + H.At(b, a))
		}
	}
	return nil
}

// addParamGrad adds the parameter gradient from the sums over the points
// (each of weight w) of ∂log p/∂σ², ∂/∂c (level noise), ∂/∂ℓ and ∂/∂π,
// through the parameterisation, into pgrad.
func (d *Diffusion) addParamGrad(pgrad []float64, w, ps2, pc, pell, ppi float64) {
	pgrad[0] += w * ps2 * softplusSlope(d.variance)
	if d.opts.LevelNoise {
		pgrad[d.slopeIndex()] += w * pc * softplusSlope(d.slope)
	}
	if d.learnable() && !d.fixedDiffusion {
		var raw [4]float64 // σ², ℓ, π and c with level noise
		d.Params(raw[:d.NumParams()])
		_, dEll := diffusion.LengthscaleFromRaw(raw[1])
		_, dPi := diffusion.SinkFromRaw(raw[2])
		pgrad[1] += w * pell * dEll
		pgrad[2] += w * ppi * dPi
	}
}

// expectMeanOnly is the reference's approximation (see MeanOnly).
func (d *Diffusion) expectMeanOnly(op diffusion.Operator, obs []Obs, mean, vars, grad, curv, pgrad []float64) (float64, error) {
	np := d.np
	if err := op.Apply(d.g, nil, mean, d.u, d.ws); err != nil {
		return 0, err
	}
	var sum float64
	for k, o := range obs {
		d.dl[k] = 0
		if math.IsNaN(o.Y) {
			if grad != nil {
				grad[k], curv[k] = 0, 0
			}
			continue
		}
		if pgrad != nil {
			sum += d.tobitParamGrad(o, d.g[k], vars[k], pgrad)
		}
		e, dm, d2m := d.tobit.Expect(o, d.g[k], vars[k])
		if pgrad == nil {
			sum += e
		}
		d.dl[k] = dm
		if grad != nil {
			grad[k], curv[k] = dm, d2m
		}
	}
	if pgrad != nil && d.learnable() && !d.fixedDiffusion {
		if err := op.ParamGrad(d.dge, d.dgp, mean, d.u, d.ws); err != nil {
			return 0, err
		}
		var pell, ppi float64
		for k := 0; k < np; k++ {
			pell += d.dl[k] * d.dge[k]
			ppi += d.dl[k] * d.dgp[k]
		}
		var raw [4]float64 // σ², ℓ, π and c with level noise
		d.Params(raw[:d.NumParams()])
		_, dEll := diffusion.LengthscaleFromRaw(raw[1])
		_, dPi := diffusion.SinkFromRaw(raw[2])
		pgrad[1] += pell * dEll
		pgrad[2] += ppi * dPi
	}
	return sum, nil
}

// excessNegligible reports whether no product can plausibly exceed its
// supply under q: every mean is more than 8.5 standard deviations below
// its supply (P(excess) < 1e-17 each). The diffusion map is then the
// identity almost surely and the expectation factorises exactly.
// P[k*stride] is product k's variance.
func (d *Diffusion) excessNegligible(obs []Obs, mean, P []float64, stride int) bool {
	for k, o := range obs {
		if math.IsInf(o.Supply, 1) {
			continue
		}
		if mean[k]+8.5*math.Sqrt(math.Max(P[k*stride], 0)) >= o.Supply {
			return false
		}
	}
	return true
}

// expectFactorised is the exact expectation without diffusion: a sum of
// one-dimensional Tobit expectations. P[k*stride] is product k's
// variance, and curv[k*stride] receives its curvature (stride NP+1 for
// full NP×NP blocks, 1 for diagonal sites).
func (d *Diffusion) expectFactorised(obs []Obs, mean, P []float64, stride int, grad, curv, pgrad []float64) float64 {
	np := d.np
	if grad != nil {
		clear(grad[:np])
	}
	if curv != nil {
		clear(curv[:(np-1)*stride+1])
	}
	var sum float64
	for k, o := range obs {
		if math.IsNaN(o.Y) {
			continue
		}
		v := P[k*stride]
		if pgrad != nil {
			e := d.tobitParamGrad(o, mean[k], v, pgrad)
			if grad == nil && curv == nil {
				sum += e
				continue
			}
		}
		e, dm, d2m := d.tobit.Expect(o, mean[k], v)
		sum += e
		if grad != nil {
			grad[k] = dm
		}
		if curv != nil {
			curv[k*stride] = d2m
		}
	}
	return sum
}

// tobitParamGrad adds the noise parameters' gradient of product o's 1-D
// Tobit expectation into pgrad (σ² first, c at slopeIndex with level
// noise) and returns the expectation.
func (d *Diffusion) tobitParamGrad(o Obs, m, v float64, pgrad []float64) float64 {
	if !d.opts.LevelNoise {
		return d.tobit.ExpectParamGrad(o, m, v, pgrad[:1])
	}
	var g [2]float64
	e := d.tobit.ExpectParamGrad(o, m, v, g[:])
	pgrad[0] += g[0]
	pgrad[d.slopeIndex()] += g[1]
	return e
}
