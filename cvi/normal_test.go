package cvi

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// loadJSON decodes a testdata file or fails the test.
func loadJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// relErr is |got−want|/|want|, or |got| when want is 0.
func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

// Golden values are mpmath at 50 digits (shared/golden/make_golden.py).
// Achieved on amd64: ≤ 1.9e-16 relative for LogSurvival and 2.7e-16 for
// InvMills (1–2 ulp); z = −40 gives
// exactly 0 as the golden file does (the true values, ~1e-349, underflow).
// The tolerance allows 2 ulp for platforms that fuse multiply-adds.
func TestLogSurvivalGolden(t *testing.T) {
	var g struct {
		Rows []struct {
			Z            float64 `json:"z"`
			LogSurvival  float64 `json:"log_survival"`
			InverseMills float64 `json:"inverse_mills"`
		} `json:"rows"`
	}
	loadJSON(t, "log_survival.json", &g)
	if len(g.Rows) == 0 {
		t.Fatal("no rows")
	}
	const tol = 4.5e-16
	var worstL, worstM float64
	for _, r := range g.Rows {
		el, em := relErr(LogSurvival(r.Z), r.LogSurvival), relErr(InvMills(r.Z), r.InverseMills)
		worstL, worstM = math.Max(worstL, el), math.Max(worstM, em)
		if el > tol || em > tol {
			t.Errorf("z=%g: LogSurvival %.17g (want %.17g, rel %.1e), InvMills %.17g (want %.17g, rel %.1e)",
				r.Z, LogSurvival(r.Z), r.LogSurvival, el, InvMills(r.Z), r.InverseMills, em)
		}
	}
	t.Logf("worst relative error: LogSurvival %.1e, InvMills %.1e", worstL, worstM)
}

// Extra points at the regime boundaries (|z| = 5, erfc's underflow near
// z ≈ 37.7, overflow of z²/2 near 1.9e154), from mpmath with 60+ digits.
var survivalTable = []struct{ z, logQ, lam float64 }{
	{-38.0, -2.8854283600687843e-316, 1.097221052007593e-314},
	{-20.0, -2.7536241186062337e-89, 5.5209483621597632e-88},
	{-5.000000001, -2.8665161147704353e-7, 1.4867199334713032e-6},
	{-4.999999999, -2.8665161445048366e-7, 1.4867199483385083e-6},
	{-2.5, -6.2290254858600024e-3, 1.7637825486916735e-2},
	{-0.1, -6.1650501011502629e-1, 7.3533174850578066e-1},
	{1e-08, -6.9314718853879095e-1, 7.9788456716906309e-1},
	{0.3, -9.6210281816885066e-1, 9.9816596885848332e-1},
	{2.5, -5.0816482772786905, 2.8227447976639073},
	{4.999999999, -1.5064998388802221e+1, 5.1865039661585385},
	{5.000000001, -1.506499839917523e+1, 5.1865039680931458},
	{6.5, -2.3938149495161839e+1, 6.6473013611904907},
	{26.5, -3.5532250222635599e+2, 2.6537629135025261e+1},
	{37.0, -6.8903058557689059e+2, 3.702698768612699e+1},
	{38.5, -7.4569527029041108e+2, 3.8525939096854494e+1},
	{50.0, -1.2548313611394199e+3, 5.001998403190564e+1},
	{1e4, -5.0000010129278915e+7, 1.0000000099999998e+4},
	{1e8, -5.0000000000000193e+15, 1.0000000000000001e+8},
	{1e15, -5.0e+29, 1.0e+15},
	{1e100, -5.0000000000000002e+199, 1.0e+100},
	{1.8e154, -1.6200000000000001e+308, 1.8e+154},
}

func TestLogSurvivalTable(t *testing.T) {
	for _, c := range survivalTable {
		tol := 6.7e-16 // 3 ulp
		if c.z == -38 {
			tol = 1e-6 // subnormal results carry fewer digits
		}
		if e := relErr(LogSurvival(c.z), c.logQ); e > tol {
			t.Errorf("LogSurvival(%g) = %.17g, want %.17g (rel %.1e)", c.z, LogSurvival(c.z), c.logQ, e)
		}
		if e := relErr(InvMills(c.z), c.lam); e > tol {
			t.Errorf("InvMills(%g) = %.17g, want %.17g (rel %.1e)", c.z, InvMills(c.z), c.lam, e)
		}
	}
}

