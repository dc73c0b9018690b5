package diffusion

import (
	"fmt"
	"math"
)

// checkParams validates a lengthscale and a sink probability.
func checkParams(ell, pi float64) error {
	if !(ell > 0) || math.IsInf(ell, 1) {
		return fmt.Errorf("diffusion: lengthscale %v must be finite and > 0", ell)
	}
	if !(pi >= 0 && pi < 1) {
		return fmt.Errorf("diffusion: sink probability %v must be in [0, 1)", pi)
	}
	return nil
}

// Transition returns the RBF transition matrix of the graph for
// lengthscale ell (finite, > 0; metres for GreatCircle) and sink
// probability pi in [0, 1): T_ij = (1 − π) W_ij / Σ_l W_il over i's
// neighbours, W_ij = exp(−r²_ij/(2ℓ²)), and Sink(i) = π. Isolated rows
// (no neighbour, or the nearest one's weight underflows to 0) are all
// zero with Sink(i) = 1.
func (g *Graph) Transition(ell, pi float64) (*Transition, error) {
	t := new(Transition)
	if err := g.TransitionInto(t, ell, pi); err != nil {
		return nil, err
	}
	return t, nil
}

// TransitionInto is Transition writing into dst, reusing its memory: after
// the first call with a given graph, later calls (e.g. at each step of a
// lengthscale optimiser) allocate nothing. dst shares the graph's index
// arrays.
func (g *Graph) TransitionInto(dst *Transition, ell, pi float64) error {
	if g == nil || dst == nil {
		return fmt.Errorf("diffusion: nil graph or destination")
	}
	if err := checkParams(ell, pi); err != nil {
		return err
	}
	dst.n = g.n
	dst.rowPtr, dst.col, dst.dist2 = g.rowPtr, g.col, g.dist2
	dst.val = resize(dst.val, len(g.col))
	dst.sink = resize(dst.sink, g.n)
	dst.mean2 = resize(dst.mean2, g.n)
	dst.setParams(true, ell, pi)
	for i := range g.n {
		a, b := g.rowPtr[i], g.rowPtr[i+1]
		dst.sink[i], dst.mean2[i] = kernelRow(dst.val[a:b], g.dist2[a:b], g.col[a:b], nil, ell, pi)
	}
	return nil
}

// kernelRow fills vals with (1 − π) × the normalised RBF weights of one
// row over the entries whose column is available (all when avail is nil;
// the others get 0) and returns the row's sink probability and the weighted
// mean squared distance Σ q_j r²_j used by dT/dℓ.
//
// Weights are computed relative to the nearest admissible neighbour,
// exp(−(r² − r²_min)/(2ℓ²)), so normalisation never divides by an
// underflowed sum; the row counts as isolated exactly when the unshifted
// weight of that nearest neighbour underflows.
func kernelRow(vals, dist2 []float64, cols []int, avail []bool, ell, pi float64) (sink, mean2 float64) {
	scale := 0.5 / ell / ell
	r2min := math.Inf(1)
	for k, d := range dist2 {
		if (avail == nil || avail[cols[k]]) && d < r2min {
			r2min = d
		}
	}
	if math.IsInf(r2min, 1) || (r2min > 0 && math.Exp(-r2min*scale) == 0) {
		clear(vals)
		return 1, 0
	}
	var s float64
	for k, d := range dist2 {
		var w float64
		switch {
		case avail != nil && !avail[cols[k]]:
		case d == r2min: // avoids 0·Inf when ℓ is tiny
			w = 1
		default:
			w = math.Exp(-(d - r2min) * scale)
		}
		vals[k] = w
		s += w
	}
	c := (1 - pi) / s
	for k, d := range dist2 {
		q := vals[k] / s
		mean2 += q * d
		vals[k] *= c
	}
	return pi, mean2
}

