package diffusion

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

type benchSize struct {
	name string
	n    int
	opt  GraphOptions
}

var benchSizes = []benchSize{
	{"N=10", 10, GraphOptions{}},
	{"N=100", 100, GraphOptions{}},
	{"N=1000_kNN_k=8", 1000, GraphOptions{K: 8}},
}

// benchSetup returns an operator with about half of the products in excess.
func benchSetup(tb testing.TB, s benchSize, steps int) (Operator, []float64, []float64, *Workspace) {
	r := rand.New(rand.NewPCG(uint64(s.n), 99))
	feats := randFeatures(r, s.n, 2, 0, 10)
	tr, err := NewTransition(feats, 1, 0.1, s.opt)
	if err != nil {
		tb.Fatal(err)
	}
	f, u := make([]float64, s.n), make([]float64, s.n)
	for i := range f {
		f[i], u[i] = 2*r.Float64(), 1
	}
	return Operator{T: tr, Steps: steps}, f, u, NewWorkspace(s.n, steps)
}

func BenchmarkApply(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			op, f, u, ws := benchSetup(b, s, 1)
			g, d := make([]float64, s.n), make([]float64, s.n)
			b.ReportAllocs()
			for b.Loop() {
				if err := op.Apply(g, d, f, u, ws); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkApply2Steps(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			op, f, u, ws := benchSetup(b, s, 2)
			g := make([]float64, s.n)
			b.ReportAllocs()
			for b.Loop() {
				if err := op.Apply(g, nil, f, u, ws); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJacobianTVec(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			op, f, u, ws := benchSetup(b, s, 1)
			v, dst := make([]float64, s.n), make([]float64, s.n)
			for i := range v {
				v[i] = 1
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := op.JacobianTVec(dst, v, f, u, ws); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParamGrad(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			op, f, u, ws := benchSetup(b, s, 1)
			gl, gp := make([]float64, s.n), make([]float64, s.n)
			b.ReportAllocs()
			for b.Loop() {
				if err := op.ParamGrad(gl, gp, f, u, ws); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJacobian(b *testing.B) {
	for _, s := range benchSizes[:2] {
		b.Run(s.name, func(b *testing.B) {
			op, f, u, ws := benchSetup(b, s, 1)
			J := make([]float64, s.n*s.n)
			b.ReportAllocs()
			for b.Loop() {
				if err := op.Jacobian(J, f, u, ws); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Rebuilding T for a new ℓ (one optimiser step) and masking it for a bin.
func BenchmarkTransitionInto(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			g, err := NewGraph(randFeatures(r, s.n, 2, 0, 10), s.opt)
			if err != nil {
				b.Fatal(err)
			}
			tr := new(Transition)
			b.ReportAllocs()
			for b.Loop() {
				if err := g.TransitionInto(tr, 1.3, 0.1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNewGraphKNN(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		feats := randFeatures(rand.New(rand.NewPCG(2, 2)), n, 2, 0, 100)
		b.Run(fmt.Sprintf("N=%d_k=8", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewGraph(feats, GraphOptions{K: 8}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The hot path allocates nothing once the workspace and destinations exist.
func TestZeroAllocs(t *testing.T) {
	for _, s := range benchSizes {
		for _, steps := range []int{1, 3} {
			op, f, u, ws := benchSetup(t, s, steps)
			n := s.n
			g, d, v := make([]float64, n), make([]float64, n), make([]float64, n)
			J := make([]float64, n*n)
			masked := new(Transition)
			avail := make([]bool, n)
			for i := range avail {
				avail[i] = i%2 == 0
			}
			calls := map[string]func(){
				"Apply":        func() { _ = op.Apply(g, d, f, u, ws) },
				"JacobianTVec": func() { _ = op.JacobianTVec(d, v, f, u, ws) },
				"ParamGrad":    func() { _ = op.ParamGrad(g, d, f, u, ws) },
				"Lost":         func() { _, _ = op.Lost(d, f, u, ws) },
				"MaskInto":     func() { _ = op.T.MaskInto(masked, avail) },
			}
			if n <= 100 {
				calls["Jacobian"] = func() { _ = op.Jacobian(J, f, u, ws) }
			}
			for name, call := range calls {
				call() // warm up lazily grown buffers
				if a := testing.AllocsPerRun(20, call); a != 0 {
					t.Errorf("%s steps=%d: %s allocates %v times per call", s.name, steps, name, a)
				}
			}
		}
	}
}
