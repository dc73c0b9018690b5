package filter

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// scalarRows writes each product's measurement row (its own chain's H)
// into rows, reusing its slices.
func scalarRows(m *Model, rows []hrow) []hrow {
	if cap(rows) < m.np {
		rows = make([]hrow, m.np)
	}
	rows = rows[:m.np]
	for k := range rows {
		kern := m.kernelOf(k)
		r := &rows[k]
		r.h = linalg.Resize(r.h, kern.Dim())
		kern.Measurement(r.h)
		r.off, r.hj, r.hv = 0, r.hj[:0], r.hv[:0]
		for a, h := range r.h {
			if h != 0 {
				r.hj, r.hv = append(r.hj, a), append(r.hv, h)
			}
		}
	}
	return rows
}

// MarginalVar writes the filtered mean and the variances (both length
// N_p) of the latent demand at the current bin: Marginal without the
// N_p×N_p covariance, which independent chains never build.
func (o *Online) MarginalVar(mean, vars []float64) {
	o.marginalVar(o.m, o.P, mean, vars)
}

func (o *Online) marginalVar(m, P [][]float64, mean, vars []float64) {
	np := o.model.np
	if o.hj != nil {
		for c := range m {
			mean[c], vars[c] = scalarMarginalSparse(m[c], P[c], o.hj[c], o.hv[c])
		}
		return
	}
	cov := o.covScratch()
	o.marginal(m, P, mean, cov)
	for k := 0; k < np; k++ {
		vars[k] = cov[k*np+k]
	}
}

// covScratch returns N_p×N_p scratch for the variances of a coupled chain.
func (o *Online) covScratch() []float64 {
	np := o.model.np
	o.cov = linalg.Resize(o.cov, np*np)
	return o.cov
}

// ForecastVar is Forecast writing the predictive variances (length N_p)
// instead of the covariance.
func (o *Online) ForecastVar(t float64, mean, vars []float64) error {
	if o.hj == nil {
		np := o.model.np
		cov := o.covScratch()
		if err := o.Forecast(t, mean, cov); err != nil {
			return err
		}
		for k := 0; k < np; k++ {
			vars[k] = cov[k*np+k]
		}
		return nil
	}
	if !o.started {
		return errors.New("filter: forecast before the first bin")
	}
	if !(t >= o.t) || math.IsInf(t, 0) {
		return fmt.Errorf("filter: forecast at %v, before the current bin %v", t, o.t)
	}
	o.forecastScalarVar(t-o.t, mean, vars)
	return nil
}

// forecastScalarVar is forecastScalar writing the variances.
func (o *Online) forecastScalarVar(dt float64, mean, vars []float64) {
	o.transition(dt)
	for c, m := range o.m {
		mean[c], vars[c] = rowMoments(o.ha[c], m, o.P[c])
		vars[c] += o.hqh[c]
	}
}

// rowMoments returns r·m and r·P·rᵀ for a state of dimension len(r).
func rowMoments(r, m, P []float64) (mu, v float64) {
	d := len(r)
	for i, ri := range r {
		mu += ri * m[i]
		row := P[i*d : (i+1)*d]
		var s float64
		for j, rj := range r {
			s += row[j] * rj
		}
		v += ri * s
	}
	return mu, v
}

// ForecastStepsVar is ForecastSteps writing the predictive variances
// (length N_p) instead of the covariance. For independent chains it
// propagates no state covariance: the marginal of f h steps ahead is
// (H·Aʰ)·m and (H·Aʰ)·P·(H·Aʰ)ᵀ + Σ_{i<h} (H·Aⁱ)·Q·(H·Aⁱ)ᵀ, whose rows
// H·Aⁱ and noise sums are computed once per distinct kernel, so a step
// costs O(d²) per product.
func (o *Online) ForecastStepsVar(dt float64, n int, mean, vars []float64, fn func(h int)) error {
	if o.hj == nil {
		np := o.model.np
		cov := o.covScratch()
		return o.ForecastSteps(dt, n, mean, cov, func(h int) {
			for k := 0; k < np; k++ {
				vars[k] = cov[k*np+k]
			}
			fn(h)
		})
	}
	if !o.started {
		return errors.New("filter: forecast before the first bin")
	}
	if !(dt > 0) || math.IsInf(dt, 0) {
		return fmt.Errorf("filter: forecast step %v is not positive and finite", dt)
	}
	o.transition(dt)
	o.fc.reset(o)
	for h := 1; h <= n; h++ {
		o.fc.next(o)
		for c, m := range o.m {
			g := o.fc.group[c]
			mean[c], vars[c] = rowMoments(o.fc.rows[g], m, o.P[c])
			vars[c] += o.fc.noise[g]
		}
		fn(h)
	}
	return nil
}

// forecastRows holds, per group of chains with the same kernel and
// measurement row, H·Aʰ and Σ_{i<h} (H·Aⁱ)·Q·(H·Aⁱ)ᵀ of the forecast's
// current step h.
type forecastRows struct {
	group []int             // per chain: its group
	kerns []kernel.Temporal // per group: the kernel
	first []int             // per group: a chain of it
	rows  [][]float64       // per group: H·Aʰ
	noise []float64         // per group: the noise sum
	tmp   []float64
}

// reset groups the chains (once) and puts every group at h = 0.
func (f *forecastRows) reset(o *Online) {
	if len(f.group) != len(o.kerns) {
		f.group = make([]int, len(o.kerns))
		f.kerns, f.first = f.kerns[:0], f.first[:0]
		for c, k := range o.kerns {
			g := -1
			for i, kg := range f.kerns {
				if sameKernel(kg, k) && slicesEqual(o.obs.rows[f.first[i]].h, o.obs.rows[c].h) {
					g = i
					break
				}
			}
			if g < 0 {
				g = len(f.kerns)
				f.kerns, f.first = append(f.kerns, k), append(f.first, c)
			}
			f.group[c] = g
		}
		f.rows, f.noise = make([][]float64, len(f.kerns)), make([]float64, len(f.kerns))
	}
	for g, c := range f.first {
		f.rows[g] = append(f.rows[g][:0], o.obs.rows[c].h...)
		f.noise[g] = 0
	}
}

// next moves every group from step h to h+1: the noise sum gains
// (H·Aʰ)·Q·(H·Aʰ)ᵀ and the row becomes H·Aʰ⁺¹.
func (f *forecastRows) next(o *Online) {
	for g, c := range f.first {
		r, a, q := f.rows[g], o.a[c], o.q[c]
		d := len(r)
		_, v := rowMoments(r, r, q)
		f.noise[g] += v
		f.tmp = linalg.Resize(f.tmp, d)
		clear(f.tmp)
		for i, ri := range r {
			if ri == 0 {
				continue
			}
			for j, aij := range a[i*d : (i+1)*d] {
				f.tmp[j] += ri * aij
			}
		}
		copy(r, f.tmp)
	}
}

// sameKernel reports whether a and b are the same kernel value (kernels
// of a type that cannot be compared count as different).
func sameKernel(a, b kernel.Temporal) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && a == b
}

func slicesEqual(a, b []float64) bool {
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
