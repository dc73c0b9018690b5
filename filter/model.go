package filter

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"github.com/dcgpd/dcgpd/internal/errs"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Model is the separable spatio-temporal GP prior over N_p products:
// f(t, p) ~ GP(0, k_t(t, t')·k_p(p, p')).
//
// The state holds one copy of the temporal SDE per product ("whitened"
// latents u_i, i.i.d. GP(0, k_t)), and the products' latent demand is
// f = B·u with B = chol(K_p), so that Cov(f) = K_p ⊗ k_t exactly. With an
// Independent product kernel B = I and, as long as the sites are diagonal,
// every product is filtered as its own chain at O(N_p d³) per step.
type Model struct {
	temporal   kernel.Temporal   // shared temporal kernel; nil with per-product kernels
	perProduct []kernel.Temporal // per-product kernels (kernel.Independent models only)
	distinct   bool              // no two products share a per-product kernel (see distinctKernels)
	stk        *stack            // their block-diagonal joint kernel, sharing them
	spatial    kernel.Spatial
	features   [][]float64
	np         int
	indep      bool
	b          []float64   // N_p×N_p lower Cholesky factor of K_p (identity when indep)
	start      *modelStart // the known state runs start from (nil: the stationary prior)
}

// NewModel returns the prior with temporal kernel t, product kernel s (nil
// means Independent) over the given product features (one row per
// product; may be nil for an Independent kernel, in which case np gives the
// number of products). The product Gram matrix must be positive definite.
func NewModel(t kernel.Temporal, s kernel.Spatial, features [][]float64, np int) (*Model, error) {
	if t == nil {
		return nil, errors.New("filter: model needs a temporal kernel")
	}
	if features != nil {
		if np != 0 && np != len(features) {
			return nil, fmt.Errorf("filter: %d products but %d feature rows", np, len(features))
		}
		np = len(features)
	}
	if np < 1 {
		return nil, fmt.Errorf("filter: model needs at least one product, got %d", np)
	}
	m := &Model{temporal: t, spatial: s, features: features, np: np}
	if err := m.refresh(); err != nil {
		return nil, err
	}
	return m, nil
}

// NewIndependentModel returns a prior of independent products in which
// product k has its own temporal kernel ks[k] (own hyperparameters, as in
// the paper's Independent([Matérn-5/2]×N_p) models).
func NewIndependentModel(ks []kernel.Temporal) (*Model, error) {
	if len(ks) == 0 {
		return nil, errors.New("filter: model needs at least one product")
	}
	for i, k := range ks {
		if k == nil {
			return nil, fmt.Errorf("filter: product %d has no temporal kernel", i)
		}
	}
	m := &Model{perProduct: ks, stk: newStack(ks), np: len(ks), distinct: distinctKernels(ks)}
	if err := m.refresh(); err != nil {
		return nil, err
	}
	return m, nil
}

// kernelOf returns the temporal kernel of product k.
func (m *Model) kernelOf(k int) kernel.Temporal {
	if m.perProduct != nil {
		return m.perProduct[k]
	}
	return m.temporal
}

// joint returns the kernel of one copy of the coupled chain's state and the
// number of copies: the shared kernel N_p times, or the block-diagonal
// stack of per-product kernels once. The stack is built once per Model: it
// refers to the kernels themselves, so SetParams needs no rebuild (Clone
// gives the clone its own).
func (m *Model) joint() (kernel.Temporal, int) {
	if m.perProduct != nil {
		return m.stk, 1
	}
	return m.temporal, m.np
}

// Cov returns the prior covariance of f(t1, product i) and f(t2, product j).
func (m *Model) Cov(t1 float64, i int, t2 float64, j int) float64 {
	if m.perProduct != nil {
		if i != j {
			return 0
		}
		return m.perProduct[i].Cov(t1 - t2)
	}
	return m.temporal.Cov(t1-t2) * m.ProductCov(i, j)
}

// refresh recomputes B after the product kernel's hyperparameters changed.
func (m *Model) refresh() error {
	np := m.np
	m.indep = kernel.IsIndependent(m.spatial)
	if cap(m.b) < np*np {
		m.b = make([]float64, np*np)
	}
	m.b = m.b[:np*np]
	if m.indep {
		for i := range m.b {
			m.b[i] = 0
		}
		for i := 0; i < np; i++ {
			m.b[i*np+i] = 1
		}
		return nil
	}
	if m.features == nil {
		return errors.New("filter: a product kernel needs product features")
	}
	if err := m.spatial.Gram(m.b, m.features); err != nil {
		return errs.Within("filter", err, "product kernel")
	}
	sym := blas64.Symmetric{N: np, Stride: np, Data: m.b, Uplo: blas.Lower}
	if _, ok := lapack64.Potrf(sym); !ok {
		return errors.New("filter: the product kernel's covariance between the products is not positive definite (two products with the same features, or too long a lengthscale?)")
	}
	// Potrf leaves the strict upper triangle untouched: clear it.
	for i := 0; i < np; i++ {
		for j := i + 1; j < np; j++ {
			m.b[i*np+j] = 0
		}
	}
	return nil
}

