package inventory

// Station is a station's state when the risk is computed.
type Station struct {
	// Capacity is the number of usable docks C: the inventory lives on
	// 0..C.
	Capacity int
	// Bikes is the current number of usable bikes s0, 0 ≤ Bikes ≤ Capacity.
	Bikes int
}

// Forecast is one flow's forecast of latent demand, one entry per bin
// from the next bin on: f_k ~ N(Mean[k], Var[k]) events per bin, and the
// flow's rate in bin k is max(f_k, 0) events per bin (a Poisson process
// with that rate within the bin). The Config's Shared fraction says how
// the bins' errors are correlated.
type Forecast struct {
	Mean, Var []float64
}

// Risk is a station's inventory outlook. Slices are reused across calls:
// a Risk filled by one call is overwritten by the next call given it.
// Times are in bins from now; horizon h = 1..H is index h−1.
type Risk struct {
	// Capacity and Bikes echo the station.
	Capacity, Bikes int
	// EmptyWithin[h−1] is P(X_t = 0 for some t in [0, h] | X_0 = Bikes),
	// the first-passage probability of running empty within h bins (1
	// when Bikes = 0); FullWithin[h−1] the same for X_t = Capacity.
	EmptyWithin, FullWithin []float64
	// EmptyAt[h−1] and FullAt[h−1] are the marginals P(X_h = 0) and
	// P(X_h = Capacity) at the end of bin h.
	EmptyAt, FullAt []float64
	// UnmetPickups and UnmetReturns are the expected pickups that find
	// the station empty, E ∫₀ᴴ λ(t) 1{X_t = 0} dt, and the expected
	// returns that find it full, E ∫₀ᴴ μ(t) 1{X_t = C} dt, over the H
	// forecast bins (not weighted).
	UnmetPickups, UnmetReturns float64
	// UDF[s], s = 0..Capacity, is the user-dissatisfaction function over
	// the planning bins: PickupWeight × expected unmet pickups +
	// ReturnWeight × expected unmet returns when the station starts the
	// next bin with s bikes.
	UDF []float64
	// Best is s*, the inventory with the smallest UDF (the smallest such
	// s on ties).
	Best int
	// OneMore is UDF(Bikes+1) − UDF(Bikes) and OneLess UDF(Bikes−1) −
	// UDF(Bikes): what one bike more or less changes (negative = fewer
	// unmet trips). Each is 0 where impossible (Bikes = Capacity, Bikes =
	// 0); CanAdd and CanRemove say which.
	OneMore, OneLess  float64
	CanAdd, CanRemove bool
}

// Horizon returns H, the number of forecast bins the risk covers.
func (r *Risk) Horizon() int { return len(r.EmptyWithin) }
