package filter

import "fmt"

// stack is the block-diagonal state of per-product temporal kernels: the
// joint chain of an Independent model whose products have their own
// hyperparameters and are coupled only through full sites. Product k's
// demand is H_k applied to its own block.
type stack struct {
	ks  []Temporal
	off []int     // block offsets, len(ks)+1
	blk []float64 // scratch for one block
	pnw []float64 // scratch for ProcessNoise
}

func newStack(ks []Temporal) *stack {
	s := &stack{ks: ks, off: make([]int, len(ks)+1)}
	for i, k := range ks {
		s.off[i+1] = s.off[i] + k.Dim()
	}
	return s
}

// Dim returns the total state dimension.
func (s *stack) Dim() int { return s.off[len(s.ks)] }

// Measurement is not meaningful for a multi-output stack: it writes zeros.
// Product rows come from measurementRows.
func (s *stack) Measurement(h []float64) {
	for i := range h[:s.Dim()] {
		h[i] = 0
	}
}

// blockDiag writes the block-diagonal matrix whose blocks f fills.
func (s *stack) blockDiag(dst []float64, f func(k Temporal, blk []float64)) {
	D := s.Dim()
	for i := range dst[:D*D] {
		dst[i] = 0
	}
	for i, k := range s.ks {
		d := k.Dim()
		s.blk = resize(s.blk, d*d)
		blk := s.blk
		f(k, blk)
		o := s.off[i]
		for r := 0; r < d; r++ {
			copy(dst[(o+r)*D+o:(o+r)*D+o+d], blk[r*d:(r+1)*d])
		}
	}
}

// Stationary writes the block-diagonal Pinf.
func (s *stack) Stationary(dst []float64) {
	s.blockDiag(dst, func(k Temporal, b []float64) { k.Stationary(b) })
}

// Transition writes the block-diagonal A(dt).
func (s *stack) Transition(dst []float64, dt float64) {
	s.blockDiag(dst, func(k Temporal, b []float64) { k.Transition(b, dt) })
}

// ProcessNoise writes the block-diagonal Q(dt), each block by its kernel.
func (s *stack) ProcessNoise(dst []float64, dt float64) {
	s.blockDiag(dst, func(k Temporal, b []float64) {
		d := k.Dim()
		s.pnw = resize(s.pnw, 3*d*d)
		ProcessNoise(k, b, dt, s.pnw)
	})
}

// Drift writes the block-diagonal F.
func (s *stack) Drift(dst []float64) { s.blockDiag(dst, func(k Temporal, b []float64) { k.Drift(b) }) }

// Diffusion writes the block-diagonal L·Qc·Lᵀ.
func (s *stack) Diffusion(dst []float64) {
	s.blockDiag(dst, func(k Temporal, b []float64) { k.Diffusion(b) })
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
func (s *stack) Clone() Temporal {
	ks := make([]Temporal, len(s.ks))
	for i, k := range s.ks {
		ks[i] = k.Clone()
	}
	return newStack(ks)
}
