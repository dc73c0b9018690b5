package cvi

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// meanFieldScratch is the working memory of expectMeanField.
type meanFieldScratch struct {
	kind    []int8      // per product: mfMissing, mfGauss or mfCensored
	cand    []int       // products with finite supply: the only ones that can be in excess
	exc     []int       // products in excess at the current point
	e       []float64   // excess f_i − u_i of the products in exc
	next    []float64   // f after the diffusion step
	c       []float64   // J_kk: 0 for a product in excess that gains, else 1
	w, h    []float64   // b_k·∂log p_k and b_k·∂²log p_k (b: the gain indicator)
	rowCols [][]int     // T's row i (views into the transition)
	rowVals [][]float64 //
	stein   []float64   // Σ (f − m) ⊙ Jᵀ∂log p (exact curvature)
	isExc   []bool      // per product: in excess at the current point
	omega   []float64   // mfContract's scratch: h⊙T_a, kept zero between uses
	hout    []float64   // and h outside the excess set
	// Sums over the points by excess set (see mfPointGrouped).
	cdl, cd2l []float64 // Σ c⊙∂log p, Σ c⊙∂²log p
	pat       patterns
	// fast: mfPoint takes survivalFast (relative error below 1e-13, as
	// mfPointGrouped does), for the sparse online route.
	fast bool
	// ps2 sums ∂log p/∂σ² over the points (the noise variance's gradient),
	// pc ∂log p/∂c (the level noise's slope).
	ps2, pc float64
	// zmax caches zAbsMax for the two rules the online refinement uses.
	zmax [2]zAbsMaxCache
	// split is the second half of the points (expectCoupledSparse); kept
	// here so that a Worker's fresh scratch does not share its parent's.
	split *pointSplit
}

// patterns accumulates, per excess set, the sums of w and h over the
// points with that set: an open-addressing table from the set's mask to
// a slot.
type patterns struct {
	table []int32   // slot+1 per hash bucket, 0: empty
	masks []uint64  // per slot
	w, h  []float64 // per slot, N_p each
	n     int       // slots in use
}

// reset sizes the table for up to slots sets of np products and empties it.
func (p *patterns) reset(slots, np int) {
	size := 16
	for size < 2*slots {
		size *= 2
	}
	// Grow only: the online refinement alternates a coarse and the full
	// rule, and a smaller rule works in the larger table as well.
	if len(p.table) < size {
		p.table = make([]int32, size)
	} else {
		clear(p.table)
	}
	if cap(p.masks) < slots {
		p.masks = make([]uint64, slots)
	}
	p.masks = p.masks[:slots]
	p.w, p.h = linalg.Resize(p.w, slots*np), linalg.Resize(p.h, slots*np)
	p.n = 0
}

// slot returns the slot of mask, opening a zeroed one for a new mask.
func (p *patterns) slot(mask uint64, np int) int {
	m := uint64(len(p.table) - 1)
	i := (mask * 0x9e3779b97f4a7c15) >> 40 & m
	for {
		switch e := p.table[i]; {
		case e == 0:
			k := p.n
			p.n++
			p.table[i] = int32(k + 1)
			p.masks[k] = mask
			clear(p.w[k*np : (k+1)*np])
			clear(p.h[k*np : (k+1)*np])
			return k
		case p.masks[e-1] == mask:
			return int(e - 1)
		}
		i = (i + 1) & m
	}
}

const (
	mfMissing int8 = iota
	mfGauss
	mfCensored
)

// spread applies one diffusion step to the excess products s.exc in next
// (which holds the demand): each is capped at its supply u and its excess
// s.e moves along its row of the graph.
func (s *meanFieldScratch) spread(next, u []float64) {
	for _, k := range s.exc {
		next[k] = u[k]
	}
	for _, k := range s.exc {
		e := s.e[k]
		cols, vals := s.rowCols[k], s.rowVals[k]
		vals = vals[:len(cols)]
		for p, j := range cols {
			next[j] += e * vals[p]
		}
	}
}

