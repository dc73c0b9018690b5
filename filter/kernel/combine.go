package kernel

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/dcgpd/dcgpd/internal/errs"
)

// Sum is the sum of independent temporal kernels, k(τ) = Σ_i k_i(τ): the
// components' states are stacked, so F, Pinf, A, Q and the diffusion are
// block-diagonal and H is the concatenation of the components' rows.
//
// ProcessNoise uses an internal scratch buffer for components without a
// closed form, so, as the Temporal contract says, give each goroutine its
// own Clone.
type Sum struct {
	ks    []Temporal
	off   []int // state offset of each component; off[len(ks)] = Dim
	names []string
	work  []float64 // 3·max d_i², for ProcessNoise
}

// NewSum returns the sum of the given kernels, of which there must be at
// least one. The components are cloned, so later changes to the arguments
// do not affect the sum (and passing one kernel twice is safe).
func NewSum(ks ...Temporal) (*Sum, error) {
	if len(ks) == 0 {
		return nil, errors.New("kernel: sum of kernels needs at least one component")
	}
	s := &Sum{ks: make([]Temporal, len(ks)), off: make([]int, len(ks)+1)}
	maxDim := 0
	for i, k := range ks {
		if k == nil {
			return nil, fmt.Errorf("kernel: sum component %d is nil", i)
		}
		d := k.Dim()
		if d < 1 {
			return nil, fmt.Errorf("kernel: sum component %d has state dimension %d", i, d)
		}
		s.ks[i] = k.Clone()
		s.off[i+1] = s.off[i] + d
		maxDim = max(maxDim, d)
	}
	s.names = prefixedNames(s.ks)
	s.work = make([]float64, 3*maxDim*maxDim)
	return s, nil
}

// prefixedNames returns the components' parameter names prefixed with
// their index, e.g. "0.variance", "1.period".
func prefixedNames[K Params](ks []K) []string {
	var names []string
	for i, k := range ks {
		p := strconv.Itoa(i) + "."
		for _, n := range k.ParamNames() {
			names = append(names, p+n)
		}
	}
	return names
}

// Len returns the number of components.
func (s *Sum) Len() int { return len(s.ks) }

// Component returns component i (not a copy: changing its hyperparameters
// changes the sum's). It returns nil if i is out of range.
func (s *Sum) Component(i int) Temporal {
	if i < 0 || i >= len(s.ks) {
		return nil
	}
	return s.ks[i]
}

// Dim returns the sum of the components' state dimensions.
func (s *Sum) Dim() int { return s.off[len(s.ks)] }

// Measurement writes H = [H_1, H_2, …].
func (s *Sum) Measurement(h []float64) {
	for i, k := range s.ks {
		k.Measurement(h[s.off[i]:s.off[i+1]])
	}
}

// Stationary writes Pinf = blockdiag(Pinf_i).
func (s *Sum) Stationary(dst []float64) {
	for i, k := range s.ks {
		s.block(dst, i, func(b []float64) { k.Stationary(b) })
	}
}

// Transition writes A(dt) = blockdiag(A_i(dt)).
func (s *Sum) Transition(dst []float64, dt float64) {
	for i, k := range s.ks {
		s.block(dst, i, func(b []float64) { k.Transition(b, dt) })
	}
}

// ProcessNoise writes Q(dt) = blockdiag(Q_i(dt)), each block by the
// component's closed form if it has one (see the package function
// ProcessNoise).
func (s *Sum) ProcessNoise(dst []float64, dt float64) {
	for i, k := range s.ks {
		s.block(dst, i, func(b []float64) { ProcessNoise(k, b, dt, s.work) })
	}
}

// Drift writes F = blockdiag(F_i).
func (s *Sum) Drift(dst []float64) {
	for i, k := range s.ks {
		s.block(dst, i, func(b []float64) { k.Drift(b) })
	}
}

// Diffusion writes L Qc Lᵀ = blockdiag(L_i Qc_i L_iᵀ).
func (s *Sum) Diffusion(dst []float64) {
	for i, k := range s.ks {
		s.block(dst, i, func(b []float64) { k.Diffusion(b) })
	}
}

// block sets rows off_i..off_{i+1}−1 of the d×d matrix dst: component i's
// m×m block on the diagonal, zeros elsewhere. write receives m² contiguous
// entries starting at the block's top-left corner, which lie inside those
// rows since m² ≤ m·d; the block is then spread to its strided place in
// place, last entry first, so that every write lands on an entry already
// moved (the target of entry e is at or after e). This needs no scratch.
func (s *Sum) block(dst []float64, i int, write func(b []float64)) {
	d := s.Dim()
	o, m := s.off[i], s.off[i+1]-s.off[i]
	base := o*d + o
	write(dst[base : base+m*m])
	for e := m*m - 1; e >= 0; e-- {
		r, c := e/m, e%m
		dst[base+r*d+c] = dst[base+e]
	}
	for r := o; r < o+m; r++ {
		clear(dst[r*d : r*d+o])
		clear(dst[r*d+o+m : (r+1)*d])
	}
}

