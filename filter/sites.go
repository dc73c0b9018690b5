package filter

import (
	"fmt"
	"math"
)

// Sites are the Gaussian pseudo-observations of a CVI posterior, one per
// time bin over the N_p products of that bin, in natural parameters:
// t_n(f) ∝ exp(Nat1_nᵀ f − ½ fᵀ Nat2_n f). A product with zero precision
// (row and column of Nat2 zero) is unobserved in that bin, which is how
// missing products are expressed.
//
// With Full false, Nat2 holds only the diagonal (N·N_p values); with Full
// true it holds an N_p×N_p symmetric block per bin (N·N_p² values, row-major).
type Sites struct {
	N, NP int
	Full  bool
	Nat1  []float64
	Nat2  []float64
}

// NewSites returns N bins of zero sites (no information) over np products.
func NewSites(n, np int, full bool) *Sites {
	s := &Sites{N: n, NP: np, Full: full, Nat1: make([]float64, n*np)}
	if full {
		s.Nat2 = make([]float64, n*np*np)
	} else {
		s.Nat2 = make([]float64, n*np)
	}
	return s
}

// Clone returns a deep copy of s.
func (s *Sites) Clone() *Sites {
	c := *s
	c.Nat1 = append([]float64(nil), s.Nat1...)
	c.Nat2 = append([]float64(nil), s.Nat2...)
	return &c
}

// SameShape reports whether o has s's bins, products and site structure.
func (s *Sites) SameShape(o *Sites) bool {
	return o != nil && s.N == o.N && s.NP == o.NP && s.Full == o.Full && len(s.Nat1) == len(o.Nat1) && len(s.Nat2) == len(o.Nat2)
}

// SetGaussian sets the site of product k in bin n to the Gaussian
// observation y with noise variance r (precision 1/r), replacing what was
// there. r = +Inf clears it.
func (s *Sites) SetGaussian(n, k int, y, r float64) {
	prec := 1 / r
	s.Nat1[n*s.NP+k] = prec * y
	if s.Full {
		s.Nat2[(n*s.NP+k)*s.NP+k] = prec
	} else {
		s.Nat2[n*s.NP+k] = prec
	}
}

// Bin returns the natural parameters of bin n (views, not copies).
func (s *Sites) Bin(n int) (nat1, nat2 []float64) {
	np := s.NP
	nat1 = s.Nat1[n*np : (n+1)*np]
	if s.Full {
		return nat1, s.Nat2[n*np*np : (n+1)*np*np]
	}
	return nat1, s.Nat2[n*np : (n+1)*np]
}

// Validate checks shapes, finiteness, non-negative diagonal precision and
// symmetry of full blocks.
func (s *Sites) Validate() error {
	want2 := s.N * s.NP
	if s.Full {
		want2 *= s.NP
	}
	if len(s.Nat1) != s.N*s.NP || len(s.Nat2) != want2 {
		return fmt.Errorf("filter: sites hold %d/%d values, want %d/%d", len(s.Nat1), len(s.Nat2), s.N*s.NP, want2)
	}
	for i, v := range s.Nat1 {
		if v-v != 0 { // NaN or ±Inf
			return fmt.Errorf("filter: site bin %d product %d: natural mean not finite: %v", i/s.NP, i%s.NP, v)
		}
	}
	np := s.NP
	if !s.Full {
		for i, d := range s.Nat2 {
			if !(d >= 0) || d-d != 0 {
				return fmt.Errorf("filter: site bin %d product %d: precision must be finite and >= 0, got %v", i/np, i%np, d)
			}
			if d == 0 && s.Nat1[i] != 0 {
				return fmt.Errorf("filter: site bin %d product %d: zero precision with non-zero natural mean", i/np, i%np)
			}
		}
		return nil
	}
	for n := 0; n < s.N; n++ {
		_, l2 := s.Bin(n)
		for k := 0; k < np; k++ {
			var d float64
			if s.Full {
				d = l2[k*np+k]
				for j := 0; j < k; j++ {
					a, b := l2[k*np+j], l2[j*np+k]
					if math.IsNaN(a) || math.IsInf(a, 0) || a != b {
						return fmt.Errorf("filter: site bin %d: precision not symmetric/finite at (%d,%d)", n, k, j)
					}
				}
			} else {
				d = l2[k]
			}
			if !(d >= 0) || math.IsInf(d, 0) {
				return fmt.Errorf("filter: site bin %d product %d: precision must be finite and >= 0, got %v", n, k, d)
			}
		}
	}
	return nil
}

// ExpectedLog returns E_{N(f|m,P)}[log t_n(f)] for the site of bin n
// (m of length NP, P the NP×NP covariance), with the site's density as the
// filter defines it: t(f) = N(ỹ | f, Λ⁻¹) on the subspace where the
// precision Λ is positive, so that Σ_n ExpectedLog − log Z̃ is the KL term
// of the ELBO.
func (s *Sites) ExpectedLog(n int, m, P []float64) float64 {
	np := s.NP
	l1, l2 := s.Bin(n)
	if !s.Full {
		var sum float64
		for k := 0; k < np; k++ {
			lam := l2[k]
			if lam <= 0 {
				continue
			}
			y := l1[k] / lam
			r := y - m[k]
			sum += -0.5*log2Pi + 0.5*math.Log(lam) - 0.5*lam*(r*r+P[k*np+k])
		}
		return sum
	}
	// −½(λ₁ᵀΛ⁺λ₁ − 2λ₁ᵀm + mᵀΛm + tr(ΛP)) − (r/2)log 2π + ½ log pdet Λ.
	// Blocks of up to 8 products are decomposed without allocating.
	var idxBuf [8]int
	var buf [8 + 2*64]float64
	idx := positiveIndex(idxBuf[:0], l2, np)
	q := len(idx)
	if q == 0 {
		return 0
	}
	var vals, vecs, a []float64
	if q <= 8 {
		vals, vecs, a = buf[:q], buf[8:8+q*q], buf[8+64:8+64+q*q]
	} else {
		vals, vecs, a = make([]float64, q), make([]float64, q*q), make([]float64, q*q)
	}
	if !siteEigen(l2, np, idx, a, vals, vecs) {
		return math.NaN()
	}
	maxv := 0.0
	for _, v := range vals {
		maxv = math.Max(maxv, v)
	}
	var quad, logdet float64
	r := 0
	for c, v := range vals {
		if v <= 1e-13*maxv*float64(q) {
			continue
		}
		var z float64
		for a, i := range idx {
			z += vecs[a*q+c] * l1[i]
		}
		quad += z * z / v
		logdet += math.Log(v)
		r++
	}
	var lm, mLm, tr float64
	for _, i := range idx {
		lm += l1[i] * m[i]
		for _, j := range idx {
			mLm += m[i] * l2[i*np+j] * m[j]
			tr += l2[i*np+j] * P[j*np+i]
		}
	}
	return -0.5*(quad-2*lm+mLm+tr) - 0.5*float64(r)*log2Pi + 0.5*logdet
}
