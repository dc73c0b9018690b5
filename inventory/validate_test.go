package inventory

import (
	"math"
	"strings"
	"testing"
)

// TestBadInputErrors checks that each bad input gives an error naming
// what was wrong, and never a panic.
func TestBadInputErrors(t *testing.T) {
	good := Forecast{Mean: []float64{1, 2}, Var: []float64{0.5, 0.5}}
	nan := math.NaN()
	cases := []struct {
		name     string
		st       Station
		lam, mu  Forecast
		contains string
	}{
		{"negative capacity", Station{Capacity: -1}, good, good, "capacity -1 is negative"},
		{"bikes above capacity", Station{Capacity: 5, Bikes: 6}, good, good, "6 bikes outside 0..5"},
		{"negative bikes", Station{Capacity: 5, Bikes: -1}, good, good, "-1 bikes outside"},
		{"absurd capacity", Station{Capacity: 1 << 30}, good, good, "above the configured maximum"},
		{"NaN mean", Station{Capacity: 5}, Forecast{Mean: []float64{nan, 1}, Var: []float64{1, 1}}, good, "pickups forecast mean NaN in bin 0"},
		{"infinite mean", Station{Capacity: 5}, good, Forecast{Mean: []float64{1, math.Inf(1)}, Var: []float64{1, 1}}, "returns forecast mean +Inf in bin 1"},
		{"negative variance", Station{Capacity: 5}, Forecast{Mean: []float64{1, 1}, Var: []float64{1, -1}}, good, "variance -1 in bin 1"},
		{"NaN variance", Station{Capacity: 5}, good, Forecast{Mean: []float64{1, 1}, Var: []float64{nan, 1}}, "variance NaN in bin 0"},
		{"missing variances", Station{Capacity: 5}, Forecast{Mean: []float64{1, 1}}, good, "2 means but 0 variances"},
		{"different horizons", Station{Capacity: 5}, good, Forecast{Mean: []float64{1}, Var: []float64{1}}, "2 pickup bins but 1 return bins"},
		{"no bins", Station{Capacity: 5}, Forecast{}, Forecast{}, "no forecast bins"},
		{"absurd rate", Station{Capacity: 5}, Forecast{Mean: []float64{1e9, 1}, Var: []float64{0, 0}}, good, "pickups forecast mean 1e+09 and variance 0 in bin 0 put the rate at 1e+09"},
		{"absurd variance", Station{Capacity: 5}, good, Forecast{Mean: []float64{1, 1}, Var: []float64{1, 1e12}}, "returns forecast mean 1 and variance 1e+12 in bin 1 put the rate at"},
	}
	pl, err := NewPlanner(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Risk
			err := pl.Risk(&r, tc.st, tc.lam, tc.mu)
			if err == nil || !strings.Contains(err.Error(), tc.contains) || !strings.HasPrefix(err.Error(), "inventory: ") {
				t.Fatalf("error %v, want one containing %q", err, tc.contains)
			}
		})
	}
	rateCases := []struct {
		name     string
		lam, mu  []float64
		contains string
	}{
		{"NaN rate", []float64{nan}, []float64{1}, "pickup rate NaN in bin 0"},
		{"negative rate", []float64{1}, []float64{-2}, "return rate -2 in bin 0"},
		{"infinite rate", []float64{math.Inf(1)}, []float64{1}, "pickup rate +Inf"},
	}
	for _, tc := range rateCases {
		t.Run(tc.name, func(t *testing.T) {
			var r Risk
			err := pl.RiskAtRates(&r, Station{Capacity: 3, Bikes: 1}, tc.lam, tc.mu)
			if err == nil || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("error %v, want one containing %q", err, tc.contains)
			}
		})
	}
}

