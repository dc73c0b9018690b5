package cvi

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"
	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/gonum/stat/samplemv"

	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/internal/errs"
	"github.com/dcgpd/dcgpd/internal/mathx"
)

// Expectation selects how the diffusion likelihood's expectation is taken.
type Expectation int

const (
	// JointExpectation integrates over the joint q(f_n) of all products in
	// the bin through the diffusion map, with exact chain-rule derivatives
	// (the default).
	JointExpectation Expectation = iota
	// MeanOnly is the reference code's approximation: diffuse the posterior
	// mean only, then take each product's Tobit expectation with its own
	// marginal variance, using the derivatives in the diffused mean as if
	// they were in the mean.
	MeanOnly
)

// Curvature selects the second-order information of the joint expectation.
type Curvature int

const (
	// AutoCurvature (the zero value) is ExactCurvature for DiagonalSites
	// and GaussNewton for FullSites. With diagonal sites the exact
	// curvature is the variance derivative of the same point estimate as
	// the ELBO (one Stein sum per product), so the CVI fixed point is a
	// stationary point of the ELBO over q and learning's envelope gradient
	// is the ELBO's: on the Citi Bike clusters every diagonal fit then
	// passes the gradient test, where with Gauss–Newton every one ended
	// "line search failed". With full sites the N_p×N_p Stein matrix needs
	// far more points than the default to be usable.
	AutoCurvature Curvature = iota
	// GaussNewton is E[Jᵀ diag(∂²log p) J]: negative semi-definite for the
	// log-concave Tobit terms, but it drops the kinks of max, so the CVI
	// fixed point is not the ELBO's maximum over q.
	GaussNewton
	// ExactCurvature is the Hessian of the expectation by the Stein identity
	// P⁻¹E[(f − m)(Jᵀ∂log p)ᵀ], symmetrised; it includes the kinks but can
	// be indefinite (the site update projects it).
	ExactCurvature
)

// Sites selects the structure of the diffusion likelihood's Gaussian
// sites.
type Sites int

const (
	// FullSites are one N_p×N_p block per bin: the sites carry the
	// coupling of the joint expectation, and the filter runs one coupled
	// chain (per-bin cost O((N_p·d)³), memory O((N_p·d)²)).
	FullSites Sites = iota
	// DiagonalSites are mean-field: the expectation is taken through the
	// diffusion map over the product of the per-product marginals
	// N(m_k, v_k), with the same quasi-Monte Carlo points and chain rule,
	// and returns the gradient and the diagonal of the curvature per
	// product. The engine then keeps diagonal sites, so an independent
	// product kernel runs as one chain per product (per-bin cost and memory
	// linear in N_p).
	DiagonalSites
)

// String names the site structure as the configuration does.
func (s Sites) String() string {
	if s == DiagonalSites {
		return "diagonal"
	}
	return "full"
}

// DiffusionOptions configures a Diffusion likelihood.
type DiffusionOptions struct {
	// Graph gives the products' neighbourhoods; Lengthscale and Sink make
	// its transition matrix, and both can be learned. Alternatively
	// Explicit fixes the transition matrix (nothing to learn).
	Graph       *diffusion.Graph
	Explicit    *diffusion.Transition
	Lengthscale float64
	Sink        float64
	// Steps is N_diff (default 1).
	Steps int
	// SupplyAware uses the paper's per-bin graph: one step with edges only
	// into products that still had supply in the bin.
	SupplyAware bool
	// Variance is the observation noise variance σ².
	Variance float64
	// LevelNoise makes product k's noise variance in a bin
	// σ² + c·max(Level_k, 0) (Obs.Level), with c a parameter learned like
	// σ², starting at NoiseSlope (> 0). Off, the likelihood is as without.
	LevelNoise bool
	NoiseSlope float64

	Expectation Expectation
	// Curvature is the second-order information of the sites in batch
	// CVI (AutoCurvature by default). The online step always takes the
	// Gauss–Newton matrix: its Newton step on the means needs the
	// products' coupling, which the per-product Stein sums do not give.
	Curvature Curvature
	// Sites is the site structure of the joint expectation (FullSites by
	// default; MeanOnly is always diagonal).
	Sites Sites
	// Points is the number of quasi-Monte Carlo points per bin (default
	// 64, used in antithetic pairs) of the final posterior.
	Points int
	// LearnPoints is the number of points while learning searches the
	// kernel and noise hyperparameters with ℓ and π held (default 16, at
	// most Points): the search needs the ELBO's shape, not its last
	// digits, and the posterior at the learned hyperparameters is then
	// refined with Points. Learning uses it with Gauss–Newton curvature
	// only (see LearnOptions.NoCoarse); the online refinement's first
	// Newton step uses it with diagonal sites.
	LearnPoints int
	// Seed scrambles the point set (default 1).
	Seed uint64
	// Routes chooses among routes to the same numbers (the zero value: the
	// fastest); tests compare the reference routes with the default.
	Routes DiffusionRoutes
}

