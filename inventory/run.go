package inventory

import (
	"cmp"
	"fmt"
	"slices"
)

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// prepare sizes dst and the scratch for H bins and capacity C.
func (p *Planner) prepare(dst *Risk, st Station, h int) {
	n := st.Capacity + 1
	dst.Capacity, dst.Bikes = st.Capacity, st.Bikes
	dst.EmptyWithin, dst.FullWithin = grow(dst.EmptyWithin, h), grow(dst.FullWithin, h)
	dst.EmptyAt, dst.FullAt = grow(dst.EmptyAt, h), grow(dst.FullAt, h)
	dst.UDF = grow(dst.UDF, n)
	clear(dst.EmptyWithin)
	clear(dst.FullWithin)
	clear(dst.EmptyAt)
	clear(dst.FullAt)
	clear(dst.UDF)
	dst.UnmetPickups, dst.UnmetReturns = 0, 0
	for _, s := range []*[]float64{&p.p, &p.e, &p.f, &p.pn, &p.en, &p.fn, &p.tmp, &p.v, &p.vn} {
		*s = grow(*s, n)
	}
	p.ch.resize(st.Capacity)
}

// run integrates the outlook over the two flows' shared nodes; each
// pair's outlook integrates the per-bin shocks bin by bin, which is
// exact because they are independent between bins (see doc.go).
func (p *Planner) run(dst *Risk, st Station, pickups, returns Forecast) error {
	h := len(pickups.Mean)
	plan := p.cfg.PlanningBins
	if plan == 0 {
		plan = h
	}
	if err := p.buildRule(&p.lr, "pickups", pickups); err != nil {
		return err
	}
	if err := p.buildRule(&p.mr, "returns", returns); err != nil {
		return err
	}
	p.prepare(dst, st, h)
	for _, pr := range p.pairs() {
		p.forwardPass(dst, st, pr.i, pr.j, pr.w)
		p.backwardPass(dst, plan, pr.i, pr.j, pr.w)
	}
	certain(dst)
	p.decide(dst)
	return nil
}

// certain sets the first passages that are certain exactly: a station
// that starts empty (full) has run empty (full) within every horizon,
// whatever the quadrature's weights sum to in floating point.
func certain(dst *Risk) {
	for k := range dst.EmptyWithin {
		if dst.Bikes == 0 {
			dst.EmptyWithin[k] = 1
		}
		if dst.Bikes == dst.Capacity {
			dst.FullWithin[k] = 1
		}
	}
}

// forwardPass adds wt × the outlook from Bikes at shared nodes i
// (pickups) and j (returns).
func (p *Planner) forwardPass(dst *Risk, st Station, i, j int, wt float64) {
	c, s0 := st.Capacity, st.Bikes
	for _, v := range [][]float64{p.p, p.e, p.f} {
		clear(v)
		v[s0] = 1
	}
	startsEmpty, startsFull := s0 == 0, s0 == c
	for k := range dst.EmptyWithin {
		lams, lw := p.lr.at(i, k)
		mus, mw := p.mr.at(j, k)
		if len(lams) == 1 && len(mus) == 1 {
			// One node a bin (ρ = 1): advance the distributions in place.
			lam, mu := lams[0], mus[0]
			i0, iC := p.ch.forward(p.p, lam, mu, false, false)
			dst.UnmetPickups += wt * lam * i0
			dst.UnmetReturns += wt * mu * iC
			if !startsEmpty {
				p.ch.forward(p.e, lam, mu, true, false)
			}
			if !startsFull {
				p.ch.forward(p.f, lam, mu, false, true)
			}
			p.record(dst, k, c, wt)
			continue
		}
		clear(p.pn)
		clear(p.en)
		clear(p.fn)
		for a, lam := range lams {
			for b, mu := range mus {
				u := lw[a] * mw[b]
				if u == 0 {
					continue
				}
				copy(p.tmp, p.p)
				i0, iC := p.ch.forward(p.tmp, lam, mu, false, false)
				axpy(p.pn, u, p.tmp)
				dst.UnmetPickups += wt * u * lam * i0
				dst.UnmetReturns += wt * u * mu * iC
				if !startsEmpty {
					copy(p.tmp, p.e)
					p.ch.forward(p.tmp, lam, mu, true, false)
					axpy(p.en, u, p.tmp)
				}
				if !startsFull {
					copy(p.tmp, p.f)
					p.ch.forward(p.tmp, lam, mu, false, true)
					axpy(p.fn, u, p.tmp)
				}
			}
		}
		p.p, p.pn = p.pn, p.p
		if !startsEmpty {
			p.e, p.en = p.en, p.e
		}
		if !startsFull {
			p.f, p.fn = p.fn, p.f
		}
		p.record(dst, k, c, wt)
	}
}

