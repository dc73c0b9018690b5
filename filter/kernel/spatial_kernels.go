package kernel

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/dcgpd/dcgpd/internal/errs"
	"github.com/dcgpd/dcgpd/internal/geo"
	"github.com/dcgpd/dcgpd/internal/mathx"
)

// Metric says how a spatial kernel measures the distance between two
// feature vectors (see geo.Metric).
type Metric = geo.Metric

const (
	// Euclidean treats features as coordinates, with one lengthscale per
	// feature (automatic relevance determination):
	// r = √(Σ_i ((p_i − q_i)/ℓ_i)²).
	Euclidean = geo.Euclidean
	// GreatCircle treats features as (latitude, longitude) in degrees and
	// uses the great-circle distance in metres over one lengthscale in
	// metres: r = geo.Haversine(p, q)/ℓ. Only the Matérn-1/2 kernel is
	// guaranteed positive definite on the whole sphere with this distance
	// (Gneiting 2013); smoother kernels are safe in practice when ℓ and the
	// points' spread are small against the Earth's radius, and Chordal is
	// the always-valid alternative.
	GreatCircle = geo.GreatCircle
	// Chordal is GreatCircle with the straight-line distance through the
	// Earth, 2R·sin(c/2) for central angle c. It is a Euclidean distance in
	// ℝ³, so every kernel stays positive definite, and it differs from the
	// great-circle distance by a factor of about 1 − c²/24: under 0.1% up to
	// about 1000 km.
	Chordal = geo.Chordal
)

// scaledDistance is a metric with its lengthscales: one per feature for
// Euclidean, a single one in metres for the geographic metrics.
type scaledDistance struct {
	metric Metric
	ls     []float64
}

func newScaledDistance(metric Metric, ls []float64) (scaledDistance, error) {
	switch metric {
	case Euclidean:
		if len(ls) == 0 {
			return scaledDistance{}, errors.New("kernel: a Euclidean spatial kernel needs at least one lengthscale")
		}
	case GreatCircle, Chordal:
		if len(ls) != 1 {
			return scaledDistance{}, fmt.Errorf("kernel: a %v spatial kernel needs exactly one lengthscale (metres), got %d", metric, len(ls))
		}
	default:
		return scaledDistance{}, fmt.Errorf("kernel: unknown metric %v", metric)
	}
	for i, l := range ls {
		if err := checkPositive("lengthscale "+strconv.Itoa(i), l); err != nil {
			return scaledDistance{}, err
		}
	}
	return scaledDistance{metric, append([]float64(nil), ls...)}, nil
}

// dim returns the number of features the metric reads.
func (d *scaledDistance) dim() int {
	if d.metric == Euclidean {
		return len(d.ls)
	}
	return 2
}

// scaled2 returns r², the squared distance over the lengthscales, from
// the differences directly (no |p|² + |q|² − 2p·q expansion), so r(p, p) is
// exactly 0. p and q must have length dim.
func (d *scaledDistance) scaled2(p, q []float64) float64 {
	switch d.metric {
	case GreatCircle, Chordal:
		r := d.metric.Distance(p, q) / d.ls[0]
		return r * r
	}
	var s float64
	for i, l := range d.ls {
		x := (p[i] - q[i]) / l
		s += x * x
	}
	return s
}

// check validates a Gram request: dst large enough, every feature vector
// of length dim and finite, latitudes within ±90°.
func (d *scaledDistance) check(dst []float64, features [][]float64) error {
	if err := checkGramDst(dst, len(features)); err != nil {
		return err
	}
	dim := d.dim()
	for i, f := range features {
		if len(f) != dim {
			return fmt.Errorf("kernel: feature vector %d has length %d, want %d", i, len(f), dim)
		}
		if err := checkFeatureFinite(i, f); err != nil {
			return err
		}
		if d.metric != Euclidean && math.Abs(f[0]) > 90 {
			return fmt.Errorf("kernel: feature vector %d: latitude %v outside [−90, 90]", i, f[0])
		}
	}
	return nil
}

// checkGramDst returns an error unless dst can hold an n×n matrix.
func checkGramDst(dst []float64, n int) error {
	if len(dst) < n*n {
		return fmt.Errorf("kernel: Gram destination has length %d, want %d", len(dst), n*n)
	}
	return nil
}

// checkFeatureFinite returns an error if feature vector i has a NaN or Inf.
func checkFeatureFinite(i int, f []float64) error {
	for j, v := range f {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("kernel: feature vector %d entry %d is not finite: %v", i, j, v)
		}
	}
	return nil
}

