package cvi

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// pointSplit is a Diffusion's parts of the points beyond the first: each
// a copy with its own scratch and sums. mfPointsSplit has the parts summed
// by the caller and helper goroutines that end before the call returns,
// so a Diffusion owns no goroutine between calls.
type pointSplit struct {
	parts []*splitPart // parts 1, 2, …; part 0 is the Diffusion itself
	jobs  []splitJob   // per part, 0 included
	next  atomic.Int32 // the next part to take
	n     int32        // the parts of the expectation in progress
}

// take sums parts until none is left.
func (p *pointSplit) take() {
	for i := p.next.Add(1) - 1; i < p.n; i = p.next.Add(1) - 1 {
		p.jobs[i].run()
	}
}

// splitPart is one part's copy of the Diffusion.
type splitPart struct {
	d    *Diffusion
	src  *coupledPattern // the pattern d.cp's sums were made for
	grad []float64       // the part's Σ Jᵀ∂log p
}

// splitJob is one part's share of an expectation's points.
type splitJob struct {
	d              *Diffusion // the part's
	obs            []Obs
	mean, sd, grad []float64
	r0, r1         int // rows of the point set
	sum            float64
}

func (j *splitJob) run() {
	j.sum = j.d.mfPoints(j.obs, j.mean, j.sd, j.grad, nil, mfSparse, false, false, j.r0, j.r1)
}

// splits reports whether an expectation of rows antithetic pairs in mode
// is summed in parts (see DiffusionRoutes.SplitMinProducts).
func (d *Diffusion) splits(mode mfCurv, grouped bool, rows int) bool {
	return mode == mfSparse && !grouped && rows >= 2 && d.opts.Routes.PointParts >= 2 &&
		d.np >= d.opts.Routes.SplitMinProducts && d.binNoise == nil
}

// setWorkers sets the number of goroutines a split expectation's parts
// are summed on, the caller's included (0: runtime.GOMAXPROCS(0)).
func (d *Diffusion) setWorkers(n int) { d.workers = n }

// splitWorkers returns the number of goroutines for parts parts.
func (d *Diffusion) splitWorkers(parts int) int {
	w := d.workers
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return max(1, min(w, parts))
}

// splitParts returns the split with n−1 parts beyond d, each
// synchronised with d's current bin: the same parameters, supplies,
// points, products and transition rows (read-only while the points run),
// its sums cleared.
func (d *Diffusion) splitParts(n int) *pointSplit {
	p := d.mf.split
	if p == nil {
		p = &pointSplit{}
		d.mf.split = p
	}
	for len(p.parts) < n-1 {
		h := *d
		h.scratch()
		h.mf.grow(d.np)
		p.parts = append(p.parts, &splitPart{d: &h, grad: make([]float64, d.np)})
	}
	if len(p.jobs) < n {
		p.jobs = make([]splitJob, n)
	}
	for _, part := range p.parts[:n-1] {
		d.syncPart(part)
	}
	return p
}

// syncPart brings one part up to d's current bin and clears its sums.
func (d *Diffusion) syncPart(part *splitPart) {
	h, s := part.d, &d.mf
	h.opts = d.opts
	h.variance, h.sd, h.logNorm = d.variance, d.sd, d.logNorm
	h.u, h.z = d.u, d.z
	h.mf.kind, h.mf.cand, h.mf.rowCols, h.mf.rowVals = s.kind, s.cand, s.rowCols, s.rowVals
	h.mf.fast, h.mf.ps2 = s.fast, 0
	if part.src != d.cp {
		cp := *d.cp
		n := len(cp.diagAcc)
		cp.diagAcc, cp.crossAcc, cp.pairAcc = make([]float64, n), make([]float64, len(cp.crossAcc)), make([]float64, len(cp.pairAcc))
		h.cp, part.src = &cp, d.cp
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
	clear(part.grad)
}

// mfPointsSplit is mfPoints for the sparse curvature with the rows cut
// into DiffusionRoutes.PointParts parts: part 0 summed into d's own sums,
// part i into d.mf.split's copy i, the parts taken by the caller and up
// to d's workers − 1 goroutines of their own (which end before the call
// returns), and the copies' sums added after part 0's in part order. It
// returns the sum of the log-likelihoods and adds into grad, d.cp's sums
// and the noise variance's gradient what mfPoints would have added.
func (d *Diffusion) mfPointsSplit(obs []Obs, mean, sd, grad []float64, rows int) float64 {
	n := min(d.opts.Routes.PointParts, rows)
	p := d.splitParts(n)
	for i := range n {
		job := splitJob{d: d, obs: obs, mean: mean, sd: sd, grad: grad, r0: i * rows / n, r1: (i + 1) * rows / n}
		if i > 0 {
			job.d, job.grad = p.parts[i-1].d, p.parts[i-1].grad
		}
		p.jobs[i] = job
	}
	p.next.Store(0)
	p.n = int32(n)
	if nw := d.splitWorkers(n); nw > 1 {
		var wg sync.WaitGroup
		for range nw - 1 {
			wg.Go(p.take)
		}
		p.take()
		wg.Wait()
	} else {
		// No goroutine, and nothing allocated.
		p.take()
	}
	sum := p.jobs[0].sum
	for i, part := range p.parts[:n-1] {
		sum += p.jobs[i+1].sum
		d.addPart(part, grad)
	}
	// Drop the bin's views so that an idle part keeps nothing alive.
	clear(p.jobs)
	return sum
}

// addPart adds one part's sums into grad and d's.
func (d *Diffusion) addPart(part *splitPart, grad []float64) {
	h := part.d
	for a, v := range part.grad {
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
}