// record adds wt × bin k's probabilities of the current distributions.
func (p *Planner) record(dst *Risk, k, c int, wt float64) {
	dst.EmptyWithin[k] += wt * p.e[0]
	dst.FullWithin[k] += wt * p.f[c]
	dst.EmptyAt[k] += wt * p.p[0]
	dst.FullAt[k] += wt * p.p[c]
}

// backwardPass adds wt × UDF over the first plan bins at shared nodes i
// (pickups) and j (returns).
func (p *Planner) backwardPass(dst *Risk, plan, i, j int, wt float64) {
	cp, cr := p.cfg.PickupWeight, p.cfg.ReturnWeight
	clear(p.v)
	for k := plan - 1; k >= 0; k-- {
		lams, lw := p.lr.at(i, k)
		mus, mw := p.mr.at(j, k)
		if len(lams) == 1 && len(mus) == 1 {
			p.ch.backward(p.v, lams[0], mus[0], cp, cr)
			continue
		}
		clear(p.vn)
		for a, lam := range lams {
			for b, mu := range mus {
				u := lw[a] * mw[b]
				if u == 0 {
					continue
				}
				copy(p.tmp, p.v)
				p.ch.backward(p.tmp, lam, mu, cp, cr)
				axpy(p.vn, u, p.tmp)
			}
		}
		p.v, p.vn = p.vn, p.v
	}
	axpy(dst.UDF, wt, p.v)
}

// decide sets s* and the value of one bike more or less.
func (p *Planner) decide(dst *Risk) {
	u := dst.UDF
	best := 0
	for s, x := range u {
		if x < u[best] {
			best = s
		}
	}
	dst.Best = best
	s0 := dst.Bikes
	dst.CanAdd, dst.CanRemove = s0 < dst.Capacity, s0 > 0
	dst.OneMore, dst.OneLess = 0, 0
	if dst.CanAdd {
		dst.OneMore = u[s0+1] - u[s0]
	}
	if dst.CanRemove {
		dst.OneLess = u[s0-1] - u[s0]
	}
}

func axpy(y []float64, a float64, x []float64) {
	for i, xi := range x {
		y[i] += a * xi
	}
}

// String summarises a Risk for logs.
func (r *Risk) String() string {
	h := len(r.EmptyWithin)
	if h == 0 {
		return "inventory.Risk{}"
	}
	return fmt.Sprintf("%d/%d bikes: P(empty ≤ %d) %.3f, P(full ≤ %d) %.3f, unmet %.2f+%.2f, s* %d",
		r.Bikes, r.Capacity, h, r.EmptyWithin[h-1], h, r.FullWithin[h-1], r.UnmetPickups, r.UnmetReturns, r.Best)
}

// pair is one node of the two flows' grid and its weight.
type pair struct {
	i, j int
	w    float64
}

// pruneMass bounds the total weight of the grid's lightest pairs that
// pairs leaves out (the rest are scaled up to weigh 1): an outlook
// probability moves by at most twice it.
const pruneMass = 1e-4

// pairs returns the grid's pairs without its lightest ones (at most
// pruneMass in all), the kept weights scaled to sum to 1.
func (p *Planner) pairs() []pair {
	ps := p.pairBuf[:0]
	total := 0.0
	for i, wl := range p.lr.ws {
		for j, wm := range p.mr.ws {
			ps = append(ps, pair{i, j, wl * wm})
			total += wl * wm
		}
	}
	slices.SortFunc(ps, func(a, b pair) int { return cmp.Compare(a.w, b.w) })
	cut, dropped := 0, 0.0
	for cut < len(ps)-1 && dropped+ps[cut].w <= pruneMass*total {
		dropped += ps[cut].w
		cut++
	}
	p.pairBuf = ps[:0] // the whole buffer, for the next call
	ps = ps[cut:]
	for k := range ps {
		ps[k].w *= total / (total - dropped)
	}
	return ps
}
