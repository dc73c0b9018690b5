package diffusion

import (
	"fmt"
	"math"
)

// MaskInto writes into dst the paper's time-dependent transition for one
// bin: edges only into products j with available[j] (products that still
// had spare supply in the bin, see Available), each row renormalised over
// its available neighbours while its sink probability is kept. For a
// kernel transition that is T'_ij = (1 − π) W_ij / Σ_{l available} W_il
// (weights recomputed, so the isolation rule and the derivatives in ℓ and
// π carry over); for an explicit one T'_ij = (1 − s_i) T_ij /
// Σ_{l available} T_il with s_i its sink probability. A row with no
// available neighbour (or no positive weight on one) sends everything to
// the sink. Unavailable columns stay stored with value 0, so dst shares
// t's index arrays. dst must not be t. Reusing dst across bins allocates
// nothing.
func (t *Transition) MaskInto(dst *Transition, available []bool) error {
	if t == nil || dst == nil {
		return fmt.Errorf("diffusion: nil transition or destination")
	}
	if dst == t {
		return fmt.Errorf("diffusion: mask destination must differ from the source transition")
	}
	if len(available) != t.n {
		return fmt.Errorf("diffusion: availability mask has length %d, want %d products", len(available), t.n)
	}
	dst.n = t.n
	dst.rowPtr, dst.col, dst.dist2 = t.rowPtr, t.col, t.dist2
	dst.val = resize(dst.val, len(t.col))
	dst.sink = resize(dst.sink, t.n)
	dst.setParams(t.kernel, t.ell, t.pi)
	if t.kernel {
		dst.mean2 = resize(dst.mean2, t.n)
	} else {
		dst.mean2 = dst.mean2[:0]
	}
	for i := range t.n {
		a, b := t.rowPtr[i], t.rowPtr[i+1]
		if t.kernel {
			dst.sink[i], dst.mean2[i] = kernelRow(dst.val[a:b], t.dist2[a:b], t.col[a:b], available, t.ell, t.pi)
			continue
		}
		dst.sink[i] = maskExplicitRow(dst.val[a:b], t.val[a:b], t.col[a:b], available, t.sink[i])
	}
	return nil
}

// maskExplicitRow renormalises one explicit row over available columns and
// returns its sink probability.
func maskExplicitRow(dst, src []float64, cols []int, available []bool, sink float64) float64 {
	var s float64
	for k, j := range cols {
		if available[j] {
			s += src[k]
		}
	}
	if !(s > 0) {
		clear(dst)
		return 1
	}
	c := (1 - sink) / s
	for k, j := range cols {
		if available[j] {
			dst[k] = src[k] * c
		} else {
			dst[k] = 0
		}
	}
	return sink
}

// SupplyAware returns the paper's supply-aware operator for one bin: a
// single diffusion step over t masked by available, with the masked matrix
// written into dst (see MaskInto). The returned Operator refers to dst and
// is valid until dst is overwritten.
func (t *Transition) SupplyAware(dst *Transition, available []bool) (Operator, error) {
	if err := t.MaskInto(dst, available); err != nil {
		return Operator{}, err
	}
	return Operator{T: dst, Steps: 1}, nil
}

// Available writes the paper's per-bin availability into dst: product j is
// available when its observed demand stayed below its supply, y_j < u_j
// (u_j = +Inf for unlimited supply). A product without an observation
// (y_j NaN) is taken as available unless its supply is 0 or less; any NaN
// supply is an error.
func Available(dst []bool, y, u []float64) error {
	if len(dst) != len(y) || len(y) != len(u) {
		return fmt.Errorf("diffusion: availability lengths differ: dst %d, y %d, u %d", len(dst), len(y), len(u))
	}
	for j := range y {
		if math.IsNaN(u[j]) {
			return fmt.Errorf("diffusion: supply of product %d is NaN", j)
		}
		if math.IsNaN(y[j]) {
			dst[j] = u[j] > 0
			continue
		}
		dst[j] = y[j] < u[j]
	}
	return nil
}