// Diffusion is the diffusion-aware Tobit likelihood of the paper: with
// g = f + d(f) the latent demand after the transfer of unsatisfied demand,
// y_k ~ N(g_k, σ²) when uncensored and P(y*_k ≥ u_k) = Φ((g_k − u_k)/σ)
// when censored.
//
// A Diffusion keeps scratch space: it is not safe for concurrent use.
type Diffusion struct {
	opts     DiffusionOptions
	variance float64
	sd       float64 // √σ²
	logNorm  float64 // −½ log(2πσ²)
	ell, pi  float64
	slope    float64 // c of the level noise (opts.LevelNoise)
	// binNoise holds, with level noise, the bin's σ²_k, σ_k, −½log(2πσ²_k)
	// and max(Level_k, 0), filled by operator.
	binNoise []levelNoise
	trans    *diffusion.Transition // current T (graph-based or explicit)
	masked   diffusion.Transition  // per-bin supply-aware T
	ws       *diffusion.Workspace
	z        *mat.Dense // points × NP standard normal points in use
	zFine    *mat.Dense // Points/2 antithetic pairs
	zLearn   *mat.Dense // LearnPoints/2 pairs
	np       int
	// scratch
	f, g, u, dl, d2l, gf, dge, dgp, jac []float64
	lfac, delta                         []float64 // covariance factor, one point's offset
	l                                   []float64
	avail                               []bool
	yv                                  []float64
	tobit                               *Tobit
	mf                                  meanFieldScratch
	cp                                  *coupledPattern // expectCoupledSparse's pattern and curvature
	cs                                  coupledScratch
	opVals                              []float64 // the bin operator's entries, in T's order
	// local, when set, restricts expectCoupledSparse to the terms these
	// products reach (diffusion_meanfield_local.go); inC is its scratch.
	local, inC []bool
	// workers bounds the goroutines a split expectation's parts are summed
	// on (0: GOMAXPROCS; see setWorkers).
	workers int
	// fixedDiffusion: ℓ and π are held, so their gradients are not needed.
	fixedDiffusion bool
}

// Diffusion offers every optional capability of the likelihood contract.
var (
	_ Parallel      = (*Diffusion)(nil)
	_ FusedExpecter = (*Diffusion)(nil)
	_ ParamHolder   = (*Diffusion)(nil)
	_ SearchRuler   = (*Diffusion)(nil)
	_ ParamValuer   = (*Diffusion)(nil)
)

// HoldParams tells the likelihood which of its parameters learning holds
// fixed (same order as ParamNames), so it can skip their gradients: with
// ℓ and π both held, ExpectParamGrad leaves their entries untouched.
func (d *Diffusion) HoldParams(fixed []bool) {
	d.fixedDiffusion = d.learnable() && len(fixed) >= 3 && fixed[1] && fixed[2]
}

