package cvi

// The sparse mean-field expectation's point loop (expectCoupledSparse) in
// one pass per point, with the sums of the chain rule taken per column of
// T where they can be.
//
// In a city most stations with finite supply that can be in excess are in
// excess at most points (on the City2000 benchmark 638 of 667 at a typical
// point), so for most columns k of T every candidate entry (a, k) is in
// excess. The Gauss–Newton sums mfChainSparse adds per point and entry —
// c_k·h_k per entry (a, k) with a in excess, h_k per pair of such entries
// — are then the same function of the point for every candidate entry of
// the column: they are summed per column (Σ h_k, Σ c_k·h_k) and spread
// over the column's candidate entries once per expectation. Only the
// columns that some candidate outside the excess set reaches at a point
// (a few hundred) take the entry-by-entry route at that point. Likewise
// the gradient's Σ_k T_ak·b_k·∂log p_k over the points where a is in
// excess is Σ_k T_ak·(Σ over all points) minus the same sum over the few
// points where a is not. The sums are the same terms added in another
// order: the result equals mfChainSparse's to rounding
// (TestSparseFusedMatches).

// mfPointSparse is the sparse curvature's point loop unless
// DiffusionRoutes.UnfusedPoints selects mfPoint, mfChain and mfChainSparse
// (the reference the tests compare it with).

// fusedSums are mfPointSparse's sums over the points, per product or per
// column of T.
type fusedSums struct {
	w      []float64 // per column k: Σ b_k·∂log p_k
	h, ch  []float64 // per column k of full excess: Σ h_k, Σ c_k·h_k
	sub    []float64 // per candidate a: Σ_k T_ak·b_k·∂log p_k over the points a is not in excess
	nexc   []int32   // per candidate: the points it is in excess at
	noise  []float64 // per product: the noise variance σ² of its observation
	nsd    []float64 // √σ²
	ninv   []float64 // 1/σ²
	nlog   []float64 // −½ log(2πσ²)
	mark   []bool    // per column: reached by a candidate outside the excess set
	marked []int     // the marked columns
	gained []int     // the products that gain at the point
	off    []int     // the rows summed by complement outside the excess set at the point
	dexc   []int     // the other rows in the excess set at the point
	// byComp: per product, its row of the gradient and its entries of the
	// curvature are summed by complement (over all points, less the points
	// it is not in excess at): the candidates whose mean is above their
	// supply, in excess at most points. The other candidates are summed
	// directly at the points they are in excess at.
	byComp []bool
	// dyn lists the products a point can change beyond their own f: those
	// with finite supply left by pruneCand, their rows' columns (the only
	// ones that can gain) and the censored ones; static the others, whose
	// Gaussian (or missing) terms are summed in closed form (staticSums).
	dyn, static []int
	// Per candidate, its row of T cut to the dynamic columns (the only
	// ones whose demand after diffusion a point reads): entries
	// sLo[a]..sHi[a] of sCols, sVals; isDyn marks the dynamic products.
	isDyn    []bool
	sLo, sHi []int
	sCols    []int
	sVals    []float64
	// closed lists the Gaussian recipients summed in closed form
	// (diffusion_meanfield_closed.go), isClosed marks them; per product,
	// the inflow's mean and variance and r = y − m − E[D] of a recipient,
	// the excess's mean and probability of a candidate.
	closed           []int
	isClosed         []bool
	inMu, inVar, inR []float64
	eE, ePhi         []float64
}

func (fs *fusedSums) grow(np int) {
	if len(fs.w) == np {
		return
	}
	*fs = fusedSums{
		w: make([]float64, np), h: make([]float64, np), ch: make([]float64, np),
		sub: make([]float64, np), nexc: make([]int32, np),
		noise: make([]float64, np), nsd: make([]float64, np), ninv: make([]float64, np), nlog: make([]float64, np),
		mark: make([]bool, np), marked: make([]int, 0, np), gained: make([]int, 0, np),
		off: make([]int, 0, np), dexc: make([]int, 0, np), byComp: make([]bool, np),
		dyn: make([]int, 0, np), static: make([]int, 0, np),
		closed: make([]int, 0, np), isClosed: make([]bool, np),
		isDyn: make([]bool, np), sLo: make([]int, np), sHi: make([]int, np),
		inMu: make([]float64, np), inVar: make([]float64, np), inR: make([]float64, np),
		eE: make([]float64, np), ePhi: make([]float64, np),
	}
}

