package spec

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/filter"
)

var meanNames = []string{"a", "b", "c"}

// randomMean is a [model.mean] table with random weekly values for the
// products of unitsData.
func randomMean(seed uint64) Mean {
	rng := rand.New(rand.NewPCG(seed, 1))
	no := false
	m := Mean{Kind: "periodic", Period: 168, Step: 1, Estimate: &no, Values: map[string][]float64{}}
	for _, n := range meanNames {
		vs := make([]float64, 168)
		for c := range vs {
			vs[c] = 5 * rng.NormFloat64()
		}
		m.Values[n] = vs
	}
	return m
}

// fitPosterior fits s at its starting values (learn = false) or learns,
// and returns the posterior mean with the prior mean added back, and the
// ELBO.
func fitPosterior(t *testing.T, s Spec, data *cvi.Data, sum Summary) ([]float64, float64) {
	t.Helper()
	f, err := s.Learn(context.Background(), data, sum, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var post filter.Posterior
	if err := f.Engine.PredictAll(&post); err != nil {
		t.Fatal(err)
	}
	f.Built.Mean.AddAll(data.Times, data.NP, post.Mean)
	return post.Mean, f.Result.ELBO
}

// TestMeanIsAnExactOffset: a model with a prior mean on the data equals
// the model without one on the data shifted by hand (y − m, u − m), with
// m added back, to 1e-12, for every likelihood a prior mean is allowed
// with: the likelihoods see f only through f − u and y − f.
func TestMeanIsAnExactOffset(t *testing.T) {
	data, feats := unitsData(1, 1)
	// Times in hours since the epoch, starting mid-week (not at cell 0).
	for i := range data.Times {
		data.Times[i] += 17*168 + 61
	}
	mean := randomMean(7)
	off := false
	cases := map[string]Model{
		"gaussian":                        {Likelihood: "gaussian"},
		"tobit":                           {Likelihood: "tobit"},
		"diffusion, diagonal sites":       {Likelihood: "diffusion", Diffusion: Diffusion{Sink: 0.2}},
		"diffusion, full sites":           {Likelihood: "diffusion", Diffusion: Diffusion{Sink: 0.2, Sites: "full", Steps: 2}},
		"diffusion, mean-only":            {Likelihood: "diffusion", Diffusion: Diffusion{Sink: 0.2, Expectation: "meanonly"}},
		"diffusion, learned (staged)":     {Likelihood: "diffusion", Diffusion: Diffusion{Sink: 0.2}},
		"tobit, learned, matern+periodic": {Likelihood: "tobit", Temporal: []Temporal{{Kernel: "matern32"}, {Kernel: "periodic", Period: 24, Harmonics: 2}}},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			fit := Fit{Learn: &off}
			if strings.Contains(name, "learned") {
				fit = Fit{MaxIterations: 4}
			}
			s := Spec{Model: m, Fit: fit}
			s.Model.Mean = mean
			sum := Summarise(data, feats, false)
			sum.Names = meanNames
			got, gotELBO := fitPosterior(t, s, data, sum)

			prof, err := mean.NewProfile(meanNames)
			if err != nil {
				t.Fatal(err)
			}
			shifted := Boundary{Mean: prof}.PrepareData(data)
			ref := Spec{Model: m, Fit: fit}
			rsum := Summarise(shifted, feats, false)
			rsum.Names = meanNames
			want, wantELBO := fitPosterior(t, ref, shifted, rsum)
			prof.AddAll(data.Times, data.NP, want)
			for i := range want {
				if d := math.Abs(got[i] - want[i]); d > 1e-12*math.Max(1, math.Abs(want[i])) {
					t.Fatalf("cell %d: with the prior mean %v, shifted by hand %v (diff %g)", i, got[i], want[i], d)
				}
			}
			if math.Abs(gotELBO-wantELBO) > 1e-12*math.Abs(wantELBO) {
				t.Errorf("ELBO %v, shifted by hand %v", gotELBO, wantELBO)
			}
		})
	}
}