// NewDiffusion validates the options and returns the likelihood.
func NewDiffusion(o DiffusionOptions) (*Diffusion, error) {
	if o.Steps == 0 {
		o.Steps = 1
	}
	if o.Steps < 1 || (o.SupplyAware && o.Steps != 1) {
		return nil, fmt.Errorf("cvi: diffusion steps must be >= 1 (exactly 1 supply-aware), got %d", o.Steps)
	}
	if o.Points == 0 {
		o.Points = 64
	}
	if o.LearnPoints == 0 {
		o.LearnPoints = min(16, o.Points)
	}
	if o.Points < 2 || o.LearnPoints < 2 {
		return nil, fmt.Errorf("cvi: diffusion needs at least 2 points, got %d (learning %d)", o.Points, o.LearnPoints)
	}
	o.LearnPoints = min(o.LearnPoints, o.Points)
	if o.Seed == 0 {
		o.Seed = 1
	}
	routes, err := o.Routes.withDefaults()
	if err != nil {
		return nil, err
	}
	o.Routes = routes
	if o.Sites != FullSites && o.Sites != DiagonalSites {
		return nil, fmt.Errorf("cvi: diffusion sites %d: want FullSites or DiagonalSites", o.Sites)
	}
	switch o.Curvature {
	case AutoCurvature:
		o.Curvature = GaussNewton
		if o.Sites == DiagonalSites {
			o.Curvature = ExactCurvature
		}
	case GaussNewton, ExactCurvature:
	default:
		return nil, fmt.Errorf("cvi: diffusion curvature %d: want AutoCurvature, GaussNewton or ExactCurvature", o.Curvature)
	}
	if err := checkVariance(o.Variance); err != nil || o.Variance == 0 {
		return nil, fmt.Errorf("cvi: diffusion noise variance must be finite and > 0, got %v", o.Variance)
	}
	if o.LevelNoise {
		if err := checkSlope(o.NoiseSlope); err != nil {
			return nil, err
		}
	}
	d := &Diffusion{opts: o, slope: o.NoiseSlope}
	d.setVariance(o.Variance)
	switch {
	case o.Explicit != nil:
		d.trans, d.np = o.Explicit, o.Explicit.N()
	case o.Graph != nil:
		d.np = o.Graph.N()
		if err := d.setTransition(o.Lengthscale, o.Sink); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("cvi: diffusion needs a graph or an explicit transition matrix")
	}
	tb, err := NewTobit(o.Variance)
	if err != nil {
		return nil, err
	}
	if o.LevelNoise {
		if err := tb.SetLevelNoise(o.NoiseSlope); err != nil {
			return nil, err
		}
	}
	d.tobit = tb
	d.scratch()
	d.zFine = normalPoints(o.Points/2, d.np, o.Seed)
	d.zLearn = d.zFine
	if o.LearnPoints < o.Points {
		d.zLearn = normalPoints(o.LearnPoints/2, d.np, o.Seed)
	}
	d.z = d.zFine
	return d, nil
}

// SetSearch switches the expectation to the LearnPoints rule (on) or
// back to the Points rule; see DiffusionOptions.LearnPoints. While ℓ or π
// is learned it keeps the Points rule: their gradient lives entirely in
// how the kinks of the map are integrated, and the coarse rule measurably
// misleads it (Dataset C, DCGP-l: final ELBO 6 nats lower, test RMSE
// 0.123 instead of 0.112).
func (d *Diffusion) SetSearch(on bool) {
	if on && d.learnable() && !d.fixedDiffusion {
		on = false
	}
	if on {
		d.z = d.zLearn
	} else {
		d.z = d.zFine
	}
}

// RuleName names the expectation rule in use ("16-point rule") when the
// search and the final rule differ, and is empty otherwise.
func (d *Diffusion) RuleName() string {
	if d.opts.Expectation != JointExpectation || d.zLearn == d.zFine {
		return ""
	}
	return fmt.Sprintf("%d-point rule", 2*d.z.RawMatrix().Rows)
}

// scratch allocates the per-goroutine working memory.
func (d *Diffusion) scratch() {
	np := d.np
	d.ws = diffusion.NewWorkspace(np, d.opts.Steps)
	for _, p := range []*[]float64{&d.f, &d.g, &d.u, &d.dl, &d.d2l, &d.gf, &d.dge, &d.dgp, &d.l, &d.yv} {
		*p = make([]float64, np)
	}
	// The dense Jacobian and covariance factor serve full sites only:
	// diagonal sites keep N_p entries per product set.
	if !d.diagonal() {
		d.jac = make([]float64, np*np)
		d.lfac = make([]float64, np*np)
	} else {
		// Allocated on first use (expectJoint); a Worker's copy must not
		// keep its parent's.
		d.jac = nil
		d.lfac = make([]float64, np)
	}
	d.delta = make([]float64, np)
	d.avail = make([]bool, np)
	d.binNoise = nil
	if d.opts.LevelNoise {
		d.binNoise = make([]levelNoise, np)
	}
	d.masked = diffusion.Transition{}
	d.mf = meanFieldScratch{}
	d.cp, d.cs, d.opVals = nil, coupledScratch{}, nil
}

