package diffusion

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// RowSumTolerance is how far above 1 the probabilities of an explicit row
// may sum (rounding in files); such rows are rescaled to sum to exactly 1.
const RowSumTolerance = 1e-9

// Transition is a sub-stochastic transition matrix over N_p products in
// compressed sparse rows, plus the probability each row sends to the sink
// (lost demand): Σ_j T_ij + Sink(i) = 1 up to rounding, T_ii = 0.
//
// A Transition is either built from a Graph with lengthscale ℓ and sink
// probability π (Graph.Transition), which makes the derivatives in ℓ and
// π available, or explicit (ReadTransitionCSV, NewTransitionDense).
// The zero value is an empty matrix usable as a destination for
// Graph.TransitionInto and Transition.MaskInto.
type Transition struct {
	n      int
	rowPtr []int // shared with the Graph for kernel transitions
	col    []int // shared with the Graph for kernel transitions
	val    []float64
	sink   []float64 // per row

	// Kernel transitions only.
	kernel bool
	ell    float64
	pi     float64
	dist2  []float64 // per entry, shared with the Graph
	mean2  []float64 // per row: Σ_j q_ij r²_ij with q_ij = T_ij/(1−π)

	invEll3, invOneMinusPi float64 // 1/ℓ³ and 1/(1−π)
}

// N returns the number of products.
func (t *Transition) N() int {
	if t == nil {
		return 0
	}
	return t.n
}

// NNZ returns the number of stored entries (some may be zero after
// masking). Entry-aligned slices (Derivs) list the entries row by row in
// the order of Row.
func (t *Transition) NNZ() int {
	if t == nil {
		return 0
	}
	return len(t.col)
}

// Row returns row i's column indices (ascending) and probabilities. The
// slices are views into t and must not be modified.
func (t *Transition) Row(i int) (cols []int, probs []float64) {
	if t == nil || i < 0 || i >= t.n {
		return nil, nil
	}
	a, b := t.rowPtr[i], t.rowPtr[i+1]
	return t.col[a:b], t.val[a:b]
}

// Sink returns the probability that row i sends to the sink: π for a
// kernel row with neighbours, 1 for an isolated row, 1 − Σ_j T_ij for an
// explicit row.
func (t *Transition) Sink(i int) float64 {
	if t == nil || i < 0 || i >= t.n {
		return math.NaN()
	}
	return t.sink[i]
}

// At returns T_ij (0 when the entry is not stored or out of range).
func (t *Transition) At(i, j int) float64 {
	cols, probs := t.Row(i)
	if k, ok := slices.BinarySearch(cols, j); ok {
		return probs[k]
	}
	return 0
}

// Params returns ℓ and π of a kernel transition; ok is false for an
// explicit one.
func (t *Transition) Params() (ell, pi float64, ok bool) {
	if t == nil || !t.kernel {
		return 0, 0, false
	}
	return t.ell, t.pi, true
}

// Dense writes T row-major into dst (length N_p²).
func (t *Transition) Dense(dst []float64) error {
	if t == nil {
		return errNilTransition
	}
	if len(dst) != t.n*t.n {
		return fmt.Errorf("diffusion: dense destination has length %d, want %d", len(dst), t.n*t.n)
	}
	clear(dst)
	for i := range t.n {
		for k := t.rowPtr[i]; k < t.rowPtr[i+1]; k++ {
			dst[i*t.n+t.col[k]] = t.val[k]
		}
	}
	return nil
}

var errNilTransition = errors.New("diffusion: nil transition")

// NewTransitionDense builds an explicit transition from a dense row-major
// N_p×N_p matrix: entries must lie in [0, 1], the diagonal must be 0 (no
// self-loops), and each row must sum to at most 1 + RowSumTolerance; the
// remainder of a row goes to the sink. Zero entries are not stored.
func NewTransitionDense(n int, probs []float64) (*Transition, error) {
	if n <= 0 {
		return nil, fmt.Errorf("diffusion: transition needs at least one product, got %d", n)
	}
	if len(probs) != n*n {
		return nil, fmt.Errorf("diffusion: dense transition has %d entries, want %d×%d", len(probs), n, n)
	}
	t := &Transition{n: n, rowPtr: make([]int, n+1), sink: make([]float64, n)}
	for i := range n {
		for j := range n {
			p := probs[i*n+j]
			if !(p >= 0 && p <= 1) {
				return nil, fmt.Errorf("diffusion: T[%d,%d] = %v is not a probability in [0, 1]", i, j, p)
			}
			if i == j && p != 0 {
				return nil, fmt.Errorf("diffusion: T[%d,%d] = %v: self-loops are not allowed", i, j, p)
			}
			if p > 0 {
				t.col = append(t.col, j)
				t.val = append(t.val, p)
			}
		}
		t.rowPtr[i+1] = len(t.col)
		if err := t.closeExplicitRow(i); err != nil {
			return nil, fmt.Errorf("diffusion: row %d: %w", i, err)
		}
	}
	return t, nil
}

// closeExplicitRow checks row i's sum, rescales a sum within the tolerance
// above 1 down to 1, and sets the row's sink probability.
func (t *Transition) closeExplicitRow(i int) error {
	vals := t.val[t.rowPtr[i]:t.rowPtr[i+1]]
	var s float64
	for _, v := range vals {
		s += v
	}
	if s > 1+RowSumTolerance {
		return fmt.Errorf("probabilities sum to %.12g > 1", s)
	}
	if s > 1 {
		for k := range vals {
			vals[k] /= s
		}
		s = 1
	}
	t.sink[i] = math.Max(0, 1-s)
	return nil
}
