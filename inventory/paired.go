package inventory

import (
	"fmt"
	"math"
)

// Paired pickups and returns. The chain treats a station's pickups and
// returns as independent Poisson flows, so its inventory spreads with
// variance Σ (λ_k + μ_k) over the bins. Real flows move together (a busy
// hour brings both; on Citi Bike the two flows' hourly residuals
// correlate 0.3–0.8 at every station, and the net flow's realised
// variance over a day is a fraction of Σ (λ + μ)). Part of each bin's
// pickups and returns then cancel: a return matched by a pickup. With
// π_k of such pairs per bin, the net flow is the chain at the unpaired
// rates λ_k − π_k and μ_k − π_k: the same drift μ_k − λ_k, variance
// λ_k + μ_k − 2π_k. A pair whose return comes first never empties the
// station and finds no pickup turned away, so P(empty within h) and the
// unmet pickups of the chain at the unpaired rates are exact for such
// pairs (TestUnpairedMatchesPairedWorld); P(full within h) and the unmet
// returns miss the instant a pair's return fills a station one dock from
// full (a bound of π·P(C−1) per bin).

// Unpaired writes the unpaired rates of pickups lambda and returns mu
// into dstL and dstM (which may alias lambda and mu): π_k = kappa ×
// min(λ_k, μ_k) pairs are taken out of both, kappa in [0, 1] (0: the
// flows independent, as the chain assumes; 1: every return that a pickup
// can match is matched). The pairs are counted from the rates clamped at
// 0 and taken from the values as given, so forecast means (which may be
// negative, the rate being max(f, 0)) can be unpaired as well as rates.
func Unpaired(dstL, dstM, lambda, mu []float64, kappa float64) error {
	if !(kappa >= 0 && kappa <= 1) {
		return fmt.Errorf("inventory: paired fraction %v is not in [0, 1]", kappa)
	}
	if len(lambda) != len(mu) || len(dstL) != len(lambda) || len(dstM) != len(mu) {
		return fmt.Errorf("inventory: unpairing %d pickup and %d return bins into %d and %d", len(lambda), len(mu), len(dstL), len(dstM))
	}
	for k := range lambda {
		pair := kappa * math.Max(0, math.Min(lambda[k], mu[k]))
		dstL[k], dstM[k] = lambda[k]-pair, mu[k]-pair
	}
	return nil
}
