package filter

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dcgpd/dcgpd/internal/linalg"
)

// ErrMeanSolverModel reports a model the MeanSolver does not serve: it
// needs independent products (one Kalman chain each) with diagonal sites
// and a chain state of more than the two components the unrolled 2-state
// chains handle.
var ErrMeanSolverModel = errors.New("filter: the mean solver needs independent products of state dimension above 2")

// MeanSolver applies (K⁻¹ + diag(λ₂))⁻¹ to any vector λ₁ for fixed site
// precisions λ₂: the smoothed posterior mean of sites (λ₁, λ₂) under a
// zero-mean prior with the model's covariance K (and its start's
// covariance, when it has one). Prepare runs the Kalman filter once and
// keeps, per product and bin, the filter's gain P_f·hᵀ and the smoother's
// gain; Solve then costs O(d²) per product and bin instead of the
// O(d³) of a filter and smoother pass. Memory: about N·(d² + d) numbers
// per product for N bins (the smoother's gains; the transitions once per
// distinct step). It serves the batch engine's coupled CVI step,
// which applies the inverse many times for the same precisions.
type MeanSolver struct {
	np, n int
	d     []int       // per product: the chain's state dimension
	h     [][]float64 // per product: the measurement row
	kv    [][]float64 // per product: N·d filter gains P_f(n)·hᵀ
	gt    [][]float64 // per product: (N−1)·d² transposed smoother gains
	aFrom [][]int     // per product: the slot of a holding bin n's transition
	a     [][]float64 // per product: the distinct transitions, d² each
	nat2  []float64
	post  Posterior
	err   []error
	// Per worker: the forward pass's predicted and filtered means.
	ws [][]float64
}

// Prepare readies the solver for model m over times with site
// precisions nat2 (N·N_p, index n·N_p + k, ≥ 0). It returns
// ErrMeanSolverModel for a model it does not serve.
func (s *MeanSolver) Prepare(m *Model, times []float64, nat2 []float64) error {
	if m == nil || !m.indep {
		return ErrMeanSolverModel
	}
	n, np := len(times), m.np
	if len(nat2) != n*np {
		return fmt.Errorf("filter: mean solver: %d site precisions, want %d", len(nat2), n*np)
	}
	s.np, s.n = np, n
	s.nat2 = append(s.nat2[:0], nat2...)
	if len(s.d) != np {
		s.d, s.h, s.kv, s.gt = make([]int, np), make([][]float64, np), make([][]float64, np), make([][]float64, np)
		s.aFrom, s.a, s.err = make([][]int, np), make([][]float64, np), make([]error, np)
	}
	clear(s.err)
	sites := &Sites{N: n, NP: np, Nat1: make([]float64, n*np), Nat2: s.nat2}
	s.post.rec = s
	err := s.post.run(m, times, sites, runFilterMarginals)
	s.post.rec = nil
	if err != nil {
		return err
	}
	for _, e := range s.err {
		if e != nil {
			return e
		}
	}
	return nil
}

