package kernel

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/mathx"
)

// MaxHarmonics bounds the number of harmonics of the periodic kernels: the
// state dimension grows as 2(J+1) and the filter's cost as its cube, so
// larger values are certainly a mistake.
const MaxHarmonics = 1000

var periodicNames = []string{"variance", "lengthscale", "period"}

// Periodic is the exp-sine-squared kernel s·exp(−2 sin²(πτ/p)/ℓ²) in
// state-space form, as its cosine series truncated to harmonics j = 0..J:
//
//	k_J(τ) = Σ_{j≤J} q_j² cos(jω₀τ),  q_j² = c_j·s·Ive_j(ℓ⁻²),  ω₀ = 2π/p,
//
// with c_0 = 1, c_j = 2 otherwise. Each harmonic is a deterministic
// oscillator (a cos/sin pair), so the state has dimension 2(J+1), the
// transition is a block rotation and the process noise is exactly zero.
// Cov is the truncated series, which the state-space model represents
// exactly; ExactCov is the untruncated kernel. Truncation loses
// Σ_{j>J} q_j² of the variance: negligible for ℓ ≳ 1 and J ≥ 3, about 8% for
// ℓ = 0.5 and J = 3.
type Periodic struct {
	variance, lengthscale, period float64
	coef                          []float64 // q_j², j = 0..J
}

// NewPeriodic returns a periodic kernel with the given variance,
// lengthscale and period (all finite and positive) and harmonics J in
// [1, MaxHarmonics].
func NewPeriodic(variance, lengthscale, period float64, harmonics int) (*Periodic, error) {
	if harmonics < 1 || harmonics > MaxHarmonics {
		return nil, fmt.Errorf("kernel: periodic kernel needs 1 to %d harmonics, got %d", MaxHarmonics, harmonics)
	}
	k := &Periodic{coef: make([]float64, harmonics+1)}
	if err := k.set(variance, lengthscale, period); err != nil {
		return nil, err
	}
	return k, nil
}

// set validates and installs the hyperparameters, all-or-nothing.
func (k *Periodic) set(variance, lengthscale, period float64) error {
	for i, v := range [3]float64{variance, lengthscale, period} {
		if err := checkPositive("periodic "+periodicNames[i], v); err != nil {
			return err
		}
	}
	coef := make([]float64, len(k.coef))
	if err := periodicCoefficients(coef, variance, lengthscale); err != nil {
		return err
	}
	k.variance, k.lengthscale, k.period = variance, lengthscale, period
	k.coef = coef
	return nil
}

// periodicCoefficients writes q_j² = c_j·s·Ive_j(ℓ⁻²) for j = 0..len(dst)−1.
func periodicCoefficients(dst []float64, variance, lengthscale float64) error {
	z := 1 / (lengthscale * lengthscale)
	if math.IsInf(z, 0) {
		return fmt.Errorf("kernel: periodic lengthscale %v is too small (1/ℓ² overflows)", lengthscale)
	}
	iveSeq(dst, z)
	for j := range dst {
		dst[j] *= variance
		if j > 0 {
			dst[j] *= 2
		}
	}
	return nil
}

// harmonicSinCos returns sin and cos of j·ω₀·dt, ω₀ = 2π/p. Reducing
// dt modulo the period first (math.Mod is exact) keeps the angle small,
// so long gaps lose no accuracy and A(dt + p) = A(dt) to rounding.
func harmonicSinCos(j int, dt, period float64) (sin, cos float64) {
	phase := math.Mod(float64(j)*math.Mod(math.Abs(dt), period), period)
	return math.Sincos(2 * math.Pi * phase / period)
}

// cosineSeries returns Σ_j coef[j]·cos(jω₀τ).
func cosineSeries(coef []float64, tau, period float64) float64 {
	var sum float64
	for j, q := range coef {
		_, c := harmonicSinCos(j, tau, period)
		sum += q * c
	}
	return sum
}

// expSineSquared returns exp(−2 sin²(πτ/p)/ℓ²), the untruncated periodic
// correlation.
func expSineSquared(tau, lengthscale, period float64) float64 {
	s := math.Sin(math.Pi * math.Mod(math.Abs(tau), period) / period)
	return math.Exp(-2 * s * s / (lengthscale * lengthscale))
}

