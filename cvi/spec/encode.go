package spec

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Encode writes s as a model configuration file that Decode reads back to
// an equal Spec: every key that is not at its zero value ("use the
// default") written out, numbers in the shortest form that parses to the
// same float64 (strconv 'g', -1). Each header line is written first as a
// "# " comment.
func (s Spec) Encode(w io.Writer, header []string) error {
	bw := bufio.NewWriter(w)
	for _, h := range header {
		for _, l := range strings.Split(h, "\n") {
			fmt.Fprintln(bw, strings.TrimRight("# "+commentSafe(l), " "))
		}
	}
	m := s.Model
	e := &encoder{w: bw, started: len(header) > 0}
	e.table("model")
	e.str("likelihood", m.Likelihood)
	e.float("noise_variance", m.NoiseVariance)
	e.bool("noise_fixed", m.NoiseFixed)
	e.bool("level_noise", m.LevelNoise)
	e.float("noise_slope", m.NoiseSlope)
	e.bool("noise_slope_fixed", m.NoiseSlopeFixed)
	e.bool("per_product", m.PerProduct)
	for _, t := range m.Temporal {
		e.array("model.temporal")
		e.str("kernel", t.Kernel)
		e.float("variance", t.Variance)
		e.float("lengthscale", t.Lengthscale)
		e.float("period", t.Period)
		e.int("harmonics", t.Harmonics) // 0 written out would be an error
		e.float("matern_lengthscale", t.MaternLengthscale)
		e.int("matern_order", t.MaternOrder)
		e.bool("fixed", t.Fixed)
		e.strs("fixed_params", t.FixedParams)
	}
	p := m.Product
	e.table("model.product")
	e.str("kernel", p.Kernel)
	e.float("lengthscale", p.Lengthscale)
	e.floats("lengthscales", p.Lengthscales)
	e.float("variance", p.Variance)
	e.bool("learn_variance", p.LearnVariance)
	e.bool("fixed", p.Fixed)
	d := m.Diffusion
	e.table("model.diffusion")
	e.float("lengthscale", d.Lengthscale)
	e.float("sink", d.Sink)
	e.int("steps", d.Steps)
	e.str("mode", d.Mode)
	e.bool("learn", d.Learn)
	e.str("transition", d.Transition)
	e.int("neighbours", d.Neighbours)
	e.float("cutoff", d.Cutoff)
	e.str("expectation", d.Expectation)
	e.str("curvature", d.Curvature)
	e.str("sites", d.Sites)
	e.int("points", d.Points)
	e.int("learn_points", d.LearnPoints)
	if mn := m.Mean; mn.On() {
		e.table("model.mean")
		e.str("kind", mn.Kind)
		e.float("period", mn.Period)
		e.float("step", mn.Step)
		if mn.Estimate != nil {
			e.line("estimate", fmt.Sprint(*mn.Estimate))
		}
		e.str("first_pass", mn.FirstPass)
		e.str("level", mn.Level)
		e.float("signal_power", mn.SignalPower)
		if len(mn.Values) > 0 {
			e.table("model.mean.values")
			for _, name := range sortedKeys(mn.Values) {
				e.floatsAlways(tomlString(name), mn.Values[name])
			}
		}
	}
	if lv := m.Levels; lv.Source != "" { // no table without a source: files as before
		e.table("model.levels")
		e.str("source", lv.Source)
		e.float("period", lv.Period)
		e.float("step", lv.Step)
		e.floatRows("values", lv.Values)
	}
	f := s.Fit
	e.table("fit")
	e.int("max_iterations", f.MaxIterations)
	e.float("gradient_tolerance", f.GradientTolerance)
	e.float("tolerance", f.Tolerance)
	e.float("damping", f.Damping)
	if f.Learn != nil { // false is not the default
		e.line("learn", fmt.Sprint(*f.Learn))
	}
	if f.Staged != nil {
		e.line("staged", fmt.Sprint(*f.Staged))
	}
	e.bool("fallback", f.Fallback)
	return bw.Flush()
}

// encoder writes TOML lines, leaving out keys at their zero value (which
// Decode gives back); started is whether anything precedes the next table
// (a blank line separates them).
type encoder struct {
	w       *bufio.Writer
	started bool
}

func (e *encoder) header(h string) {
	if e.started {
		fmt.Fprintln(e.w)
	}
	e.started = true
	fmt.Fprintln(e.w, h)
}

func (e *encoder) table(name string) { e.header("[" + name + "]") }
func (e *encoder) array(name string) { e.header("[[" + name + "]]") }
func (e *encoder) line(k, v string)  { fmt.Fprintf(e.w, "%s = %s\n", k, v) }

func (e *encoder) str(k, v string) {
	if v != "" {
		e.line(k, tomlString(v))
	}
}

func (e *encoder) int(k string, v int) {
	if v != 0 {
		e.line(k, fmt.Sprint(v))
	}
}

func (e *encoder) bool(k string, v bool) {
	if v {
		e.line(k, "true")
	}
}

func (e *encoder) float(k string, v float64) {
	if v != 0 {
		e.line(k, tomlFloat(v))
	}
}

func (e *encoder) floats(k string, vs []float64) {
	if len(vs) > 0 {
		e.line(k, tomlArray(vs))
	}
}

// tomlArray writes vs as a TOML array of floats.
func tomlArray(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = tomlFloat(v)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// floatsAlways writes the array even when empty.
func (e *encoder) floatsAlways(k string, vs []float64) { e.line(k, tomlArray(vs)) }

// floatRows writes an array of float arrays, a row per line.
func (e *encoder) floatRows(k string, rows [][]float64) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(e.w, "%s = [\n", k)
	for _, r := range rows {
		fmt.Fprintf(e.w, "  %s,\n", tomlArray(r))
	}
	fmt.Fprintln(e.w, "]")
}

func (e *encoder) strs(k string, vs []string) {
	if len(vs) == 0 {
		return
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = tomlString(v)
	}
	e.line(k, "["+strings.Join(s, ", ")+"]")
}

// tomlFloat formats v so that it parses back to the same float64 and
// reads as a TOML float (never as an integer).
func tomlFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") { // nN: NaN, Inf (refused by Validate)
		s += ".0"
	}
	return s
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// commentSafe replaces what a TOML comment may not hold (control
// characters other than tab, invalid UTF-8) with spaces.
func commentSafe(s string) string {
	s = strings.ToValidUTF8(s, " ")
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
