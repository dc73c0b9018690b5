package diffusion

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// golden holds testdata/diffusion_expectation.json (shared/golden, made by
// an independent Python route).
type golden struct {
	Features    [][]float64 `json:"features"`
	Lengthscale float64     `json:"lengthscale"`
	Sink        float64     `json:"sink"`
	T           [][]float64 `json:"T"`
	U           []float64   `json:"u"`
	Y           []float64   `json:"y"`
	Censored    []bool      `json:"censored"`
	S2          float64     `json:"s2"`
	M           []float64   `json:"m"`
	P           [][]float64 `json:"P"`
	E           float64     `json:"E"`
	ESE         float64     `json:"E_se"`
	Grad        []float64   `json:"grad"`
	GradSE      []float64   `json:"grad_se"`
}

func readGolden(t *testing.T) golden {
	t.Helper()
	raw, err := os.ReadFile("testdata/diffusion_expectation.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTransitionGolden(t *testing.T) {
	g := readGolden(t)
	tr := mustTransition(t, g.Features, g.Lengthscale, g.Sink, GraphOptions{})
	for i, row := range g.T {
		for j, want := range row {
			if got := tr.At(i, j); !closeAbs(got, want, 1e-12) {
				t.Errorf("T[%d,%d] = %.17g, golden %.17g", i, j, got, want)
			}
		}
		if tr.Sink(i) != g.Sink {
			t.Errorf("sink of row %d = %v, want %v", i, tr.Sink(i), g.Sink)
		}
	}
}

// The golden expected log-likelihood through the one-step map and its
// gradient E[Jᵀ ∂log p/∂g], by antithetic Monte Carlo: checks the map's
// orientation (row-vector convention) and JacobianTVec end to end.
func TestGoldenExpectation(t *testing.T) {
	g := readGolden(t)
	tr := mustTransition(t, g.Features, g.Lengthscale, g.Sink, GraphOptions{})
	op := Operator{T: tr, Steps: 1}
	ws := NewWorkspace(3, 1)
	// Cholesky factor of P.
	P := g.P
	var L [3][3]float64
	for i := range 3 {
		for j := 0; j <= i; j++ {
			s := P[i][j]
			for k := range j {
				s -= L[i][k] * L[j][k]
			}
			if i == j {
				L[i][i] = math.Sqrt(s)
			} else {
				L[i][j] = s / L[j][j]
			}
		}
	}
	sd := math.Sqrt(g.S2)
	// loglik returns Σ_k log p(y_k | g_k) and writes ∂/∂g_k into v.
	loglik := func(gv, v []float64) float64 {
		var lp float64
		for k := range gv {
			if g.Censored[k] {
				x := (gv[k] - g.U[k]) / sd
				cdf := 0.5 * math.Erfc(-x/math.Sqrt2)
				lp += math.Log(cdf)
				v[k] = math.Exp(-0.5*x*x) / math.Sqrt(2*math.Pi) / cdf / sd
				continue
			}
			r := g.Y[k] - gv[k]
			lp += -0.5*math.Log(2*math.Pi*g.S2) - 0.5*r*r/g.S2
			v[k] = r / g.S2
		}
		return lp
	}
	const pairs = 1 << 18
	r := rand.New(rand.NewPCG(21, 22))
	f, gv, v, jtv := make([]float64, 3), make([]float64, 3), make([]float64, 3), make([]float64, 3)
	var sumE, sumE2 float64
	var sumG, sumG2 [3]float64
	for range pairs {
		z := [3]float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		var pe float64
		var pg [3]float64
		for _, sign := range []float64{1, -1} {
			for i := range 3 {
				f[i] = g.M[i]
				for k := 0; k <= i; k++ {
					f[i] += sign * L[i][k] * z[k]
				}
			}
			if err := op.Apply(gv, nil, f, g.U, ws); err != nil {
				t.Fatal(err)
			}
			pe += 0.5 * loglik(gv, v)
			if err := op.JacobianTVec(jtv, v, f, g.U, ws); err != nil {
				t.Fatal(err)
			}
			for k := range 3 {
				pg[k] += 0.5 * jtv[k]
			}
		}
		sumE += pe
		sumE2 += pe * pe
		for k := range 3 {
			sumG[k] += pg[k]
			sumG2[k] += pg[k] * pg[k]
		}
	}
	se := func(s, s2 float64) float64 {
		m := s / pairs
		return math.Sqrt((s2/pairs - m*m) / (pairs - 1))
	}
	if e, s := sumE/pairs, se(sumE, sumE2); math.Abs(e-g.E) > 5*(s+g.ESE) {
		t.Errorf("E = %.6f ± %.1e, golden %.6f ± %.1e", e, s, g.E, g.ESE)
	}
	for k := range 3 {
		if m, s := sumG[k]/pairs, se(sumG[k], sumG2[k]); math.Abs(m-g.Grad[k]) > 5*(s+g.GradSE[k]) {
			t.Errorf("grad[%d] = %.5f ± %.1e, golden %.5f ± %.1e", k, m, s, g.Grad[k], g.GradSE[k])
		}
	}
}