func (s *meanFieldScratch) grow(np int) {
	if len(s.kind) == np {
		return
	}
	s.kind = make([]int8, np)
	s.cand = make([]int, 0, np)
	s.exc = make([]int, 0, np)
	s.e = make([]float64, np)
	s.next = make([]float64, np)
	s.c = make([]float64, np)
	s.w = make([]float64, np)
	s.h = make([]float64, np)
	s.rowCols = make([][]int, np)
	s.rowVals = make([][]float64, np)
	s.stein = make([]float64, np)
	s.cdl = make([]float64, np)
	s.cd2l = make([]float64, np)
	s.isExc = make([]bool, np)
	s.omega, s.hout = make([]float64, np), make([]float64, np)
}

// mfCurv selects the curvature expectMeanField returns.
type mfCurv int

const (
	mfDiag   mfCurv = iota // the N_p diagonal entries (GaussNewton or ExactCurvature)
	mfFull                 // the N_p×N_p Gauss–Newton matrix
	mfSparse               // the Gauss–Newton matrix on d.cp's pattern (curv is nil)
)

// expectMeanField is expectJoint for diagonal sites and one diffusion step
// (the default, and the supply-aware mode): the same points and the same
// estimator, with the Jacobian of the map kept sparse. With one step,
//
//	J_ka = δ_ka·(1 − b_k·a_k) + b_k·a_a·T_ak
//
// for the excess indicator a and the gain indicator b (T_aa = 0): column a
// differs from e_a only for a product in excess, and then only in the
// entries of T's row a. The chain rule costs O(N_p + Σ_excess deg) per
// point instead of the O(N_p²) of a dense J.
//
// sd holds the products' standard deviations and vars their variances;
// the first rows of the point set are used (a nested, coarser rule when
// rows is less than all of them). With mfFull, curv receives the whole
// Gauss–Newton matrix E[Jᵀ diag(∂²log p) J], which the online refinement's
// Newton step on the means needs; with mfSparse the same matrix goes to
// d.cp.curv, on the pattern of T's structure.
func (d *Diffusion) expectMeanField(op diffusion.Operator, obs []Obs, mean, vars, sd, grad, curv []float64, mode mfCurv, rows int) (float64, error) {
	np := d.np
	s := &d.mf
	// The full matrix (the online Newton step's) is Gauss–Newton only.
	exact := curv != nil && mode == mfDiag && d.opts.Curvature == ExactCurvature
	if err := d.mfSetup(op, obs, grad, curv, mode, exact); err != nil {
		return 0, err
	}
	if mode == mfSparse && !d.opts.Routes.KeepCandidates {
		d.pruneCand(mean, sd, rows)
	}
	if mode == mfSparse && d.local != nil {
		d.restrictLocal()
	}
	// Without the exact curvature, whose Stein sums need each point's
	// offset, the chain rule is linear in the points' ∂log p given their
	// excess set, so it is summed per set and applied once per set.
	grouped := !exact && len(s.cand) <= 64
	// Gaussian recipients in closed form (diffusion_meanfield_closed.go):
	// the fused route leaves them out of its points (fusedSums.split), the
	// per-excess-set route marks them missing here.
	closed := mode == mfSparse && !d.opts.Routes.PointRecipients && d.binNoise == nil
	if closed && grouped {
		d.closedSet(true)
	}
	if grouped {
		clear(s.cdl)
		clear(s.cd2l)
		s.pat.reset(2*rows, np)
	}
	wantCurv := curv != nil || mode == mfSparse
	s.fast = mode == mfSparse
	fused := d.fusedLoop(mode, grouped)
	if fused {
		d.cs.fs.reset(d, mean)
	}
	var sum float64
	if d.splits(mode, grouped, rows) {
		sum = d.mfPointsSplit(obs, mean, sd, grad, rows)
	} else {
		sum = d.mfPoints(obs, mean, sd, grad, curv, mode, exact, grouped, 0, rows)
	}
	if grouped && (grad != nil || wantCurv) {
		if mode == mfSparse {
			if err := d.mfContractSparse(grad); err != nil {
				return 0, err
			}
		} else {
			d.mfContract(grad, curv, mode)
		}
	}
	if fused {
		sum += d.staticSums(obs, mean, sd, grad, rows)
		sum += d.closedSums(obs, mean, sd, grad, rows, false)
		d.foldFused(grad)
	}
	if mode == mfSparse && !grouped {
		d.foldSparse()
	}
	if closed && grouped {
		sum += d.closedSums(obs, mean, sd, grad, rows, true)
	}
	w := 1 / float64(2*rows)
	if err := d.mfScale(vars, grad, curv, mode, exact, w); err != nil {
		return 0, err
	}
	return sum * w, nil
}

