package spec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// Load reads and validates a model configuration file. Errors name the
// file and, where the key can be located, the line.
func Load(path string) (Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, fmt.Errorf("config: %w", err)
	}
	s, err := Decode(strings.NewReader(string(b)))
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Decode parses a configuration, rejecting unknown keys and invalid values.
func Decode(r io.Reader) (Spec, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Spec{}, err
	}
	var s Spec
	md, err := toml.Decode(string(b), &s)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Spec{}, fmt.Errorf("line %d: %s", pe.Position.Line, pe.Message)
		}
		return Spec{}, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return Spec{}, fmt.Errorf("line %d: unknown key %q", findKeyLine(b, k), k.String())
	}
	// harmonics = 0 written out is an error; omitted, it means the default.
	comp := -1
	for _, k := range md.Keys() {
		switch k.String() {
		case "model.temporal":
			comp++
		case "model.temporal.harmonics":
			if comp >= 0 && comp < len(s.Model.Temporal) && s.Model.Temporal[comp].Harmonics == 0 {
				return Spec{}, fmt.Errorf("line %d: model.temporal[%d].harmonics = 0: want 1 to %d (omit the key for the default %d)", findKeyLine(b, k), comp, MaxHarmonics, DefaultHarmonics)
			}
		}
	}
	if err := s.Validate(); err != nil {
		if l := errorLine(b, err); l > 0 {
			return Spec{}, fmt.Errorf("line %d: %w", l, err)
		}
		return Spec{}, err
	}
	return s, nil
}

// findKeyLine returns the first line that defines the last component of
// key k (as "name =" or a table header), or 0 if none does.
func findKeyLine(b []byte, k toml.Key) int { return KeyLine(b, k.String()) }

// KeyLine returns the first line of a TOML document that defines the last
// component of the dotted key (as "name =" or a table header), or 0.
func KeyLine(b []byte, key string) int {
	re := KeyPattern(key)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for line := 1; sc.Scan(); line++ {
		if re.MatchString(sc.Text()) {
			return line
		}
	}
	return 0
}

// KeyPattern matches a line that defines the last component of the dotted
// key: "name = …" or a table header ending in it.
func KeyPattern(key string) *regexp.Regexp {
	parts := strings.Split(key, ".")
	last := regexp.QuoteMeta(parts[len(parts)-1])
	return regexp.MustCompile(`^\s*(` + last + `\s*=|\[+\s*[\w.]*` + last + `\s*\]+)`)
}

var (
	likelihoods = map[string]bool{"gaussian": true, "tobit": true, "diffusion": true, "poisson": true, "censored-poisson": true}
	temporals   = map[string]bool{"matern12": true, "matern32": true, "matern52": true, "periodic": true, "quasiperiodic": true}
	products    = map[string]bool{"independent": true, "matern12": true, "matern32": true, "matern52": true, "rbf": true, "separable-matern32": true}
)

// Harmonics of periodic components: the default when the key is omitted
// (or 0 in a Spec built in Go), and the largest accepted. A periodic
// component has state dimension 2(J+1), and the smoother keeps a D×D
// covariance per bin: J = 200 is already 1.3 MB per bin.
const (
	DefaultHarmonics = 6
	MaxHarmonics     = 200
)

// finite returns an error naming key unless every v is finite (TOML
// accepts nan and inf, which would pass the range checks below).
func finite(key string, vs ...float64) error {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s must be a finite number, got %v", key, v)
		}
	}
	return nil
}

// Validate checks every value that can be checked without data: first
// that every number is finite, then each table's values.
func (s *Spec) Validate() error {
	m := &s.Model
	if m.Likelihood != "" && !likelihoods[m.Likelihood] {
		return fmt.Errorf("model.likelihood %q: want gaussian, tobit, diffusion, poisson or censored-poisson", m.Likelihood)
	}
	if err := s.validateFinite(); err != nil {
		return err
	}
	if m.NoiseVariance < 0 {
		return fmt.Errorf("model.noise_variance must be > 0, got %v", m.NoiseVariance)
	}
	if err := m.validateLevelNoise(); err != nil {
		return err
	}
	for i, t := range m.Temporal {
		if err := t.validate(i); err != nil {
			return err
		}
	}
	if err := m.Product.validate(m.PerProduct); err != nil {
		return err
	}
	if err := m.Diffusion.validate(); err != nil {
		return err
	}
	if err := m.Mean.validate(m.Likelihood, m.Diffusion.Mode); err != nil {
		return err
	}
	f := &s.Fit
	if f.MaxIterations < 0 || f.Tolerance < 0 || f.GradientTolerance < 0 {
		return errors.New("fit: max_iterations, tolerance and gradient_tolerance must not be negative")
	}
	if f.Damping < 0 || f.Damping > 1 {
		return fmt.Errorf("fit.damping must be in (0, 1], got %v", f.Damping)
	}
	return nil
}