// stationarySpatial holds what the Matérn and RBF spatial kernels share: a
// variance, a metric with its lengthscales, and the parameter plumbing.
type stationarySpatial struct {
	variance float64
	dist     scaledDistance
	names    []string // "variance", then "lengthscale" or "lengthscale.i"
}

func newStationarySpatial(metric Metric, variance float64, ls []float64) (stationarySpatial, error) {
	if err := checkPositive("variance", variance); err != nil {
		return stationarySpatial{}, err
	}
	d, err := newScaledDistance(metric, ls)
	if err != nil {
		return stationarySpatial{}, err
	}
	names := []string{"variance"}
	if len(ls) == 1 {
		names = append(names, "lengthscale")
	} else {
		for i := range ls {
			names = append(names, "lengthscale."+strconv.Itoa(i))
		}
	}
	return stationarySpatial{variance, d, names}, nil
}

// Variance returns the marginal variance s.
func (k *stationarySpatial) Variance() float64 { return k.variance }

// Lengthscales returns a copy of the lengthscales: one per feature for
// Euclidean, one in metres for the geographic metrics.
func (k *stationarySpatial) Lengthscales() []float64 { return append([]float64(nil), k.dist.ls...) }

// Metric returns the distance metric.
func (k *stationarySpatial) Metric() Metric { return k.dist.metric }

// Dim returns the number of features the kernel reads (2 for the
// geographic metrics: latitude, longitude).
func (k *stationarySpatial) Dim() int { return k.dist.dim() }

// NumParams returns 1 + the number of lengthscales.
func (k *stationarySpatial) NumParams() int { return len(k.names) }

// ParamNames returns "variance" then "lengthscale" (one lengthscale) or
// "lengthscale.0", "lengthscale.1", … (several). The slice is shared: do
// not modify it.
func (k *stationarySpatial) ParamNames() []string { return k.names }

// Params writes softplus⁻¹ of the variance and lengthscales into dst.
func (k *stationarySpatial) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, len(k.names))
	}
	dst[0] = mathx.SoftplusInv(k.variance)
	for i, l := range k.dist.ls {
		dst[1+i] = mathx.SoftplusInv(l)
	}
	return dst
}

// SetParams sets the variance and lengthscales from unconstrained values,
// all-or-nothing.
func (k *stationarySpatial) SetParams(src []float64) error {
	ptrs := make([]*float64, 0, len(k.names))
	ptrs = append(ptrs, &k.variance)
	for i := range k.dist.ls {
		ptrs = append(ptrs, &k.dist.ls[i])
	}
	return setPositive(k.names, src, ptrs...)
}

// clone returns a deep copy.
func (k *stationarySpatial) clone() stationarySpatial {
	c := *k
	c.dist.ls = append([]float64(nil), k.dist.ls...)
	return c
}

// cov returns s·corr(r²) for p and q, or NaN if either has the wrong
// length.
func (k *stationarySpatial) cov(p, q []float64, corr func(r2 float64) float64) float64 {
	dim := k.dist.dim()
	if len(p) != dim || len(q) != dim {
		return math.NaN()
	}
	return k.variance * corr(k.dist.scaled2(p, q))
}

// gram writes the Gram matrix, computing the upper triangle and mirroring
// it so the result is exactly symmetric; the diagonal is exactly s.
func (k *stationarySpatial) gram(dst []float64, features [][]float64, corr func(r2 float64) float64) error {
	if err := k.dist.check(dst, features); err != nil {
		return err
	}
	n := len(features)
	for i := 0; i < n; i++ {
		dst[i*n+i] = k.variance * corr(0)
		for j := i + 1; j < n; j++ {
			v := k.variance * corr(k.dist.scaled2(features[i], features[j]))
			dst[i*n+j], dst[j*n+i] = v, v
		}
	}
	return nil
}

// maternCorr returns the Matérn correlation of order 12, 32 or 52 at
// squared scaled distance r².
func maternCorr(order int, r2 float64) float64 {
	r := math.Sqrt(r2)
	if r > 800 {
		// Past this exp underflows to 0; stopping here also keeps the
		// polynomial factor from overflowing into Inf·0 = NaN.
		return 0
	}
	switch order {
	case 12:
		return math.Exp(-r)
	case 32:
		a := math.Sqrt(3) * r
		return (1 + a) * math.Exp(-a)
	}
	a := math.Sqrt(5) * r
	return (1 + a + a*a/3) * math.Exp(-a)
}

// MaternSpatial is the Matérn kernel over product features,
// s·ρ_ν(r) with ρ_{1/2}(r) = e^{−r}, ρ_{3/2}(r) = (1+√3r)e^{−√3r} and
// ρ_{5/2}(r) = (1+√5r+5r²/3)e^{−√5r}, where r is the scaled distance of
// its Metric.
type MaternSpatial struct {
	stationarySpatial
	order int
}

