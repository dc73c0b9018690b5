package kernel

import "github.com/dcgpd/dcgpd/internal/linalg"

// Temporal is a stationary covariance function over time with an exact
// linear state-space representation of state dimension Dim.
//
// Matrices are written row-major into caller-owned slices so that the
// Kalman recursions can reuse buffers; implementations must not retain
// them. Implementations are not safe for concurrent mutation: use Clone to
// give each goroutine its own copy.
type Temporal interface {
	// Dim returns the state dimension d.
	Dim() int
	// Measurement writes the measurement row H (length d) into h.
	Measurement(h []float64)
	// Stationary writes the stationary state covariance Pinf (d×d) into dst.
	Stationary(dst []float64)
	// Transition writes A(dt) = expm(F·dt) (d×d) into dst; dt must be >= 0.
	Transition(dst []float64, dt float64)
	// Drift writes the SDE feedback matrix F (d×d) into dst.
	Drift(dst []float64)
	// Diffusion writes the SDE noise term L·Qc·Lᵀ (d×d) into dst, so that
	// F Pinf + Pinf Fᵀ + L Qc Lᵀ = 0.
	Diffusion(dst []float64)
	// Cov returns the covariance function k(tau) = H A(|tau|) Pinf Hᵀ.
	Cov(tau float64) float64
	// Params describes the kernel's hyperparameters.
	Params
	// Clone returns an independent copy.
	Clone() Temporal
}

// Params is the hyperparameter view shared by every kernel: a vector of
// unconstrained reals (e.g. softplus⁻¹ of a lengthscale) that optimisers
// can move freely, with a name per entry.
type Params interface {
	// NumParams returns the number of hyperparameters.
	NumParams() int
	// ParamNames returns a name per hyperparameter, e.g. "lengthscale".
	ParamNames() []string
	// Params writes the unconstrained hyperparameters into dst, which must
	// have length NumParams, and returns it. A nil dst allocates.
	Params(dst []float64) []float64
	// SetParams sets the hyperparameters from unconstrained values. It
	// returns an error, leaving the kernel unchanged, if a value is not
	// finite or maps to an invalid hyperparameter.
	SetParams(src []float64) error
}

// ProcessNoiser is implemented by kernels that have a closed form for the
// process noise Q(dt) = Pinf − A(dt) Pinf A(dt)ᵀ that is more accurate than
// the generic subtraction (e.g. exactly zero for deterministic oscillators).
type ProcessNoiser interface {
	// ProcessNoise writes Q(dt) (d×d) into dst.
	ProcessNoise(dst []float64, dt float64)
}

// ScratchProcessNoiser is implemented by composite kernels whose blocks may
// lack a closed form for Q(dt) and so need scratch space, which they take
// from ProcessNoise's caller rather than hold their own (the filter's
// per-product stack of kernels).
type ScratchProcessNoiser interface {
	// ProcessNoiseScratch writes Q(dt) (d×d) into dst using work as
	// scratch, as the package function ProcessNoise does.
	ProcessNoiseScratch(dst []float64, dt float64, work []float64)
}

// ProcessNoise writes Q(dt) = Pinf − A Pinf Aᵀ for kernel k into dst. It
// uses the kernel's closed form when it has one (ProcessNoiser, or
// ScratchProcessNoiser with work). work, if non-nil, must have length at
// least 3d² and is used as scratch space.
func ProcessNoise(k Temporal, dst []float64, dt float64, work []float64) {
	if pw, ok := k.(ScratchProcessNoiser); ok {
		pw.ProcessNoiseScratch(dst, dt, work)
		return
	}
	if pn, ok := k.(ProcessNoiser); ok {
		pn.ProcessNoise(dst, dt)
		return
	}
	d := k.Dim()
	if len(work) < 3*d*d {
		work = make([]float64, 3*d*d)
	}
	a, pinf, tmp := work[:d*d], work[d*d:2*d*d], work[2*d*d:3*d*d]
	k.Transition(a, dt)
	k.Stationary(pinf)
	// dst = Pinf − (A Pinf) Aᵀ, then symmetrised against rounding.
	linalg.MatMul(tmp, a, pinf, d, d, d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			var s float64
			for l := 0; l < d; l++ {
				s += tmp[i*d+l] * a[j*d+l]
			}
			dst[i*d+j] = pinf[i*d+j] - s
		}
	}
	linalg.Symmetrize(dst, d)
}