// TestMeanShiftKeepsMissingAndUnlimited: NaN demand stays NaN, +Inf supply
// stays +Inf, the rest moves by m of the cell of absolute time.
func TestMeanShiftKeepsMissingAndUnlimited(t *testing.T) {
	p := &Profile{Step: 1, Cells: 168, M: [][]float64{make([]float64, 168), make([]float64, 168)}}
	p.M[0][5], p.M[1][5] = 2, -3
	obs := []cvi.Obs{{Y: math.NaN(), Supply: 4}, {Y: 1, Supply: math.Inf(1)}}
	p.Shift(168*1000+5, obs)
	if !math.IsNaN(obs[0].Y) || obs[0].Supply != 2 || obs[1].Y != 4 || !math.IsInf(obs[1].Supply, 1) {
		t.Errorf("shifted %+v", obs)
	}
	for _, tc := range []struct {
		t    float64
		cell int
	}{{0, 0}, {167.5, 167}, {168, 0}, {-1, 167}, {-168.5, 167}, {1e6 + 3, int(math.Mod(1e6, 168)) + 3}} {
		if c := p.Cell(tc.t); c != tc.cell {
			t.Errorf("Cell(%v) = %d, want %d", tc.t, c, tc.cell)
		}
	}
	// Steps that are not binary fractions of an hour: t = i/6 hours.
	q := &Profile{Step: 1.0 / 6, Cells: 6 * 168}
	for i := range 20000 {
		if c := q.Cell(float64(i) / 6); c != i%(6*168) {
			t.Fatalf("10-minute bin %d: cell %d, want %d", i, c, i%(6*168))
		}
	}
}

// TestMeanRefusedWhereNotAnOffset: a prior mean with a count likelihood,
// or with the supply-aware diffusion graph, is refused at decode and at
// build time with ErrMeanLikelihood.
func TestMeanRefusedWhereNotAnOffset(t *testing.T) {
	for _, cfg := range []string{
		"[model]\nlikelihood = \"poisson\"\n[model.mean]\nkind = \"periodic\"\n",
		"[model]\nlikelihood = \"censored-poisson\"\n[model.mean]\nkind = \"periodic\"\n",
		"[model.diffusion]\nmode = \"available\"\n[model.mean]\nkind = \"periodic\"\n",
	} {
		if _, err := Decode(strings.NewReader(cfg)); !errors.Is(err, ErrMeanLikelihood) {
			t.Errorf("%q: err %v, want ErrMeanLikelihood", cfg, err)
		}
	}
	s := Spec{Model: Model{Mean: Mean{Kind: "periodic"}}}
	if _, err := s.Build(Summary{Variance: 1, MedianStep: 1, NP: 1}, "poisson"); !errors.Is(err, ErrMeanLikelihood) {
		t.Errorf("build with poisson: err %v", err)
	}
}

