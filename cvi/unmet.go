package cvi

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/diffusion"
)

// Unmet is the demand a product turned away in one bin and where it went:
// Mean and Var are the posterior mean and variance of max(f − u, 0), the
// excess of the latent demand f over the supply u that the diffusion
// moves; To[i] is the part T_kj·Mean sent to neighbour Dest[i] = j, Lost
// the sink's share (with no neighbour, all of it).
type Unmet struct {
	Mean, Var float64
	Dest      []int
	To        []float64
	Lost      float64
}

// ExcessMoments returns the mean and variance of max(x − u, 0) for
// x ~ N(m, v), in closed form: with s = √v and z = (m − u)/s,
// E = (m − u)Φ(z) + sφ(z) and E[·²] = ((m − u)² + v)Φ(z) + (m − u)sφ(z).
// v = 0 gives max(m − u, 0) exactly; u = +Inf gives 0.
func ExcessMoments(m, v, u float64) (mean, variance float64) {
	d := m - u
	if math.IsInf(u, 1) {
		return 0, 0
	}
	if !(v > 0) {
		return math.Max(d, 0), 0
	}
	s := math.Sqrt(v)
	z := d / s
	cdf := 0.5 * math.Erfc(-z/math.Sqrt2)
	pdf := npdf(z)
	mean = d*cdf + s*pdf
	second := (d*d+v)*cdf + d*s*pdf
	return mean, math.Max(second-mean*mean, 0)
}

// UnmetDemand fills dst[k] for the bin's products from the posterior
// marginals N(mean[k], vars[k]) of the latent demand f: a product that
// was full (a censored observation, or no observation with a finite
// supply: a site that served nobody while full) turned away
// max(f_k − u_k, 0), split over T's row k and its sink; any other cell
// (supply to spare) turned nobody away. t may be nil (no neighbours:
// everything turned away is lost).
//
// The excess is taken of f, not of f + ε: the noise stands for the
// scatter of counts around their mean, and a count's excess over a supply
// of 0 has the mean of f, where f + ε's positive part would add the
// noise's.
func UnmetDemand(t *diffusion.Transition, obs []Obs, mean, vars []float64, dst []Unmet) error {
	n := len(obs)
	if len(mean) != n || len(vars) != n || len(dst) != n || (t != nil && t.N() != n) {
		return fmt.Errorf("cvi: unmet demand of %d observations with %d means, %d variances, %d outputs", n, len(mean), len(vars), len(dst))
	}
	for k, o := range obs {
		u := &dst[k]
		u.Mean, u.Var, u.Lost = 0, 0, 0
		u.Dest, u.To = u.Dest[:0], u.To[:0]
		full := o.Censored && !math.IsNaN(o.Y) || math.IsNaN(o.Y) && !math.IsInf(o.Supply, 1)
		if !full {
			continue
		}
		u.Mean, u.Var = ExcessMoments(mean[k], vars[k], o.Supply)
		sink := 1.0
		if t != nil {
			cols, probs := t.Row(k)
			for i, j := range cols {
				if probs[i] > 0 {
					u.Dest = append(u.Dest, j)
					u.To = append(u.To, probs[i]*u.Mean)
				}
			}
			sink = t.Sink(k)
		}
		u.Lost = sink * u.Mean
	}
	return nil
}
