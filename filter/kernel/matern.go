package kernel

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/mathx"
)

// checkPositive returns an error unless v is finite and > 0.
func checkPositive(name string, v float64) error {
	if !(v > 0) || math.IsInf(v, 1) {
		return fmt.Errorf("kernel: %s must be finite and > 0, got %v", name, v)
	}
	return nil
}

// setPositive decodes unconstrained values into positive hyperparameters,
// all-or-nothing.
func setPositive(names []string, src []float64, dst ...*float64) error {
	if len(src) != len(dst) {
		return fmt.Errorf("kernel: want %d parameters, got %d", len(dst), len(src))
	}
	vals := make([]float64, len(src))
	for i, x := range src {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("kernel: parameter %s is not finite: %v", names[i], x)
		}
		vals[i] = mathx.Softplus(x)
		if err := checkPositive(names[i], vals[i]); err != nil {
			return err
		}
	}
	for i, p := range dst {
		*p = vals[i]
	}
	return nil
}

var varianceLengthscale = []string{"variance", "lengthscale"}

// maternBase holds the two hyperparameters shared by the Matérn kernels.
type maternBase struct {
	variance, lengthscale float64
}

func newMaternBase(variance, lengthscale float64) (maternBase, error) {
	if err := checkPositive("variance", variance); err != nil {
		return maternBase{}, err
	}
	if err := checkPositive("lengthscale", lengthscale); err != nil {
		return maternBase{}, err
	}
	return maternBase{variance, lengthscale}, nil
}

// Variance returns the marginal variance s.
func (m *maternBase) Variance() float64 { return m.variance }

// Lengthscale returns the lengthscale ℓ.
func (m *maternBase) Lengthscale() float64 { return m.lengthscale }

// NumParams returns 2: variance and lengthscale.
func (m *maternBase) NumParams() int { return 2 }

// ParamNames returns ["variance", "lengthscale"].
func (m *maternBase) ParamNames() []string { return varianceLengthscale }

// Params writes softplus⁻¹ of variance and lengthscale into dst.
func (m *maternBase) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, 2)
	}
	dst[0], dst[1] = mathx.SoftplusInv(m.variance), mathx.SoftplusInv(m.lengthscale)
	return dst
}

// SetParams sets variance and lengthscale from unconstrained values.
func (m *maternBase) SetParams(src []float64) error {
	return setPositive(varianceLengthscale, src, &m.variance, &m.lengthscale)
}

// Matern12 is the exponential (Ornstein-Uhlenbeck) kernel s·exp(−|τ|/ℓ),
// state dimension 1.
type Matern12 struct{ maternBase }

// NewMatern12 returns a Matérn-1/2 kernel with the given variance and
// lengthscale, both of which must be finite and positive.
func NewMatern12(variance, lengthscale float64) (*Matern12, error) {
	b, err := newMaternBase(variance, lengthscale)
	if err != nil {
		return nil, err
	}
	return &Matern12{b}, nil
}

// Dim returns 1.
func (m *Matern12) Dim() int { return 1 }

// Measurement writes H = [1].
func (m *Matern12) Measurement(h []float64) { h[0] = 1 }

// Stationary writes Pinf = [s].
func (m *Matern12) Stationary(dst []float64) { dst[0] = m.variance }

// Transition writes A(dt) = [exp(−dt/ℓ)].
func (m *Matern12) Transition(dst []float64, dt float64) { dst[0] = math.Exp(-dt / m.lengthscale) }

// ProcessNoise writes Q(dt) = s(1 − exp(−2dt/ℓ)) without cancellation.
func (m *Matern12) ProcessNoise(dst []float64, dt float64) {
	dst[0] = -m.variance * math.Expm1(-2*dt/m.lengthscale)
}

// Drift writes F = [−1/ℓ].
func (m *Matern12) Drift(dst []float64) { dst[0] = -1 / m.lengthscale }

// Diffusion writes L Qc Lᵀ = [2s/ℓ].
func (m *Matern12) Diffusion(dst []float64) { dst[0] = 2 * m.variance / m.lengthscale }

// Cov returns s·exp(−|τ|/ℓ).
func (m *Matern12) Cov(tau float64) float64 {
	return m.variance * math.Exp(-math.Abs(tau)/m.lengthscale)
}

// Clone returns a copy.
func (m *Matern12) Clone() Temporal { c := *m; return &c }

// Matern32 is the Matérn-3/2 kernel s(1+√3r)exp(−√3r), r = |τ|/ℓ, state
// (f, f′) of dimension 2.
type Matern32 struct{ maternBase }

// NewMatern32 returns a Matérn-3/2 kernel with the given variance and
// lengthscale, both of which must be finite and positive.
func NewMatern32(variance, lengthscale float64) (*Matern32, error) {
	b, err := newMaternBase(variance, lengthscale)
	if err != nil {
		return nil, err
	}
	return &Matern32{b}, nil
}

// Dim returns 2.
func (m *Matern32) Dim() int { return 2 }

// Measurement writes H = [1, 0].
func (m *Matern32) Measurement(h []float64) { h[0], h[1] = 1, 0 }

// Stationary writes Pinf = diag(s, 3s/ℓ²).
func (m *Matern32) Stationary(dst []float64) {
	lam := math.Sqrt(3) / m.lengthscale
	dst[0], dst[1], dst[2], dst[3] = m.variance, 0, 0, lam*lam*m.variance
}

