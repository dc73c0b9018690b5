package diffusion

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Reference-notes §7: 3 nodes, ℓ = 10, u = 0.5. The D operator (ours)
// gives (−0.2902861, 0.9817748, 0.7408874); the A operator's
// (−0.2902861, 1.0234013, 0.8229101) must not come out.
func TestOperatorReferenceVector(t *testing.T) {
	tr := mustTransition(t, diag3, 10, 0, GraphOptions{})
	op, err := NewOperator(tr, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := []float64{-0.5715697, 0.9817748, 0.5820227}
	u := []float64{0.5, 0.5, 0.5}
	g, d := make([]float64, 3), make([]float64, 3)
	if err := op.Apply(g, d, f, u, nil); err != nil {
		t.Fatal(err)
	}
	want := []float64{-0.2902861, 0.9817748, 0.7408874}
	for i := range want {
		if !closeAbs(g[i], want[i], 1e-6) {
			t.Errorf("g[%d] = %.8f, want %.7f", i, g[i], want[i])
		}
		if !closeAbs(d[i], g[i]-f[i], 1e-15) || d[i] < 0 {
			t.Errorf("d[%d] = %v, g−f = %v", i, d[i], g[i]-f[i])
		}
	}
	if d[1] != 0 {
		t.Errorf("donor 1 has net gain %v, want exactly 0", d[1])
	}
}

// The sparse operator equals the obvious dense computation, for several
// graphs, sinks and step counts; N_diff = 2 equals two manual steps.
func TestOperatorMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	feats := randFeatures(r, 30, 2, -2, 2)
	for _, opt := range []GraphOptions{{}, {K: 4}, {Cutoff: 1}} {
		for _, pi := range []float64{0, 0.25} {
			tr := mustTransition(t, feats, 0.6, pi, opt)
			T := denseT(t, tr)
			for _, steps := range []int{1, 2, 3} {
				op := Operator{T: tr, Steps: steps}
				ws := NewWorkspace(tr.N(), steps)
				for range 20 {
					f, u := randState(r, tr.N())
					g, d := make([]float64, tr.N()), make([]float64, tr.N())
					if err := op.Apply(g, d, f, u, ws); err != nil {
						t.Fatal(err)
					}
					want := naiveApply(T, steps, f, u)
					if steps == 2 { // spell the two steps out
						f2 := naiveStep(T, naiveStep(T, f, u), u)
						for i := range f {
							want[i] = f[i] + math.Max(f2[i]-f[i], 0)
						}
					}
					for i := range g {
						if !closeAbs(g[i], want[i], 1e-12) || !closeAbs(d[i], want[i]-f[i], 1e-12) {
							t.Fatalf("%+v π=%v steps=%d: g[%d] = %v, want %v", opt, pi, steps, i, g[i], want[i])
						}
					}
				}
			}
		}
	}
}

// randState returns latent demand around 1 and supplies, some unlimited.
func randState(r *rand.Rand, n int) (f, u []float64) {
	f, u = make([]float64, n), make([]float64, n)
	for i := range f {
		f[i] = 2*r.Float64() - 0.2
		u[i] = 0.2 + r.Float64()
		if r.IntN(5) == 0 {
			u[i] = math.Inf(1)
		}
	}
	return f, u
}