// Worker returns a copy with its own scratch memory that shares the
// (read-only) graph, transition matrix and points, for evaluating bins
// concurrently. It is valid until the parameters change.
func (d *Diffusion) Worker() Likelihood {
	c := *d
	c.scratch()
	tb := *d.tobit
	c.tobit = &tb
	return &c
}

// haltonMaxDim is the number of primes gonum's Halton sampler knows: one
// sequence covers at most that many products.
const haltonMaxDim = 1000

// normalPoints returns n Owen-scrambled Halton points mapped to N(0, I).
// Beyond haltonMaxDim products the columns come in blocks of at most
// haltonMaxDim, each an independently scrambled Halton set (the first
// block is the set a smaller model gets, so its points do not change).
func normalPoints(n, dim int, seed uint64) *mat.Dense {
	if n < 1 {
		n = 1
	}
	u := mat.NewDense(n, dim, nil)
	for j0 := 0; j0 < dim; j0 += haltonMaxDim {
		j1 := min(dim, j0+haltonMaxDim)
		s := seed + uint64(j0/haltonMaxDim)*0x6a09e667f3bcc909
		q := distmv.NewUnitUniform(j1-j0, rand.NewPCG(s, 0x9e3779b97f4a7c15))
		samplemv.Halton{Kind: samplemv.Owen, Q: q, Src: rand.NewPCG(s, 7)}.Sample(u.Slice(0, n, j0, j1).(*mat.Dense))
	}
	for i := 0; i < n; i++ {
		for j := 0; j < dim; j++ {
			p := math.Min(math.Max(u.At(i, j), 1e-12), 1-1e-12)
			u.Set(i, j, distuv.UnitNormal.Quantile(p))
		}
	}
	return u
}

func (d *Diffusion) setTransition(ell, pi float64) error {
	t, err := d.opts.Graph.Transition(ell, pi)
	if err != nil {
		return errs.Within("cvi", err, "diffusion graph")
	}
	d.trans, d.ell, d.pi = t, ell, pi
	return nil
}

// Joint reports whether the expectation couples products, so that the
// sites must be full N_p×N_p blocks.
func (d *Diffusion) Joint() bool {
	return d.opts.Expectation == JointExpectation && d.opts.Sites == FullSites
}

// diagonal reports whether the expectation goes through the diffusion map
// over the product of the marginals (DiagonalSites).
func (d *Diffusion) diagonal() bool {
	return d.opts.Expectation == JointExpectation && d.opts.Sites == DiagonalSites
}

// stationaryFixedPoint reports whether a CVI fixed point is a stationary
// point of the ELBO's point estimate over q: diagonal sites with the
// exact curvature (see AutoCurvature).
func (d *Diffusion) stationaryFixedPoint() bool {
	return d.diagonal() && d.opts.Curvature == ExactCurvature
}

// SiteStructure returns the configured site structure (DiagonalSites for
// the mean-only expectation).
func (d *Diffusion) SiteStructure() Sites {
	if !d.Joint() {
		return DiagonalSites
	}
	return FullSites
}

// Variance returns σ².
func (d *Diffusion) Variance() float64 { return d.variance }

// NoiseVariance returns σ², the noise variance at level 0.
func (d *Diffusion) NoiseVariance() float64 { return d.variance }

// NoiseVarianceAt returns the noise variance at the given level:
// σ² + c·max(level, 0) with level noise, σ² otherwise.
func (d *Diffusion) NoiseVarianceAt(level float64) float64 {
	if !d.opts.LevelNoise {
		return d.variance
	}
	return levelVariance(d.variance, d.slope, level)
}

// NoiseSlope returns the level noise's slope c (0 without level noise).
func (d *Diffusion) NoiseSlope() float64 {
	if !d.opts.LevelNoise {
		return 0
	}
	return d.slope
}

// Lengthscale and Sink return the current diffusion parameters (0 for an
// explicit transition matrix).
func (d *Diffusion) Lengthscale() float64 { return d.ell }

// Sink returns the sink probability π.
func (d *Diffusion) Sink() float64 { return d.pi }

// Transition returns the current transition matrix.
func (d *Diffusion) Transition() *diffusion.Transition { return d.trans }

// learnable reports whether ℓ and π are parameters.
func (d *Diffusion) learnable() bool { return d.opts.Explicit == nil }

// NumParams returns 3 (variance, lengthscale, sink), or 1 with an explicit
// transition matrix; one more (noise_slope, last) with level noise.
func (d *Diffusion) NumParams() int {
	n := 1
	if d.learnable() {
		n = 3
	}
	if d.opts.LevelNoise {
		n++
	}
	return n
}

