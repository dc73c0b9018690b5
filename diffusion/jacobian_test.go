package diffusion

import (
	"math"
	"math/rand/v2"
	"testing"
)

type opCase struct {
	name string
	op   Operator
}

// operatorCases covers dense, sparse, sink, multi-step, masked and
// explicit operators.
func operatorCases(t *testing.T, r *rand.Rand) []opCase {
	feats := randFeatures(r, 12, 2, -1, 1)
	dense := mustTransition(t, feats, 0.5, 0, GraphOptions{})
	sink := mustTransition(t, feats, 0.5, 0.3, GraphOptions{})
	knn := mustTransition(t, feats, 0.5, 0.1, GraphOptions{K: 3})
	masked := new(Transition)
	avail := make([]bool, 12)
	for j := range avail {
		avail[j] = j%3 != 0
	}
	if err := sink.MaskInto(masked, avail); err != nil {
		t.Fatal(err)
	}
	explicit, err := NewTransitionDense(4, []float64{
		0, 0.5, 0.3, 0,
		0.6, 0, 0.4, 0,
		0.1, 0.1, 0, 0.7,
		0, 0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	return []opCase{
		{"3 nodes", Operator{mustTransition(t, diag3, 1, 0.2, GraphOptions{}), 1}},
		{"dense 1 step", Operator{dense, 1}},
		{"dense 2 steps", Operator{dense, 2}},
		{"sink 3 steps", Operator{sink, 3}},
		{"kNN 2 steps", Operator{knn, 2}},
		{"masked", Operator{masked, 1}},
		{"explicit 2 steps", Operator{explicit, 2}},
	}
}

// awayFromKinks draws (f, u) whose max() arguments are all at least margin
// from 0, so finite differences stay on one linear piece.
func awayFromKinks(t *testing.T, r *rand.Rand, op Operator, margin float64) (f, u []float64) {
	T := denseT(t, op.T)
	for range 1000 {
		f, u = randState(r, op.T.N())
		if kinkMargin(T, op.Steps, f, u) > margin {
			return f, u
		}
	}
	t.Fatal("no point away from the kinks found")
	return nil, nil
}

// The Jacobian equals central finite differences away from the kinks, and
// JacobianTVec equals Jᵀv.
func TestJacobian(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range operatorCases(t, r) {
		t.Run(c.name, func(t *testing.T) {
			n := c.op.T.N()
			ws := NewWorkspace(n, c.op.Steps)
			J := make([]float64, n*n)
			gp, gm := make([]float64, n), make([]float64, n)
			for range 10 {
				f, u := awayFromKinks(t, r, c.op, 1e-4)
				if err := c.op.Jacobian(J, f, u, ws); err != nil {
					t.Fatal(err)
				}
				const h = 1e-6
				for k := range n {
					fk := f[k]
					f[k] = fk + h
					if err := c.op.Apply(gp, nil, f, u, ws); err != nil {
						t.Fatal(err)
					}
					f[k] = fk - h
					if err := c.op.Apply(gm, nil, f, u, ws); err != nil {
						t.Fatal(err)
					}
					f[k] = fk
					for j := range n {
						if fd := (gp[j] - gm[j]) / (2 * h); !closeAbs(J[j*n+k], fd, 1e-7) {
							t.Fatalf("J[%d,%d] = %.12g, finite difference %.12g", j, k, J[j*n+k], fd)
						}
					}
				}
				v := make([]float64, n)
				for j := range v {
					v[j] = r.NormFloat64()
				}
				jtv := make([]float64, n)
				if err := c.op.JacobianTVec(jtv, v, f, u, ws); err != nil {
					t.Fatal(err)
				}
				for k := range n {
					var want float64
					for j := range n {
						want += J[j*n+k] * v[j]
					}
					if !closeAbs(jtv[k], want, 1e-12*(1+math.Abs(want))) {
						t.Fatalf("(Jᵀv)[%d] = %.15g, Jᵀ·v = %.15g", k, jtv[k], want)
					}
				}
				// dst may alias v.
				if err := c.op.JacobianTVec(v, v, f, u, ws); err != nil {
					t.Fatal(err)
				}
				for k := range n {
					if v[k] != jtv[k] {
						t.Fatalf("aliased Jᵀv differs at %d", k)
					}
				}
			}
		})
	}
}

// On a kink (a product exactly at its supply) the derivative is the
// one-sided one from the "not in excess" side, f_i < u_i.
func TestJacobianAtKink(t *testing.T) {
	tr := mustTransition(t, diag3, 10, 0.1, GraphOptions{})
	op := Operator{T: tr, Steps: 1}
	u := []float64{0.5, 0.5, 0.5}
	f := []float64{0.5, 0.9, 0.2} // product 0 exactly at its supply
	J := make([]float64, 9)
	if err := op.Jacobian(J, f, u, nil); err != nil {
		t.Fatal(err)
	}
	g0, gm := make([]float64, 3), make([]float64, 3)
	if err := op.Apply(g0, nil, f, u, nil); err != nil {
		t.Fatal(err)
	}
	const h = 1e-7
	for k := range 3 {
		fm := append([]float64(nil), f...)
		fm[k] -= h
		if err := op.Apply(gm, nil, fm, u, nil); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if fd := (g0[j] - gm[j]) / h; !closeAbs(J[j*3+k], fd, 1e-7) {
				t.Errorf("J[%d,%d] = %v, left difference %v", j, k, J[j*3+k], fd)
			}
		}
	}
	// Column 0 is the identity's: product 0 is not in excess.
	if J[0] != 1 || J[3] != 0 || J[6] != 0 {
		t.Errorf("column 0 = (%v, %v, %v), want (1, 0, 0)", J[0], J[3], J[6])
	}
}

// TestLineariseMatchesApplyJacobian: the fused pass gives what Apply and
// Jacobian give separately, and reports inactivity exactly when g = f.
func TestLineariseMatchesApplyJacobian(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, steps := range []int{1, 2, 3} {
		n := 6
		feats := make([][]float64, n)
		for i := range feats {
			feats[i] = []float64{rng.Float64(), rng.Float64()}
		}
		tr, err := NewTransition(feats, 0.4, 0.1, GraphOptions{})
		if err != nil {
			t.Fatal(err)
		}
		op := Operator{T: tr, Steps: steps}
		ws := NewWorkspace(n, steps)
		for trial := 0; trial < 50; trial++ {
			f, u := make([]float64, n), make([]float64, n)
			for i := range f {
				f[i], u[i] = rng.NormFloat64(), 0.5
			}
			if trial%5 == 0 {
				for i := range f {
					f[i] = -1
				}
			}
			g1, j1 := make([]float64, n), make([]float64, n*n)
			g2, j2 := make([]float64, n), make([]float64, n*n)
			if err := op.Apply(g1, nil, f, u, ws); err != nil {
				t.Fatal(err)
			}
			if err := op.Jacobian(j1, f, u, ws); err != nil {
				t.Fatal(err)
			}
			active, err := op.Linearise(g2, j2, f, u, ws)
			if err != nil {
				t.Fatal(err)
			}
			for i := range g1 {
				if g1[i] != g2[i] {
					t.Fatalf("steps %d: g[%d] %v vs %v", steps, i, g2[i], g1[i])
				}
			}
			if !active {
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						want := 0.0
						if i == j {
							want = 1
						}
						if j1[i*n+j] != want {
							t.Fatalf("inactive but J[%d,%d] = %v", i, j, j1[i*n+j])
						}
					}
				}
				continue
			}
			for i := range j1 {
				if j1[i] != j2[i] {
					t.Fatalf("steps %d: J[%d] %v vs %v", steps, i, j2[i], j1[i])
				}
			}
		}
	}
}
