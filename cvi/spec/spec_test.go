package spec

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/filter/kernel"
)

// TestConfigTomlIsValid: the documented config.toml decodes with every key
// known.
func TestConfigTomlIsValid(t *testing.T) {
	s, err := Load("../../config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Model.Likelihood != "diffusion" || len(s.Model.Temporal) != 1 || s.Fit.MaxIterations != 200 {
		t.Errorf("decoded %+v", s)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"unknown key", "[model]\nlikelihood = \"tobit\"\nbogus = 1\n", `line 3: unknown key "model.bogus"`},
		{"unknown table key", "[model.diffusion]\nsteps = 1\nlenghtscale = 3\n", `line 3: unknown key "model.diffusion.lenghtscale"`},
		{"syntax", "[model]\nlikelihood = \n", "line 2"},
		{"bad likelihood", "[model]\nlikelihood = \"probit\"\n", "model.likelihood"},
		{"bad kernel", "[[model.temporal]]\nkernel = \"rbf\"\n", "model.temporal[0].kernel"},
		{"periodic without period", "[[model.temporal]]\nkernel = \"periodic\"\n", "needs a period"},
		{"sink", "[model.diffusion]\nsink = 1.0\n", "sink"},
		{"negative noise", "[model]\nnoise_variance = -1.0\n", "noise_variance"},
		{"bad sites", "[model.diffusion]\nsites = \"block\"\n", "model.diffusion.sites"},
		{"available with steps", "[model.diffusion]\nmode = \"available\"\nsteps = 2\n", "exactly one step"},
		{"nan noise", "[model]\nnoise_variance = nan\n", "model.noise_variance must be a finite number"},
		{"inf lengthscale", "[[model.temporal]]\nkernel = \"matern32\"\nlengthscale = inf\n", "model.temporal[0]"},
		{"nan sink", "[model.diffusion]\nsink = nan\n", "model.diffusion"},
		{"nan product lengthscales", "[model.product]\nkernel = \"rbf\"\nlengthscales = [1.0, nan]\n", "model.product"},
		{"nan tolerance", "[fit]\ntolerance = nan\n", "fit:"},
		{"negative slope", "[model]\nlevel_noise = true\nnoise_slope = -1.0\n", "model.noise_slope must be > 0"},
		{"nan slope", "[model]\nlevel_noise = true\nnoise_slope = nan\n", "model.noise_slope must be a finite number"},
		{"slope without level noise", "[model]\nnoise_slope = 0.5\n", "needs model.level_noise = true"},
		{"pinned slope without level noise", "[model]\nnoise_slope_fixed = true\n", "noise_slope_fixed needs model.level_noise = true"},
		{"level noise of counts", "[model]\nlikelihood = \"poisson\"\nlevel_noise = true\n", "no additive noise"},
		{"harmonics 0", "[[model.temporal]]\nkernel = \"matern32\"\n[[model.temporal]]\nkernel = \"periodic\"\nperiod = 24.0\nharmonics = 0\n", "line 6: model.temporal[1].harmonics = 0"},
		{"harmonics 1000", "[[model.temporal]]\nkernel = \"periodic\"\nperiod = 24.0\nharmonics = 1000\n", "harmonics = 1000: at most 200"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestHarmonicsOmittedIsDefault: leaving harmonics out gives the default,
// and an explicit value in range is kept.
func TestHarmonicsOmittedIsDefault(t *testing.T) {
	s, err := Decode(strings.NewReader("[[model.temporal]]\nkernel = \"periodic\"\nperiod = 24.0\n[[model.temporal]]\nkernel = \"periodic\"\nperiod = 12.0\nharmonics = 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build(Summary{Variance: 1, MedianStep: 1, NP: 1}, "tobit")
	if err != nil {
		t.Fatal(err)
	}
	// State 2(J+1) per component: 14 + 8.
	if d := b.Model.StateDim(); d != 22 {
		t.Errorf("state dimension %d, want 22 (J = 6 and 3)", d)
	}
}

func TestLoadNamesFile(t *testing.T) {
	p := t.TempDir() + "/m.toml"
	if err := os.WriteFile(p, []byte("[fit]\nmax_iteration = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p+": line 2: unknown key") {
		t.Errorf("got %v", err)
	}
}

// FuzzDecode: any configuration text decodes or errors, never panics, and
// what decodes passes validation and builds for a small data summary.
func FuzzDecode(f *testing.F) {
	b, err := os.ReadFile("../../config.toml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("[model]\nlikelihood = \"tobit\"\n[[model.temporal]]\nkernel = \"periodic\"\nperiod = 24.0\n")
	f.Add("[model.diffusion]\nmode = \"available\"\nsink = 0.5\n")
	f.Add("[model.mean]\nkind = \"periodic\"\nperiod = 2.0\nstep = 1.0\nestimate = false\n[model.mean.values]\na = [1.0, 2.0]\nb = [-1.5, 0.0]\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Decode(strings.NewReader(in))
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded but invalid: %v", err)
		}
		sum := Summary{Variance: 1, MedianStep: 1, NP: 2, Features: [][]float64{{0, 0}, {1, 0}}, Names: []string{"a", "b"}}
		_, _ = s.Build(sum, "") // may fail (e.g. a missing transition file), must not panic
	})
}

// TestCountLikelihoodStartsOnTheLogScale: with a log link the kernel
// variance starts at the scale of log counts, not of the counts.
func TestCountLikelihoodStartsOnTheLogScale(t *testing.T) {
	d := &cvi.Data{NP: 1, Times: []float64{0, 1, 2, 3}, Obs: []cvi.Obs{{Y: 100, Supply: math.Inf(1)}, {Y: 120, Supply: math.Inf(1)}, {Y: 80, Supply: math.Inf(1)}, {Y: 110, Supply: math.Inf(1)}}}
	sum := Summarise(d, nil, false)
	for _, c := range []struct {
		lik      string
		lo, high float64
	}{{"poisson", 15, 30}, {"censored-poisson", 15, 30}, {"tobit", 200, 400}} {
		b, err := Spec{}.Build(sum, c.lik)
		if err != nil {
			t.Fatal(err)
		}
		v := b.Model.Temporal().(*kernel.Matern32).Variance()
		if v < c.lo || v > c.high {
			t.Errorf("%s: starting kernel variance %v, want in [%v, %v]", c.lik, v, c.lo, c.high)
		}
	}
}

// TestParameters: a built model reports every hyperparameter by name in
// the user's units (the sink as a probability) and whether learning may
// move it.
func TestParameters(t *testing.T) {
	s := Spec{Model: Model{Likelihood: "diffusion", NoiseVariance: 1.5,
		Temporal:  []Temporal{{Kernel: "matern32", Variance: 2, Lengthscale: 24, FixedParams: []string{"lengthscale"}}},
		Diffusion: Diffusion{Lengthscale: 250, Sink: 0.2}}}
	sum := Summary{Variance: 1, MedianStep: 1, NP: 2, Features: [][]float64{{0, 0}, {100, 0}}, Names: []string{"a", "b"}}
	b, err := s.Build(sum, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Parameter{
		{"temporal.variance", 2, true},
		{"temporal.lengthscale", 24, false},
		{"likelihood.variance", 1.5, true},
		{"likelihood.lengthscale", 250, false},
		{"likelihood.sink", 0.2, false},
	}
	got := b.Parameters()
	if len(got) != len(want) {
		t.Fatalf("parameters %+v, want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Learned != w.Learned || math.Abs(g.Value-w.Value) > 1e-12*w.Value {
			t.Errorf("parameter %d = %+v, want %+v", i, g, w)
		}
	}
	if got[4].Value != 0.2 || got[3].Value != 250 {
		t.Errorf("the diffusion parameters are not reported as configured: %v, %v", got[3].Value, got[4].Value)
	}
}

// TestLevelNoiseParameter: level_noise adds the likelihood parameter
// noise_slope, starting at noise_slope (DefaultNoiseSlope when 0), last
// among the likelihood's parameters and learned even with noise_fixed;
// without it the parameters are as before.
func TestLevelNoiseParameter(t *testing.T) {
	data, feats := unitsData(1, 1)
	sum := Summarise(data, feats, false)
	for _, c := range []struct {
		cfg   string
		names string
		slope float64
		fixed bool // c pinned (noise_slope_fixed)
	}{
		{"[model]\nlikelihood = \"tobit\"\n", "[likelihood.variance]", 0, false},
		{"[model]\nlikelihood = \"tobit\"\nlevel_noise = true\n", "[likelihood.variance likelihood.noise_slope]", DefaultNoiseSlope, false},
		{"[model]\nlikelihood = \"gaussian\"\nlevel_noise = true\nnoise_slope = 2.0\nnoise_fixed = true\n", "[likelihood.variance likelihood.noise_slope]", 2, false},
		{"[model]\nlikelihood = \"tobit\"\nlevel_noise = true\nnoise_slope = 0.3\nnoise_slope_fixed = true\n", "[likelihood.variance likelihood.noise_slope]", 0.3, true},
		{"[model]\nlikelihood = \"diffusion\"\n", "[likelihood.variance likelihood.lengthscale likelihood.sink]", 0, false},
		{"[model]\nlikelihood = \"diffusion\"\nlevel_noise = true\nnoise_slope = 0.75\n", "[likelihood.variance likelihood.lengthscale likelihood.sink likelihood.noise_slope]", 0.75, false},
		{"[model]\nlikelihood = \"diffusion\"\nlevel_noise = true\nnoise_slope = 0.25\nnoise_slope_fixed = true\n", "[likelihood.variance likelihood.lengthscale likelihood.sink likelihood.noise_slope]", 0.25, true},
	} {
		sp, err := Decode(strings.NewReader(c.cfg))
		if err != nil {
			t.Fatal(err)
		}
		b, err := sp.Build(sum, "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var slope float64
		for _, p := range b.Parameters() {
			if strings.HasPrefix(p.Name, "likelihood.") {
				names = append(names, p.Name)
			}
			if p.Name == "likelihood.noise_slope" {
				slope = p.Value
				if b.Fixed[p.Name] != c.fixed {
					t.Errorf("%q: the slope pinned %v, want %v", c.cfg, b.Fixed[p.Name], c.fixed)
				}
			}
		}
		if got := "[" + strings.Join(names, " ") + "]"; got != c.names {
			t.Errorf("%q: parameters %s, want %s", c.cfg, got, c.names)
		}
		if math.Abs(slope-c.slope) > 1e-12*c.slope {
			t.Errorf("%q: slope %v, want %v", c.cfg, slope, c.slope)
		}
		if got := cvi.NoiseVarianceAt(b.Lik, 4) - b.Lik.NoiseVariance(); math.Abs(got-4*c.slope) > 1e-9*(1+c.slope) {
			t.Errorf("%q: NoiseVarianceAt(4) − σ² = %v, want %v", c.cfg, got, 4*c.slope)
		}
	}
}