// NewMaternSpatial returns a Matérn kernel of the given order (12, 32 or
// 52 for ν = 1/2, 3/2, 5/2) with the given variance and metric. For
// Euclidean give one lengthscale per feature; for GreatCircle and Chordal
// give exactly one, in metres, and features (latitude, longitude) in
// degrees. Variance and lengthscales must be finite and positive.
func NewMaternSpatial(order int, metric Metric, variance float64, lengthscales ...float64) (*MaternSpatial, error) {
	switch order {
	case 12, 32, 52:
	default:
		return nil, fmt.Errorf("kernel: Matérn order must be 12, 32 or 52, got %d", order)
	}
	b, err := newStationarySpatial(metric, variance, lengthscales)
	if err != nil {
		return nil, errs.Within("kernel", err, "Matérn spatial kernel")
	}
	return &MaternSpatial{b, order}, nil
}

func (k *MaternSpatial) corr(r2 float64) float64 { return maternCorr(k.order, r2) }

// Cov returns k(p, q), or NaN if p or q does not have length Dim.
func (k *MaternSpatial) Cov(p, q []float64) float64 { return k.cov(p, q, k.corr) }

// Gram writes the n×n Gram matrix of the features into dst. It returns an
// error if dst is shorter than n², a feature vector does not have length
// Dim or is not finite, or a latitude is outside ±90°.
func (k *MaternSpatial) Gram(dst []float64, features [][]float64) error {
	return k.gram(dst, features, k.corr)
}

// Clone returns an independent copy.
func (k *MaternSpatial) Clone() Spatial { return &MaternSpatial{k.clone(), k.order} }

// RBF is the squared-exponential kernel s·exp(−r²/2), r the scaled
// distance of its Metric (with ARD lengthscales for Euclidean).
type RBF struct {
	stationarySpatial
}

// NewRBF returns a squared-exponential kernel with the given variance and
// metric; lengthscales as for NewMaternSpatial.
func NewRBF(metric Metric, variance float64, lengthscales ...float64) (*RBF, error) {
	b, err := newStationarySpatial(metric, variance, lengthscales)
	if err != nil {
		return nil, errs.Within("kernel", err, "RBF kernel")
	}
	return &RBF{b}, nil
}

func rbfCorr(r2 float64) float64 { return math.Exp(-r2 / 2) }

// Cov returns k(p, q), or NaN if p or q does not have length Dim.
func (k *RBF) Cov(p, q []float64) float64 { return k.cov(p, q, rbfCorr) }

// Gram writes the n×n Gram matrix of the features into dst, with the same
// errors as MaternSpatial.Gram.
func (k *RBF) Gram(dst []float64, features [][]float64) error {
	return k.gram(dst, features, rbfCorr)
}

// Clone returns an independent copy.
func (k *RBF) Clone() Spatial { return &RBF{k.clone()} }

// Independent is the kernel of a priori independent products: its Gram
// matrix is the identity whatever the features, so each row is its own
// product even if two rows have equal features. Cov, which sees only two
// feature vectors, returns 1 if they have the same length and equal
// entries and 0 otherwise (so NaN features are never equal). Inside a
// Separable its identity Gram makes the product's Gram diagonal. It has no
// hyperparameters, and its zero value is ready to use.
type Independent struct{}

// IsIndependent reports whether s is the Independent kernel (or nil, which
// means it): a model over it needs no Cholesky factor of the product Gram
// matrix and can filter each product on its own.
func IsIndependent(s Spatial) bool {
	switch s.(type) {
	case nil, Independent, *Independent:
		return true
	}
	return false
}

// Cov returns 1 if p and q have equal length and entries, else 0.
func (Independent) Cov(p, q []float64) float64 {
	if len(p) != len(q) {
		return 0
	}
	for i := range p {
		if p[i] != q[i] {
			return 0
		}
	}
	return 1
}

// Gram writes the n×n identity into dst. Feature vectors may have any
// length, but must be finite.
func (Independent) Gram(dst []float64, features [][]float64) error {
	n := len(features)
	if err := checkGramDst(dst, n); err != nil {
		return err
	}
	for i, f := range features {
		if err := checkFeatureFinite(i, f); err != nil {
			return err
		}
	}
	clear(dst[:n*n])
	for i := 0; i < n; i++ {
		dst[i*n+i] = 1
	}
	return nil
}

// NumParams returns 0.
func (Independent) NumParams() int { return 0 }

// ParamNames returns an empty list.
func (Independent) ParamNames() []string { return nil }

// Params returns dst (an empty slice if dst is nil).
func (Independent) Params(dst []float64) []float64 {
	if dst == nil {
		return []float64{}
	}
	return dst
}