// split lists the dynamic and static products (see fusedSums.dyn) and,
// with closed-form recipients (DiffusionRoutes.PointRecipients off), leaves the Gaussian recipients (closedSet) out
// of the dynamic ones, and the missing stations of the candidates' rows
// as well (they have no term at all).
func (fs *fusedSums) split(d *Diffusion) {
	s, mark := &d.mf, fs.mark // mark is all false between points: borrowed
	closed := !d.opts.Routes.PointRecipients
	if closed {
		d.closedSet(false)
	} else {
		for _, k := range fs.closed {
			fs.isClosed[k] = false
		}
		fs.closed = fs.closed[:0]
	}
	isCand := s.isExc // likewise
	for _, a := range s.cand {
		mark[a], isCand[a] = true, true
		for _, k := range s.rowCols[a] {
			mark[k] = true
		}
	}
	for _, k := range fs.dyn {
		fs.isDyn[k] = false
	}
	fs.dyn, fs.static = fs.dyn[:0], fs.static[:0]
	for k, m := range mark {
		switch {
		case m && closed && !isCand[k] && s.kind[k] != mfCensored:
			// Read as a column of the candidates' rows: zero at every point.
			s.w[k], s.h[k] = 0, 0
		case m || s.kind[k] == mfCensored:
			fs.dyn = append(fs.dyn, k)
			fs.isDyn[k] = true
		default:
			fs.static = append(fs.static, k)
		}
		mark[k] = false
	}
	for _, a := range s.cand {
		isCand[a] = false
	}
	fs.sCols, fs.sVals = fs.sCols[:0], fs.sVals[:0]
	for _, a := range s.cand {
		fs.sLo[a] = len(fs.sCols)
		cols, vals := s.rowCols[a], s.rowVals[a]
		for p, k := range cols {
			if fs.isDyn[k] {
				fs.sCols, fs.sVals = append(fs.sCols, k), append(fs.sVals, vals[p])
			}
		}
		fs.sHi[a] = len(fs.sCols)
	}
}

// spread is meanFieldScratch.spread over the candidates' rows cut to the
// dynamic columns: the same additions to those columns, in the same order.
func (fs *fusedSums) spread(s *meanFieldScratch, next, u []float64) {
	for _, k := range s.exc {
		next[k] = u[k]
	}
	cols, vals := fs.sCols, fs.sVals
	for _, k := range s.exc {
		e := s.e[k]
		lo, hi := fs.sLo[k], fs.sHi[k]
		for p, j := range cols[lo:hi] {
			next[j] += e * vals[lo+p]
		}
	}
}

// staticSums adds the static products' terms over the first rows
// antithetic pairs in closed form: their g is f = m ± sd·z, so for a
// Gaussian one with r = y − m and S = Σ_i z_i², Σ log p = 2R·c −
// (2R·r² + 2·sd²·S)/(2σ²) over the 2R points, Σ ∂log p = 2R·r/σ² and
// Σ ∂²log p = −2R/σ². It adds the gradient to grad and the curvature to
// d.cp.diagAcc, and returns the sum of the log-likelihoods (equal to the
// points' sums to rounding).
func (d *Diffusion) staticSums(obs []Obs, mean, sd, grad []float64, rows int) float64 {
	fs, zc := &d.cs.fs, d.zAbsMax(rows)
	n := float64(2 * rows)
	var sum, ps2 float64
	for _, k := range fs.static {
		if d.mf.kind[k] != mfGauss {
			continue
		}
		inv, r := fs.ninv[k], obs[k].Y-mean[k]
		rr := n*r*r + 2*sd[k]*sd[k]*zc.sq[k]
		sum += n*fs.nlog[k] - 0.5*rr*inv
		grad[k] += n * r * inv
		d.cp.diagAcc[k] -= n * inv
		ps2 += -0.5*n*inv + 0.5*rr*inv*inv
	}
	d.mf.ps2 += ps2
	return sum
}

