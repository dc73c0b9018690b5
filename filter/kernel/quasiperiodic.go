package kernel

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/linalg"
	"github.com/dcgpd/dcgpd/internal/mathx"
)

var quasiPeriodicNames = []string{"variance", "lengthscale", "period", "matern_lengthscale"}

// QuasiPeriodic is the product of a truncated periodic kernel and a Matérn
// kernel, s·k_M(τ)·Σ_{j≤J} q̃_j² cos(jω₀τ) with q̃_j² = c_j·Ive_j(ℓ_p⁻²): a
// periodic pattern whose shape drifts over the Matérn lengthscale. The one
// variance s sits in the Matérn factor, so there is no redundant scale.
//
// The state has one block of size 2m per harmonic (m = 1, 2, 3 for Matérn
// orders 1/2, 3/2, 5/2): block j is the Matérn SDE ⊗ the j-th oscillator,
// Matérn index outer and cos/sin inner, so that
//
//	F_j = F_M ⊗ I₂ + I_m ⊗ jω₀[[0, −1], [1, 0]],  Pinf_j = Pinf_M ⊗ q̃_j² I₂,
//	A_j = A_M ⊗ R(jω₀dt),                        Q_j = Q_M ⊗ q̃_j² I₂.
//
// The last identity holds because rotations preserve q̃_j² I₂, and gives the
// process noise without the cancellation of Pinf − A Pinf Aᵀ.
type QuasiPeriodic struct {
	variance, lengthscale, period, maternLengthscale float64
	order                                            int       // 12, 32 or 52
	coef                                             []float64 // q̃_j², j = 0..J (no variance)
}

// NewQuasiPeriodic returns the product of a periodic kernel (lengthscale
// periodLengthscale, period, harmonics J in [1, MaxHarmonics]) and a Matérn
// kernel of the given order (12, 32 or 52 for ν = 1/2, 3/2, 5/2) with
// lengthscale maternLengthscale, with overall variance s. All real
// arguments must be finite and positive.
func NewQuasiPeriodic(variance, periodLengthscale, period, maternLengthscale float64, harmonics, maternOrder int) (*QuasiPeriodic, error) {
	if harmonics < 1 || harmonics > MaxHarmonics {
		return nil, fmt.Errorf("kernel: quasi-periodic kernel needs 1 to %d harmonics, got %d", MaxHarmonics, harmonics)
	}
	switch maternOrder {
	case 12, 32, 52:
	default:
		return nil, fmt.Errorf("kernel: quasi-periodic Matérn order must be 12, 32 or 52, got %d", maternOrder)
	}
	k := &QuasiPeriodic{order: maternOrder, coef: make([]float64, harmonics+1)}
	if err := k.set(variance, periodLengthscale, period, maternLengthscale); err != nil {
		return nil, err
	}
	return k, nil
}

// set validates and installs the hyperparameters, all-or-nothing.
func (k *QuasiPeriodic) set(variance, lengthscale, period, maternLengthscale float64) error {
	for i, v := range [4]float64{variance, lengthscale, period, maternLengthscale} {
		if err := checkPositive("quasi-periodic "+quasiPeriodicNames[i], v); err != nil {
			return err
		}
	}
	coef := make([]float64, len(k.coef))
	if err := periodicCoefficients(coef, 1, lengthscale); err != nil {
		return err
	}
	k.variance, k.lengthscale, k.period, k.maternLengthscale = variance, lengthscale, period, maternLengthscale
	k.coef = coef
	return nil
}

// Variance returns the marginal variance s of the untruncated kernel.
func (k *QuasiPeriodic) Variance() float64 { return k.variance }

// Lengthscale returns the periodic lengthscale ℓ_p.
func (k *QuasiPeriodic) Lengthscale() float64 { return k.lengthscale }

// Period returns the period p.
func (k *QuasiPeriodic) Period() float64 { return k.period }

// MaternLengthscale returns the Matérn lengthscale ℓ_m.
func (k *QuasiPeriodic) MaternLengthscale() float64 { return k.maternLengthscale }

// MaternOrder returns 12, 32 or 52.
func (k *QuasiPeriodic) MaternOrder() int { return k.order }

// Harmonics returns the number of harmonics J.
func (k *QuasiPeriodic) Harmonics() int { return len(k.coef) - 1 }