// SetParams accepts only an empty slice.
func (Independent) SetParams(src []float64) error {
	if len(src) != 0 {
		return fmt.Errorf("kernel: independent kernel has no parameters, got %d", len(src))
	}
	return nil
}

// Clone returns Independent{}.
func (Independent) Clone() Spatial { return Independent{} }

// Separable is the product of kernels over disjoint groups of features:
// component i reads the next Dim_i features (Dim_i from its Dim method, 1 if
// it has none), so with 1-D components kernel i acts on feature i only.
// The paper's product kernel is Separable of two 1-D Matérn-3/2 kernels,
// each with its own variance and lengthscale.
type Separable struct {
	ks    []Spatial
	off   []int // feature offset of each component; off[len(ks)] = Dim
	names []string
}

// spatialDim returns the number of features k reads.
func spatialDim(k Spatial) int {
	if d, ok := k.(interface{ Dim() int }); ok {
		return d.Dim()
	}
	return 1
}

// NewSeparable returns the product of the given kernels, of which there
// must be at least one. The components are cloned, so later changes to the
// arguments do not affect it.
func NewSeparable(ks ...Spatial) (*Separable, error) {
	if len(ks) == 0 {
		return nil, errors.New("kernel: separable kernel needs at least one component")
	}
	s := &Separable{ks: make([]Spatial, len(ks)), off: make([]int, len(ks)+1)}
	for i, k := range ks {
		if k == nil {
			return nil, fmt.Errorf("kernel: separable component %d is nil", i)
		}
		d := spatialDim(k)
		if d < 1 {
			return nil, fmt.Errorf("kernel: separable component %d reads %d features", i, d)
		}
		s.ks[i] = k.Clone()
		s.off[i+1] = s.off[i] + d
	}
	s.names = prefixedNames(s.ks)
	return s, nil
}

// Dim returns the total number of features read by the components.
func (s *Separable) Dim() int { return s.off[len(s.ks)] }

// Len returns the number of components.
func (s *Separable) Len() int { return len(s.ks) }

// Cov returns Π_i k_i(p_i, q_i) over the components' feature groups, or
// NaN if p or q does not have length Dim.
func (s *Separable) Cov(p, q []float64) float64 {
	d := s.Dim()
	if len(p) != d || len(q) != d {
		return math.NaN()
	}
	c := 1.0
	for i, k := range s.ks {
		lo, hi := s.off[i], s.off[i+1]
		c *= k.Cov(p[lo:hi:hi], q[lo:hi:hi])
	}
	return c
}

// Gram writes the elementwise product of the components' Gram matrices
// into dst. It returns an error if dst is shorter than n², a feature
// vector does not have length Dim, or a component rejects its features.
func (s *Separable) Gram(dst []float64, features [][]float64) error {
	n, d := len(features), s.Dim()
	if err := checkGramDst(dst, n); err != nil {
		return err
	}
	for i, f := range features {
		if len(f) != d {
			return fmt.Errorf("kernel: feature vector %d has length %d, want %d", i, len(f), d)
		}
	}
	sub := make([][]float64, n)
	var tmp []float64
	for c, k := range s.ks {
		lo, hi := s.off[c], s.off[c+1]
		for i, f := range features {
			sub[i] = f[lo:hi:hi]
		}
		target := dst
		if c > 0 {
			if tmp == nil {
				tmp = make([]float64, n*n)
			}
			target = tmp
		}
		if err := k.Gram(target, sub); err != nil {
			return errs.Withinf("kernel", err, "separable component %d", c)
		}
		if c > 0 {
			for i, v := range tmp {
				dst[i] *= v
			}
		}
	}
	return nil
}

// NumParams returns the total number of the components' hyperparameters.
func (s *Separable) NumParams() int { return len(s.names) }

// ParamNames returns the components' names prefixed by their index, e.g.
// "0.variance", "1.lengthscale". The slice is shared: do not modify it.
func (s *Separable) ParamNames() []string { return s.names }

// Params writes the components' hyperparameters, concatenated, into dst.
func (s *Separable) Params(dst []float64) []float64 { return concatParams(dst, len(s.names), s.ks) }

// SetParams sets the components' hyperparameters from the concatenated
// unconstrained values, all-or-nothing.
func (s *Separable) SetParams(src []float64) error {
	return setComponentParams(src, len(s.names), s.ks)
}

// Clone returns an independent deep copy.
func (s *Separable) Clone() Spatial {
	c := &Separable{ks: make([]Spatial, len(s.ks)), off: append([]int(nil), s.off...), names: s.names}
	for i, k := range s.ks {
		c.ks[i] = k.Clone()
	}
	return c
}
