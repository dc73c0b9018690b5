package cvi

import (
	"math"
	"sort"
	"strings"

	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/filter/kernel"
	"github.com/dcgpd/dcgpd/internal/mathx"
)

// Kinds of optimiser variable.
const (
	logParam   = iota // u = log θ
	boundedLog        // u = log(θ − lo)
	rawParam          // u = the stored value (the sink's tanh|u|)
)

// paramMap maps the optimiser's variables u to the stored (softplus⁻¹)
// parameters of the free hyperparameters.
type paramMap struct {
	kind []int
	lo   []float64
	sc   []float64 // u = sc·log(θ − lo)
	u0   []float64
}

func newParamMap(e *Engine, free []int, nm int, names []string, all []float64, minFrac float64, floors []float64) *paramMap {
	n := len(free)
	pm := &paramMap{kind: make([]int, n), lo: make([]float64, n), sc: make([]float64, n), u0: make([]float64, n)}
	roles := temporalRoles(e.model)
	times := e.data.Times
	step := medianStep(times)
	var span float64
	if len(times) > 1 {
		span = times[len(times)-1] - times[0]
	}
	for j, i := range free {
		pm.sc[j] = 1
		switch {
		case i >= nm && strings.HasSuffix(names[i], "sink"):
			pm.kind[j] = rawParam
			pm.u0[j] = all[i]
			continue
		case i < nm && roles[i] == roleLengthscale && minFrac > 0 && step > 0:
			pm.kind[j] = boundedLog
			pm.lo[j] = minFrac * step
		default:
			pm.kind[j] = logParam
		}
		if i < len(floors) && floors[i] > 0 {
			pm.kind[j] = boundedLog
			pm.lo[j] = math.Max(pm.lo[j], floors[i])
		}
		v := mathx.Softplus(all[i])
		if pm.kind[j] == boundedLog && !(v > pm.lo[j]) {
			v = 2 * pm.lo[j] // a start below the bound moves to twice the bound
		}
		if i < nm && roles[i] == rolePeriod && span > 0 {
			// A relative change δ of the period shifts the phase at the end
			// of the data by 2π·(span/period)·δ radians: scale log θ so that
			// a unit step turns the phase by one radian, not by e-fold the
			// period (the likelihood has an optimum at every harmonic).
			pm.sc[j] = math.Max(1, 2*math.Pi*span/v)
		}
		pm.u0[j] = pm.sc[j] * math.Log(v-pm.lo[j])
	}
	return pm
}

// value returns the parameter θ at u.
func (pm *paramMap) value(j int, u float64) float64 {
	switch pm.kind[j] {
	case rawParam:
		return u
	}
	return pm.lo[j] + math.Exp(u/pm.sc[j])
}

// raw returns the stored parameter at u (NaN when θ under- or overflows).
func (pm *paramMap) raw(j int, u float64) float64 {
	if pm.kind[j] == rawParam {
		return u
	}
	return mathx.SoftplusInv(pm.value(j, u))
}

// dRaw returns d raw / du at u.
func (pm *paramMap) dRaw(j int, u float64) float64 {
	if pm.kind[j] == rawParam {
		return 1
	}
	v := pm.value(j, u)
	// softplus'(raw) = 1 − e^{−θ}; dθ/du = (θ − lo)/sc.
	return (v - pm.lo[j]) / pm.sc[j] / -math.Expm1(-v)
}

// Roles of model parameters that the optimiser's variables treat apart.
const (
	roleOther       = iota
	roleLengthscale // a lengthscale in time units
	rolePeriod      // a period
)

// temporalRoles returns the role of every model parameter: lengthscales
// in time units (Matérn lengthscales, the quasi-periodic envelope's) and
// periods. Kernels it does not know are all roleOther.
func temporalRoles(m *filter.Model) []int {
	out := make([]int, m.NumParams())
	nt := 0
	for _, n := range m.ParamNames() {
		if strings.HasPrefix(n, "temporal.") {
			nt++
		}
	}
	var marks []int
	if k := m.Temporal(); k.NumParams() == nt {
		marks = kernelRoles(k)
	} else {
		for p := 0; p < m.NumProducts(); p++ {
			marks = append(marks, kernelRoles(m.TemporalOf(p))...)
		}
	}
	if len(marks) == nt {
		copy(out, marks)
	}
	return out
}

func kernelRoles(k kernel.Temporal) []int {
	switch k := k.(type) {
	case *kernel.Matern12, *kernel.Matern32, *kernel.Matern52:
		return []int{roleOther, roleLengthscale}
	case *kernel.Periodic:
		return []int{roleOther, roleOther, rolePeriod}
	case *kernel.QuasiPeriodic:
		return []int{roleOther, roleOther, rolePeriod, roleLengthscale}
	case *kernel.Sum:
		var out []int
		for i := 0; i < k.Len(); i++ {
			out = append(out, kernelRoles(k.Component(i))...)
		}
		return out
	case *kernel.Product:
		a, b := k.Factors()
		return append(kernelRoles(a), kernelRoles(b)...)
	}
	return make([]int, k.NumParams())
}

// medianStep is the median spacing of sorted times (0 for fewer than 2).
func medianStep(t []float64) float64 {
	if len(t) < 2 {
		return 0
	}
	d := make([]float64, len(t)-1)
	for i := range d {
		d[i] = t[i+1] - t[i]
	}
	sort.Float64s(d)
	return d[len(d)/2]
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
