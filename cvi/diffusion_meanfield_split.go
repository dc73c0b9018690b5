package cvi

import (
	"runtime"
	"sync"
)

// pointSplit is a Diffusion's second half of the points: a copy with its
// own scratch and sums. mfPointsSplit sums it on a goroutine of its own
// that ends before the call returns (on the caller's when there is one
// core), so a Diffusion owns no goroutine between calls.
type pointSplit struct {
	half *Diffusion
	src  *coupledPattern // the pattern half.cp's sums were made for
	grad []float64       // the half's Σ Jᵀ∂log p
	job  splitJob
}

// splitJob is one half's share of an expectation's points.
type splitJob struct {
	d              *Diffusion // the half
	obs            []Obs
	mean, sd, grad []float64
	r0, r1         int // rows of the point set
	sum            float64
}

func (j *splitJob) run() {
	j.sum = j.d.mfPoints(j.obs, j.mean, j.sd, j.grad, nil, mfSparse, false, false, j.r0, j.r1)
}

// splits reports whether an expectation of rows antithetic pairs in mode
// is summed in two halves (see DiffusionRoutes.SplitMinProducts).
func (d *Diffusion) splits(mode mfCurv, grouped bool, rows int) bool {
	return mode == mfSparse && !grouped && rows >= 2 && d.np >= d.opts.Routes.SplitMinProducts && d.binNoise == nil
}

// splitHalf returns the second half, synchronised with d's current bin:
// the same parameters, supplies, points, products and transition rows
// (read-only while the points run), its sums cleared.
func (d *Diffusion) splitHalf() *pointSplit {
	p := d.mf.split
	if p == nil {
		h := *d
		h.scratch()
		h.mf.grow(d.np)
		p = &pointSplit{half: &h, grad: make([]float64, d.np)}
		d.mf.split = p
	}
	h, s := p.half, &d.mf
	h.opts = d.opts
	h.variance, h.sd, h.logNorm = d.variance, d.sd, d.logNorm
	h.u, h.z = d.u, d.z
	h.mf.kind, h.mf.cand, h.mf.rowCols, h.mf.rowVals = s.kind, s.cand, s.rowCols, s.rowVals
	h.mf.fast, h.mf.ps2 = s.fast, 0
	if p.src != d.cp {
		cp := *d.cp
		n := len(cp.diagAcc)
		cp.diagAcc, cp.crossAcc, cp.pairAcc = make([]float64, n), make([]float64, len(cp.crossAcc)), make([]float64, len(cp.pairAcc))
		h.cp, p.src = &cp, d.cp
		h.cs = coupledScratch{head: make([]int32, n), touched: make([]int, 0, n)}
	} else {
		clear(h.cp.diagAcc)
	}
	for _, e := range d.cs.liveCross {
		h.cp.crossAcc[e] = 0
	}
	for _, q := range d.cs.livePairs {
		h.cp.pairAcc[q] = 0
	}
	if !d.opts.Routes.UnfusedPoints {
		h.cs.fs.reset(h, nil)
		pf := &d.cs.fs
		h.cs.fs.byComp, h.cs.fs.dyn = pf.byComp, pf.dyn
		h.cs.fs.sLo, h.cs.fs.sHi, h.cs.fs.sCols, h.cs.fs.sVals = pf.sLo, pf.sHi, pf.sCols, pf.sVals
		// The closed-form recipients are read as columns at every point:
		// zero, whatever an earlier expectation left.
		for _, k := range d.cs.fs.closed {
			h.mf.w[k], h.mf.h[k] = 0, 0
		}
	}
	clear(p.grad)
	return p
}

// mfPointsSplit is mfPoints for the sparse curvature with the rows in two
// halves, the second summed by d.mf.split's copy (on a goroutine of its own
// when there is more than one core, which ends before the call returns) and
// added after the first: the sum of the
// log-likelihoods, and into grad, d.cp's sums and the noise variance's
// gradient, what mfPoints would have added.
func (d *Diffusion) mfPointsSplit(obs []Obs, mean, sd, grad []float64, rows int) float64 {
	p := d.splitHalf()
	r := rows / 2
	p.job = splitJob{d: p.half, obs: obs, mean: mean, sd: sd, grad: p.grad, r0: r, r1: rows}
	var sum float64
	if runtime.GOMAXPROCS(0) > 1 {
		var wg sync.WaitGroup
		wg.Go(p.job.run)
		sum = d.mfPoints(obs, mean, sd, grad, nil, mfSparse, false, false, 0, r)
		wg.Wait()
	} else {
		sum = d.mfPoints(obs, mean, sd, grad, nil, mfSparse, false, false, 0, r)
		p.job.run()
	}
	h := p.half
	sum += p.job.sum
	for a, v := range p.grad {
		grad[a] += v
	}
	cp, hp := d.cp, h.cp
	for k, v := range hp.diagAcc {
		cp.diagAcc[k] += v
	}
	for _, e := range d.cs.liveCross {
		cp.crossAcc[e] += hp.crossAcc[e]
	}
	for _, q := range d.cs.livePairs {
		cp.pairAcc[q] += hp.pairAcc[q]
	}
	d.mf.ps2 += h.mf.ps2
	if !d.opts.Routes.UnfusedPoints {
		d.cs.fs.add(&h.cs.fs)
	}
	// Drop the bin's views so that an idle half keeps nothing alive.
	p.job = splitJob{}
	return sum
}