// Cov returns Σ_i k_i(τ).
func (s *Sum) Cov(tau float64) float64 {
	var c float64
	for _, k := range s.ks {
		c += k.Cov(tau)
	}
	return c
}

// NumParams returns the total number of the components' hyperparameters.
func (s *Sum) NumParams() int { return len(s.names) }

// ParamNames returns the components' names prefixed by their index, e.g.
// "0.variance". The slice is shared: do not modify it.
func (s *Sum) ParamNames() []string { return s.names }

// Params writes the components' hyperparameters, concatenated, into dst.
func (s *Sum) Params(dst []float64) []float64 { return concatParams(dst, len(s.names), s.ks) }

// SetParams sets the components' hyperparameters from the concatenated
// unconstrained values, all-or-nothing.
func (s *Sum) SetParams(src []float64) error {
	return setComponentParams(src, len(s.names), s.ks)
}

// Clone returns an independent deep copy.
func (s *Sum) Clone() Temporal {
	c := &Sum{
		ks:    make([]Temporal, len(s.ks)),
		off:   append([]int(nil), s.off...),
		names: s.names, // immutable
		work:  make([]float64, len(s.work)),
	}
	for i, k := range s.ks {
		c.ks[i] = k.Clone()
	}
	return c
}

// concatParams writes the components' parameters one after the other.
func concatParams[K Params](dst []float64, n int, ks []K) []float64 {
	if dst == nil {
		dst = make([]float64, n)
	}
	o := 0
	for _, k := range ks {
		p := k.NumParams()
		k.Params(dst[o : o+p])
		o += p
	}
	return dst
}

// cloneable is a kernel, temporal or spatial, whose Clone returns its own
// interface type.
type cloneable[K any] interface {
	Params
	Clone() K
}

// setComponentParams sets the concatenated parameters on the components,
// all-or-nothing: every part is first tried on a clone, and only if all are
// accepted is it applied to the components themselves (which then cannot
// fail, SetParams being a function of its input). Restoring old values
// after a failure instead would not be bit-exact through softplus.
func setComponentParams[K cloneable[K]](src []float64, n int, ks []K) error {
	if len(src) != n {
		return fmt.Errorf("kernel: want %d parameters, got %d", n, len(src))
	}
	for pass := 0; pass < 2; pass++ {
		o := 0
		for i, k := range ks {
			p := k.NumParams()
			if pass == 0 {
				k = k.Clone()
			}
			if err := k.SetParams(src[o : o+p]); err != nil {
				return errs.Withinf("kernel", err, "component %d", i)
			}
			o += p
		}
	}
	return nil
}

// Product is the product of two temporal kernels, k(τ) = k_a(τ)·k_b(τ), by
// the Kronecker rule: F = F_a ⊗ I + I ⊗ F_b, Pinf = Pinf_a ⊗ Pinf_b,
// H = H_a ⊗ H_b, A = A_a ⊗ A_b and L Qc Lᵀ = D_a ⊗ Pinf_b + Pinf_a ⊗ D_b. The
// state dimension is d_a·d_b.
//
// Every matrix method uses internal scratch buffers, so, as the Temporal
// contract says, give each goroutine its own Clone.
type Product struct {
	a, b   Temporal
	names  []string
	sa, sb []float64 // d_a², d_b² scratch, twice each
	ta, tb []float64
	work   []float64 // 3·max(d_a, d_b)², for ProcessNoise
}

// NewProduct returns the product of a and b, which are cloned so that
// later changes to the arguments do not affect it.
func NewProduct(a, b Temporal) (*Product, error) {
	if a == nil || b == nil {
		return nil, errors.New("kernel: product of kernels needs two non-nil components")
	}
	da, db := a.Dim(), b.Dim()
	if da < 1 || db < 1 {
		return nil, fmt.Errorf("kernel: product components have state dimensions %d and %d", da, db)
	}
	p := &Product{a: a.Clone(), b: b.Clone()}
	p.names = prefixedNames([]Temporal{p.a, p.b})
	p.alloc()
	return p, nil
}

func (p *Product) alloc() {
	da, db := p.a.Dim(), p.b.Dim()
	p.sa, p.ta = make([]float64, da*da), make([]float64, da*da)
	p.sb, p.tb = make([]float64, db*db), make([]float64, db*db)
	m := max(da, db)
	p.work = make([]float64, 3*m*m)
}

// Factors returns the two components (not copies: changing their
// hyperparameters changes the product's).
func (p *Product) Factors() (a, b Temporal) { return p.a, p.b }

// Dim returns d_a·d_b.
func (p *Product) Dim() int { return p.a.Dim() * p.b.Dim() }