// pruneCand drops from s.cand the products with finite supply that are in
// excess at none of the first rows antithetic pairs: the largest f_k over
// them is m_k + sd_k·max_i |z_ik|, computed as the points are (rounding is
// monotone), so the test is exact. In a city most stations are far below
// their supply; without them the excess sets are small (often the
// per-set sums apply) and the point loop does not visit their rows.
func (d *Diffusion) pruneCand(mean, sd []float64, rows int) {
	s := &d.mf
	zmax := d.zAbsMax(rows).max
	kept := s.cand[:0]
	for _, k := range s.cand {
		if mean[k]+sd[k]*zmax[k]-d.u[k] > 0 {
			kept = append(kept, k)
		}
	}
	s.cand = kept
}

// zAbsMax returns max_i |z_ik| and Σ_i z_ik² over the first rows of the
// point set in use, per product (cached per point set and number of
// rows).
func (d *Diffusion) zAbsMax(rows int) *zAbsMaxCache {
	c := &d.mf.zmax
	for i := range c {
		if c[i].z == d.z && c[i].rows == rows {
			return &c[i]
		}
	}
	// Two slots: the online refinement alternates a coarse and the full rule.
	c[1] = c[0]
	mx, sq := make([]float64, d.np), make([]float64, d.np)
	for i := 0; i < rows; i++ {
		for k, x := range d.z.RawRowView(i)[:d.np] {
			mx[k] = math.Max(mx[k], math.Abs(x))
			sq[k] += x * x
		}
	}
	c[0] = zAbsMaxCache{z: d.z, rows: rows, max: mx, sq: sq}
	return &c[0]
}

// zAbsMaxCache is zAbsMax's result for one point set and number of rows.
type zAbsMaxCache struct {
	z       *mat.Dense
	rows    int
	max, sq []float64
}

// mfSetup prepares the bin's operator, sorts the products by how they
// are observed, lists those with finite supply (the only ones that can be
// in excess) and clears the outputs.
func (d *Diffusion) mfSetup(op diffusion.Operator, obs []Obs, grad, curv []float64, mode mfCurv, exact bool) error {
	np := d.np
	s := &d.mf
	s.grow(np)
	// Validated once per bin (supply not NaN or −Inf): every point below
	// is finite.
	if _, err := op.Prepare(d.u, d.ws); err != nil {
		return err
	}
	T := op.T
	s.cand = s.cand[:0]
	for k, o := range obs {
		switch {
		case math.IsNaN(o.Y):
			s.kind[k] = mfMissing
		case o.Censored:
			s.kind[k] = mfCensored
		default:
			s.kind[k] = mfGauss
		}
		if !math.IsInf(d.u[k], 1) {
			s.cand = append(s.cand, k)
			s.rowCols[k], s.rowVals[k] = T.Row(k)
		}
	}
	if grad != nil {
		clear(grad[:np])
	}
	switch {
	case mode == mfSparse:
		clear(d.cp.curv.val)
		clear(d.cp.diagAcc)
		d.live()
	case curv != nil && mode == mfFull:
		clear(curv[:np*np])
	case curv != nil:
		clear(curv[:np])
	}
	if exact {
		clear(s.stein)
	}
	s.ps2, s.pc = 0, 0
	return nil
}

// fusedLoop reports whether the sparse route's points take the fused loop
// (diffusion_meanfield_fused.go). It reads one noise per product for the
// whole rule and carries no slope gradient: level noise takes the plain loop.
func (d *Diffusion) fusedLoop(mode mfCurv, grouped bool) bool {
	return mode == mfSparse && !grouped && !d.opts.Routes.UnfusedPoints && d.binNoise == nil
}