// Derivs writes the derivatives of the stored entries of a kernel
// transition with respect to ℓ and π, entry-aligned with Row (row by row):
//
//	∂T_ij/∂ℓ = T_ij (r²_ij − Σ_l q_il r²_il) / ℓ³,   q_il = T_il/(1 − π),
//	∂T_ij/∂π = −T_ij / (1 − π).
//
// Entries that are zero (isolated rows, masked-out columns) have zero
// derivatives; the sink probability's derivatives are 0 in ℓ and 1 in π
// for rows with neighbours. Either destination may be nil; each other one
// must have length NNZ. An explicit transition has no such parameters and
// gives an error.
func (t *Transition) Derivs(dEll, dPi []float64) error {
	if t == nil {
		return errNilTransition
	}
	if !t.kernel {
		return fmt.Errorf("diffusion: explicit transition has no lengthscale or sink parameter")
	}
	nnz := len(t.col)
	if (dEll != nil && len(dEll) != nnz) || (dPi != nil && len(dPi) != nnz) {
		return fmt.Errorf("diffusion: derivative destinations have lengths %d, %d, want %d", len(dEll), len(dPi), nnz)
	}
	for i := range t.n {
		for k := t.rowPtr[i]; k < t.rowPtr[i+1]; k++ {
			de, dp := t.entryDerivs(i, k)
			if dEll != nil {
				dEll[k] = de
			}
			if dPi != nil {
				dPi[k] = dp
			}
		}
	}
	return nil
}

// entryDerivs returns ∂T/∂ℓ and ∂T/∂π of entry k in row i.
func (t *Transition) entryDerivs(i, k int) (dEll, dPi float64) {
	v := t.val[k]
	if v == 0 {
		return 0, 0
	}
	if x := t.dist2[k] - t.mean2[i]; x != 0 { // avoids 0·Inf for absurdly small ℓ
		dEll = v * x * t.invEll3
	}
	return dEll, -v * t.invOneMinusPi
}

// DerivsDense is Derivs written as dense row-major N_p×N_p matrices.
func (t *Transition) DerivsDense(dEll, dPi []float64) error {
	if t == nil {
		return errNilTransition
	}
	nn := t.n * t.n
	if (dEll != nil && len(dEll) != nn) || (dPi != nil && len(dPi) != nn) {
		return fmt.Errorf("diffusion: dense derivative destinations have lengths %d, %d, want %d", len(dEll), len(dPi), nn)
	}
	if !t.kernel {
		return t.Derivs(nil, nil)
	}
	if dEll != nil {
		clear(dEll)
	}
	if dPi != nil {
		clear(dPi)
	}
	for i := range t.n {
		for k := t.rowPtr[i]; k < t.rowPtr[i+1]; k++ {
			de, dp := t.entryDerivs(i, k)
			if dEll != nil {
				dEll[i*t.n+t.col[k]] = de
			}
			if dPi != nil {
				dPi[i*t.n+t.col[k]] = dp
			}
		}
	}
	return nil
}

// setParams records the kernel parameters and the reciprocals the
// derivatives multiply by.
func (t *Transition) setParams(kernel bool, ell, pi float64) {
	t.kernel, t.ell, t.pi = kernel, ell, pi
	t.invEll3, t.invOneMinusPi = 0, 0
	if kernel {
		t.invEll3, t.invOneMinusPi = 1/(ell*ell*ell), 1/(1-pi)
	}
}

// resize returns s with length n, reusing its memory when large enough.
func resize(s []float64, n int) []float64 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float64, n)
}

// NewTransition is NewGraph followed by Graph.Transition, for callers that
// do not learn ℓ or π.
func NewTransition(features [][]float64, ell, pi float64, opt GraphOptions) (*Transition, error) {
	if err := checkParams(ell, pi); err != nil {
		return nil, err
	}
	g, err := NewGraph(features, opt)
	if err != nil {
		return nil, err
	}
	return g.Transition(ell, pi)
}
