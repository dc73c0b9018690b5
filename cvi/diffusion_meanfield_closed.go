package cvi

import "math"

// Gaussian recipients in closed form, for the fused point loop.
//
// A station k observed without censoring that is not a candidate (its
// supply is infinite, or pruneCand found no point that puts it in excess)
// has g_k = f_k + D_k, D_k = Σ_a T_ak·e_a its inflow from the candidates'
// excesses e_a = max(f_a − u_a, 0). Its term log N(y_k | g_k, σ²) is a
// quadratic in g_k, so its expectation needs only D_k's mean and variance,
// which are exact under the mean-field q: the excesses are independent
// rectified Gaussians with closed-form moments (and f_k is independent of
// them, T_kk = 0). So are its chain-rule terms: with Φ_a = P(f_a > u_a)
// and r_k = y_k − m_k − E[D_k],
//
//	E[log p_k] = −½log(2πσ²) − (r_k² + v_k + Var D_k)/(2σ²),
//	∂/∂m_k = r_k/σ²,  ∂/∂m_a = T_ak·(Φ_a·r_k − T_ak·E[e_a]·(1 − Φ_a))/σ²,
//
// and its Gauss–Newton curvature −E[J_kᵀJ_k]/σ² has −1/σ² at (k, k),
// −T_ak·Φ_a/σ² at (a, k), −T_ak²·Φ_a/σ² at (a, a) and −T_ak·T_bk·Φ_a·Φ_b/σ²
// at (a, b). These are the exact expectations the point rule estimates
// (to its quasi-Monte Carlo error, about 0.006 sd rms in the means'
// gradient at 64 points on City2000): the point loop then leaves such
// stations out (about two thirds of a city's, each visited at every point
// as a column of the candidates' rows).

// closedSet lists in d.cs.fs.closed the Gaussian recipients: the stations
// in a candidate's row that are neither candidates nor censored, observed.
// With drop, it also marks them missing for the point loop that follows
// (the per-excess-set route) and returns nothing else; the fused route
// leaves them out of its dynamic products instead (fusedSums.split).
func (d *Diffusion) closedSet(drop bool) {
	s, fs := &d.mf, &d.cs.fs
	fs.grow(d.np)
	isCand, mark := s.isExc, fs.mark // all false between points: borrowed
	for _, k := range fs.closed {
		fs.isClosed[k] = false
	}
	fs.closed = fs.closed[:0]
	for _, a := range s.cand {
		isCand[a] = true
	}
	for _, a := range s.cand {
		for _, k := range s.rowCols[a] {
			if !isCand[k] && !mark[k] && s.kind[k] == mfGauss {
				mark[k] = true
				fs.closed = append(fs.closed, k)
			}
		}
	}
	for _, a := range s.cand {
		isCand[a] = false
	}
	for _, k := range fs.closed {
		mark[k], fs.isClosed[k] = false, true
		if drop {
			s.kind[k] = mfMissing
		}
	}
}