// mfPoints runs the antithetic pairs of points in rows [r0, r1) of the
// point set through the map and the chain rule and returns the sum of
// their log-likelihoods.
func (d *Diffusion) mfPoints(obs []Obs, mean, sd, grad, curv []float64, mode mfCurv, exact, grouped bool, r0, r1 int) float64 {
	np := d.np
	var sum float64
	if d.fusedLoop(mode, grouped) {
		for i := r0; i < r1; i++ {
			z := d.z.RawRowView(i)
			sum += d.mfPointSparse(obs, mean, sd, z, 1, grad)
			sum += d.mfPointSparse(obs, mean, sd, z, -1, grad)
		}
		return sum
	}
	delta, f := d.delta[:np], d.f[:np]
	mean, sd = mean[:np], sd[:np]
	for i := r0; i < r1; i++ {
		z := d.z.RawRowView(i)
		z = z[:np]
		for a := range delta {
			delta[a] = sd[a] * z[a]
		}
		for _, sign := range [2]float64{1, -1} {
			for a := range f {
				f[a] = mean[a] + sign*delta[a]
			}
			switch {
			case grouped:
				sum += d.mfPointGrouped(obs, f)
			case grad == nil && curv == nil && mode != mfSparse:
				sum += d.mfPoint(obs, f)
			case mode == mfSparse:
				sum += d.mfPoint(obs, f)
				d.mfChain(grad, nil, mode, false, sign)
				d.mfChainSparse()
			default:
				sum += d.mfPoint(obs, f)
				d.mfChain(grad, curv, mode, exact, sign)
			}
		}
	}
	return sum
}

// mfScale turns the sums over the points into averages (weight w each)
// and, for the exact curvature, the Stein sums into the curvature.
func (d *Diffusion) mfScale(vars, grad, curv []float64, mode mfCurv, exact bool, w float64) error {
	np := d.np
	if grad != nil {
		for a := range grad[:np] {
			grad[a] *= w
		}
	}
	switch {
	case exact:
		// H_aa = E[(f_a − m_a) g_a] / v_a.
		for a := 0; a < np; a++ {
			if !(vars[a] > 0) {
				return errors.New("cvi: exact curvature needs positive variances")
			}
			curv[a] = w * d.mf.stein[a] / vars[a]
		}
	case mode == mfSparse:
		for a := range d.cp.curv.val {
			d.cp.curv.val[a] *= w
		}
	case curv != nil && mode == mfDiag:
		for a := range curv[:np] {
			curv[a] *= w
		}
	case curv != nil:
		for a := range curv[:np*np] {
			curv[a] *= w
		}
		// mfChain fills the lower triangle.
		for a := 0; a < np; a++ {
			for b := 0; b < a; b++ {
				curv[b*np+a] = curv[a*np+b]
			}
		}
	}
	return nil
}

// mfPoint maps one point f through the diffusion step as
// diffusion.Operator does (f⁽¹⁾ = f + max(f − u, 0)(T − I), g = f +
// max(f⁽¹⁾ − f, 0)), leaves the excess set, J's diagonal and ∂log p,
// ∂²log p in the scratch, and returns Σ_k log p(y_k | g_k).
func (d *Diffusion) mfPoint(obs []Obs, f []float64) float64 {
	s := &d.mf
	np := len(f)
	u, g := d.u[:np], d.g[:np]
	dl, d2l := d.dl[:np], d.d2l[:np]
	c, w, h := s.c[:np], s.w[:np], s.h[:np]
	kind := s.kind[:np]
	obs = obs[:np]
	s.exc = s.exc[:0]
	for _, k := range s.cand {
		if e := f[k] - u[k]; e > 0 {
			s.exc = append(s.exc, k)
			s.e[k] = e
		}
	}
	if len(s.exc) == 0 {
		copy(g, f)
		for k := range c {
			c[k], w[k], h[k] = 1, 0, 0
		}
	} else {
		next := s.next[:np]
		copy(next, f)
		s.spread(next, u)
		for j, fn := range next {
			fj := f[j]
			c[j] = 1
			if x := fn - fj; x > 0 {
				g[j] = fj + x
				w[j] = 1 // b_j; the derivatives are multiplied in below
			} else {
				g[j] = fj
				w[j] = 0
			}
		}
		for _, k := range s.exc {
			c[k] = 1 - w[k]
		}
	}
	var sum float64
	s2, sdv, inv, logNorm := d.variance, d.sd, 1/d.variance, d.logNorm
	for k, kd := range kind {
		if d.binNoise != nil {
			s2, sdv, inv, logNorm = d.levelNoiseAt(k)
		}
		var l, dk, d2k float64
		switch kd {
		case mfGauss:
			r := obs[k].Y - g[k]
			l, dk, d2k = logNorm-0.5*r*r*inv, r*inv, -inv
			ds := -0.5*inv + 0.5*r*r*inv*inv
			s.ps2 += ds
			if d.binNoise != nil {
				s.pc += ds * d.binNoise[k].weight
			}
		case mfCensored:
			// log Φ((g − u)/σ) = LogSurvival(z), z = (u − g)/σ.
			z := (obs[k].Supply - g[k]) / sdv
			var logQ, lam float64
			if s.fast {
				logQ, lam, _ = survivalFast(z)
			} else {
				logQ, lam, _ = survival(z)
			}
			l, dk, d2k = logQ, lam/sdv, -lam*(lam-z)/s2
			ds := lam * z / (2 * s2)
			s.ps2 += ds
			if d.binNoise != nil {
				s.pc += ds * d.binNoise[k].weight
			}
		}
		sum += l
		dl[k], d2l[k] = dk, d2k
		b := w[k]
		w[k], h[k] = b*dk, b*d2k
	}
	return sum
}

