package cvi

import "fmt"

// DiffusionRoutes chooses among the Diffusion's routes to the same
// numbers: each reference route gives the default's result to rounding
// (the same terms summed in another order) or, for PointRecipients, to the
// point rule's error. The zero value is the default, the fastest route;
// the reference routes exist so that tests can compare with them.
type DiffusionRoutes struct {
	// KeepCandidates keeps among the sparse expectation's candidates the
	// products no point can put in excess (off: pruneCand drops them).
	KeepCandidates bool
	// UnfusedPoints sums the sparse curvature's points with mfPoint,
	// mfChain and mfChainSparse instead of the fused mfPointSparse.
	UnfusedPoints bool
	// PointRecipients sums the Gaussian recipients point by point instead
	// of in closed form (diffusion_meanfield_closed.go).
	PointRecipients bool
	// SplitMinProducts is the model size from which the sparse mean-field
	// expectation sums its points in two halves, the second on another
	// goroutine (0: 256; below it a half's work is too small to pay for
	// the hand-over). The halves are summed in the same order whether or
	// not the second runs in parallel, so the result does not depend on
	// the number of cores.
	SplitMinProducts int
	// PointParts is the number of parts a split expectation cuts its
	// points into (0: 2, at most the rule's antithetic pairs), each summed
	// into its own sums and added in part order: the result depends on it
	// (to rounding), not on how many goroutines take the parts (the
	// Diffusion's workers, set by the Online that owns it). More parts let
	// more cores share the points at the cost of adding one more part's
	// sums per expectation.
	PointParts int
	// MeanFieldParamsMin is the number of products from which the
	// mean-field route also gives the parameter gradient when only σ² is
	// learned (ℓ and π held or explicit) (0: 65, one above the online
	// refinement's sparse threshold): its O(N_p + Σ_excess deg) per point
	// replaces the dense route's O(N_p²) Jacobian, which a city cannot
	// afford. Smaller models keep the dense route, whose numbers the paper
	// reproduction pins.
	MeanFieldParamsMin int
}

// Default sizes of DiffusionRoutes.
const (
	defaultSplitMinProducts   = 256
	defaultMeanFieldParamsMin = sparseMinProducts + 1
	defaultPointParts         = 2
)

// withDefaults checks the routes and fills in the default sizes.
func (r DiffusionRoutes) withDefaults() (DiffusionRoutes, error) {
	if r.SplitMinProducts < 0 || r.MeanFieldParamsMin < 0 || r.PointParts < 0 {
		return r, fmt.Errorf("cvi: diffusion routes: split and mean-field sizes and point parts must be >= 0, got %d, %d and %d", r.SplitMinProducts, r.MeanFieldParamsMin, r.PointParts)
	}
	if r.PointParts == 0 {
		r.PointParts = defaultPointParts
	}
	if r.SplitMinProducts == 0 {
		r.SplitMinProducts = defaultSplitMinProducts
	}
	if r.MeanFieldParamsMin == 0 {
		r.MeanFieldParamsMin = defaultMeanFieldParamsMin
	}
	return r, nil
}
