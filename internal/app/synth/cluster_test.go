package synth

import (
	"math"
	"testing"
)

func TestClusterDefaults(t *testing.T) {
	cfg := DefaultClusterConfig()
	d, err := Cluster(42, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	n := 24 * cfg.Days
	if d.Train.Len()+d.Test.Len() != n || d.Test.Len() != int(cfg.TestFrac*float64(n)) || len(d.Products) != cfg.Hubs {
		t.Fatalf("shapes %d+%d, %d hubs", d.Train.Len(), d.Test.Len(), len(d.Products))
	}
	for i, p := range d.Features {
		if math.Hypot(p[0], p[1]) > cfg.RadiusM {
			t.Fatalf("hub %d at %v outside the disc", i, p)
		}
		for j := range i {
			if math.Sqrt(sqDist(p, d.Features[j])) < cfg.MinSepM {
				t.Fatalf("hubs %d, %d closer than %v m", i, j, cfg.MinSepM)
			}
		}
	}
	checkCapped(t, &d.Train)
	checkCapped(t, &d.Test)
	// Poisson demand: integers, mean close to the rate.
	sumY, sumF := 0.0, 0.0
	for _, s := range []*Split{&d.Train, &d.Test} {
		for i := range s.TrueY {
			for k, y := range s.TrueY[i] {
				if y != math.Trunc(y) || y < 0 {
					t.Fatalf("Poisson demand %v", y)
				}
				sumY += y
				sumF += s.TrueF[i][k]
			}
		}
	}
	if math.Abs(sumY/sumF-1) > 0.03 {
		t.Fatalf("total demand %v vs total rate %v", sumY, sumF)
	}
	cf := append(d.Train.CensoredFraction(), d.Test.CensoredFraction()...)
	mean := 0.0
	for _, f := range cf {
		mean += f / float64(len(cf))
	}
	t.Logf("cluster censored fractions %.3f (mean %.3f); hubs %v", cf[:cfg.Hubs], mean, d.Features)
	t.Logf("T = %.3f", d.Transfer)
	if mean < 0.02 || mean > 0.3 {
		t.Errorf("mean censored fraction %.3f outside the intended few-to-20%% range", mean)
	}
	for i, row := range d.Transfer {
		s := 0.0
		for _, v := range row {
			s += v
		}
		if row[i] != 0 || !near(s, 1-cfg.Sink, 1e-12) {
			t.Fatalf("T row %d: diag %v sum %v", i, row[i], s)
		}
	}
	checkDeterministic(t, func(seed uint64) (*Dataset, error) { return Cluster(seed, cfg) })
}

func TestClusterVariants(t *testing.T) {
	cfg := DefaultClusterConfig()
	cfg.Noise, cfg.Split, cfg.Hubs, cfg.Days = NoiseGaussian, SplitTail, 3, 7
	d, err := Cluster(1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Test.Index[0] != d.Train.Index[len(d.Train.Index)-1]+1 {
		t.Fatal("tail split is not a suffix")
	}
	r, _ := RMSE(d.Train.TrueY, d.Train.TrueF, nil)
	if !near(r, cfg.GaussianSD, 0.15) {
		t.Fatalf("Gaussian noise RMSE %v, want ≈ %v", r, cfg.GaussianSD)
	}
	bad := cfg
	bad.Sink = 1
	if _, err := Cluster(1, bad); err == nil {
		t.Fatal("sink 1 accepted")
	}
	bad = cfg
	bad.Hubs, bad.RadiusM, bad.MinSepM = 50, 100, 100
	if _, err := Cluster(1, bad); err == nil {
		t.Fatal("impossible placement accepted")
	}
}

func TestPoissonMoments(t *testing.T) {
	r := newRNG(3, 99)
	for _, lam := range []float64{0.5, 4, 15, 80} {
		const n = 200000
		s, s2 := 0.0, 0.0
		for range n {
			x := poisson(r, lam)
			s += x
			s2 += x * x
		}
		m := s / n
		v := s2/n - m*m
		if math.Abs(m-lam) > 4*math.Sqrt(lam/n) || math.Abs(v/lam-1) > 0.03 {
			t.Errorf("Poisson(%v): mean %v var %v", lam, m, v)
		}
	}
}

func TestMatern32Path(t *testing.T) {
	// Stationary variance and lag-1 correlation of the exact discretisation.
	r := newRNG(4, 99)
	const n = 200000
	x := matern32Path(r, n, 1, 2, 10)
	v, c := 0.0, 0.0
	for i := range x {
		v += x[i] * x[i] / n
		if i > 0 {
			c += x[i] * x[i-1] / (n - 1)
		}
	}
	if !near(v, 2, 0.15) || !near(c/v, matern32(1, 1, 10), 0.01) {
		t.Fatalf("variance %v (want 2), lag-1 corr %v (want %v)", v, c/v, matern32(1, 1, 10))
	}
}

// TestClusterCity: with SpacingM the disc grows with the number of hubs,
// so hundreds of hubs fit where the fixed 800 m disc refuses them, every
// two at least MinSepM apart and with about SpacingM² each.
func TestClusterCity(t *testing.T) {
	cfg := DefaultClusterConfig()
	cfg.Hubs, cfg.Days = 400, 1
	if _, err := Cluster(1, cfg); err == nil {
		t.Fatal("400 hubs fit the fixed 800 m disc 150 m apart")
	}
	cfg.SpacingM = 300
	ds, err := Cluster(1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Features) != 400 {
		t.Fatalf("%d hubs", len(ds.Features))
	}
	r := cfg.Radius()
	if want := 300 * math.Sqrt(400/math.Pi); math.Abs(r-want) > 1e-9*want {
		t.Fatalf("radius %v, want %v", r, want)
	}
	for i, p := range ds.Features {
		if math.Hypot(p[0], p[1]) > r {
			t.Fatalf("hub %d outside the disc", i)
		}
		for j, q := range ds.Features[:i] {
			if d := math.Sqrt(sqDist(p, q)); d < cfg.MinSepM {
				t.Fatalf("hubs %d and %d %v m apart", i, j, d)
			}
		}
	}
}