// mfPointGrouped is mfPoint followed by mfAccumulate in one pass over the
// products: it maps f, evaluates the terms and adds c⊙∂log p, c⊙∂²log p
// to the sums over all points and b⊙∂log p, b⊙∂²log p to its excess
// set's. It returns Σ_k log p(y_k | g_k).
func (d *Diffusion) mfPointGrouped(obs []Obs, f []float64) float64 {
	s := &d.mf
	np := len(f)
	u := d.u[:np]
	kind, isExc := s.kind[:np], s.isExc[:np]
	cdl, cd2l := s.cdl[:np], s.cd2l[:np]
	obs = obs[:np]
	var mask uint64
	s.exc = s.exc[:0]
	for x, k := range s.cand {
		if e := f[k] - u[k]; e > 0 {
			s.exc = append(s.exc, k)
			s.e[k] = e
			isExc[k] = true
			mask |= 1 << (x & 63)
		}
	}
	next := s.next[:np]
	copy(next, f)
	var pw, ph []float64
	if mask != 0 {
		s.spread(next, u)
		i := s.pat.slot(mask, np)
		pw, ph = s.pat.w[i*np:(i+1)*np], s.pat.h[i*np:(i+1)*np]
	}
	var sum float64
	s2, sdv, inv, logNorm := d.variance, d.sd, 1/d.variance, d.logNorm
	for k, fn := range next {
		fk := f[k]
		g, gain := fk, false
		if x := fn - fk; x > 0 {
			g, gain = fk+x, true
		}
		if d.binNoise != nil {
			s2, sdv, inv, logNorm = d.levelNoiseAt(k)
		}
		var l, dk, d2k float64
		switch kind[k] {
		case mfMissing:
			continue
		case mfGauss:
			r := obs[k].Y - g
			l, dk, d2k = logNorm-0.5*r*r*inv, r*inv, -inv
			ds := -0.5*inv + 0.5*r*r*inv*inv
			s.ps2 += ds
			if d.binNoise != nil {
				s.pc += ds * d.binNoise[k].weight
			}
		case mfCensored:
			// log Φ((g − u)/σ) = LogSurvival(z), z = (u − g)/σ.
			z := (obs[k].Supply - g) / sdv
			logQ, lam, _ := survivalFast(z)
			l, dk, d2k = logQ, lam/sdv, -lam*(lam-z)/s2
			ds := lam * z / (2 * s2)
			s.ps2 += ds
			if d.binNoise != nil {
				s.pc += ds * d.binNoise[k].weight
			}
		}
		sum += l
		if !gain {
			cdl[k] += dk
			cd2l[k] += d2k
			continue
		}
		// b_k = 1: c_k = 0 in excess, else 1.
		if !isExc[k] {
			cdl[k] += dk
			cd2l[k] += d2k
		}
		pw[k] += dk
		ph[k] += d2k
	}
	for _, k := range s.exc {
		isExc[k] = false
	}
	return sum
}