func TestOperatorEdgeCases(t *testing.T) {
	tr := mustTransition(t, diag3, 1, 0.2, GraphOptions{})
	op := Operator{T: tr, Steps: 2}
	f := []float64{1.5, -0.3, 0.9}
	inf := math.Inf(1)
	// Unlimited supply: nothing moves.
	g := make([]float64, 3)
	if err := op.Apply(g, nil, f, []float64{inf, inf, inf}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range g {
		if g[i] != f[i] {
			t.Errorf("unlimited supply: g[%d] = %v, want %v", i, g[i], f[i])
		}
	}
	// g and d may alias f.
	u := []float64{0.5, 0.5, 0.5}
	want := make([]float64, 3)
	wantD := make([]float64, 3)
	if err := op.Apply(want, wantD, f, u, nil); err != nil {
		t.Fatal(err)
	}
	x := append([]float64(nil), f...)
	if err := op.Apply(x, nil, x, u, nil); err != nil {
		t.Fatal(err)
	}
	y := append([]float64(nil), f...)
	if err := op.Apply(nil, y, y, u, nil); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if x[i] != want[i] || y[i] != wantD[i] {
			t.Errorf("aliasing: g[%d] %v vs %v, d[%d] %v vs %v", i, x[i], want[i], i, y[i], wantD[i])
		}
	}
	// A saturated product sits exactly at its supply before receiving.
	tr1 := mustTransition(t, [][]float64{{0}, {100}}, 1, 0, GraphOptions{}) // both rows isolated
	if err := (Operator{T: tr1, Steps: 1}).Apply(g[:2], nil, []float64{1e20, 0.1}, []float64{1, 1}, nil); err != nil {
		t.Fatal(err)
	}
	if g[0] != 1e20 || g[1] != 0.1 {
		t.Errorf("isolated rows: g = %v", g[:2])
	}
}

func TestOperatorValidation(t *testing.T) {
	tr := mustTransition(t, diag3, 1, 0, GraphOptions{})
	ok3 := []float64{0, 0, 0}
	tests := []struct {
		name string
		op   Operator
		f, u []float64
		g    []float64
		want string
	}{
		{"nil T", Operator{Steps: 1}, ok3, ok3, ok3, "no transition"},
		{"zero steps", Operator{T: tr}, ok3, ok3, ok3, "steps 0"},
		{"too many steps", Operator{T: tr, Steps: MaxSteps + 1}, ok3, ok3, ok3, "steps 1001"},
		{"short f", Operator{T: tr, Steps: 1}, ok3[:2], ok3, ok3, "f has length 2"},
		{"short u", Operator{T: tr, Steps: 1}, ok3, ok3[:1], ok3, "u 1"},
		{"NaN f", Operator{T: tr, Steps: 1}, []float64{0, math.NaN(), 0}, ok3, ok3, "f[1]"},
		{"Inf f", Operator{T: tr, Steps: 1}, []float64{math.Inf(1), 0, 0}, ok3, ok3, "f[0]"},
		{"NaN u", Operator{T: tr, Steps: 1}, ok3, []float64{0, 0, math.NaN()}, ok3, "u[2]"},
		{"-Inf u", Operator{T: tr, Steps: 1}, ok3, []float64{math.Inf(-1), 0, 0}, ok3, "u[0]"},
		{"short g", Operator{T: tr, Steps: 1}, ok3, ok3, ok3[:2], "destination"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := []error{
				tc.op.Apply(tc.g, nil, tc.f, tc.u, nil),
				tc.op.JacobianTVec(tc.g, ok3, tc.f, tc.u, nil),
				tc.op.ParamGrad(tc.g, nil, tc.f, tc.u, nil),
			}
			_, e := tc.op.Lost(tc.g, tc.f, tc.u, nil)
			errs = append(errs, e)
			if tc.name != "short g" {
				errs = append(errs, tc.op.Jacobian(make([]float64, 9), tc.f, tc.u, nil))
			}
			for k, err := range errs {
				if err == nil || !strings.HasPrefix(err.Error(), "diffusion: ") {
					t.Errorf("call %d: error %v", k, err)
				} else if k == 0 && !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Apply: error %v, want one mentioning %q", err, tc.want)
				}
			}
		})
	}
	if _, err := NewOperator(tr, 0); err == nil {
		t.Error("NewOperator accepted 0 steps")
	}
	if _, err := NewOperator(nil, 1); err == nil {
		t.Error("NewOperator accepted a nil transition")
	}
	if err := (Operator{T: tr, Steps: 1}).Jacobian(make([]float64, 8), ok3, ok3, nil); err == nil {
		t.Error("Jacobian accepted a short destination")
	}
}

