// Package kernel holds the covariance functions of dcgpd's GP prior:
// temporal kernels with an exact linear state-space (SDE) form — Matérn
// 1/2, 3/2 and 5/2, periodic, quasi-periodic, and their sums and products —
// and kernels over product feature vectors (Matérn, RBF, Independent and
// separable products of them, with Euclidean, great-circle or chordal
// distances). Package filter runs the Kalman filter and smoother over them.
//
// Conventions. A temporal kernel of state dimension d exposes its
// measurement row H (1×d), its stationary covariance Pinf (d×d) and its
// transition A(dt) = expm(F dt) (d×d), all row-major into caller-owned
// slices; the process noise follows as Q(dt) = Pinf − A Pinf Aᵀ, exact for
// a stationary process (ProcessNoise, or a kernel's closed form).
// Hyperparameters are exposed in an unconstrained parameterisation,
// softplus⁻¹ of each positive quantity (internal/mathx), for optimisers.
package kernel