// mfContract writes the gradient and curvature from the sums of
// mfPointGrouped, as mfChain would have summed them point by point: for a
// product a in the excess set P, (Jᵀv)_a gains Σ_k T_ak·w_k; the
// curvature's diagonal gains Σ_k T_ak²·h_k, and the full one the cross
// terms T_ak·h_k (k outside P) and Σ_k h_k·T_ak·T_a'k (a' in P).
func (d *Diffusion) mfContract(grad, curv []float64, mode mfCurv) {
	s := &d.mf
	np := len(s.c)
	if grad != nil {
		copy(grad[:np], s.cdl)
	}
	if curv != nil {
		if mode == mfDiag {
			copy(curv[:np], s.cd2l)
		} else {
			for k, v := range s.cd2l {
				curv[k*np+k] = v
			}
		}
	}
	// Per set P: ω = h⊙T_a (dense, for the excess block), h with P's
	// entries zeroed (for the cross terms).
	omega, hout := s.omega[:np], s.hout[:np]
	for i := 0; i < s.pat.n; i++ {
		mask := s.pat.masks[i]
		pw, ph := s.pat.w[i*np:(i+1)*np], s.pat.h[i*np:(i+1)*np]
		if mode == mfFull && curv != nil {
			copy(hout, ph)
			for x, a := range s.cand {
				if mask>>(x&63)&1 != 0 {
					hout[a] = 0
				}
			}
		}
		for x, a := range s.cand {
			if mask>>(x&63)&1 == 0 {
				continue
			}
			cols, vals := s.rowCols[a], s.rowVals[a]
			vals = vals[:len(cols)]
			if grad != nil {
				var acc float64
				for p, k := range cols {
					acc += vals[p] * pw[k]
				}
				grad[a] += acc
			}
			switch {
			case curv == nil:
			case mode == mfDiag:
				var acc float64
				for p, k := range cols {
					t := vals[p]
					acc += t * t * ph[k]
				}
				curv[a] += acc
			default:
				for p, k := range cols {
					omega[k] = vals[p] * ph[k]
					curv[max(a, k)*np+min(a, k)] += vals[p] * hout[k]
				}
				for x2, a2 := range s.cand[:x+1] {
					if mask>>(x2&63)&1 == 0 {
						continue
					}
					// Σ_k h_k·T_ak·T_a'k over row a' against ω.
					c2, v2 := s.rowCols[a2], s.rowVals[a2]
					v2 = v2[:len(c2)]
					var acc float64
					for q, k := range c2 {
						acc += v2[q] * omega[k]
					}
					curv[a*np+a2] += acc
				}
				for _, k := range cols {
					omega[k] = 0
				}
			}
		}
	}
}

