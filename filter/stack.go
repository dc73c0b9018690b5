package filter

import (
	"fmt"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// stack is the block-diagonal state of per-product temporal kernels: the
// joint chain of an Independent model whose products have their own
// hyperparameters and are coupled only through full sites. Product k's
// demand is H_k applied to its own block.
//
// A stack holds nothing but its kernels (the Model's slice of them), so
// the one a Model caches follows their changes and can serve several
// filters at once (the kernels' own methods permitting).
type stack struct {
	ks []kernel.Temporal
}

func newStack(ks []kernel.Temporal) *stack { return &stack{ks: ks} }

// Dim returns the total state dimension.
func (s *stack) Dim() int {
	D := 0
	for _, k := range s.ks {
		D += k.Dim()
	}
	return D
}

// Measurement is not meaningful for a multi-output stack: it writes zeros.
// Product rows come from measurementRows.
func (s *stack) Measurement(h []float64) {
	for i := range h[:s.Dim()] {
		h[i] = 0
	}
}

// blockDiag writes the block-diagonal matrix whose blocks f fills. Each
// block is written contiguously at its top-left corner, inside its own
// rows, then spread to its strided place in place as Sum.block does, so no
// scratch is needed.
func (s *stack) blockDiag(dst []float64, f func(k kernel.Temporal, blk []float64)) {
	D, o := s.Dim(), 0
	for _, k := range s.ks {
		d := k.Dim()
		base := o*D + o
		f(k, dst[base:base+d*d])
		for e := d*d - 1; e >= 0; e-- {
			dst[base+(e/d)*D+e%d] = dst[base+e]
		}
		for r := o; r < o+d; r++ {
			clear(dst[r*D : r*D+o])
			clear(dst[r*D+o+d : (r+1)*D])
		}
		o += d
	}
}

// Stationary writes the block-diagonal Pinf.
func (s *stack) Stationary(dst []float64) {
	s.blockDiag(dst, func(k kernel.Temporal, b []float64) { k.Stationary(b) })
}

// Transition writes the block-diagonal A(dt).
func (s *stack) Transition(dst []float64, dt float64) {
	s.blockDiag(dst, func(k kernel.Temporal, b []float64) { k.Transition(b, dt) })
}

// ProcessNoise writes the block-diagonal Q(dt), each block by its kernel.
// Blocks without a closed form allocate their scratch; the filter goes
// through ProcessNoiseScratch instead.
func (s *stack) ProcessNoise(dst []float64, dt float64) { s.ProcessNoiseScratch(dst, dt, nil) }

// ProcessNoiseScratch is ProcessNoise with the caller's scratch (at least
// 3·d_k² for every block k; shorter means allocating).
func (s *stack) ProcessNoiseScratch(dst []float64, dt float64, work []float64) {
	s.blockDiag(dst, func(k kernel.Temporal, b []float64) { kernel.ProcessNoise(k, b, dt, work) })
}

// Drift writes the block-diagonal F.
func (s *stack) Drift(dst []float64) {
	s.blockDiag(dst, func(k kernel.Temporal, b []float64) { k.Drift(b) })
}

// Diffusion writes the block-diagonal L·Qc·Lᵀ.
func (s *stack) Diffusion(dst []float64) {
	s.blockDiag(dst, func(k kernel.Temporal, b []float64) { k.Diffusion(b) })
}

// Cov returns the first product's covariance; a stack has no single output.
func (s *stack) Cov(tau float64) float64 { return s.ks[0].Cov(tau) }

// NumParams returns the total number of parameters.
func (s *stack) NumParams() int {
	n := 0
	for _, k := range s.ks {
		n += k.NumParams()
	}
	return n
}

// ParamNames prefixes each kernel's names with its product index.
func (s *stack) ParamNames() []string {
	var names []string
	for i, k := range s.ks {
		for _, n := range k.ParamNames() {
			names = append(names, fmt.Sprintf("%d.%s", i, n))
		}
	}
	return names
}

// Params concatenates the kernels' unconstrained parameters.
func (s *stack) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, s.NumParams())
	}
	o := 0
	for _, k := range s.ks {
		n := k.NumParams()
		k.Params(dst[o : o+n])
		o += n
	}
	return dst
}

// SetParams sets every kernel's parameters, all or nothing.
func (s *stack) SetParams(src []float64) error {
	if len(src) != s.NumParams() {
		return fmt.Errorf("filter: want %d parameters, got %d", s.NumParams(), len(src))
	}
	old := s.Params(nil)
	o := 0
	for i, k := range s.ks {
		n := k.NumParams()
		if err := k.SetParams(src[o : o+n]); err != nil {
			// Roll back the kernels already changed.
			p := 0
			for _, kk := range s.ks[:i] {
				m := kk.NumParams()
				_ = kk.SetParams(old[p : p+m])
				p += m
			}
			return err
		}
		o += n
	}
	return nil
}

// Clone deep-copies the kernels.
func (s *stack) Clone() kernel.Temporal {
	ks := make([]kernel.Temporal, len(s.ks))
	for i, k := range s.ks {
		ks[i] = k.Clone()
	}
	return newStack(ks)
}
