package stream

import (
	"math"
	"sort"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// transitioner is a likelihood that moves unmet demand over a transition
// matrix (the diffusion likelihood).
type transitioner interface {
	Transition() *diffusion.Transition
}

// turnedAway sets the estimates' turned-away demand (cvi.UnmetDemand on
// the published latent mean and variance and the bin's observations as
// received) for the products that were full, where lik diffuses unmet
// demand. Non-finite values leave a product's fields out.
func (r *Runner) turnedAway(lik cvi.Likelihood, obs []cvi.Obs, out []wire.Estimate) {
	tl, ok := lik.(transitioner)
	if !ok {
		return
	}
	tr := tl.Transition()
	n := len(out)
	if tr == nil || tr.N() != n || len(obs) != n {
		return
	}
	mean, vars := make([]float64, n), make([]float64, n)
	for k := range out {
		mean[k], vars[k] = out[k].Mean, out[k].Var
	}
	un := make([]cvi.Unmet, n)
	if err := cvi.UnmetDemand(tr, obs, mean, vars, un); err != nil {
		r.log.Debug().Err(err).Msg("turned-away demand not published")
		return
	}
	for k := range out {
		o := obs[k]
		full := o.Censored && !math.IsNaN(o.Y) || math.IsNaN(o.Y) && !math.IsInf(o.Supply, 1)
		u := un[k]
		if !full || !finite(u.Mean) || !finite(u.Var) || !finite(u.Lost) {
			continue
		}
		e := &out[k]
		e.TurnedAway, e.TurnedAwayVar, e.Lost = &u.Mean, &u.Var, &u.Lost
		e.Diverted = diversions(u, r.prods.Names)
	}
}

// diversions lists the MaxDiverted largest parts of u sent to neighbours.
func diversions(u cvi.Unmet, names []string) []wire.Diversion {
	if len(u.Dest) == 0 {
		return nil
	}
	idx := make([]int, len(u.Dest))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return u.To[idx[a]] > u.To[idx[b]] })
	if len(idx) > wire.MaxDiverted {
		idx = idx[:wire.MaxDiverted]
	}
	sort.Ints(idx) // in product order
	out := make([]wire.Diversion, 0, len(idx))
	for _, i := range idx {
		if finite(u.To[i]) {
			out = append(out, wire.Diversion{Product: names[u.Dest[i]], Mean: u.To[i]})
		}
	}
	return out
}