// matern returns the Matérn factor, carrying the variance. It is a value
// type dispatched by a switch rather than an interface so that the small
// scratch arrays of the methods below stay on the stack.
func (k *QuasiPeriodic) matern() qpMatern {
	return qpMatern{k.order, maternBase{k.variance, k.maternLengthscale}}
}

// Dim returns 2m(J+1), m the Matérn state dimension.
func (k *QuasiPeriodic) Dim() int { return 2 * k.matern().dim() * len(k.coef) }

// Measurement writes H = [H_M ⊗ (1, 0)] for every harmonic.
func (k *QuasiPeriodic) Measurement(h []float64) {
	m := k.matern().dim()
	blk := 2 * m
	for j := range k.coef {
		clear(h[j*blk : (j+1)*blk])
		h[j*blk] = 1 // H_M = [1, 0, …]
	}
}

// Stationary writes Pinf = blockdiag_j Pinf_M ⊗ q̃_j² I₂.
func (k *QuasiPeriodic) Stationary(dst []float64) {
	mt := k.matern()
	var pm [9]float64
	mt.stationary(pm[:])
	k.assemble(dst, pm[:], func(j int) (float64, float64, float64, float64) {
		q := k.coef[j]
		return q, 0, 0, q
	})
}

// Transition writes A(dt) = blockdiag_j A_M(dt) ⊗ R(jω₀dt).
func (k *QuasiPeriodic) Transition(dst []float64, dt float64) {
	mt := k.matern()
	var am [9]float64
	mt.transition(am[:], dt)
	k.assemble(dst, am[:], func(j int) (float64, float64, float64, float64) {
		s, c := harmonicSinCos(j, dt, k.period)
		return c, -s, s, c
	})
}

// ProcessNoise writes Q(dt) = blockdiag_j Q_M(dt) ⊗ q̃_j² I₂, using the
// Matérn closed form where there is one.
func (k *QuasiPeriodic) ProcessNoise(dst []float64, dt float64) {
	mt := k.matern()
	var qm [9]float64
	mt.processNoise(qm[:], dt)
	k.assemble(dst, qm[:], func(j int) (float64, float64, float64, float64) {
		q := k.coef[j]
		return q, 0, 0, q
	})
}

// Drift writes F = blockdiag_j (F_M ⊗ I₂ + I_m ⊗ jω₀[[0, −1], [1, 0]]).
func (k *QuasiPeriodic) Drift(dst []float64) {
	mt := k.matern()
	var fm [9]float64
	mt.drift(fm[:])
	k.assemble(dst, fm[:], func(int) (float64, float64, float64, float64) { return 1, 0, 0, 1 })
	m := mt.dim()
	d, blk := k.Dim(), 2*m
	w0 := 2 * math.Pi / k.period
	for j := range k.coef {
		w := float64(j) * w0
		for a := 0; a < m; a++ {
			i := j*blk + 2*a
			dst[i*d+i+1] -= w
			dst[(i+1)*d+i] += w
		}
	}
}

// Diffusion writes L Qc Lᵀ = blockdiag_j D_M ⊗ q̃_j² I₂.
func (k *QuasiPeriodic) Diffusion(dst []float64) {
	mt := k.matern()
	var dm [9]float64
	mt.diffusion(dm[:])
	k.assemble(dst, dm[:], func(j int) (float64, float64, float64, float64) {
		q := k.coef[j]
		return q, 0, 0, q
	})
}

// assemble writes the block-diagonal d×d matrix whose block j is
// mat ⊗ [[r00, r01], [r10, r11]] with the 2×2 factor from inner(j); mat is
// the m×m Matérn factor, row-major.
func (k *QuasiPeriodic) assemble(dst, mat []float64, inner func(j int) (r00, r01, r10, r11 float64)) {
	m := k.matern().dim()
	d, blk := k.Dim(), 2*m
	clear(dst[:d*d])
	for j := range k.coef {
		r00, r01, r10, r11 := inner(j)
		o := j * blk
		for a := 0; a < m; a++ {
			for b := 0; b < m; b++ {
				v := mat[a*m+b]
				row, col := o+2*a, o+2*b
				dst[row*d+col], dst[row*d+col+1] = v*r00, v*r01
				dst[(row+1)*d+col], dst[(row+1)*d+col+1] = v*r10, v*r11
			}
		}
	}
}

// Cov returns s·k_M(τ)·Σ_{j≤J} q̃_j² cos(jω₀τ) (the truncated series, equal
// to H A(|τ|) Pinf Hᵀ).
func (k *QuasiPeriodic) Cov(tau float64) float64 {
	return k.matern().cov(tau) * cosineSeries(k.coef, tau, k.period)
}

