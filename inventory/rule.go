package inventory

import (
	"fmt"
	"math"
	"slices"
)

// flowRule is one flow's integration rule written out as rates: shared
// node i (weight ws[i]) and, in bin k, own node j with the rate
// rate[(i·h + k)·nOwn + j] and weight wt[…] (the own weights of a bin
// sum to 1; a weight 0 is a node that is skipped).
type flowRule struct {
	h, nOwn  int
	zs, ws   []float64
	rate, wt []float64
}

// at returns the rates and weights of bin k's own nodes at shared node i.
func (r *flowRule) at(i, k int) (rate, wt []float64) {
	o := (i*r.h + k) * r.nOwn
	return r.rate[o : o+r.nOwn], r.wt[o : o+r.nOwn]
}

// kinkReach bounds the kinks of the shared shock that become
// breakpoints: a bin whose rate reaches 0 only beyond |z| = 4
// (probability 3e-5) changes the outlook by less than rounding of the
// published figures.
const kinkReach = 4.0

// buildRule fills out with the rule for forecast f (flow names it in
// errors). With ρ = 1 (one shock per flow) the rate of bin k is
// max(m_k + σ_k z, 0), linear in z except at its kink z = −m_k/σ_k: the
// z line is cut at the kinks (at most Config.Breaks of them, spread over
// their range) and each piece gets a SharedNodes-point Gauss rule of the
// normal restricted to it, so that the rule is exact for outlooks that
// are polynomials of degree 2·SharedNodes − 1 in z on each piece.
// With ρ < 1 the outlook is smooth in the shared shock (each bin's own
// shock smooths its kink): SharedNodes Gauss–Hermite nodes; each bin's
// own shock w has its kink at w* = −(m_k + σ_k√ρ z)/(σ_k√(1−ρ)): one
// node of rate 0 with weight P(W < w*) (exact: the rate is 0 there) and
// BinNodes Gauss nodes of the normal above w*.
func (p *Planner) buildRule(out *flowRule, flow string, f Forecast) error {
	h := len(f.Mean)
	out.h = h
	sd := grow(p.sdBuf, h)
	p.sdBuf = sd
	uncertain := false
	for k := range h {
		sd[k] = math.Sqrt(f.Var[k])
		uncertain = uncertain || sd[k] > 0
	}
	rho := p.cfg.Shared
	a, b := math.Sqrt(rho), math.Sqrt(1-rho)
	if !uncertain {
		a, b = 0, 0
	}
	out.zs, out.ws = out.zs[:0], out.ws[:0]
	switch {
	case a == 0:
		out.zs, out.ws = append(out.zs, 0), append(out.ws, 1)
	case b == 0:
		p.kinkedShared(out, f.Mean, sd)
	default:
		out.zs, out.ws = append(out.zs, p.smoothZ...), append(out.ws, p.smoothW...)
	}
	out.nOwn = 1
	if b > 0 {
		out.nOwn = 1 + p.cfg.BinNodes
	}
	n := len(out.zs) * h * out.nOwn
	out.rate, out.wt = grow(out.rate, n), grow(out.wt, n)
	for i, z := range out.zs {
		for k, m := range f.Mean {
			rate, wt := out.at(i, k)
			c, s := m+sd[k]*a*z, sd[k]*b
			ownNodes(rate, wt, c, s)
			for j, r := range rate {
				if wt[j] > 0 && !(r <= p.cfg.MaxRate) {
					return fmt.Errorf("inventory: %s forecast mean %v and variance %v in bin %d put the rate at %.4g in the integration, above the configured maximum %v",
						flow, m, f.Var[k], k, r, p.cfg.MaxRate)
				}
			}
		}
	}
	return nil
}

// ownNodes writes the rates max(c + s·W, 0) at a bin's own nodes: one
// node when s = 0, else rate 0 with weight P(W < −c/s) and a Gauss rule
// of W above −c/s in the others.
func ownNodes(rate, wt []float64, c, s float64) {
	clear(wt)
	clear(rate)
	if s == 0 || len(rate) == 1 {
		rate[0], wt[0] = math.Max(c, 0), 1
		return
	}
	kink := -c / s
	wt[0] = normProb(math.Inf(-1), kink)
	var z, w [maxGauss]float64
	n := truncGauss(kink, math.Inf(1), len(rate)-1, z[:], w[:])
	for j := range n {
		rate[1+j], wt[1+j] = math.Max(c+s*z[j], 0), w[j]
	}
}

// kinkedShared places the shared nodes of a flow with ρ = 1: pieces cut
// at the kinks, SharedNodes Gauss nodes on each.
func (p *Planner) kinkedShared(out *flowRule, mean, sd []float64) {
	kinks := p.kinkBuf[:0]
	for k, m := range mean {
		if sd[k] > 0 {
			if z := -m / sd[k]; math.Abs(z) < kinkReach {
				kinks = append(kinks, z)
			}
		}
	}
	slices.Sort(kinks)
	kinks = slices.Compact(kinks)
	p.kinkBuf = kinks
	breaks := p.breakBuf[:0]
	if nb := p.cfg.Breaks; len(kinks) <= nb {
		breaks = append(breaks, kinks...)
	} else if nb > 0 {
		// nb breakpoints spread over the kinks: the first, the last and
		// evenly between them by rank.
		for q := range nb {
			idx := 0
			if nb > 1 {
				idx = q * (len(kinks) - 1) / (nb - 1)
			}
			breaks = append(breaks, kinks[idx])
		}
	}
	p.breakBuf = breaks
	// Pieces on which every bin's rate is 0 hold a constant outlook: one
	// node. The others share SharedNodes nodes by their probability.
	var lo0, live float64 = math.Inf(-1), 0
	for q := 0; q <= len(breaks); q++ {
		hi := pieceEnd(breaks, q)
		if !zeroOn(mean, sd, hi) {
			live += normProb(lo0, hi)
		}
		lo0 = hi
	}
	lo := math.Inf(-1)
	for q := 0; q <= len(breaks); q++ {
		hi := pieceEnd(breaks, q)
		n := 1
		if !zeroOn(mean, sd, hi) {
			n = int(math.Round(float64(p.cfg.SharedNodes) * normProb(lo, hi) / live))
			n = min(max(n, 1), maxGauss)
		}
		var z, w [maxGauss]float64
		n = truncGauss(lo, hi, n, z[:], w[:])
		out.zs, out.ws = append(out.zs, z[:n]...), append(out.ws, w[:n]...)
		lo = hi
	}
}

// pieceEnd is the upper end of piece q of the line cut at breaks.
func pieceEnd(breaks []float64, q int) float64 {
	if q < len(breaks) {
		return breaks[q]
	}
	return math.Inf(1)
}

// zeroOn reports whether every bin's rate max(m_k + σ_k z, 0) is 0 for
// all z below hi.
func zeroOn(mean, sd []float64, hi float64) bool {
	if math.IsInf(hi, 1) {
		return false
	}
	for k, m := range mean {
		if m+sd[k]*hi > 0 {
			return false
		}
	}
	return true
}
