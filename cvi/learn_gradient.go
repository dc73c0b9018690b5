package cvi

import (
	"runtime"
	"sync"

	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/internal/errs"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// gradient returns dELBO/du for the free parameters at the current
// (converged) state, u the optimiser's variables at x.
func (e *Engine) gradient(free []int, nm int, h float64, x []float64, pm *paramMap) ([]float64, error) {
	g := make([]float64, len(free))
	var kern []int // positions in free of model parameters
	for j, i := range free {
		if i < nm {
			kern = append(kern, j)
		}
	}
	if len(kern) > 0 {
		if err := e.kernelGradient(free, kern, h, g, func(j int, sign float64) float64 { return pm.raw(j, x[j]+sign*h) }); err != nil {
			return nil, err
		}
	}
	if len(kern) < len(free) {
		lg := make([]float64, e.lik.NumParams())
		_, fused := e.lik.(FusedExpecter)
		if e.wantPG && fused && e.fresh && e.evaluated {
			// The last expectation pass, at this very posterior, summed it.
			copy(lg, e.pgrad)
		} else {
			np := e.data.NP
			for i, n := range e.bins {
				e.lik.ExpectParamGrad(e.data.Bin(n), e.post.Mean[i*np:(i+1)*np], e.binCov(i), lg)
			}
		}
		for j, i := range free {
			if i >= nm {
				g[j] = lg[i-nm] * pm.dRaw(j, x[j])
			}
		}
	}
	return g, nil
}

// kernelGradient fills g[j] for j in kern with the central difference of
// log Z̃ in the optimiser's variable j, sites fixed, on all cores:
// rawAt(j, ±1) is model parameter free[j]'s stored value at u_j ± h.
func (e *Engine) kernelGradient(free, kern []int, h float64, g []float64, rawAt func(j int, sign float64) float64) error {
	base := e.model.Params(nil)
	workers := min(runtime.GOMAXPROCS(0), len(kern))
	jobs := make(chan int)
	failures := make(chan error, workers)
	var wg sync.WaitGroup
	// Each worker keeps its model clone and filter buffers across calls:
	// a fit differentiates log Z̃ at every evaluation.
	if len(e.gradWork) > 0 && e.gradWork[0].src != e.model {
		e.gradWork = nil // the engine's model was replaced
	}
	for len(e.gradWork) < workers {
		e.gradWork = append(e.gradWork, &gradWorker{src: e.model, m: e.model.Clone()})
	}
	// The workers share the cores with the chains a FilterLogLik of
	// independent products runs in parallel: GOMAXPROCS goroutines in all.
	inner := max(1, runtime.GOMAXPROCS(0)/workers)
	for w := 0; w < workers; w++ {
		gw := e.gradWork[w]
		gw.post.Workers = inner
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := gw.m
			post := &gw.post
			gw.p = linalg.Resize(gw.p, len(base))
			p := gw.p
			failed := false
			for j := range jobs {
				if failed {
					continue // drain
				}
				i := free[j]
				var f [2]float64
				for s, sign := range []float64{1, -1} {
					copy(p, base)
					p[i] = rawAt(j, sign)
					if err := m.SetParams(p); err != nil {
						failures <- err
						failed = true
						break
					}
					if err := filter.FilterLogLik(post, m, e.times, e.sites); err != nil {
						failures <- err
						failed = true
						break
					}
					f[s] = post.LogLik
				}
				g[j] = (f[0] - f[1]) / (2 * h)
			}
		}()
	}
	for _, j := range kern {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	close(failures)
	for err := range failures {
		return errs.Within("cvi", err, "kernel gradient")
	}
	return nil
}

// gradWorker is one kernel-gradient worker's model clone and scratch.
type gradWorker struct {
	src  *filter.Model // the model m was cloned from
	m    *filter.Model
	post filter.Posterior
	p    []float64
}
