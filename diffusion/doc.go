// Package diffusion implements the transfer of unsatisfied demand between
// products (the paper's Eq. transition_dynamics, the reference code's "D"
// variant): the transition matrix T built from product features or read
// from a file, the piecewise-linear diffusion map f ↦ g(f), its Jacobian,
// and the derivatives that let a caller learn the diffusion lengthscale ℓ
// and the sink probability π.
//
// # Transition matrix
//
// For products with feature vectors p_i the edge weights are
//
//	W_ij = exp(−|p_i − p_j|² / (2ℓ²))  for i ≠ j,   W_ii = 0 exactly,
//
// i.e. an RBF with the factor ½ (the reference code's β = 0.5; the paper
// writes exp(−r²/ℓ²), whose ℓ is √2 times ours). Squared distances are
// summed coordinate by coordinate, never by the expansion
// |a|² − 2a·b + |b|², so the diagonal cannot pick up a rounding residue
// (the reference bug that gave station 6 of its ST data a self-loop).
// Features are either Euclidean coordinates or (latitude, longitude) in
// degrees with great-circle distance in metres (see Metric).
//
// Rows are normalised and scaled by 1 − π:
//
//	T_ij = (1 − π) W_ij / Σ_l W_il,
//
// and the sink receives exactly π of every row. Demand sent to the sink is
// lost. Normalisation is done relative to each row's nearest neighbour, so
// rows whose weights are all tiny keep full precision. A row is isolated
// (sends nothing to other products, all of its excess is lost) when it has
// no neighbour at all, or when even its largest weight
// exp(−r²_min/(2ℓ²)) underflows to zero in float64, i.e. its nearest
// neighbour is more than about 38.6ℓ away. Rows never contain NaN. Use
// GraphOptions.Cutoff for a behavioural "nobody goes further than this"
// rule; the underflow rule only defines the numerical limit.
//
// # Sparse graphs
//
// A Graph fixes each product's neighbourhood (all other products, its k
// nearest, and/or those within a cut-off distance) and stores it in
// compressed sparse rows; T shares that structure, so applying the
// operator costs O(N_p + nnz) and changing ℓ or π costs O(nnz). The
// neighbourhood does not depend on ℓ, so derivatives with respect to ℓ are
// exact for the graph as built.
//
// # The diffusion map
//
// Row-vector convention: product i sends T_ij of its excess to product j.
// With supply u (+Inf for unlimited) and f⁽⁰⁾ = f, for s = 1..N_diff
//
//	e⁽ˢ⁾ = max(f⁽ˢ⁻¹⁾ − u, 0),   f⁽ˢ⁾ = f⁽ˢ⁻¹⁾ + e⁽ˢ⁾ (T − I),
//
// then d = max(f⁽ᴺ⁾ − f, 0) and the diffused mean is g = f + d: donors
// lose their excess and receivers gain, and the final max keeps only net
// gains. The supply-aware mode of the paper (a per-bin graph with edges
// only into products that still had supply) is one step with a masked T,
// see Transition.MaskInto.
//
// # Derivatives and kinks
//
// g is piecewise linear in f. Jacobian, JacobianTVec and ParamGrad return
// the exact derivative of the linear piece containing f. On a kink, where
// an argument of a max is exactly 0 (f⁽ˢ⁻¹⁾_i = u_i, or f⁽ᴺ⁾_j = f_j), they
// take the one-sided derivative of the zero branch: a product exactly at
// its supply is not in excess, and a product whose net gain is exactly 0
// gains nothing.
//
// # Concurrency and allocation
//
// Graph, Transition and Operator are read-only after construction and may
// be shared between goroutines. A Workspace holds the scratch memory of the
// hot path and belongs to one goroutine at a time; with a Workspace of the
// right size the operator functions allocate nothing. Errors carry the
// prefix "diffusion: "; nothing panics on bad input.
package diffusion
