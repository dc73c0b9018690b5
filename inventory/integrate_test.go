package inventory

import (
	"math"
	"math/rand/v2"
	"testing"
)

// uncertainCase is a station whose forecasts are as uncertain as dcgpd's
// hourly bike forecasts (forecast sd 1.4–2.5 trips a bin) with night
// bins whose mean is near or below 0, so the rate's clamp max(f, 0)
// matters.
func uncertainCase() (Station, Forecast, Forecast) {
	const h = 12
	lm, mm := dayRates(h + 6)
	lm, mm = lm[6:], mm[6:]
	lv, mv := make([]float64, h), make([]float64, h)
	for k := range h {
		lm[k] -= 1.5
		lv[k] = 1 + 0.5*math.Max(lm[k], 0)
		mv[k] = 1 + 0.5*mm[k]
	}
	return Station{Capacity: 20, Bikes: 8}, Forecast{lm, lv}, Forecast{mm, mv}
}

// sampledRisk averages the risk at rate paths drawn from the correlation
// model (brute force): per path one shared shock per flow and one own
// shock per bin and flow, rates max(f, 0), the chain solved at the path.
type sampledRisk struct {
	emptyWithin, fullWithin, emptyAt, fullAt []meanSE
	unmetP, unmetR                           meanSE
	udf                                      []meanSE
}

func sampleRisk(t *testing.T, st Station, lf, mf Forecast, rho float64, paths int, seed uint64) *sampledRisk {
	t.Helper()
	h := len(lf.Mean)
	pl, err := NewPlanner(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 26))
	s := &sampledRisk{emptyWithin: make([]meanSE, h), fullWithin: make([]meanSE, h), emptyAt: make([]meanSE, h), fullAt: make([]meanSE, h), udf: make([]meanSE, st.Capacity+1)}
	lam, mu := make([]float64, h), make([]float64, h)
	a, b := math.Sqrt(rho), math.Sqrt(1-rho)
	var r Risk
	for range paths {
		zl, zm := rng.NormFloat64(), rng.NormFloat64()
		for k := range h {
			lam[k] = math.Max(lf.Mean[k]+math.Sqrt(lf.Var[k])*(a*zl+b*rng.NormFloat64()), 0)
			mu[k] = math.Max(mf.Mean[k]+math.Sqrt(mf.Var[k])*(a*zm+b*rng.NormFloat64()), 0)
		}
		if err := pl.RiskAtRates(&r, st, lam, mu); err != nil {
			t.Fatal(err)
		}
		for k := range h {
			s.emptyWithin[k].add(r.EmptyWithin[k])
			s.fullWithin[k].add(r.FullWithin[k])
			s.emptyAt[k].add(r.EmptyAt[k])
			s.fullAt[k].add(r.FullAt[k])
		}
		s.unmetP.add(r.UnmetPickups)
		s.unmetR.add(r.UnmetReturns)
		for x := range r.UDF {
			s.udf[x].add(r.UDF[x])
		}
	}
	return s
}

// near fails unless got is within 4 standard errors of the sample mean
// plus an allowance for the quadrature's own error.
func near(t *testing.T, what string, i int, got float64, m *meanSE, allow float64) {
	t.Helper()
	if d := math.Abs(got - m.mean()); !(d <= 4*m.se()+allow) {
		t.Errorf("%s[%d] = %.5g, sampled %.5g ± %.2g (|diff| %.2g > 4 SE + %.2g)", what, i, got, m.mean(), m.se(), d, allow)
	}
}

// TestIntegrationMatchesSampledRatePaths checks that Risk's quadrature
// (the per-bin shocks integrated bin by bin, the shared shocks by
// Gauss–Hermite) equals the average over rate paths sampled from the
// same model, for fully shared, half shared and independent bin errors:
// every probability within 4 SE + 0.003, counts within 4 SE + 0.5%
// (the quadrature's error at these node counts is below the allowance;
// 8,000 paths give SE ≈ 0.003 on probabilities).
func TestIntegrationMatchesSampledRatePaths(t *testing.T) {
	st, lf, mf := uncertainCase()
	cases := []struct {
		rho                 float64
		sharedNodes, binNod int
	}{{1, 16, 1}, {0.5, 10, 6}, {0, 1, 10}}
	for i, tc := range cases {
		cfg := DefaultConfig()
		cfg.Shared, cfg.SharedNodes, cfg.BinNodes = tc.rho, tc.sharedNodes, tc.binNod
		pl, err := NewPlanner(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var r Risk
		if err := pl.Risk(&r, st, lf, mf); err != nil {
			t.Fatal(err)
		}
		s := sampleRisk(t, st, lf, mf, tc.rho, 8000, uint64(i+1))
		for k := range r.EmptyWithin {
			near(t, "EmptyWithin", k+1, r.EmptyWithin[k], &s.emptyWithin[k], 0.003)
			near(t, "FullWithin", k+1, r.FullWithin[k], &s.fullWithin[k], 0.003)
			near(t, "EmptyAt", k+1, r.EmptyAt[k], &s.emptyAt[k], 0.003)
			near(t, "FullAt", k+1, r.FullAt[k], &s.fullAt[k], 0.003)
		}
		near(t, "UnmetPickups", 0, r.UnmetPickups, &s.unmetP, 0.005*r.UnmetPickups)
		near(t, "UnmetReturns", 0, r.UnmetReturns, &s.unmetR, 0.005*r.UnmetReturns)
		for x := range r.UDF {
			near(t, "UDF", x, r.UDF[x], &s.udf[x], 0.005*r.UDF[x])
		}
		// Plugging in the mean rates is a different answer: fewer unmet
		// trips (the clamp and the convexity of the unmet counts in the
		// rates), by many standard errors.
		var plug Risk
		if err := pl.RiskAtRates(&plug, st, clamp(lf.Mean), clamp(mf.Mean)); err != nil {
			t.Fatal(err)
		}
		for _, d := range []struct {
			what      string
			plug, got float64
			m         *meanSE
		}{{"UnmetPickups", plug.UnmetPickups, r.UnmetPickups, &s.unmetP}, {"UnmetReturns", plug.UnmetReturns, r.UnmetReturns, &s.unmetR}, {"UDF[s0]", plug.UDF[st.Bikes], r.UDF[st.Bikes], &s.udf[st.Bikes]}} {
			if !(d.m.mean()-d.plug > 10*d.m.se() && d.got-d.plug > 0.1*d.got) {
				t.Errorf("ρ = %v: %s plugged in %.4g, integrated %.4g, sampled %.4g ± %.2g: not 10 SE and 10%% apart", tc.rho, d.what, d.plug, d.got, d.m.mean(), d.m.se())
			}
		}
		t.Logf("ρ = %v: integrated %v; plugged in %v", tc.rho, &r, &plug)
	}
}

func clamp(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = math.Max(v, 0)
	}
	return y
}