// Transition writes the closed form e^{−λdt}[[1+λdt, dt], [−λ²dt, 1−λdt]].
func (m *Matern32) Transition(dst []float64, dt float64) {
	lam := math.Sqrt(3) / m.lengthscale
	a := lam * dt
	e := math.Exp(-a)
	dst[0], dst[1] = e*(1+a), e*dt
	dst[2], dst[3] = -e*lam*lam*dt, e*(1-a)
}

// ProcessNoise writes the closed form of Q(dt) for the Matérn-3/2 kernel.
func (m *Matern32) ProcessNoise(dst []float64, dt float64) {
	lam := math.Sqrt(3) / m.lengthscale
	a := lam * dt
	e2 := math.Exp(-2 * a)
	s := m.variance
	q01 := 2 * s * lam * a * a * e2
	dst[0] = s * (1 - e2*(1+2*a+2*a*a))
	dst[1], dst[2] = q01, q01
	dst[3] = s * lam * lam * (1 - e2*(1-2*a+2*a*a))
}

// Drift writes F = [[0, 1], [−λ², −2λ]], λ = √3/ℓ.
func (m *Matern32) Drift(dst []float64) {
	lam := math.Sqrt(3) / m.lengthscale
	dst[0], dst[1], dst[2], dst[3] = 0, 1, -lam*lam, -2*lam
}

// Diffusion writes L Qc Lᵀ = diag(0, 4λ³s).
func (m *Matern32) Diffusion(dst []float64) {
	lam := math.Sqrt(3) / m.lengthscale
	dst[0], dst[1], dst[2], dst[3] = 0, 0, 0, 4*lam*lam*lam*m.variance
}

// Cov returns s(1+√3r)exp(−√3r).
func (m *Matern32) Cov(tau float64) float64 {
	r := math.Sqrt(3) * math.Abs(tau) / m.lengthscale
	return m.variance * (1 + r) * math.Exp(-r)
}

// Clone returns a copy.
func (m *Matern32) Clone() Temporal { c := *m; return &c }

// Matern52 is the Matérn-5/2 kernel s(1+√5r+5r²/3)exp(−√5r), r = |τ|/ℓ,
// state (f, f′, f″) of dimension 3.
type Matern52 struct{ maternBase }

// NewMatern52 returns a Matérn-5/2 kernel with the given variance and
// lengthscale, both of which must be finite and positive.
func NewMatern52(variance, lengthscale float64) (*Matern52, error) {
	b, err := newMaternBase(variance, lengthscale)
	if err != nil {
		return nil, err
	}
	return &Matern52{b}, nil
}

// Dim returns 3.
func (m *Matern52) Dim() int { return 3 }

// Measurement writes H = [1, 0, 0].
func (m *Matern52) Measurement(h []float64) { h[0], h[1], h[2] = 1, 0, 0 }

// Stationary writes Pinf = [[s,0,−κ],[0,κ,0],[−κ,0,λ⁴s]], κ = λ²s/3.
func (m *Matern52) Stationary(dst []float64) {
	lam := math.Sqrt(5) / m.lengthscale
	s := m.variance
	k := lam * lam * s / 3
	copy(dst[:9], []float64{s, 0, -k, 0, k, 0, -k, 0, lam * lam * lam * lam * s})
}

// Transition writes the closed form e^{−λdt}(I + dt·G) of expm(F dt).
func (m *Matern52) Transition(dst []float64, dt float64) {
	lam := math.Sqrt(5) / m.lengthscale
	ld := lam * dt
	e := math.Exp(-ld)
	l2, l3 := lam*lam, lam*lam*lam
	g := [9]float64{
		lam * (ld/2 + 1), ld + 1, dt / 2,
		-l3 * dt / 2, lam * (1 - ld), 1 - ld/2,
		l3 * (ld/2 - 1), l2 * (ld - 3), lam * (ld/2 - 2),
	}
	for i := 0; i < 9; i++ {
		v := dt * g[i]
		if i%4 == 0 {
			v++
		}
		dst[i] = e * v
	}
}

// Drift writes F = [[0,1,0],[0,0,1],[−λ³,−3λ²,−3λ]], λ = √5/ℓ.
func (m *Matern52) Drift(dst []float64) {
	lam := math.Sqrt(5) / m.lengthscale
	copy(dst[:9], []float64{0, 1, 0, 0, 0, 1, -lam * lam * lam, -3 * lam * lam, -3 * lam})
}

// Diffusion writes L Qc Lᵀ = diag(0, 0, 16λ⁵s/3).
func (m *Matern52) Diffusion(dst []float64) {
	lam := math.Sqrt(5) / m.lengthscale
	for i := range dst[:9] {
		dst[i] = 0
	}
	dst[8] = 16 * math.Pow(lam, 5) * m.variance / 3
}

// Cov returns s(1+√5r+5r²/3)exp(−√5r).
func (m *Matern52) Cov(tau float64) float64 {
	r := math.Sqrt(5) * math.Abs(tau) / m.lengthscale
	return m.variance * (1 + r + r*r/3) * math.Exp(-r)
}

// Clone returns a copy.
func (m *Matern52) Clone() Temporal { c := *m; return &c }
