package filter

import "github.com/dcgpd/dcgpd/internal/linalg"

// chain is the per-bin storage of one Kalman chain of state dimension dim:
// the transition into each bin, the predicted, filtered and smoothed
// moments. Bin 0's prediction is the stationary prior, or the model's
// start predicted to it. The predicted
// moments are kept per bin only when keepPred is set (the RTS smoother
// and the unrolled 2-state chains use them); otherwise mp and pp hold
// the current bin's only.
type chain struct {
	dim      int
	keepPred bool
	a        []float64 // N·d_t²: temporal transition A(t_n − t_{n−1}); identity at n = 0
	aFrom    []int     // the bin whose slot of a holds bin n's transition
	mp, pp   []float64 // predicted mean (N·dim) and covariance (N·dim²)
	mf, pf   []float64 // filtered
	ms, ps   []float64 // smoothed
}

// grow sizes the chain for n bins, reusing its buffers when large enough.
func (c *chain) grow(n, dim, dt int, smooth, keepPred bool) {
	c.dim, c.keepPred = dim, keepPred
	c.a = linalg.Resize(c.a, n*dt*dt)
	if cap(c.aFrom) < n {
		c.aFrom = make([]int, n)
	}
	c.aFrom = c.aFrom[:n]
	slots := 1
	if keepPred {
		slots = n
	}
	c.mp = linalg.Resize(c.mp, slots*dim)
	c.pp = linalg.Resize(c.pp, slots*dim*dim)
	c.mf = linalg.Resize(c.mf, n*dim)
	c.pf = linalg.Resize(c.pf, n*dim*dim)
	if smooth {
		c.ms = linalg.Resize(c.ms, n*dim)
		c.ps = linalg.Resize(c.ps, n*dim*dim)
	}
}

// pred returns the predicted moments of bin n.
func (c *chain) pred(n int) (mean, cov []float64) {
	D := c.dim
	if !c.keepPred {
		n = 0
	}
	return c.mp[n*D : (n+1)*D], c.pp[n*D*D : (n+1)*D*D]
}

// transition returns the transition into bin n (dd = d_t²).
func (c *chain) transition(n, dd int) []float64 {
	m := c.aFrom[n]
	return c.a[m*dd : (m+1)*dd]
}

// state returns the smoothed (or filtered) mean and covariance of bin n.
func (c *chain) state(n int, smoothed bool) (mean, cov []float64) {
	D := c.dim
	if smoothed {
		return c.ms[n*D : (n+1)*D], c.ps[n*D*D : (n+1)*D*D]
	}
	return c.mf[n*D : (n+1)*D], c.pf[n*D*D : (n+1)*D*D]
}