// record keeps product k's gains from its filtered chain c.
func (s *MeanSolver) record(k int, c *chain, sc *chainScratch, d int) error {
	if sc.twoState(c) || c.dim != d {
		s.err[k] = ErrMeanSolverModel
		return nil
	}
	n, dd := s.n, d*d
	s.d[k] = d
	s.h[k] = append(s.h[k][:0], sc.h[:d]...)
	s.kv[k] = linalg.Resize(s.kv[k], n*d)
	s.gt[k] = linalg.Resize(s.gt[k], max(n-1, 0)*dd)
	// The distinct transitions only (one on a regular grid), each bin
	// pointing at its slot.
	if cap(s.aFrom[k]) < n {
		s.aFrom[k] = make([]int, n)
	}
	s.aFrom[k] = s.aFrom[k][:n]
	s.a[k] = s.a[k][:0]
	for i := 0; i < n; i++ {
		if c.aFrom[i] == i {
			s.a[k] = append(s.a[k], c.a[i*dd:(i+1)*dd]...)
		}
		s.aFrom[k][i] = len(s.a[k])/dd - 1
		if c.aFrom[i] != i {
			s.aFrom[k][i] = s.aFrom[k][c.aFrom[i]]
		}
		pf := c.pf[i*dd : (i+1)*dd]
		kv := s.kv[k][i*d : (i+1)*d]
		for r := 0; r < d; r++ {
			var v float64
			for j, hj := range s.h[k] {
				v += pf[r*d+j] * hj
			}
			kv[r] = v
		}
	}
	// Gᵀ = P_p(n+1)⁻¹·A·P_f(n), as the RTS smoother forms it.
	w := &sc.work
	for i := 0; i+1 < n; i++ {
		x := s.gt[k][i*dd : (i+1)*dd]
		linalg.MatMul(x, c.transition(i+1, dd), c.pf[i*dd:(i+1)*dd], d, d, d)
		_, ppN := c.pred(i + 1)
		ch := w.chol[:dd]
		copy(ch, ppN[:dd])
		if linalg.Cholesky(ch, d) {
			linalg.TrsmLower(ch, d, x, d, d)
			linalg.TrsmLowerT(ch, d, x, d, d)
		} else if !linalg.PSDSolve(ppN, d, x, d) {
			return fmt.Errorf("%w: the smoother's predicted covariance is not positive semi-definite", ErrNumerical)
		}
	}
	return nil
}

// Solve writes into mean (N·N_p) the posterior mean for sites (nat1,
// the prepared precisions) under the zero-mean prior, on all cores.
func (s *MeanSolver) Solve(mean, nat1 []float64) {
	nw := max(1, min(runtime.GOMAXPROCS(0), s.np))
	for len(s.ws) < nw {
		s.ws = append(s.ws, nil)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < nw; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= s.np {
					return
				}
				s.ws[w] = linalg.Resize(s.ws[w], 2*s.n*s.d[k]+s.d[k])
				s.solveProduct(k, mean, nat1, s.ws[w])
			}
		}(w)
	}
	wg.Wait()
}

// solveProduct is Solve's filter and smoother passes on the means of
// product k, with scratch buf (2N·d + d).
func (s *MeanSolver) solveProduct(k int, mean, nat1, buf []float64) {
	n, np, d := s.n, s.np, s.d[k]
	dd := d * d
	h, kv, gt, a, aFrom := s.h[k], s.kv[k], s.gt[k], s.a[k], s.aFrom[k]
	mp, mf, x := buf[:n*d], buf[n*d:2*n*d], buf[2*n*d:2*n*d+d]
	clear(x) // the zero prior mean at bin 0
	for i := 0; i < n; i++ {
		if i > 0 {
			an := a[aFrom[i]*dd : (aFrom[i]+1)*dd]
			prev := mf[(i-1)*d : i*d]
			for r := 0; r < d; r++ {
				var v float64
				for j, u := range an[r*d : (r+1)*d] {
					v += u * prev[j]
				}
				x[r] = v
			}
		}
		copy(mp[i*d:(i+1)*d], x)
		var hx float64
		for j, hj := range h {
			hx += hj * x[j]
		}
		innov := nat1[i*np+k] - s.nat2[i*np+k]*hx
		f := mf[i*d : (i+1)*d]
		for r := range f {
			f[r] = x[r] + kv[i*d+r]*innov
		}
	}
	// Backward: ms(n) = mf(n) + Gᵀ(n)ᵀ·(ms(n+1) − mp(n+1)), kept in mf.
	diff := x
	for i := n - 1; i >= 0; i-- {
		ms := mf[i*d : (i+1)*d]
		if i < n-1 {
			next, pn := mf[(i+1)*d:(i+2)*d], mp[(i+1)*d:(i+2)*d]
			for j := range diff {
				diff[j] = next[j] - pn[j]
			}
			g := gt[i*dd : (i+1)*dd]
			for r := 0; r < d; r++ {
				dr := diff[r]
				if dr == 0 {
					continue
				}
				for j, u := range g[r*d : (r+1)*d] {
					ms[j] += u * dr
				}
			}
		}
		var v float64
		for j, hj := range h {
			v += hj * ms[j]
		}
		mean[i*np+k] = v
	}
}