// slopeIndex is the index of noise_slope among the parameters (level
// noise only): the last.
func (d *Diffusion) slopeIndex() int { return d.NumParams() - 1 }

// ParamNames names the parameters.
func (d *Diffusion) ParamNames() []string {
	names := []string{"variance"}
	if d.learnable() {
		names = []string{"variance", "lengthscale", "sink"}
	}
	if d.opts.LevelNoise {
		names = append(names, NoiseSlopeName)
	}
	return names
}

// Params writes softplus⁻¹(σ²), softplus⁻¹(ℓ), the sink's raw value and,
// with level noise, softplus⁻¹(c).
func (d *Diffusion) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, d.NumParams())
	}
	dst[0] = mathx.SoftplusInv(d.variance)
	if d.learnable() {
		dst[1], _ = diffusion.LengthscaleToRaw(d.ell)
		dst[2], _ = diffusion.SinkToRaw(d.pi)
	}
	if d.opts.LevelNoise {
		dst[d.slopeIndex()] = mathx.SoftplusInv(d.slope)
	}
	return dst
}

// ParamValues writes σ², ℓ and π (σ² only with an explicit transition
// matrix), then c with level noise.
func (d *Diffusion) ParamValues(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, d.NumParams())
	}
	dst[0] = d.variance
	if d.learnable() {
		dst[1], dst[2] = d.ell, d.pi
	}
	if d.opts.LevelNoise {
		dst[d.slopeIndex()] = d.slope
	}
	return dst
}

// SetParams sets the parameters from unconstrained values, all or nothing.
func (d *Diffusion) SetParams(src []float64) error {
	if len(src) != d.NumParams() {
		return fmt.Errorf("cvi: diffusion wants %d parameters, got %d", d.NumParams(), len(src))
	}
	v, err := setPositiveParam("variance", src[:1])
	if err != nil {
		return err
	}
	noise := src[:1]
	slope := d.slope
	if d.opts.LevelNoise {
		k := d.slopeIndex()
		if slope, err = setPositiveParam(NoiseSlopeName, src[k:k+1]); err != nil {
			return err
		}
		noise = []float64{src[0], src[k]}
	}
	if d.learnable() {
		for _, x := range src[1:3] {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("cvi: diffusion parameter not finite: %v", x)
			}
		}
		ell, _ := diffusion.LengthscaleFromRaw(src[1])
		pi, _ := diffusion.SinkFromRaw(src[2])
		if !(ell > 0) || math.IsInf(ell, 1) {
			return fmt.Errorf("cvi: diffusion lengthscale %v invalid", ell)
		}
		if ell != d.ell || pi != d.pi {
			if err := d.setTransition(ell, pi); err != nil {
				return err
			}
		}
	}
	d.setVariance(v)
	d.slope = slope
	return d.tobit.SetParams(noise)
}

// operator returns the bin's diffusion operator.
func (d *Diffusion) operator(obs []Obs) (diffusion.Operator, error) {
	for k, o := range obs {
		d.u[k] = o.Supply
		d.yv[k] = o.Y
	}
	if d.opts.LevelNoise {
		d.setBinNoise(obs)
	}
	if !d.opts.SupplyAware {
		return diffusion.Operator{T: d.trans, Steps: d.opts.Steps}, nil
	}
	if err := diffusion.Available(d.avail, d.yv, d.u); err != nil {
		return diffusion.Operator{}, err
	}
	return d.trans.SupplyAware(&d.masked, d.avail)
}

// point evaluates log p(y_k | g_k) and its first two derivatives in g_k,
// and the derivative in σ²_k, for observed product k.
func (d *Diffusion) point(k int, o Obs, g float64) (l, dl, d2l, ds2 float64) {
	s2, s, logNorm := d.noiseOf(k)
	if o.Censored {
		z := (o.Supply - g) / s // log Φ((g − u)/σ) = LogSurvival(z)
		logQ, lam, _ := survival(z)
		x := -z
		return logQ, lam / s, -lam * (x + lam) / s2, -lam * x / (2 * s2)
	}
	r := o.Y - g
	return logNorm - 0.5*r*r/s2, r / s2, -1 / s2, -0.5/s2 + 0.5*r*r/(s2*s2)
}