// Lost demand is the sink's share of every excess, and total mass is
// conserved by the steps: Σ f⁽ᴺ⁾ + lost = Σ f.
func TestLost(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	feats := randFeatures(r, 12, 2, -1, 1)
	tr := mustTransition(t, feats, 0.5, 0.3, GraphOptions{K: 3})
	T := denseT(t, tr)
	for _, steps := range []int{1, 3} {
		op := Operator{T: tr, Steps: steps}
		f, u := randState(r, 12)
		lost := make([]float64, 12)
		total, err := op.Lost(lost, f, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		cur := append([]float64(nil), f...)
		var sf, sn, sl float64
		for range steps {
			cur = naiveStep(T, cur, u)
		}
		for i := range f {
			sf += f[i]
			sn += cur[i]
			sl += lost[i]
		}
		if !closeAbs(sl, total, 1e-14) || !closeAbs(sn+total, sf, 1e-12) {
			t.Errorf("steps %d: Σf = %v, Σf⁽ᴺ⁾ = %v, lost %v (Σ %v)", steps, sf, sn, total, sl)
		}
	}
}

// Supply-aware mode: no demand enters an unavailable product, each row's
// (1 − π) is split over its available neighbours, and a row without one
// loses everything.
func TestSupplyAware(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	feats := randFeatures(r, 15, 2, -1, 1)
	explicit, err := NewTransitionDense(3, []float64{0, 0.5, 0.3, 0.6, 0, 0.4, 0.1, 0.1, 0})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tr   *Transition
	}{
		{"dense kernel", mustTransition(t, feats, 0.4, 0.2, GraphOptions{})},
		{"kNN kernel", mustTransition(t, feats, 0.4, 0.2, GraphOptions{K: 3})},
		{"explicit", explicit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.tr.N()
			masked := new(Transition)
			ws := NewWorkspace(n, 1)
			for trial := range 30 {
				f, u := randState(r, n)
				y := make([]float64, n)
				for j := range y {
					y[j] = math.Min(f[j], u[j]) // observed: censored at supply
				}
				avail := make([]bool, n)
				if err := Available(avail, y, u); err != nil {
					t.Fatal(err)
				}
				if trial == 0 {
					clear(avail) // nobody available
				}
				op, err := c.tr.SupplyAware(masked, avail)
				if err != nil {
					t.Fatal(err)
				}
				if op.Steps != 1 || op.T != masked {
					t.Fatalf("SupplyAware returned %+v", op)
				}
				for i := range n {
					cols, probs := masked.Row(i)
					var s, sAvail float64
					for k, j := range cols {
						if !avail[j] && probs[k] != 0 {
							t.Fatalf("edge %d→%d into an unavailable product: %v", i, j, probs[k])
						}
						s += probs[k]
					}
					ocols, oprobs := c.tr.Row(i)
					for k, j := range ocols {
						if avail[j] {
							sAvail += oprobs[k]
						}
					}
					if sAvail == 0 {
						if s != 0 || masked.Sink(i) != 1 {
							t.Fatalf("row %d has no available neighbour: sends %v, sink %v", i, s, masked.Sink(i))
						}
						continue
					}
					if masked.Sink(i) != c.tr.Sink(i) || !closeAbs(s+masked.Sink(i), 1, 1e-14) {
						t.Fatalf("row %d: masked sum %v sink %v, original sink %v", i, s, masked.Sink(i), c.tr.Sink(i))
					}
				}
				g, d := make([]float64, n), make([]float64, n)
				if err := op.Apply(g, d, f, u, ws); err != nil {
					t.Fatal(err)
				}
				for j := range n {
					if !avail[j] && d[j] != 0 {
						t.Fatalf("unavailable product %d received %v", j, d[j])
					}
				}
			}
		})
	}
	// Explicit rows renormalise over the available columns.
	masked := new(Transition)
	if err := explicit.MaskInto(masked, []bool{true, false, true}); err != nil {
		t.Fatal(err)
	}
	if !closeAbs(masked.At(0, 2), 0.8, 1e-15) || masked.At(0, 1) != 0 || !closeAbs(masked.At(2, 0), 0.2, 1e-15) {
		t.Errorf("masked explicit rows: %v %v %v", masked.At(0, 1), masked.At(0, 2), masked.At(2, 0))
	}
	if err := explicit.MaskInto(explicit, make([]bool, 3)); err == nil {
		t.Error("masking in place accepted")
	}
	if err := explicit.MaskInto(masked, make([]bool, 2)); err == nil {
		t.Error("short mask accepted")
	}
	if err := Available(make([]bool, 2), []float64{1, math.NaN()}, []float64{1, math.NaN()}); err == nil {
		t.Error("NaN supply accepted")
	}
	av := make([]bool, 4)
	if err := Available(av, []float64{1, 2, math.NaN(), 5}, []float64{1, 3, 2, math.Inf(1)}); err != nil || av[0] || !av[1] || !av[2] || !av[3] {
		t.Errorf("Available = %v, %v", av, err)
	}
}

