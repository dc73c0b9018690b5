package cvi

import (
	"errors"
	"math"
	"slices"
)

// errPattern reports a curvature term outside the coupled pattern, which
// a transition whose structure changed under the pattern would give.
var errPattern = errors.New("cvi: diffusion curvature entry outside the transition's pattern")

// coupledScratch is mfChainSparse's per-point working memory: the
// entries (a, k) of T with a in excess, linked per column k.
type coupledScratch struct {
	head    []int32 // per column: the last linked entry + 1, 0: none
	touched []int   // the columns with a list
	next    []int32 // per linked entry: the previous one + 1 in its column
	ent     []int32 // per linked entry: its index in its column
	// One column's linked entries gathered: their indices in the column.
	gi []int32
	fs fusedSums // mfPointSparse's sums
	// The entries of T and the pairs of a column whose rows have finite
	// supply (the only ones the points' sums can reach) for the candidate
	// list liveCand of the pattern liveSrc, ascending.
	liveCross, livePairs []int32
	liveCand             []int
	liveSrc              *coupledPattern
}

// live lists the entries and pairs of d.cp that rows with finite supply
// reach (rebuilt when the candidates change, typically once per bin) and
// clears their sums: the others stay zero, or stale and unread.
func (d *Diffusion) live() {
	cp, cs, cand := d.cp, &d.cs, d.mf.cand
	if cs.liveSrc != cp || !slices.Equal(cs.liveCand, cand) {
		cs.liveSrc, cs.liveCand = cp, append(cs.liveCand[:0], cand...)
		isCand := d.mf.isExc // all false between points: borrowed
		for _, a := range cand {
			isCand[a] = true
		}
		cs.liveCross, cs.livePairs = cs.liveCross[:0], cs.livePairs[:0]
		for _, a := range cand {
			for e := cp.rowStart[a]; e < cp.rowStart[a+1]; e++ {
				cs.liveCross = append(cs.liveCross, int32(e))
			}
		}
		for k := 0; k+1 < len(cp.colPtr); k++ {
			rows := cp.colRow[cp.colPtr[k]:cp.colPtr[k+1]]
			q := cp.pairPtr[k]
			for i, ri := range rows {
				for _, rj := range rows[:i+1] {
					if isCand[ri] && isCand[rj] {
						cs.livePairs = append(cs.livePairs, int32(q))
					}
					q++
				}
			}
		}
		for _, a := range cand {
			isCand[a] = false
		}
	}
	for _, e := range cs.liveCross {
		cp.crossAcc[e] = 0
	}
	for _, q := range cs.livePairs {
		cp.pairAcc[q] = 0
	}
}

// pattern returns the coupled pattern of the current transition,
// building it on first use (and after the transition's structure
// changed).
func (d *Diffusion) pattern() *coupledPattern {
	if d.cp == nil || d.cp.src != d.trans {
		d.cp = newCoupledPattern(d.trans)
		n := d.np
		d.cs = coupledScratch{head: make([]int32, n), touched: make([]int, 0, n)}
	}
	return d.cp
}

// mfChainSparse adds one point's Gauss–Newton curvature Jᵀ diag(∂²log p) J
// from what mfPoint left in the scratch into d.cp's sums: the diagonal
// c_k·∂²log p_k, the cross terms c_k·h_k of each entry (a, k) of T with a
// in excess, and for the excess block h_k per pair of column k's rows in
// excess: O(Σ_k |excess ∩ column k|²) per point, where the dense route
// pairs every two products in excess. foldSparse multiplies T's entries
// in once per bin.
func (d *Diffusion) mfChainSparse() {
	s, cp, cs := &d.mf, d.cp, &d.cs
	np := len(s.c)
	d2l, c, h := d.d2l[:np], s.c[:np], s.h[:np]
	diag, cross, pairAcc := cp.diagAcc[:np], cp.crossAcc, cp.pairAcc
	for k, v := range d2l {
		diag[k] += c[k] * v
	}
	cs.next, cs.ent = cs.next[:0], cs.ent[:0]
	for _, a := range s.exc {
		cols := s.rowCols[a]
		e0 := cp.rowStart[a]
		for p, k := range cols {
			hk := h[k]
			if hk == 0 {
				continue
			}
			// c_k·h_k vanishes for k in excess.
			cross[e0+p] += c[k] * hk
			if cs.head[k] == 0 {
				cs.touched = append(cs.touched, k)
			}
			cs.next = append(cs.next, cs.head[k])
			cs.ent = append(cs.ent, cp.colIdx[e0+p])
			cs.head[k] = int32(len(cs.ent))
		}
	}
	for _, k := range cs.touched {
		// The column's entries in excess, in descending column index.
		gi := cs.gi[:0]
		for x := cs.head[k]; x != 0; x = cs.next[x-1] {
			gi = append(gi, cs.ent[x-1])
		}
		cs.gi = gi
		hk, pairs := h[k], pairAcc[cp.pairPtr[k]:cp.pairPtr[k+1]]
		for x, i := range gi {
			row := pairs[int(i)*int(i+1)/2:]
			for _, j := range gi[x:] {
				row[j] += hk
			}
		}
		cs.head[k] = 0
	}
	cs.touched = cs.touched[:0]
}