// TestMeanDecodeErrors: shapes and finiteness of [model.mean] are checked.
func TestMeanDecodeErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		"[model.mean]\nkind = \"weekly\"\n":                                                                    "want periodic",
		"[model.mean]\nperiod = 24.0\n":                                                                        "kind is missing",
		"[model.mean]\nfirst_pass = \"model\"\n":                                                               "kind is missing",
		"[model.mean]\nkind = \"periodic\"\nfirst_pass = \"gaussian\"\n":                                       "want tobit or model",
		"[model.mean]\nkind = \"periodic\"\nlevel = \"shift\"\n":                                               "want fixed or scale",
		"[model.mean]\nlevel = \"scale\"\n":                                                                    "kind is missing",
		"[model.mean]\nsignal_power = 1.0\n":                                                                   "kind is missing",
		"[model.mean]\nkind = \"periodic\"\nsignal_power = 1.0\n":                                              "needs level",
		"[model.mean]\nkind = \"periodic\"\nlevel = \"scale\"\nsignal_power = -0.5\n":                          "want a value in [0, 2]",
		"[model.mean]\nkind = \"periodic\"\nlevel = \"scale\"\nsignal_power = 2.5\n":                           "want a value in [0, 2]",
		"[model.mean]\nkind = \"periodic\"\nlevel = \"scale\"\nsignal_power = nan\n":                           "want a value in [0, 2]",
		"[model.mean]\nkind = \"periodic\"\nperiod = 24.0\nstep = 5.0\n":                                       "whole number",
		"[model.mean]\nkind = \"periodic\"\nestimate = false\n":                                                "needs values",
		"[model.mean]\nkind = \"periodic\"\nperiod = 2.0\nstep = 1.0\n[model.mean.values]\na = [1.0]\n":        "has 1 values, want",
		"[model.mean]\nkind = \"periodic\"\nperiod = 2.0\nstep = 1.0\n[model.mean.values]\na = [1.0, nan]\n":   "finite",
		"[model.mean]\nkind = \"periodic\"\nperiod = 2.0\n[model.mean.values]\na = [1.0, 2.0]\n":               "need a step",
		"[model.mean]\nkind = \"periodic\"\nperiod = 1e9\nstep = 1.0\n":                                        "at most",
		"[model.mean]\nkind = \"periodic\"\nperiod = inf\nstep = 1.0\n":                                        "finite",
		"[model.mean]\nkind = \"periodic\"\nperiod = 2.0\nstep = 1.0\n[model.mean.values]\na = [1.0, \"x\"]\n": "line",
	} {
		_, err := Decode(strings.NewReader(cfg))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want it to mention %q", cfg, err, want)
		}
	}
	s, err := Decode(strings.NewReader("[model.mean]\nkind = \"periodic\"\nperiod = 2.0\nstep = 1.0\nestimate = false\n[model.mean.values]\na = [1.0, 2.0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	// A product without a row gets the pooled prior (pooled_test.go);
	// with no row to pool it is refused, naming it.
	s.Model.Mean.Values["a"] = []float64{0, 0}
	if _, err := s.Build(Summary{Variance: 1, MedianStep: 1, NP: 1, Names: []string{"b"}}, ""); !errors.Is(err, ErrNoPool) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("a product without a row, nothing to pool: err %v", err)
	}
}