// NumProducts returns N_p.
func (m *Model) NumProducts() int { return m.np }

// Temporal returns the shared temporal kernel, or product 0's with
// per-product kernels.
func (m *Model) Temporal() kernel.Temporal { return m.kernelOf(0) }

// TemporalOf returns the temporal kernel of product k.
func (m *Model) TemporalOf(k int) kernel.Temporal { return m.kernelOf(k) }

// Spatial returns the product kernel (nil for Independent).
func (m *Model) Spatial() kernel.Spatial { return m.spatial }

// Independent reports whether products are a priori independent.
func (m *Model) Independent() bool { return m.indep }

// StateDim returns the dimension of the joint state (N_p·d when shared).
func (m *Model) StateDim() int {
	k, c := m.joint()
	return c * k.Dim()
}

// temporals returns the temporal hyperparameter holder.
func (m *Model) temporals() kernel.Temporal {
	if m.perProduct != nil {
		return m.stk
	}
	return m.temporal
}

// NumParams returns the number of hyperparameters of the temporal and
// product kernels together.
func (m *Model) NumParams() int {
	n := m.temporals().NumParams()
	if m.spatial != nil {
		n += m.spatial.NumParams()
	}
	return n
}

// ParamNames returns the hyperparameter names, temporal first, prefixed
// "temporal." and "product.".
func (m *Model) ParamNames() []string {
	var names []string
	for _, n := range m.temporals().ParamNames() {
		names = append(names, "temporal."+n)
	}
	if m.spatial != nil {
		for _, n := range m.spatial.ParamNames() {
			names = append(names, "product."+n)
		}
	}
	return names
}

// Params writes the unconstrained hyperparameters (temporal, then product)
// into dst and returns it; a nil dst allocates.
func (m *Model) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, m.NumParams())
	}
	tk := m.temporals()
	nt := tk.NumParams()
	tk.Params(dst[:nt])
	if m.spatial != nil {
		m.spatial.Params(dst[nt:])
	}
	return dst
}

// SetParams sets the unconstrained hyperparameters, all or nothing. A
// start (WithStart) is kept as it is, although it was computed with the
// old hyperparameters.
func (m *Model) SetParams(src []float64) error {
	if len(src) != m.NumParams() {
		return fmt.Errorf("filter: want %d model parameters, got %d", m.NumParams(), len(src))
	}
	for i, v := range src {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("filter: model parameter %d is not finite: %v", i, v)
		}
	}
	tk := m.temporals()
	nt := tk.NumParams()
	old := m.Params(nil)
	if err := tk.SetParams(src[:nt]); err != nil {
		return err
	}
	if m.spatial != nil {
		if err := m.spatial.SetParams(src[nt:]); err != nil {
			_ = tk.SetParams(old[:nt])
			return err
		}
	}
	if err := m.refresh(); err != nil {
		_ = tk.SetParams(old[:nt])
		if m.spatial != nil {
			_ = m.spatial.SetParams(old[nt:])
		}
		_ = m.refresh()
		return err
	}
	return nil
}

// Clone returns a deep copy whose hyperparameters can change independently,
// with the same start (WithStart).
func (m *Model) Clone() *Model {
	c := *m
	if m.temporal != nil {
		c.temporal = m.temporal.Clone()
	}
	if m.perProduct != nil {
		c.perProduct = make([]kernel.Temporal, len(m.perProduct))
		for i, k := range m.perProduct {
			c.perProduct[i] = k.Clone()
		}
		c.stk = newStack(c.perProduct)
		c.distinct = true // each cloned
	}
	if m.spatial != nil {
		c.spatial = m.spatial.Clone()
	}
	c.b = append([]float64(nil), m.b...)
	return &c
}

// ProductCov returns K_p[i,j] (1 on the diagonal for Independent).
func (m *Model) ProductCov(i, j int) float64 {
	if m.indep {
		if i == j {
			return 1
		}
		return 0
	}
	return m.spatial.Cov(m.features[i], m.features[j])
}

// checkTimes returns an error unless times are finite and strictly
// increasing.
func checkTimes(times []float64) error {
	for i, t := range times {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("filter: time %d is not finite: %v", i, t)
		}
		if i > 0 && !(t > times[i-1]) {
			if t == times[i-1] {
				return fmt.Errorf("filter: duplicate time %v at index %d", t, i)
			}
			return fmt.Errorf("filter: times not sorted: %v at index %d after %v", t, i, times[i-1])
		}
	}
	return nil
}