// reset clears the sums for an expectation, fills the per-product
// noise variances (the one place mfPointSparse reads them) and, given the
// means (nil for a split half, which shares its parent's), which rows are
// summed by complement.
func (fs *fusedSums) reset(d *Diffusion, mean []float64) {
	fs.grow(d.np)
	if mean != nil {
		clear(fs.byComp)
		for _, k := range d.mf.cand {
			fs.byComp[k] = mean[k] > d.u[k]
		}
		fs.split(d)
	}
	clear(fs.w)
	clear(fs.h)
	clear(fs.ch)
	clear(fs.sub)
	clear(fs.nexc)
	for k := range fs.noise {
		fs.noise[k], fs.nsd[k], fs.ninv[k], fs.nlog[k] = d.variance, d.sd, 1/d.variance, d.logNorm
	}
}

// add adds another half's sums (see mfPointsSplit).
func (fs *fusedSums) add(o *fusedSums) {
	for k, v := range o.w {
		fs.w[k] += v
	}
	for k, v := range o.h {
		fs.h[k] += v
	}
	for k, v := range o.ch {
		fs.ch[k] += v
	}
	for k, v := range o.sub {
		fs.sub[k] += v
	}
	for k, v := range o.nexc {
		fs.nexc[k] += v
	}
}

// mfPointSparse maps the point mean + sign·sd⊙z through the diffusion
// step, adds its log-likelihood terms' c⊙∂log p to grad and c⊙∂²log p to
// d.cp.diagAcc, and its other chain-rule terms to d.cs.fs (per column) or to
// d.cp's entry and pair sums (columns a candidate outside the excess set
// reaches); it returns Σ_k log p(y_k | g_k). foldFused finishes the sums.
func (d *Diffusion) mfPointSparse(obs []Obs, mean, sd, z []float64, sign float64, grad []float64) float64 {
	s, cp, fs := &d.mf, d.cp, &d.cs.fs
	np := d.np
	f, u := d.f[:np], d.u[:np]
	mean, sd, z, grad = mean[:np], sd[:np], z[:np], grad[:np]
	isExc, kind, obs := s.isExc[:np], s.kind[:np], obs[:np]
	dyn := fs.dyn
	for _, k := range dyn {
		f[k] = mean[k] + sign*(sd[k]*z[k])
	}
	s.exc, fs.off, fs.dexc = s.exc[:0], fs.off[:0], fs.dexc[:0]
	byComp := fs.byComp[:np]
	for _, k := range s.cand {
		switch e := f[k] - u[k]; {
		case e > 0:
			s.exc = append(s.exc, k)
			s.e[k] = e
			isExc[k] = true
			fs.nexc[k]++
			if !byComp[k] {
				fs.dexc = append(fs.dexc, k)
			}
		case byComp[k]:
			fs.off = append(fs.off, k)
		}
	}
	next := s.next[:np]
	for _, k := range dyn {
		next[k] = f[k]
	}
	fs.spread(s, next, u)
	w, h, diag := s.w[:np], s.h[:np], cp.diagAcc[:np]
	noise, nsd, ninv, nlog := fs.noise[:np], fs.nsd[:np], fs.ninv[:np], fs.nlog[:np]
	fs.gained = fs.gained[:0]
	var sum, ps2 float64
	for _, k := range dyn {
		fk, fn := f[k], next[k]
		g, gain := fk, false
		if x := fn - fk; x > 0 {
			g, gain = fk+x, true
		}
		var l, dk, d2k float64
		switch kind[k] {
		case mfGauss:
			inv := ninv[k]
			r := obs[k].Y - g
			l, dk, d2k = nlog[k]-0.5*r*r*inv, r*inv, -inv
			ps2 += -0.5*inv + 0.5*r*r*inv*inv
		case mfCensored:
			// log Φ((g − u)/σ) = LogSurvival(z), z = (u − g)/σ.
			s2 := noise[k]
			zk := (obs[k].Supply - g) / nsd[k]
			logQ, lam, _ := survivalFast(zk)
			l, dk, d2k = logQ, lam/nsd[k], -lam*(lam-zk)/s2
			ps2 += lam * zk / (2 * s2)
		}
		sum += l
		if !gain {
			grad[k] += dk
			diag[k] += d2k
			w[k], h[k] = 0, 0
			continue
		}
		// b_k = 1: c_k = 0 in excess, else 1.
		if !isExc[k] {
			grad[k] += dk
			diag[k] += d2k
		}
		w[k], h[k] = dk, d2k
		fs.w[k] += dk
		fs.gained = append(fs.gained, k)
	}
	s.ps2 += ps2
	d.fusedColumns(grad)
	for _, k := range s.exc {
		isExc[k] = false
	}
	return sum
}