// TestConfigValidate checks DefaultConfig is valid and each setting out
// of range is refused with its name.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	cases := []struct {
		name     string
		edit     func(*Config)
		contains string
	}{
		{"pickup weight", func(c *Config) { c.PickupWeight = -1 }, "pickup weight"},
		{"return weight", func(c *Config) { c.ReturnWeight = math.NaN() }, "return weight"},
		{"planning bins", func(c *Config) { c.PlanningBins = -3 }, "planning bins"},
		{"shared", func(c *Config) { c.Shared = 1.5 }, "shared variance fraction"},
		{"shared nodes", func(c *Config) { c.SharedNodes = 0 }, "shared nodes"},
		{"bin nodes", func(c *Config) { c.BinNodes = 99 }, "bin nodes"},
		{"breaks", func(c *Config) { c.Breaks = -1 }, "breaks"},
		{"tolerance", func(c *Config) { c.Tolerance = 0 }, "tolerance"},
		{"max capacity", func(c *Config) { c.MaxCapacity = 0 }, "max capacity"},
		{"max rate", func(c *Config) { c.MaxRate = math.Inf(1) }, "max rate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			if _, err := NewPlanner(c); err == nil || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("error %v, want one containing %q", err, tc.contains)
			}
		})
	}
}

// TestPlanningBinsAboveHorizon refuses a planning horizon longer than
// the forecasts.
func TestPlanningBinsAboveHorizon(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PlanningBins = 5
	pl, err := NewPlanner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var r Risk
	err = pl.RiskAtRates(&r, Station{Capacity: 3, Bikes: 1}, []float64{1, 1}, []float64{1, 1})
	if err == nil || !strings.Contains(err.Error(), "planning over 5 bins but the forecasts hold 2") {
		t.Fatalf("error %v", err)
	}
}

// FuzzRisk feeds arbitrary stations and forecasts: never a panic; either
// an error or probabilities in [0, 1] and finite non-negative counts.
func FuzzRisk(f *testing.F) {
	f.Add(10, 4, 2.0, 1.0, 3.0, 0.5, 0.3)
	f.Add(0, 0, 0.0, 0.0, 0.0, 0.0, 1.0)
	f.Add(-1, 0, 1.0, 1.0, 1.0, 1.0, 0.0)
	f.Add(5, 9, math.NaN(), 1.0, 1.0, 1.0, 0.5)
	f.Add(80, 40, 250.0, 40.0, 180.0, 30.0, 0.7)
	cfgs := map[bool]Config{}
	for _, shared := range []bool{true, false} {
		c := DefaultConfig()
		c.SharedNodes, c.BinNodes = 3, 2
		if !shared {
			c.Shared = 0.4
		}
		cfgs[shared] = c
	}
	f.Fuzz(func(t *testing.T, c, s0 int, lm, lv, mm, mv, rho float64) {
		if c > 200 {
			c = c % 200 // keep each case fast; the guard above 1000 is tested
		}
		cfg := cfgs[rho >= 0.5]
		pl, err := NewPlanner(cfg)
		if err != nil {
			t.Fatal(err)
		}
		lf := Forecast{Mean: []float64{lm, lm / 2, 0}, Var: []float64{lv, lv, lv}}
		mf := Forecast{Mean: []float64{mm, 0, mm}, Var: []float64{mv, mv / 2, mv}}
		var r Risk
		if err := pl.Risk(&r, Station{Capacity: c, Bikes: s0}, lf, mf); err != nil {
			return
		}
		for k := range r.EmptyWithin {
			for _, p := range []float64{r.EmptyWithin[k], r.FullWithin[k], r.EmptyAt[k], r.FullAt[k]} {
				if !(p >= -1e-9 && p <= 1+1e-9) {
					t.Fatalf("probability %v out of [0, 1] in bin %d: %v", p, k, &r)
				}
			}
		}
		for _, x := range append([]float64{r.UnmetPickups, r.UnmetReturns}, r.UDF...) {
			if !(x >= -1e-9) || math.IsInf(x, 0) {
				t.Fatalf("count %v not finite and ≥ 0: %v", x, &r)
			}
		}
	})
}