// mfChain adds one point's Jᵀ∂log p into grad and its curvature into curv
// (see expectMeanField), from what mfPoint left in the scratch.
func (d *Diffusion) mfChain(grad, curv []float64, mode mfCurv, exact bool, sign float64) {
	s := &d.mf
	np := len(s.c)
	dl, d2l := d.dl[:np], d.d2l[:np]
	c, w, h := s.c[:np], s.w[:np], s.h[:np]
	// Column a of J is e_a unless a is in excess: there
	// (Jᵀv)_a = c_a·v_a + Σ_k T_ak·b_k·v_k.
	if grad != nil || exact {
		gf := d.gf[:np]
		copy(gf, dl)
		for _, a := range s.exc {
			acc := c[a] * dl[a]
			cols, vals := s.rowCols[a], s.rowVals[a]
			vals = vals[:len(cols)]
			for p, k := range cols {
				acc += vals[p] * w[k]
			}
			gf[a] = acc
		}
		if grad != nil {
			grad = grad[:np]
			for a, v := range gf {
				grad[a] += v
			}
		}
		if exact {
			st, delta := s.stein[:np], d.delta[:np]
			for a, v := range gf {
				st[a] += sign * delta[a] * v
			}
			return
		}
	}
	if curv == nil {
		return
	}
	if mode == mfDiag {
		// curv_a = Σ_k J_ka²·∂²log p_k = c_a·d2l_a + Σ_k T_ak²·b_k·d2l_k.
		curv = curv[:np]
		for a, v := range d2l {
			curv[a] += c[a] * v
		}
		for _, a := range s.exc {
			var acc float64
			cols, vals := s.rowCols[a], s.rowVals[a]
			vals = vals[:len(cols)]
			for p, k := range cols {
				t := vals[p]
				acc += t * t * h[k]
			}
			curv[a] += acc
		}
		return
	}
	// Full, lower triangle: Σ_k d2l_k·J_k·ᵀJ_k· with row k of J equal to
	// c_k·e_kᵀ + b_k·Σ_{a in excess} T_ak·e_aᵀ. Products in excess have
	// c_k·b_k = 0, so the cross terms come from the others only.
	for k, v := range d2l {
		curv[k*np+k] += c[k] * v
	}
	for x, a := range s.exc {
		cols, vals := s.rowCols[a], s.rowVals[a]
		vals = vals[:len(cols)]
		for p, k := range cols {
			// c_k·h_k vanishes for k in excess.
			v := vals[p] * c[k] * h[k]
			if k > a {
				curv[k*np+a] += v
			} else {
				curv[a*np+k] += v
			}
		}
		// The excess block: Σ_k h_k·T_ak·T_a'k for a' ≤ a in excess.
		for _, a2 := range s.exc[:x+1] {
			curv[max(a, a2)*np+min(a, a2)] += dotRows(s.rowCols[a], s.rowVals[a], s.rowCols[a2], s.rowVals[a2], h)
		}
	}
}

// dotRows returns Σ_k h_k·T_ak·T_bk for two rows of T given as ascending
// sparse column lists.
func dotRows(ca []int, va []float64, cb []int, vb []float64, h []float64) float64 {
	var s float64
	p, q := 0, 0
	for p < len(ca) && q < len(cb) {
		switch {
		case ca[p] < cb[q]:
			p++
		case ca[p] > cb[q]:
			q++
		default:
			s += h[ca[p]] * va[p] * vb[q]
			p++
			q++
		}
	}
	return s
}

// expectCoupled is Expect for diagonal sites (vars holds the N_p
// variances) that writes the whole N_p×N_p Gauss–Newton curvature of the
// mean-field expectation into curv: the diffusion couples the products'
// means even where the sites are diagonal, and the online refinement's
// Newton step uses that coupling. With coarse it takes the LearnPoints
// rule (the first points of the nested set) instead of the Points rule.
// ok is false where the likelihood has no such curvature (full sites,
// mean-only, or more than one diffusion step); E is NaN on failure. It is
// the Gauss–Newton matrix whatever d.opts.Curvature says: the Newton step
// needs the coupling, and its diagonal is the online site's curvature.
func (d *Diffusion) expectCoupled(obs []Obs, mean, vars, grad, curv []float64, coarse bool) (e float64, ok bool) {
	np := d.np
	if !d.diagonal() || d.opts.Steps != 1 {
		return 0, false
	}
	if len(obs) != np || len(mean) != np || len(vars) != np {
		return math.NaN(), true
	}
	op, err := d.operator(obs)
	if err != nil {
		return math.NaN(), true
	}
	clear(curv[:np*np])
	if op.T.NNZ() == 0 || d.excessNegligible(obs, mean, vars, 1) {
		// The map is the identity: the curvature is diagonal.
		diag := d.lfac[:np]
		e := d.expectFactorised(obs, mean, vars, 1, grad, diag, nil)
		for a, v := range diag {
			curv[a*np+a] = v
		}
		return e, true
	}
	sd := d.lfac[:np]
	for a, m := range mean {
		sd[a] = math.Sqrt(math.Max(vars[a], 0))
		if math.IsNaN(m) || math.IsInf(m, 0) || math.IsNaN(sd[a]) || math.IsInf(sd[a], 0) {
			return math.NaN(), true
		}
	}
	npts, _ := d.z.Dims()
	if coarse {
		// The LearnPoints rule: the first pairs of the nested point set.
		npts = min(npts, max(1, d.opts.LearnPoints/2))
	}
	e, err = d.expectMeanField(op, obs, mean, vars, sd, grad, curv, mfFull, npts)
	if err != nil {
		return math.NaN(), true
	}
	return e, true
}