// Expect returns the bin's expected log-likelihood and its derivatives.
// With full sites (Joint) cov is the NP×NP covariance and curv NP×NP;
// with diagonal sites and in mean-only mode cov holds the NP variances
// and curv the NP diagonal.
func (d *Diffusion) Expect(obs []Obs, mean, cov, grad, curv []float64) float64 {
	e, err := d.expect(obs, mean, cov, grad, curv, nil)
	if err != nil {
		return math.NaN()
	}
	return e
}

// ExpectParamGrad adds dE/dθ into grad and returns E.
func (d *Diffusion) ExpectParamGrad(obs []Obs, mean, cov, grad []float64) float64 {
	e, err := d.expect(obs, mean, cov, nil, nil, grad)
	if err != nil {
		return math.NaN()
	}
	return e
}

// ExpectFused is Expect and ExpectParamGrad in one pass over the points:
// it writes the mean derivatives, adds the parameter gradient into pgrad
// and returns E (NaN on failure).
func (d *Diffusion) ExpectFused(obs []Obs, mean, cov, grad, curv, pgrad []float64) float64 {
	e, err := d.expect(obs, mean, cov, grad, curv, pgrad)
	if err != nil {
		return math.NaN()
	}
	return e
}

// LogPredictive writes log N(y_k | m_k, v_k + σ²) per observed product:
// the predictive density of the true (undiffused) demand.
func (d *Diffusion) LogPredictive(obs []Obs, mean, cov, dst []float64) {
	np := len(obs)
	for k, o := range obs {
		if math.IsNaN(o.Y) {
			dst[k] = math.NaN()
			continue
		}
		v := cov[k]
		if d.Joint() {
			v = cov[k*np+k]
		}
		s := v + d.NoiseVarianceAt(o.Level)
		r := o.Y - mean[k]
		dst[k] = -0.5*(log2Pi+math.Log(s)) - 0.5*r*r/s
	}
}

func (d *Diffusion) expect(obs []Obs, mean, cov, grad, curv, pgrad []float64) (float64, error) {
	np := d.np
	if len(obs) != np || len(mean) != np {
		return 0, fmt.Errorf("cvi: diffusion bin has %d products, want %d", len(obs), np)
	}
	op, err := d.operator(obs)
	if err != nil {
		return 0, err
	}
	if d.opts.Expectation == MeanOnly {
		return d.expectMeanOnly(op, obs, mean, cov, grad, curv, pgrad)
	}
	return d.expectJoint(op, obs, mean, cov, grad, curv, pgrad)
}

func (d *Diffusion) setVariance(v float64) {
	d.variance, d.sd, d.logNorm = v, math.Sqrt(v), -0.5*(log2Pi+math.Log(v))
}

// levelNoise is one product's noise in the current bin (level noise).
type levelNoise struct {
	s2, sd, logNorm float64 // σ²_k, σ_k, −½log(2πσ²_k)
	weight          float64 // ∂σ²_k/∂c = max(Level_k, 0)
}

// setBinNoise fills the bin's per-product noise from the levels of obs.
func (d *Diffusion) setBinNoise(obs []Obs) {
	for k, o := range obs {
		s2 := levelVariance(d.variance, d.slope, o.Level)
		d.binNoise[k] = levelNoise{s2, math.Sqrt(s2), -0.5 * (log2Pi + math.Log(s2)), levelWeight(o.Level)}
	}
}

// noiseOf returns product k's noise variance in the current bin, its
// square root and −½log(2πσ²_k): σ²'s without level noise.
func (d *Diffusion) noiseOf(k int) (s2, sd, logNorm float64) {
	if d.binNoise == nil {
		return d.variance, d.sd, d.logNorm
	}
	n := &d.binNoise[k]
	return n.s2, n.sd, n.logNorm
}

// noiseWeight returns ∂σ²_k/∂c for product k in the current bin (0
// without level noise).
func (d *Diffusion) noiseWeight(k int) float64 {
	if d.binNoise == nil {
		return 0
	}
	return d.binNoise[k].weight
}

// levelNoiseAt returns product k's noise in the current bin as the
// mean-field loops use it: σ²_k, σ_k, 1/σ²_k and −½log(2πσ²_k).
func (d *Diffusion) levelNoiseAt(k int) (s2, sd, inv, logNorm float64) {
	n := &d.binNoise[k]
	return n.s2, n.sd, 1 / n.s2, n.logNorm
}