// closedSums adds the closed-form recipients' terms, as the point loop
// would have summed them over 2·rows points, to grad, the noise
// variance's gradient and the curvature: into d.cp's sums before
// foldSparse multiplies T in (the fused route) or, with direct, into
// d.cp.curv with T's entries multiplied in (the per-excess-set route). It
// returns the sum of their log-likelihoods. The candidates' excess moments
// are at mean, sd.
func (d *Diffusion) closedSums(obs []Obs, mean, sd, grad []float64, rows int, direct bool) float64 {
	fs, s, cp := &d.cs.fs, &d.mf, d.cp
	if len(fs.closed) == 0 {
		return 0
	}
	n, inv := float64(2*rows), 1/d.variance
	// The candidates' excess moments and each recipient's inflow moments.
	mu, s2 := fs.inMu, fs.inVar
	for _, k := range fs.closed {
		mu[k], s2[k] = 0, 0
	}
	for _, a := range s.cand {
		ee, ve, phi := excessMoments(mean[a]-d.u[a], sd[a])
		fs.eE[a], fs.ePhi[a] = ee, phi
		cols, vals := s.rowCols[a], s.rowVals[a]
		vals = vals[:len(cols)]
		for p, k := range cols {
			if fs.isClosed[k] {
				t := vals[p]
				mu[k] += t * ee
				s2[k] += t * t * ve
			}
		}
	}
	var sum, ps2 float64
	for _, k := range fs.closed {
		r := obs[k].Y - mean[k] - mu[k]
		q := r*r + sd[k]*sd[k] + s2[k]
		sum += n * (d.logNorm - 0.5*q*inv)
		ps2 += n * (-0.5*inv + 0.5*q*inv*inv)
		grad[k] += n * r * inv
		if direct {
			cp.curv.val[cp.curv.diag(k)] -= n * inv
		} else {
			cp.diagAcc[k] -= n * inv
		}
		fs.inR[k] = r
	}
	d.mf.ps2 += ps2
	// The candidates' chain-rule terms: gradient and cross sums per entry.
	for _, a := range s.cand {
		cols, vals := s.rowCols[a], s.rowVals[a]
		vals = vals[:len(cols)]
		phi, ee := fs.ePhi[a], fs.eE[a]
		e0 := cp.rowStart[a]
		var acc float64
		for p, k := range cols {
			if !fs.isClosed[k] {
				continue
			}
			t := vals[p]
			acc += t * (phi*fs.inR[k] - t*ee*(1-phi))
			if direct {
				cp.curv.val[cp.posT[e0+p]] -= d.opVals[e0+p] * n * phi * inv
			} else {
				cp.crossAcc[e0+p] -= n * phi * inv
			}
		}
		grad[a] += n * inv * acc
	}
	d.closedPairs(n*inv, direct)
	return sum
}

// closedPairs adds the closed-form recipients' pair sums: per column k,
// −c·Φ_i·Φ_j (−c·Φ_i on the diagonal) for each pair of its candidate
// rows, to d.cp's pair sums or, with direct, times T_ik·T_jk to the
// curvature.
func (d *Diffusion) closedPairs(c float64, direct bool) {
	fs, cp := &d.cs.fs, d.cp
	isCand := d.mf.isExc // all false between points: borrowed
	for _, a := range d.mf.cand {
		isCand[a] = true
	}
	gi := d.cs.gi[:0]
	for _, k := range fs.closed {
		// The column's candidate rows (their indices in the column), then
		// their pairs i ≥ j at pairs[i(i+1)/2 + j].
		rows := cp.colRow[cp.colPtr[k]:cp.colPtr[k+1]]
		gi = gi[:0]
		for i, r := range rows {
			if isCand[r] {
				gi = append(gi, int32(i))
			}
		}
		q0 := cp.pairPtr[k]
		for x, i := range gi {
			ri := rows[i]
			for _, j := range gi[:x+1] {
				rj := rows[j]
				v := c * fs.ePhi[ri]
				if ri != rj {
					v *= fs.ePhi[rj]
				}
				q := q0 + int(i)*int(i+1)/2 + int(j)
				if direct {
					cp.curv.val[cp.pairPos[q]] -= d.opVals[cp.pairEnt[2*q]] * d.opVals[cp.pairEnt[2*q+1]] * v
				} else {
					cp.pairAcc[q] -= v
				}
			}
		}
	}
	d.cs.gi = gi
	for _, a := range d.mf.cand {
		isCand[a] = false
	}
}

// excessMoments returns E[e], Var e and P(e > 0) for e = max(x, 0),
// x ~ N(mu, sd²).
func excessMoments(mu, sd float64) (mean, variance, p float64) {
	if !(sd > 0) {
		if mu > 0 {
			return mu, 0, 1
		}
		return 0, 0, 0
	}
	al := mu / sd
	p = 0.5 * math.Erfc(-al/math.Sqrt2)
	phi := npdf(al)
	mean = mu*p + sd*phi
	second := (mu*mu+sd*sd)*p + mu*sd*phi
	return mean, math.Max(second-mean*mean, 0), p
}