// Measurement writes H = H_a ⊗ H_b.
func (p *Product) Measurement(h []float64) {
	da, db := p.a.Dim(), p.b.Dim()
	ha, hb := p.sa[:da], p.sb[:db]
	p.a.Measurement(ha)
	p.b.Measurement(hb)
	for i, x := range ha {
		for k, y := range hb {
			h[i*db+k] = x * y
		}
	}
}

// Stationary writes Pinf = Pinf_a ⊗ Pinf_b.
func (p *Product) Stationary(dst []float64) {
	p.a.Stationary(p.sa)
	p.b.Stationary(p.sb)
	p.kron(dst, p.sa, p.sb, 1, false)
}

// Transition writes A(dt) = A_a(dt) ⊗ A_b(dt).
func (p *Product) Transition(dst []float64, dt float64) {
	p.a.Transition(p.sa, dt)
	p.b.Transition(p.sb, dt)
	p.kron(dst, p.sa, p.sb, 1, false)
}

// ProcessNoise writes Q(dt) = Q_a ⊗ Pinf_b + Pinf_a ⊗ Q_b − Q_a ⊗ Q_b, which
// equals Pinf − A Pinf Aᵀ because A Pinf Aᵀ = (Pinf_a − Q_a) ⊗ (Pinf_b − Q_b),
// but inherits the components' closed forms and so avoids the cancellation
// of the d×d subtraction at short dt.
func (p *Product) ProcessNoise(dst []float64, dt float64) {
	p.a.Stationary(p.sa)
	p.b.Stationary(p.sb)
	ProcessNoise(p.a, p.ta, dt, p.work)
	ProcessNoise(p.b, p.tb, dt, p.work)
	p.kron(dst, p.ta, p.sb, 1, false)
	p.kron(dst, p.sa, p.tb, 1, true)
	p.kron(dst, p.ta, p.tb, -1, true)
}

// Drift writes F = F_a ⊗ I + I ⊗ F_b.
func (p *Product) Drift(dst []float64) {
	da, db := p.a.Dim(), p.b.Dim()
	d := da * db
	p.a.Drift(p.sa)
	p.b.Drift(p.sb)
	clear(dst[:d*d])
	for i := 0; i < da; i++ {
		for j := 0; j < da; j++ {
			f := p.sa[i*da+j]
			for k := 0; k < db; k++ {
				dst[(i*db+k)*d+j*db+k] += f
			}
		}
		for k := 0; k < db; k++ {
			for l := 0; l < db; l++ {
				dst[(i*db+k)*d+i*db+l] += p.sb[k*db+l]
			}
		}
	}
}

// Diffusion writes D = D_a ⊗ Pinf_b + Pinf_a ⊗ D_b, which closes the
// Lyapunov equation F Pinf + Pinf Fᵀ + D = 0 given the components' own.
func (p *Product) Diffusion(dst []float64) {
	p.a.Diffusion(p.sa)
	p.b.Stationary(p.sb)
	p.kron(dst, p.sa, p.sb, 1, false)
	p.a.Stationary(p.ta)
	p.b.Diffusion(p.tb)
	p.kron(dst, p.ta, p.tb, 1, true)
}

// kron writes (add false) or adds (add true) alpha·(x ⊗ y) for the square
// d_a×d_a x and d_b×d_b y into the d×d dst.
func (p *Product) kron(dst, x, y []float64, alpha float64, add bool) {
	da, db := p.a.Dim(), p.b.Dim()
	d := da * db
	for i := 0; i < da; i++ {
		for j := 0; j < da; j++ {
			v := alpha * x[i*da+j]
			for k := 0; k < db; k++ {
				row := dst[(i*db+k)*d+j*db : (i*db+k)*d+j*db+db]
				yk := y[k*db : k*db+db]
				if add {
					for l, w := range yk {
						row[l] += v * w
					}
				} else {
					for l, w := range yk {
						row[l] = v * w
					}
				}
			}
		}
	}
}

// Cov returns k_a(τ)·k_b(τ).
func (p *Product) Cov(tau float64) float64 { return p.a.Cov(tau) * p.b.Cov(tau) }

// NumParams returns the total number of the factors' hyperparameters.
func (p *Product) NumParams() int { return len(p.names) }

// ParamNames returns the factors' names prefixed "0." and "1.". The slice
// is shared: do not modify it.
func (p *Product) ParamNames() []string { return p.names }

// Params writes the factors' hyperparameters, concatenated, into dst.
func (p *Product) Params(dst []float64) []float64 {
	return concatParams(dst, len(p.names), []Temporal{p.a, p.b})
}

// SetParams sets the factors' hyperparameters from the concatenated
// unconstrained values, all-or-nothing.
func (p *Product) SetParams(src []float64) error {
	return setComponentParams(src, len(p.names), []Temporal{p.a, p.b})
}

// Clone returns an independent deep copy with its own scratch space.
func (p *Product) Clone() Temporal {
	c := &Product{a: p.a.Clone(), b: p.b.Clone(), names: p.names}
	c.alloc()
	return c
}
