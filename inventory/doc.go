// Package inventory is the rebalancing consumer's math: from a bike-share
// station's capacity, its current usable bikes and dcgpd's forecasts of
// its two flows (pickups and returns), it computes the station's risk of
// running empty or full, the trips it will fail to serve, and the
// user-dissatisfaction function (UDF) an operator minimises to decide how
// many bikes to leave there. It is a peer of filter and diffusion: it
// knows nothing of NATS, HTTP or snapshots.
//
// # The chain
//
// The inventory X_t is a birth–death chain on 0..C (C = usable docks):
// returns move it up at rate μ_k, pickups down at rate λ_k, both
// constant within bin k and measured in events per bin (the bin is the
// time unit). A pickup at X = 0 and a return at X = C are unmet. For a
// station with s0 = Station.Bikes bikes now and H forecast bins, Risk
// holds, for h = 1..H:
//
//   - EmptyWithin[h−1] = P(X_t = 0 for some t ∈ [0, h]) and FullWithin
//     likewise for C: first passage, computed as the mass of 0 (or C)
//     made absorbing;
//   - EmptyAt[h−1] = P(X_h = 0) and FullAt[h−1] = P(X_h = C): marginals;
//   - UnmetPickups = E ∫₀ᴴ λ(t) 1{X_t = 0} dt and UnmetReturns =
//     E ∫₀ᴴ μ(t) 1{X_t = C} dt, the expected unmet trips;
//   - UDF[s] = PickupWeight·E[unmet pickups] + ReturnWeight·E[unmet
//     returns] over the Config's PlanningBins from X_0 = s, for every s,
//     its minimiser Best = s*, and OneMore = UDF(s0+1) − UDF(s0),
//     OneLess = UDF(s0−1) − UDF(s0).
//
// # Uniformisation
//
// Within a bin the chain is homogeneous, so its transition is
// exp(Q) = Σ_n Pois(n; Λ) Pⁿ with Λ = λ + μ and P = I + Q/Λ, a
// tridiagonal stochastic matrix (down with λ/Λ, up with μ/Λ). The sum is
// cut at the first n whose Poisson tail P(N > n) is below
// Config.Tolerance (1e-12 by default), so each bin's distribution is
// exact to that tolerance in total variation; time integrals use
// ∫₀¹ Pois(n; Λt) dt = P(N > n)/Λ with the same cut. Bins with Λ > 200
// are cut into equal sub-steps so that e^{−Λ} never underflows. The
// forward recursion (a row vector times Pⁿ) gives the distribution and
// the first passages from s0; the backward (Kolmogorov) recursion, by
// Horner's rule on Σ_n Pⁿ(c_n r + w_n v), gives UDF(s) for all s at once.
// Both cost O(C) per term and about Λ + 7√Λ + 10 terms per bin: the work
// is O(C × Σ_k (λ_k + μ_k)) per station, with no step-size error (a
// fixed-step Runge–Kutta would have one). Checked against gonum's matrix
// exponential of the generator for constant rates (1e-10) and an
// event-by-event simulation for time-varying rates (4 standard errors).
//
// # Forecast uncertainty, integrated
//
// dcgpd forecasts the latent demand of each flow per bin as a Gaussian,
// f_k ~ N(m_k, σ_k²) (Forecast.Mean, Forecast.Var), and the rate is
// max(f_k, 0). Risk returns the expectations over the rate paths, not
// the chain at the mean rates (which understates unmet trips: the unmet
// counts are convex in the rates and the clamp at 0 lifts the mean
// rate). The bins' errors are correlated; the model is one shock shared
// by all bins of a flow plus one per bin:
//
//	f_k = m_k + σ_k (√ρ z + √(1−ρ) z_k),   z, z_k ~ N(0, 1) independent,
//
// with ρ = Config.Shared, pickups independent of returns (dcgpd fits
// them as two models): the randomness is the two flows' shared shocks
// (z_pickups, z_returns, independent of each other) and, when ρ < 1,
// each bin's own shocks. Given the shared shocks, the own shocks are
// independent between bins, so the expectation over them is exact bin
// by bin: the expected transition of bin k is the average of exp(Q(θ))
// over the bin's own shocks, and the chain is run with it. The shared
// shocks are integrated around the whole run on a grid of the two
// flows' nodes.
//
// The rule. The rate max(m + σz, 0) has a kink at z = −m/σ, and the
// outlook is a smooth function of the rates, so it is smooth in a shock
// only between kinks. With ρ = 1 (the default) each flow's z line is cut
// at the kinks of its bins within |z| < 4 (at most Config.Breaks of
// them, spread over their range) and each piece gets a Gauss rule of
// the normal restricted to it (Golub–Welsch; exact for polynomials of
// degree 2n−1 on the piece), the flow's Config.SharedNodes nodes shared
// among the pieces by probability, one node on a piece where every
// bin's rate is 0 (the outlook is constant there). With ρ < 1 each bin's
// own shock w has one kink, w* = −(m_k + σ_k√ρ z)/(σ_k√(1−ρ)): one node
// of rate 0 weighted by P(W < w*) (exact) and Config.BinNodes Gauss
// nodes of the normal above w*; the outlook is then smooth in the
// shared shocks, integrated by SharedNodes Gauss–Hermite nodes a flow.
// What limits the accuracy at ρ = 1 is not the kink but a ridge: the
// net flow over H bins moves by Σ σ_k per unit of z, so for σ = 3 a bin
// the outlook is nearly a step in z_returns − z_pickups, and no tensor
// rule converges fast across it. The defaults (12 nodes a flow, 2
// breaks, 4 own nodes) were chosen on the accuracy table of
// TestIntegrationAccuracy: 54 stations (busy, commuter, quiet, night,
// draining and evening profiles; sd 0.5, 1.5 and 3 a bin; ρ = 0, 0.5,
// 1; capacities 8 to 40, stocks 0 to 80% full), against a reference
// route written apart from the rule (reference_test.go): at ρ = 1 and 0
// Gauss–Legendre panels of 0.25 in z cut at every kink (its own
// resolution error below 0.0003 in probability, checked against closed
// forms in TestReferenceClosedForms), at ρ = 0.5 stratified Monte Carlo
// with its standard error. The bound asserted there is 0.01 on every
// P(empty within h) and P(full within h) and 1% (or 0.01 trips) on the
// unmet counts and every UDF(s); the measured figures are in
// testdata/accuracy.txt. The rule runs the chain once per pair of the
// two flows' nodes, leaving out the lightest pairs up to a total weight
// of 1e-4 (the rest scaled to weigh 1; a probability moves by at most
// 2e-4): 70–170 chain runs a station at ρ = 1 on that table.
//
// # Use
//
//	pl, err := inventory.NewPlanner(inventory.DefaultConfig())
//	var r inventory.Risk
//	err = pl.Risk(&r, inventory.Station{Capacity: 39, Bikes: 12}, pickups, returns)
//
// RiskAtRates takes known rates (a plug-in of point forecasts, or a
// baseline's rates). A Planner and a Risk reuse their memory: in steady
// state a call allocates nothing. A Planner belongs to one goroutine at
// a time. Bad input (negative capacity, bikes outside 0..C, NaN or
// infinite means, negative variances, mismatched horizons, rates above
// Config.MaxRate) returns an error prefixed "inventory: " naming what was
// wrong; nothing panics.
package inventory