// ExactCov returns the untruncated kernel s·k_M(τ)·exp(−2 sin²(πτ/p)/ℓ_p²).
func (k *QuasiPeriodic) ExactCov(tau float64) float64 {
	return k.matern().cov(tau) * expSineSquared(tau, k.lengthscale, k.period)
}

// NumParams returns 4.
func (k *QuasiPeriodic) NumParams() int { return 4 }

// ParamNames returns ["variance", "lengthscale", "period",
// "matern_lengthscale"]; "lengthscale" is the periodic one.
func (k *QuasiPeriodic) ParamNames() []string { return quasiPeriodicNames }

// Params writes softplus⁻¹ of the four hyperparameters into dst.
func (k *QuasiPeriodic) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, 4)
	}
	dst[0], dst[1] = mathx.SoftplusInv(k.variance), mathx.SoftplusInv(k.lengthscale)
	dst[2], dst[3] = mathx.SoftplusInv(k.period), mathx.SoftplusInv(k.maternLengthscale)
	return dst
}

// SetParams sets the four hyperparameters from unconstrained values and
// recomputes the series weights.
func (k *QuasiPeriodic) SetParams(src []float64) error {
	var v, l, p, lm float64
	if err := setPositive(quasiPeriodicNames, src, &v, &l, &p, &lm); err != nil {
		return err
	}
	return k.set(v, l, p, lm)
}

// Clone returns an independent copy.
func (k *QuasiPeriodic) Clone() Temporal {
	c := *k
	c.coef = append([]float64(nil), k.coef...)
	return &c
}

// qpMatern is the Matérn factor of QuasiPeriodic. Dispatching on the order
// with a switch calls the concrete Matérn methods, whose arguments do not
// escape, so the callers' fixed-size arrays need no heap allocation.
type qpMatern struct {
	order int
	base  maternBase
}

func (m qpMatern) dim() int {
	switch m.order {
	case 12:
		return 1
	case 32:
		return 2
	}
	return 3
}

func (m qpMatern) stationary(dst []float64) {
	switch m.order {
	case 12:
		(&Matern12{m.base}).Stationary(dst)
	case 32:
		(&Matern32{m.base}).Stationary(dst)
	default:
		(&Matern52{m.base}).Stationary(dst)
	}
}

func (m qpMatern) transition(dst []float64, dt float64) {
	switch m.order {
	case 12:
		(&Matern12{m.base}).Transition(dst, dt)
	case 32:
		(&Matern32{m.base}).Transition(dst, dt)
	default:
		(&Matern52{m.base}).Transition(dst, dt)
	}
}

// processNoise uses the Matérn closed forms for orders 1/2 and 3/2 and
// Pinf − A Pinf Aᵀ (3×3, on the stack) for 5/2, which has none.
func (m qpMatern) processNoise(dst []float64, dt float64) {
	switch m.order {
	case 12:
		(&Matern12{m.base}).ProcessNoise(dst, dt)
	case 32:
		(&Matern32{m.base}).ProcessNoise(dst, dt)
	default:
		var a, p, ap [9]float64
		k := &Matern52{m.base}
		k.Transition(a[:], dt)
		k.Stationary(p[:])
		linalg.MatMul(ap[:], a[:], p[:], 3, 3, 3)
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				var s float64
				for l := 0; l < 3; l++ {
					s += ap[i*3+l] * a[j*3+l]
				}
				dst[i*3+j] = p[i*3+j] - s
			}
		}
		linalg.Symmetrize(dst[:9], 3)
	}
}

func (m qpMatern) drift(dst []float64) {
	switch m.order {
	case 12:
		(&Matern12{m.base}).Drift(dst)
	case 32:
		(&Matern32{m.base}).Drift(dst)
	default:
		(&Matern52{m.base}).Drift(dst)
	}
}

func (m qpMatern) diffusion(dst []float64) {
	switch m.order {
	case 12:
		(&Matern12{m.base}).Diffusion(dst)
	case 32:
		(&Matern32{m.base}).Diffusion(dst)
	default:
		(&Matern52{m.base}).Diffusion(dst)
	}
}

func (m qpMatern) cov(tau float64) float64 {
	switch m.order {
	case 12:
		return (&Matern12{m.base}).Cov(tau)
	case 32:
		return (&Matern32{m.base}).Cov(tau)
	}
	return (&Matern52{m.base}).Cov(tau)
}
