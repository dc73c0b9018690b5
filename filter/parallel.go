package filter

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"github.com/dcgpd/dcgpd/internal/errs"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// defaultMinParallelWork is Posterior.MinParallelWork's default. A filter
// step costs 3–5 ns per unit (BenchmarkIndependentChains), so 2¹⁷ units
// are 0.4–0.7 ms of filtering, against the tens of µs it takes to wake the
// workers, copy the kernel for them and hand over: below it two workers
// are no faster, and the small runs of online updates and short batches
// stay serial.
const defaultMinParallelWork = 1 << 17

// chainScratch is the mutable scratch of one chain's passes: the dense
// Kalman step's and the whitening of the sites'. Chains that run at once
// each need their own.
type chainScratch struct {
	work denseWork
	obsWork
}

// chainWorker is the scratch of one goroutine of a parallel run of
// independent chains, beyond the first (which uses the Posterior's), and
// its own copy of the temporal kernel when the products share one: a
// kernel may keep scratch of its own (kernel.Sum, kernel.Product).
type chainWorker struct {
	chainScratch
	kern kernel.Temporal
}

// chainWorkers returns the number of goroutines a run of independent
// chains over n bins (smoothed if smooth) uses: one (serial) for a small
// run, for per-product kernels of which some product shares another's, or
// when Workers is 1; else up to Workers (or GOMAXPROCS) and N_p, as long
// as each worker gets half of MinParallelWork.
func (p *Posterior) chainWorkers(m *Model, n int, smooth bool) int {
	nw := p.Workers
	if nw <= 0 {
		nw = runtime.GOMAXPROCS(0)
	}
	nw = min(nw, m.np)
	if nw < 2 || (m.perProduct != nil && !m.distinct) {
		return 1
	}
	work := 0
	for k := 0; k < m.np; k++ {
		d := m.kernelOf(k).Dim()
		work += d * d
	}
	work *= n
	if smooth {
		work *= 2 // the RTS pass costs at least the filter's
	}
	minWork := p.MinParallelWork
	if minWork <= 0 {
		minWork = defaultMinParallelWork
	}
	if work < minWork {
		return 1
	}
	if per := minWork / 2; per > 0 {
		nw = min(nw, work/per)
	}
	return nw
}

// runParallel is runIndependent's loop over the products on nw
// goroutines (the caller's and nw−1 more), each with its own scratch and,
// with shared, its own chain storage p.chains[w]. Workers take the
// products in order; each writes only its product's Mean and Var entries
// and log marginal likelihood, which are summed in product order after,
// so that the result is the serial loop's bit for bit. After an error no
// product is started, but those already started finish: every product
// before the failing one was started first, so the first error in
// product order is the serial loop's.
func (p *Posterior) runParallel(m *Model, times []float64, s *Sites, smooth, shared bool, nw int) error {
	np := m.np
	p.chainLLs = linalg.Resize(p.chainLLs, np)
	if cap(p.chainErrs) < np {
		p.chainErrs = make([]error, np)
	}
	p.chainErrs = p.chainErrs[:np]
	clear(p.chainErrs)
	p.growWorkers(m, nw)
	var next atomic.Int64
	var failed atomic.Bool
	run := func(w int) {
		sc, kern := &p.chainScratch, m.temporal
		if w > 0 {
			sc, kern = &p.workers[w-1].chainScratch, p.workers[w-1].kern
		}
		for !failed.Load() {
			k := int(next.Add(1) - 1)
			if k >= np {
				return
			}
			ci := k
			if shared {
				ci = w
			}
			kk := kern
			if m.perProduct != nil {
				kk = m.perProduct[k] // distinct kernels: no other worker calls it
			}
			ll, err := p.runProduct(&p.chains[ci], sc, m, kk, times, s, k, smooth)
			p.chainLLs[k] = ll
			if err != nil {
				p.chainErrs[k] = err
				failed.Store(true)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(nw - 1)
	for w := 1; w < nw; w++ {
		go func() {
			defer wg.Done()
			run(w)
		}()
	}
	run(0)
	wg.Wait()
	for k, err := range p.chainErrs {
		if err != nil {
			return errs.Withinf("filter", err, "product %d", k)
		}
	}
	for _, ll := range p.chainLLs {
		p.LogLik += ll
	}
	return nil
}

// growWorkers sizes the scratch of workers 1..nw−1 for model m and gives
// them their copies of its shared temporal kernel. The copies are made
// here, before any worker runs: copying reads the kernel's scratch, which
// worker 0 writes.
func (p *Posterior) growWorkers(m *Model, nw int) {
	if len(p.workers) < nw-1 {
		p.workers = append(p.workers, make([]chainWorker, nw-1-len(p.workers))...)
	}
	dmax := 0
	for k := 0; k < m.np; k++ {
		dmax = max(dmax, m.kernelOf(k).Dim())
	}
	for i := range p.workers[:nw-1] {
		w := &p.workers[i]
		w.growScalar(dmax)
		w.kern = nil
		if m.temporal != nil {
			w.kern = m.temporal.Clone()
		}
	}
}

// growScalar sizes the observation scratch for scalar chains of dimension
// at most d (scalarObs's).
func (o *obsWork) growScalar(d int) {
	o.cw, o.cs, o.z = linalg.Resize(o.cw, d), linalg.Resize(o.cs, d), linalg.Resize(o.z, 1)
	if cap(o.sup) < d {
		o.sup = make([]int, 0, d)
	}
}

// distinctKernels reports whether no two of ks are the same kernel, so
// that workers running different products never call one kernel at once.
// Kernels of a type that cannot be compared count as possibly shared.
func distinctKernels(ks []kernel.Temporal) bool {
	for i, a := range ks {
		if !reflect.TypeOf(a).Comparable() {
			return false
		}
		for _, b := range ks[:i] {
			if a == b {
				return false
			}
		}
	}
	return true
}