// fusedColumns adds one point's gradient and curvature terms of the
// columns of T that gain (h_k ≠ 0): per column where every entry summed
// by complement is in excess and no other is, entry by entry in the
// columns the rows fs.off (their Σ_k T_ak·w_k goes to fs.sub) or fs.dexc
// (it goes to grad) reach.
func (d *Diffusion) fusedColumns(grad []float64) {
	s, cp, fs := &d.mf, d.cp, &d.cs.fs
	w, h, isExc := s.w, s.h, s.isExc
	for _, a := range fs.dexc {
		cols, vals := s.rowCols[a], s.rowVals[a]
		vals = vals[:len(cols)]
		var acc float64
		for p, k := range cols {
			acc += vals[p] * w[k]
			if h[k] != 0 && !fs.mark[k] {
				fs.mark[k] = true
				fs.marked = append(fs.marked, k)
			}
		}
		grad[a] += acc
	}
	for _, a := range fs.off {
		cols, vals := s.rowCols[a], s.rowVals[a]
		vals = vals[:len(cols)]
		var acc float64
		for p, k := range cols {
			if h[k] == 0 && w[k] == 0 {
				continue
			}
			acc += vals[p] * w[k]
			if !fs.mark[k] {
				fs.mark[k] = true
				fs.marked = append(fs.marked, k)
			}
		}
		fs.sub[a] += acc
	}
	for _, k := range fs.gained {
		hk := h[k]
		if hk == 0 {
			continue
		}
		if !fs.mark[k] {
			fs.h[k] += hk
			if !isExc[k] {
				fs.ch[k] += hk
			}
			continue
		}
		ck := 1.0
		if isExc[k] {
			ck = 0
		}
		p0, p1 := cp.colPtr[k], cp.colPtr[k+1]
		gi := d.cs.gi[:0]
		for x := p0; x < p1; x++ {
			if isExc[cp.colRow[x]] {
				gi = append(gi, int32(x-p0))
				cp.crossAcc[cp.colEnt[x]] += ck * hk
			}
		}
		d.cs.gi = gi
		pairs := cp.pairAcc[cp.pairPtr[k]:cp.pairPtr[k+1]]
		for x, i := range gi {
			row := pairs[int(i)*int(i+1)/2:]
			for _, j := range gi[:x+1] {
				row[j] += hk
			}
		}
	}
	for _, k := range fs.marked {
		fs.mark[k] = false
	}
	fs.marked = fs.marked[:0]
}

// foldFused finishes mfPointSparse's sums once all points are in: the
// gradient's excess terms of the rows summed by complement into grad, the
// per-column curvature sums over each column's entries summed by
// complement into d.cp's entry and pair sums.
func (d *Diffusion) foldFused(grad []float64) {
	s, cp, fs := &d.mf, d.cp, &d.cs.fs
	for _, a := range s.cand {
		if !fs.byComp[a] || fs.nexc[a] == 0 {
			continue
		}
		cols, vals := s.rowCols[a], s.rowVals[a]
		vals = vals[:len(cols)]
		var acc float64
		for p, k := range cols {
			acc += vals[p] * fs.w[k]
		}
		grad[a] += acc - fs.sub[a]
	}
	gi := d.cs.gi[:0]
	for k, hk := range fs.h {
		if hk == 0 && fs.ch[k] == 0 {
			continue
		}
		p0, p1 := cp.colPtr[k], cp.colPtr[k+1]
		gi = gi[:0]
		for x := p0; x < p1; x++ {
			if fs.byComp[cp.colRow[x]] {
				gi = append(gi, int32(x-p0))
				cp.crossAcc[cp.colEnt[x]] += fs.ch[k]
			}
		}
		pairs := cp.pairAcc[cp.pairPtr[k]:cp.pairPtr[k+1]]
		for x, i := range gi {
			row := pairs[int(i)*int(i+1)/2:]
			for _, j := range gi[:x+1] {
				row[j] += hk
			}
		}
	}
	d.cs.gi = gi
}