// A workspace sized for a small problem grows for a larger one, and a nil
// workspace works too.
func TestWorkspaceReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	ws := NewWorkspace(2, 1)
	for _, n := range []int{3, 20, 5} {
		tr := mustTransition(t, randFeatures(r, n, 2, -1, 1), 0.5, 0.1, GraphOptions{})
		op := Operator{T: tr, Steps: 3}
		f, u := randState(r, n)
		g1, g2 := make([]float64, n), make([]float64, n)
		if err := op.Apply(g1, nil, f, u, ws); err != nil {
			t.Fatal(err)
		}
		if err := op.Apply(g2, nil, f, u, nil); err != nil {
			t.Fatal(err)
		}
		J := make([]float64, n*n)
		if err := op.Jacobian(J, f, u, ws); err != nil {
			t.Fatal(err)
		}
		want := naiveApply(denseT(t, tr), 3, f, u)
		for i := range want {
			if g1[i] != g2[i] || !closeAbs(g1[i], want[i], 1e-12) {
				t.Fatalf("n=%d: g[%d] = %v (nil ws %v), want %v", n, i, g1[i], g2[i], want[i])
			}
		}
	}
}

func TestAccessorsOutOfRange(t *testing.T) {
	var nilT *Transition
	if nilT.N() != 0 || nilT.NNZ() != 0 || nilT.At(0, 0) != 0 || !math.IsNaN(nilT.Sink(0)) {
		t.Error("nil transition accessors")
	}
	if err := nilT.Dense(nil); err == nil {
		t.Error("nil transition Dense: no error")
	}
	if _, _, ok := nilT.Params(); ok {
		t.Error("nil transition has parameters")
	}
	tr := mustTransition(t, diag3, 1, 0.2, GraphOptions{})
	if c, p := tr.Row(3); c != nil || p != nil {
		t.Error("Row(3) of a 3×3 matrix")
	}
	if tr.At(-1, 0) != 0 || tr.At(0, 7) != 0 || !math.IsNaN(tr.Sink(-1)) {
		t.Error("out-of-range At/Sink")
	}
	if ell, pi, ok := tr.Params(); !ok || ell != 1 || pi != 0.2 {
		t.Errorf("Params = %v, %v, %v", ell, pi, ok)
	}
	if err := tr.Dense(make([]float64, 8)); err == nil {
		t.Error("short Dense destination accepted")
	}
	if err := tr.Derivs(make([]float64, 5), nil); err == nil {
		t.Error("short Derivs destination accepted")
	}
	if err := tr.DerivsDense(nil, make([]float64, 5)); err == nil {
		t.Error("short DerivsDense destination accepted")
	}
	var nilG *Graph
	if nilG.N() != 0 || nilG.NNZ() != 0 {
		t.Error("nil graph accessors")
	}
	if c, d := nilG.Neighbours(0); c != nil || d != nil {
		t.Error("nil graph Neighbours")
	}
	if _, err := nilG.Transition(1, 0); err == nil {
		t.Error("nil graph Transition: no error")
	}
	big := make([][]float64, 9000)
	for i := range big {
		big[i] = []float64{float64(i)}
	}
	if _, err := NewGraph(big, GraphOptions{}); err == nil || !strings.Contains(err.Error(), "GraphOptions.K") {
		t.Errorf("dense graph over 9000 products: %v", err)
	}
}
