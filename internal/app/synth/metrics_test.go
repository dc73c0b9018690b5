package synth

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestRMSEHand(t *testing.T) {
	truth := [][]float64{{1, 2}, {3, 4}, {5, 6}}
	est := [][]float64{{1, 3}, {1, 4}, {5, 6}}
	// all rows: errors 0,1,2,0,0,0 → sqrt(5/6)
	got, err := RMSE(truth, est, nil)
	if err != nil || !near(got, math.Sqrt(5.0/6), 1e-15) {
		t.Fatalf("RMSE = %v, %v; want sqrt(5/6)", got, err)
	}
	// rows {1}: errors 2,0 → sqrt(2)
	got, err = RMSE(truth, est, []int{1})
	if err != nil || !near(got, math.Sqrt2, 1e-15) {
		t.Fatalf("RMSE rows{1} = %v, %v; want sqrt 2", got, err)
	}
	if _, err := RMSE(truth, est, []int{3}); err == nil {
		t.Fatal("out-of-range index accepted")
	}
	if _, err := RMSE(truth, est[:2], nil); err == nil {
		t.Fatal("shape mismatch accepted")
	}
	if _, err := RMSE(truth, est, []int{}); err == nil {
		t.Fatal("empty index set accepted")
	}
}

func TestR2Hand(t *testing.T) {
	// Column 0: truth 1,2,3 (mean 2, SS_tot 2), est 1,2,4 (SS_res 1) → 0.5.
	// Column 1: truth 2,4,6 (mean 4, SS_tot 8), est 4,4,4 (SS_res 8) → 0.
	truth := [][]float64{{1, 2}, {2, 4}, {3, 6}}
	est := [][]float64{{1, 4}, {2, 4}, {4, 4}}
	got, err := R2(truth, est, nil)
	if err != nil || !near(got, 0.25, 1e-15) {
		t.Fatalf("R2 = %v, %v; want 0.25", got, err)
	}
	// Constant truth column: 1 when exact, 0 otherwise (scikit-learn).
	c := [][]float64{{1}, {1}}
	if got, _ := R2(c, c, nil); got != 1 {
		t.Fatalf("R2 constant exact = %v, want 1", got)
	}
	if got, _ := R2(c, [][]float64{{1}, {2}}, nil); got != 0 {
		t.Fatalf("R2 constant wrong = %v, want 0", got)
	}
	// Rows {0,2} of column 0: truth 1,3 (SS_tot 2), est 1,4 (SS_res 1) → 0.5;
	// column 1: truth 2,6 (SS_tot 8), est 4,4 (SS_res 8) → 0.
	if got, _ := R2(truth, est, []int{0, 2}); !near(got, 0.25, 1e-15) {
		t.Fatalf("R2 rows{0,2} = %v, want 0.25", got)
	}
}

func TestNLPDGaussianHand(t *testing.T) {
	y := [][]float64{{0, 1}}
	m := [][]float64{{0, 0}}
	v := [][]float64{{1, 4}}
	// ½log2π + [0 + (½log4 + ½·1/4)]/2 averaged: (½log2π + ½log2π + ½log4 + 1/8)/2
	want := 0.5*math.Log(2*math.Pi) + (0.5*math.Log(4)+0.125)/2
	got, err := NLPDGaussian(y, m, v)
	if err != nil || !near(got, want, 1e-15) {
		t.Fatalf("NLPD = %v, %v; want %v", got, err, want)
	}
	if _, err := NLPDGaussian(y, m, [][]float64{{1, 0}}); err == nil {
		t.Fatal("zero variance accepted")
	}
}

func TestEvaluateOracle(t *testing.T) {
	d, err := DatasetA(1)
	if err != nil {
		t.Fatal(err)
	}
	// Predicting the true function: RMSE ≈ noise sd, RMSE funct = 0.
	v := filled(d.Test.Len(), 2, indepNoiseSD*indepNoiseSD)
	sc, err := Evaluate(&d.Test, d.Test.TrueF, v)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A test, predicting f: %+v (paper Oracle −1.774/2 per obs, .099, .960, .029)", sc)
	if sc.RMSEFunct != 0 || !near(sc.RMSE, 0.1, 0.01) || !near(sc.NLPD, 0.5*math.Log(2*math.Pi*0.01)+0.5, 0.05) {
		t.Fatalf("oracle scores %+v implausible", sc)
	}
	if sc, _ := Evaluate(&d.Test, d.Test.TrueF, nil); !math.IsNaN(sc.NLPD) {
		t.Fatalf("NLPD without variances = %v, want NaN", sc.NLPD)
	}
}