// foldSparse adds the sums of mfChainSparse into d.cp.curv with the bin's
// T multiplied in: the diagonal as it is, T_ak times each cross sum, and
// T_ik·T_jk times each pair sum of column k.
func (d *Diffusion) foldSparse() {
	cp := d.cp
	val := cp.curv.val
	for k, v := range cp.diagAcc {
		val[cp.curv.diag(k)] += v
	}
	// Only the live entries and pairs can be non-zero (Diffusion.live).
	for _, e := range d.cs.liveCross {
		if v := cp.crossAcc[e]; v != 0 {
			val[cp.posT[e]] += d.opVals[e] * v
		}
	}
	for _, q := range d.cs.livePairs {
		if v := cp.pairAcc[q]; v != 0 {
			val[cp.pairPos[q]] += d.opVals[cp.pairEnt[2*q]] * d.opVals[cp.pairEnt[2*q+1]] * v
		}
	}
}

// mfContractSparse is mfContract's full mode writing into d.cp.curv: the
// same sums added in the same order, so both give the same numbers.
func (d *Diffusion) mfContractSparse(grad []float64) error {
	s, cp := &d.mf, d.cp
	np := len(s.c)
	val := cp.curv.val
	if grad != nil {
		copy(grad[:np], s.cdl)
	}
	for k, v := range s.cd2l {
		val[cp.curv.diag(k)] = v
	}
	omega, hout := s.omega[:np], s.hout[:np]
	for i := 0; i < s.pat.n; i++ {
		mask := s.pat.masks[i]
		pw, ph := s.pat.w[i*np:(i+1)*np], s.pat.h[i*np:(i+1)*np]
		copy(hout, ph)
		for x, a := range s.cand {
			if mask>>(x&63)&1 != 0 {
				hout[a] = 0
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
			e0 := cp.rowStart[a]
			for p, k := range cols {
				omega[k] = vals[p] * ph[k]
				val[cp.posT[e0+p]] += vals[p] * hout[k]
			}
			for x2, a2 := range s.cand[:x+1] {
				if mask>>(x2&63)&1 == 0 {
					continue
				}
				c2, v2 := s.rowCols[a2], s.rowVals[a2]
				v2 = v2[:len(c2)]
				var acc float64
				for q, k := range c2 {
					acc += v2[q] * omega[k]
				}
				if acc == 0 {
					continue
				}
				pos := cp.curv.find(a, a2)
				if pos < 0 {
					return errPattern
				}
				val[pos] += acc
			}
			for _, k := range cols {
				omega[k] = 0
			}
		}
	}
	return nil
}

// expectCoupledSparse is expectCoupled writing the Gauss–Newton curvature
// on the coupled pattern: it returns E and the curvature (valid until the
// next call); ok is false where the likelihood has no such curvature
// (full sites, mean-only, more than one diffusion step), and E is NaN on
// failure.
func (d *Diffusion) expectCoupledSparse(obs []Obs, mean, vars, grad []float64, coarse bool) (e float64, curv *symSparse, ok bool) {
	np := d.np
	if !d.diagonal() || d.opts.Steps != 1 {
		return 0, nil, false
	}
	if len(obs) != np || len(mean) != np || len(vars) != np {
		return math.NaN(), nil, true
	}
	op, err := d.operator(obs)
	if err != nil {
		return math.NaN(), nil, true
	}
	cp := d.pattern()
	if op.T.NNZ() != cp.rowStart[np] {
		return math.NaN(), nil, true
	}
	if op.T.NNZ() == 0 || d.excessNegligible(obs, mean, vars, 1) {
		// The map is the identity: the curvature is diagonal.
		diag := d.lfac[:np]
		e := d.expectFactorised(obs, mean, vars, 1, grad, diag, nil)
		clear(cp.curv.val)
		for a, v := range diag {
			cp.curv.val[cp.curv.diag(a)] = v
		}
		return e, &cp.curv, true
	}
	sd := d.lfac[:np]
	for a, m := range mean {
		sd[a] = math.Sqrt(math.Max(vars[a], 0))
		if math.IsNaN(m) || math.IsInf(m, 0) || math.IsNaN(sd[a]) || math.IsInf(sd[a], 0) {
			return math.NaN(), nil, true
		}
	}
	d.opVals = d.opVals[:0]
	for a := 0; a < np; a++ {
		_, v := op.T.Row(a)
		d.opVals = append(d.opVals, v...)
	}
	npts, _ := d.z.Dims()
	if coarse {
		// The LearnPoints rule: the first pairs of the nested point set.
		npts = min(npts, max(1, d.opts.LearnPoints/2))
	}
	e, err = d.expectMeanField(op, obs, mean, vars, sd, grad, nil, mfSparse, npts)
	if err != nil {
		return math.NaN(), nil, true
	}
	return e, &cp.curv, true
}