// TestMeanSavedExactly: a fitted model with a prior mean is written by
// Fitted and Encode and read back to the same profile, bit for bit.
func TestMeanSavedExactly(t *testing.T) {
	data, feats := unitsData(1, 1)
	sum := Summarise(data, feats, false)
	sum.Names = meanNames
	s := Spec{Model: Model{Likelihood: "tobit", Mean: randomMean(3)}}
	s.Model.Mean.Level = LevelScale
	s.Model.Mean.SignalPower = 0.75
	s.Model.Mean.Values["a"][0] = 1.0 / 3
	b, err := s.Build(sum, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Fitted(b, sum)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := out.Encode(&buf, nil); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(&buf)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	nb, err := back.Build(sum, "")
	if err != nil {
		t.Fatal(err)
	}
	for k := range b.Mean.M {
		assertBits(t, "profile of "+meanNames[k], b.Mean.M[k], nb.Mean.M[k])
	}
	if back.Model.Mean.EstimateOn() {
		t.Error("a saved profile is estimated again")
	}
	if !back.Model.Mean.FollowsLevel() {
		t.Errorf("level %q not saved", back.Model.Mean.Level)
	}
	if back.Model.Mean.SignalPower != 0.75 {
		t.Errorf("signal_power %v read back, want 0.75", back.Model.Mean.SignalPower)
	}
}

// weeklyTruth is a known weekly profile per product: a daily shape with
// a morning peak on weekdays and a flat midday on weekends.
func weeklyTruth(c, k int) float64 {
	day, hour := c/24, float64(c%24)
	base := 8 + 2*float64(k)
	if day == 2 || day == 3 { // hours since the epoch: days 2, 3 are Sat, Sun
		return base + 4*math.Exp(-(hour-13)*(hour-13)/18)
	}
	return base + 10*math.Exp(-(hour-8)*(hour-8)/4) + 6*math.Exp(-(hour-18)*(hour-18)/4)
}

// TestMeanEstimateRecoversWeeklyProfile: 10 weeks of two products whose
// demand is a known weekly profile + an AR(1) deviation + noise, censored
// at a random supply (a third of the cells, most at the peaks), seeded:
// the estimated prior mean is within 1.0 RMSE (0.83 measured; the
// profile's range is 16) of the truth over the 168 × 2 cells, and well
// below the error of the average of the observed (censored) values, which
// is biased low (1.94 measured).
func TestMeanEstimateRecoversWeeklyProfile(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const weeks, np = 10, 2
	n := weeks * 168
	d := &cvi.Data{NP: np, Times: make([]float64, n), Obs: make([]cvi.Obs, n*np)}
	start := 2500*168 + 40 // mid-week, hours since the epoch
	g := make([]float64, np)
	censored := 0
	for i := range n {
		d.Times[i] = float64(start + i)
		c := (start + i) % 168
		for k := range np {
			g[k] = 0.8*g[k] + 0.6*rng.NormFloat64() // AR(1): a short-memory deviation
			f := weeklyTruth(c, k) + g[k]
			y := f + rng.NormFloat64()
			u := 6 + 14*rng.Float64()
			o := cvi.Obs{Y: y, Supply: u}
			if y >= u {
				o.Y, o.Censored = u, true
				censored++
			}
			if rng.Float64() < 0.05 {
				o.Y, o.Censored = math.NaN(), false
			}
			d.Obs[i*np+k] = o
		}
	}
	sum := Summarise(d, nil, false)
	sum.Names = []string{"a", "b"}
	s := Spec{Model: Model{Likelihood: "tobit", Temporal: []Temporal{{Kernel: "matern32"}}, Mean: Mean{Kind: "periodic"}},
		Fit: Fit{MaxIterations: 40}}
	f, err := s.Learn(context.Background(), d, sum, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Built.Mean
	if p == nil || p.Cells != 168 || p.Step != 1 {
		t.Fatalf("profile %+v", p)
	}
	var se, seNaive float64
	for k := range np {
		var sum, cnt [168]float64
		for i := range n {
			if o := d.Obs[i*np+k]; !math.IsNaN(o.Y) {
				sum[(start+i)%168] += o.Y
				cnt[(start+i)%168]++
			}
		}
		for c := range 168 {
			e := p.M[k][c] - weeklyTruth(c, k)
			se += e * e
			naive := sum[c]/cnt[c] - weeklyTruth(c, k)
			seNaive += naive * naive
		}
	}
	rmse, naive := math.Sqrt(se/(168*np)), math.Sqrt(seNaive/(168*np))
	t.Logf("%d of %d cells censored; profile RMSE %.3f, average of the observed values %.3f; stages %d", censored, n*np, rmse, naive, len(f.Stages))
	if rmse > 1.0 {
		t.Errorf("estimated profile RMSE %.3f against the truth, want <= 1.0", rmse)
	}
	if rmse > 0.7*naive {
		t.Errorf("estimated profile RMSE %.3f is not well below the censored average's %.3f", rmse, naive)
	}
}

// TestMeanFirstPassLikelihood: with the diffusion likelihood the prior
// mean's first pass learns the Tobit model by default and the diffusion
// itself with first_pass = "model" (its own staged fit: a Tobit stage,
// then the diffusion); either way the profile is estimated and the
// second pass learns the diffusion.
func TestMeanFirstPassLikelihood(t *testing.T) {
	data, feats := unitsData(1, 1)
	sum := Summarise(data, feats, false)
	sum.Names = []string{"a", "b", "c"}
	for _, c := range []struct {
		firstPass string
		want      []string // the stages' likelihoods, in order
	}{
		{"", []string{"tobit (prior mean, first pass)", "tobit"}},
		{"tobit", []string{"tobit (prior mean, first pass)", "tobit"}},
		{"model", []string{"tobit", "diffusion (prior mean, first pass)", "tobit"}},
	} {
		s := Spec{Model: Model{Likelihood: "diffusion", Mean: Mean{Kind: "periodic", Period: 24, FirstPass: c.firstPass}},
			Fit: Fit{MaxIterations: 15, Fallback: true}}
		f, err := s.Learn(context.Background(), data, sum, "", nil)
		if err != nil {
			t.Fatalf("first_pass %q: %v", c.firstPass, err)
		}
		var got []string
		for _, st := range f.Stages {
			got = append(got, st.Likelihood)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("first_pass %q: stages %q, want %q", c.firstPass, got, c.want)
		}
		if f.Built.Mean == nil || f.Built.Mean.Cells != 24 || f.Built.Likelihood != "diffusion" {
			t.Errorf("first_pass %q: profile %v, likelihood %q", c.firstPass, f.Built.Mean, f.Built.Likelihood)
		}
	}
}
