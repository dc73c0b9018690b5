package inventory

import (
	"fmt"
	"math"
)

// flowRule is one flow's quadrature: the shared nodes (zs, ws) and
// per-bin nodes (zb, wb) actually used, and the loadings of the two
// shocks on a bin's standard deviation.
type flowRule struct {
	zs, ws, zb, wb []float64
	shared, own    float64 // √ρ and √(1−ρ)
	mean, sd       []float64
}

// rule picks the nodes for a flow: one node where it has no variance.
func (p *Planner) rule(f Forecast, sd []float64) flowRule {
	r := flowRule{zs: p.point[:1], ws: p.point[1:], zb: p.point[:1], wb: p.point[1:], mean: f.Mean, sd: sd}
	uncertain := false
	for k := range sd {
		if k < len(f.Var) {
			sd[k] = math.Sqrt(f.Var[k])
		} else {
			sd[k] = 0
		}
		uncertain = uncertain || sd[k] > 0
	}
	if !uncertain {
		return r
	}
	rho := p.cfg.Shared
	r.shared, r.own = math.Sqrt(rho), math.Sqrt(1-rho)
	if rho > 0 {
		r.zs, r.ws = p.sharedZ, p.sharedW
	}
	if rho < 1 {
		r.zb, r.wb = p.binZ, p.binW
	}
	return r
}

// rate is the flow's rate in bin k at shared node z and own node zk.
func (r *flowRule) rate(k int, z, zk float64) float64 {
	return math.Max(r.mean[k]+r.sd[k]*(r.shared*z+r.own*zk), 0)
}

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
	p.lamSD, p.muSD = grow(p.lamSD, h), grow(p.muSD, h)
	p.ch.resize(st.Capacity)
}

// run integrates the outlook over the two flows' shared shocks; each
// shared node's outlook integrates the per-bin shocks bin by bin, which
// is exact because they are independent between bins (see doc.go).
func (p *Planner) run(dst *Risk, st Station, pickups, returns Forecast) error {
	h := len(pickups.Mean)
	plan := p.cfg.PlanningBins
	if plan == 0 {
		plan = h
	}
	p.prepare(dst, st, h)
	lr, mr := p.rule(pickups, p.lamSD), p.rule(returns, p.muSD)
	for i, zl := range lr.zs {
		for j, zm := range mr.zs {
			wt := lr.ws[i] * mr.ws[j]
			if err := p.forwardPass(dst, st, &lr, &mr, zl, zm, wt); err != nil {
				return err
			}
			p.backwardPass(dst, plan, &lr, &mr, zl, zm, wt)
		}
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

// forwardPass adds wt × the outlook from Bikes at shared nodes zl, zm.
func (p *Planner) forwardPass(dst *Risk, st Station, lr, mr *flowRule, zl, zm, wt float64) error {
	c, s0 := st.Capacity, st.Bikes
	for _, v := range [][]float64{p.p, p.e, p.f} {
		clear(v)
		v[s0] = 1
	}
	startsEmpty, startsFull := s0 == 0, s0 == c
	for k := range dst.EmptyWithin {
		clear(p.pn)
		clear(p.en)
		clear(p.fn)
		for a, za := range lr.zb {
			lam := lr.rate(k, zl, za)
			if err := p.checkRate("pickup", k, lam); err != nil {
				return err
			}
			for b, zb := range mr.zb {
				mu := mr.rate(k, zm, zb)
				if err := p.checkRate("return", k, mu); err != nil {
					return err
				}
				u := lr.wb[a] * mr.wb[b]
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
		dst.EmptyWithin[k] += wt * p.e[0]
		dst.FullWithin[k] += wt * p.f[c]
		dst.EmptyAt[k] += wt * p.p[0]
		dst.FullAt[k] += wt * p.p[c]
	}
	return nil
}

// backwardPass adds wt × UDF over the first plan bins at shared nodes
// zl, zm. The rates were checked by forwardPass.
func (p *Planner) backwardPass(dst *Risk, plan int, lr, mr *flowRule, zl, zm, wt float64) {
	cp, cr := p.cfg.PickupWeight, p.cfg.ReturnWeight
	clear(p.v)
	for k := plan - 1; k >= 0; k-- {
		clear(p.vn)
		for a, za := range lr.zb {
			lam := lr.rate(k, zl, za)
			for b, zb := range mr.zb {
				mu := mr.rate(k, zm, zb)
				copy(p.tmp, p.v)
				p.ch.backward(p.tmp, lam, mu, cp, cr)
				axpy(p.vn, lr.wb[a]*mr.wb[b], p.tmp)
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
