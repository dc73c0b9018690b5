// Package linalg holds the small dense linear algebra shared by the
// Kalman filter, the kernels and CVI: row-major matrices in plain
// []float64, with hand-written loops for the tiny blocks of the per-bin
// recursions (a Matérn-5/2 chain is 3×3, a site block N_p×N_p) and gonum's
// BLAS and LAPACK above a size where their per-call overhead no longer
// dominates. Nothing here allocates for small matrices unless its
// comment says so.
package linalg