// Variance returns the marginal variance s of the untruncated kernel.
func (k *Periodic) Variance() float64 { return k.variance }

// Lengthscale returns the lengthscale ℓ.
func (k *Periodic) Lengthscale() float64 { return k.lengthscale }

// Period returns the period p.
func (k *Periodic) Period() float64 { return k.period }

// Harmonics returns the number of harmonics J.
func (k *Periodic) Harmonics() int { return len(k.coef) - 1 }

// Dim returns 2(J+1).
func (k *Periodic) Dim() int { return 2 * len(k.coef) }

// Measurement writes H = [1, 0, 1, 0, …]: the output is the sum of the
// cosine components.
func (k *Periodic) Measurement(h []float64) {
	for j := range k.coef {
		h[2*j], h[2*j+1] = 1, 0
	}
}

// Stationary writes Pinf = diag(q_0², …, q_J²) ⊗ I₂.
func (k *Periodic) Stationary(dst []float64) {
	d := k.Dim()
	clear(dst[:d*d])
	for j, q := range k.coef {
		i := 2 * j
		dst[i*d+i], dst[(i+1)*d+i+1] = q, q
	}
}

// Transition writes A(dt) = blockdiag_j R(jω₀dt), R(θ) = [[cos θ, −sin θ],
// [sin θ, cos θ]].
func (k *Periodic) Transition(dst []float64, dt float64) {
	d := k.Dim()
	clear(dst[:d*d])
	for j := range k.coef {
		s, c := harmonicSinCos(j, dt, k.period)
		i := 2 * j
		dst[i*d+i], dst[i*d+i+1] = c, -s
		dst[(i+1)*d+i], dst[(i+1)*d+i+1] = s, c
	}
}

// ProcessNoise writes Q(dt) = 0 exactly: A Pinf Aᵀ = Pinf because each
// rotation preserves the isotropic covariance q_j² I₂ of its block.
func (k *Periodic) ProcessNoise(dst []float64, dt float64) {
	d := k.Dim()
	clear(dst[:d*d])
}

// Drift writes F = diag(0, 1, …, J) ⊗ [[0, −ω₀], [ω₀, 0]].
func (k *Periodic) Drift(dst []float64) {
	d := k.Dim()
	clear(dst[:d*d])
	w0 := 2 * math.Pi / k.period
	for j := range k.coef {
		i := 2 * j
		w := float64(j) * w0
		dst[i*d+i+1], dst[(i+1)*d+i] = -w, w
	}
}

// Diffusion writes L Qc Lᵀ = 0: the oscillators are driven by no noise.
func (k *Periodic) Diffusion(dst []float64) {
	d := k.Dim()
	clear(dst[:d*d])
}

// Cov returns the truncated series Σ_{j≤J} q_j² cos(jω₀τ), which equals
// H A(|τ|) Pinf Hᵀ.
func (k *Periodic) Cov(tau float64) float64 { return cosineSeries(k.coef, tau, k.period) }

// ExactCov returns the untruncated kernel s·exp(−2 sin²(πτ/p)/ℓ²).
func (k *Periodic) ExactCov(tau float64) float64 {
	return k.variance * expSineSquared(tau, k.lengthscale, k.period)
}

// NumParams returns 3: variance, lengthscale and period.
func (k *Periodic) NumParams() int { return 3 }

// ParamNames returns ["variance", "lengthscale", "period"].
func (k *Periodic) ParamNames() []string { return periodicNames }

// Params writes softplus⁻¹ of variance, lengthscale and period into dst.
func (k *Periodic) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, 3)
	}
	dst[0], dst[1], dst[2] = mathx.SoftplusInv(k.variance), mathx.SoftplusInv(k.lengthscale), mathx.SoftplusInv(k.period)
	return dst
}

// SetParams sets variance, lengthscale and period from unconstrained
// values and recomputes the series weights.
func (k *Periodic) SetParams(src []float64) error {
	var v, l, p float64
	if err := setPositive(periodicNames, src, &v, &l, &p); err != nil {
		return err
	}
	return k.set(v, l, p)
}

// Clone returns an independent copy.
func (k *Periodic) Clone() Temporal {
	c := *k
	c.coef = append([]float64(nil), k.coef...)
	return &c
}
