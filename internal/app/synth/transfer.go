package synth

import (
	"fmt"
	"math"
)

// transitionMatrix builds the N_p×N_p transfer matrix of the paper's
// diffusion from product features: W_ij = exp(−‖p_i−p_j‖²/(2ℓ²)) for i ≠ j,
// W_ii = 0 exactly, each row normalised and scaled by 1−sink (the rest of
// the row's excess is lost).
//
// Rows are normalised in log space (relative to the nearest neighbour), so a
// product whose neighbours are all many ℓ away still sends to its nearest
// one, as the formula says, instead of underflowing; the reference's
// expanded-distance formula instead turns such rows into self-loops (see
// referenceTransitionMatrix). A single product has no neighbour and its row
// is zero.
func transitionMatrix(features [][]float64, lengthscale, sink float64) ([][]float64, error) {
	if err := checkTransferParams(features, lengthscale, sink); err != nil {
		return nil, err
	}
	n := len(features)
	t := newMatrix(n, n)
	for i := range n {
		dmin := math.Inf(1)
		for j := range n {
			if j != i {
				dmin = math.Min(dmin, sqDist(features[i], features[j]))
			}
		}
		sum := 0.0
		for j := range n {
			if j != i {
				t[i][j] = math.Exp(-(sqDist(features[i], features[j]) - dmin) / (2 * lengthscale * lengthscale))
				sum += t[i][j]
			}
		}
		for j := range n {
			if sum > 0 {
				t[i][j] *= (1 - sink) / sum
			}
		}
	}
	return t, nil
}

// referenceTransitionMatrix reproduces the reference's
// compute_transition_matrix(X, ℓ, s=1, β=0.5, π) restricted to the product
// block: squared distances by the expanded form |a|²−2a·b+|b|² on inputs
// divided by ℓ, clipped at 0, S = exp(−r²/2), W = S − I. With the cross
// products accumulated by fused multiply-adds (as BLAS kernels do) and the
// norms by plain products (as numpy's sum of squares), the diagonal r² is a
// rounding residue (0 or ~1e−13) rather than 0, so W_ii ≈ −5e−14. Rows
// whose off-diagonal mass is smaller than that become self-loops of weight
// 1−π after normalisation. This artefact shaped the published ST data
// (station 6); which rows it hits depends on the locations' last bits.
func referenceTransitionMatrix(features [][]float64, lengthscale, sink float64) ([][]float64, error) {
	if err := checkTransferParams(features, lengthscale, sink); err != nil {
		return nil, err
	}
	n := len(features)
	x := make([][]float64, n)
	sq := make([]float64, n)
	for i, f := range features {
		x[i] = make([]float64, len(f))
		for d, v := range f {
			x[i][d] = v / lengthscale
			sq[i] += float64(x[i][d] * x[i][d]) // conversion: never fused
		}
	}
	t := newMatrix(n, n)
	for i := range n {
		sum := 0.0
		for j := range n {
			dot := 0.0
			for d := range x[i] {
				dot = math.FMA(x[i][d], x[j][d], dot)
			}
			r2 := math.Max((-2*dot+sq[i])+sq[j], 0)
			w := math.Exp(-0.5 * r2)
			if i == j {
				w -= 1
			}
			t[i][j] = w
			sum += w
		}
		if sum == 0 {
			return nil, fmt.Errorf("synth: reference transition row %d has no weight", i)
		}
		// The reference appends a sink column (π/(1−π))·sum before
		// normalising, which is the same as scaling the row by (1−π)/sum.
		for j := range n {
			t[i][j] *= (1 - sink) / sum
		}
	}
	return t, nil
}

func checkTransferParams(features [][]float64, lengthscale, sink float64) error {
	if len(features) == 0 {
		return fmt.Errorf("synth: transition matrix needs at least one product")
	}
	for i, f := range features {
		if len(f) != len(features[0]) {
			return fmt.Errorf("synth: feature row %d has %d entries, want %d", i, len(f), len(features[0]))
		}
	}
	if !(lengthscale > 0) || math.IsInf(lengthscale, 1) {
		return fmt.Errorf("synth: diffusion lengthscale must be finite and > 0, got %v", lengthscale)
	}
	if !(sink >= 0 && sink < 1) {
		return fmt.Errorf("synth: sink probability must be in [0, 1), got %v", sink)
	}
	return nil
}

func sqDist(a, b []float64) float64 {
	s := 0.0
	for d := range a {
		s += (a[d] - b[d]) * (a[d] - b[d])
	}
	return s
}

// censorTransfer applies one censor-and-transfer step to the demand y
// arriving at each product under supplies u: y_c = min(y, u), excess
// e = y − y_c, out = y_c + eᵀT, capped at u when capAtSupply ("throw away"
// what the receiver cannot serve either). sat[k] is set when y[k] > u[k]
// or the cap binds. out may alias y.
func censorTransfer(y, u []float64, t [][]float64, capAtSupply bool, out []float64, sat []bool) {
	n := len(y)
	excess := make([]float64, n)
	yc := make([]float64, n)
	for k := range n {
		yc[k] = y[k]
		if y[k] > u[k] {
			yc[k] = u[k]
			excess[k] = y[k] - u[k]
			sat[k] = true
		}
	}
	for j := range n {
		in := 0.0
		for i := range n {
			in += excess[i] * t[i][j]
		}
		v := yc[j] + in
		if capAtSupply && v > u[j] {
			v = u[j]
			sat[j] = true
		}
		out[j] = v
	}
}