// validateFinite checks that every number of the configuration is finite
// (and the harmonics within MaxHarmonics).
func (s *Spec) validateFinite() error {
	m := &s.Model
	if err := finite("model.noise_variance", m.NoiseVariance); err != nil {
		return err
	}
	if err := finite("model.noise_slope", m.NoiseSlope); err != nil {
		return err
	}
	for i, t := range m.Temporal {
		if err := finite(fmt.Sprintf("model.temporal[%d]: variance, lengthscale, period and matern_lengthscale", i), t.Variance, t.Lengthscale, t.Period, t.MaternLengthscale); err != nil {
			return err
		}
		if t.Harmonics > MaxHarmonics {
			return fmt.Errorf("model.temporal[%d].harmonics = %d: at most %d (the periodic state has 2(J+1) dimensions, and the smoother keeps its square per bin)", i, t.Harmonics, MaxHarmonics)
		}
	}
	if err := finite("model.product: lengthscale, lengthscales and variance", append([]float64{m.Product.Lengthscale, m.Product.Variance}, m.Product.Lengthscales...)...); err != nil {
		return err
	}
	if err := finite("model.diffusion: lengthscale, sink and cutoff", m.Diffusion.Lengthscale, m.Diffusion.Sink, m.Diffusion.Cutoff); err != nil {
		return err
	}
	return finite("fit: tolerance, gradient_tolerance and damping", s.Fit.Tolerance, s.Fit.GradientTolerance, s.Fit.Damping)
}

// validate checks temporal component i.
func (t Temporal) validate(i int) error {
	if !temporals[t.Kernel] {
		return fmt.Errorf("model.temporal[%d].kernel %q: want matern12, matern32, matern52, periodic or quasiperiodic", i, t.Kernel)
	}
	if t.Variance < 0 || t.Lengthscale < 0 || t.Period < 0 || t.MaternLengthscale < 0 || t.Harmonics < 0 {
		return fmt.Errorf("model.temporal[%d]: variance, lengthscale, period, harmonics must not be negative", i)
	}
	if (t.Kernel == "periodic" || t.Kernel == "quasiperiodic") && t.Period == 0 {
		return fmt.Errorf("model.temporal[%d]: a %s kernel needs a period", i, t.Kernel)
	}
	if t.MaternOrder != 0 && t.MaternOrder != 12 && t.MaternOrder != 32 {
		return fmt.Errorf("model.temporal[%d].matern_order must be 12 or 32", i)
	}
	return nil
}

// validate checks the product kernel (perProduct: model.per_product).
func (p *Product) validate(perProduct bool) error {
	if p.Kernel != "" && !products[p.Kernel] {
		return fmt.Errorf("model.product.kernel %q: want independent, matern12, matern32, matern52, rbf or separable-matern32", p.Kernel)
	}
	if p.Lengthscale < 0 || p.Variance < 0 {
		return errors.New("model.product: lengthscale and variance must be > 0")
	}
	for _, l := range p.Lengthscales {
		if !(l > 0) {
			return errors.New("model.product.lengthscales must all be > 0")
		}
	}
	if perProduct && p.Kernel != "" && p.Kernel != "independent" {
		return errors.New("model.per_product needs the independent product kernel")
	}
	return nil
}

// validate checks the diffusion table.
func (d *Diffusion) validate() error {
	if d.Lengthscale < 0 {
		return fmt.Errorf("model.diffusion.lengthscale must be > 0, got %v", d.Lengthscale)
	}
	if d.Sink < 0 || d.Sink >= 1 {
		return fmt.Errorf("model.diffusion.sink must be in [0, 1), got %v", d.Sink)
	}
	if d.Steps < 0 {
		return fmt.Errorf("model.diffusion.steps must be >= 1, got %d", d.Steps)
	}
	switch d.Mode {
	case "", "steps":
	case "available":
		if d.Steps > 1 {
			return errors.New("model.diffusion: mode \"available\" takes exactly one step")
		}
	default:
		return fmt.Errorf("model.diffusion.mode %q: want steps or available", d.Mode)
	}
	switch d.Expectation {
	case "", "joint", "meanonly":
	default:
		return fmt.Errorf("model.diffusion.expectation %q: want joint or meanonly", d.Expectation)
	}
	switch d.Sites {
	case "", "full", "diagonal":
	default:
		return fmt.Errorf("model.diffusion.sites %q: want full or diagonal", d.Sites)
	}
	switch d.Curvature {
	case "", "gauss-newton", "exact":
	default:
		return fmt.Errorf("model.diffusion.curvature %q: want gauss-newton or exact (or leave it out: exact for diagonal sites, gauss-newton for full)", d.Curvature)
	}
	if d.Points < 0 || d.LearnPoints < 0 || d.Neighbours < 0 || d.Cutoff < 0 {
		return errors.New("model.diffusion: points, learn_points, neighbours and cutoff must not be negative")
	}
	return nil
}