func TestLogSurvivalSpecial(t *testing.T) {
	if v := LogSurvival(math.Inf(1)); !math.IsInf(v, -1) {
		t.Errorf("LogSurvival(+Inf) = %v", v)
	}
	if v := LogSurvival(math.Inf(-1)); v != 0 {
		t.Errorf("LogSurvival(-Inf) = %v", v)
	}
	if v := InvMills(math.Inf(-1)); v != 0 {
		t.Errorf("InvMills(-Inf) = %v", v)
	}
	if v := InvMills(math.Inf(1)); !math.IsInf(v, 1) {
		t.Errorf("InvMills(+Inf) = %v", v)
	}
	if !math.IsNaN(LogSurvival(math.NaN())) || !math.IsNaN(InvMills(math.NaN())) || !math.IsNaN(LogCDF(math.NaN())) {
		t.Error("NaN in, not NaN out")
	}
	if v := LogSurvival(1e200); !math.IsInf(v, -1) {
		t.Errorf("LogSurvival(1e200) = %v, want -Inf (true value overflows)", v)
	}
}

// LogCDF is the mirror image, and Φ + (1 − Φ) = 1 where both are sizeable.
func TestLogCDF(t *testing.T) {
	for _, z := range []float64{-50, -8, -3, -1, 0, 0.7, 2, 6, 30} {
		if LogCDF(z) != LogSurvival(-z) {
			t.Errorf("LogCDF(%g) != LogSurvival(%g)", z, -z)
		}
		if math.Abs(z) < 6 {
			if s := math.Exp(LogCDF(z)) + math.Exp(LogSurvival(z)); math.Abs(s-1) > 4e-16 {
				t.Errorf("z=%g: Φ + (1−Φ) = %.17g", z, s)
			}
		}
	}
}

// InvMills is −d/dz LogSurvival, and survival's λ − z is consistent with it.
func TestInvMillsDerivative(t *testing.T) {
	for _, z := range []float64{-30, -6, -5, -2, -0.3, 0, 0.4, 3, 4.99, 5.01, 9, 40, 300, 1e4} {
		h := 1e-5 * math.Max(1, math.Abs(z))
		if z < 0 { // λ varies like e^{−z²/2}: keep h·|z| small
			h = 1e-6
		}
		fd := -(LogSurvival(z+h) - LogSurvival(z-h)) / (2 * h)
		lam := InvMills(z)
		if math.Abs(fd-lam) > 1e-7*math.Max(lam, 1e-300)+1e-300 && relErr(fd, lam) > 1e-7 {
			t.Errorf("z=%g: −dLogSurvival/dz = %.12g, InvMills = %.12g", z, fd, lam)
		}
		// λ′ = λ(λ − z), via finite differences of λ.
		_, _, lmz := survival(z)
		fd2 := (InvMills(z+h) - InvMills(z-h)) / (2 * h)
		if e := relErr(lam*lmz, fd2); e > 1e-6 {
			t.Errorf("z=%g: λ(λ−z) = %.12g, dλ/dz = %.12g", z, lam*lmz, fd2)
		}
	}
}

func TestNpdf(t *testing.T) {
	// Against math.Exp at arguments where −z²/2 is exact in floating point.
	for _, z := range []float64{0, 0.5, 1, 2, 4, 8, 16, 32, -3} {
		want := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
		if e := relErr(npdf(z), want); e > 4.5e-16 {
			t.Errorf("npdf(%g) = %.17g, want %.17g", z, npdf(z), want)
		}
	}
	// φ(10.1) from mpmath: z² = 102.01 is not exact in binary.
	if e := relErr(npdf(10.1), 2.8165665442762394e-23); e > 4.5e-16 {
		t.Errorf("npdf(10.1) = %.17g (rel %.1e)", npdf(10.1), e)
	}
}
