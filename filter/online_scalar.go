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
		o.args = chainArgs{m: m, P: P, mean: mean, vars: vars}
		o.forEachChain(passMarginal)
		o.args = chainArgs{}
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
// costs O(d²) per product. Every horizon of a product is formed in one
// pass over its state covariance (see forecastMoments) and handed to fn
// horizon by horizon.
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
	if n < 1 {
		return nil
	}
	o.transition(dt)
	f := &o.fc
	f.reset(o)
	f.horizons(o, n)
	np := o.model.np
	f.mean, f.vars = linalg.Resize(f.mean, n*np), linalg.Resize(f.vars, n*np)
	o.args = chainArgs{n: n}
	o.forEachChain(passForecast)
	o.args = chainArgs{}
	for h := 1; h <= n; h++ {
		copy(mean[:np], f.mean[(h-1)*np:h*np])
		copy(vars[:np], f.vars[(h-1)*np:h*np])
		fn(h)
	}
	return nil
}

// forecastMoments writes, for h = 1, …, n, r_h·m into mean[(h−1)·stride]
// and r_h·P·r_hᵀ + noise[h−1] into vars[(h−1)·stride], r_h the row
// rows[(h−1)·d : h·d] (d = len(m)). Each horizon's sums are rowMoments'
// in the same order, so the numbers are the same to the last bit; four
// horizons at a time share one pass over P, and their independent sums
// keep the multiply-adds from waiting on each other.
func forecastMoments(rows, m, P []float64, n, stride int, mean, vars, noise []float64) {
	d := len(m)
	h := 0
	for ; h+4 <= n; h += 4 {
		r0, r1, r2, r3 := rows[h*d:(h+1)*d], rows[(h+1)*d:(h+2)*d], rows[(h+2)*d:(h+3)*d], rows[(h+3)*d:(h+4)*d]
		var mu0, mu1, mu2, mu3, v0, v1, v2, v3 float64
		for i := 0; i < d; i++ {
			x := m[i]
			mu0 += r0[i] * x
			mu1 += r1[i] * x
			mu2 += r2[i] * x
			mu3 += r3[i] * x
			row := P[i*d : (i+1)*d]
			var s0, s1, s2, s3 float64
			for j, p := range row {
				s0 += p * r0[j]
				s1 += p * r1[j]
				s2 += p * r2[j]
				s3 += p * r3[j]
			}
			v0 += r0[i] * s0
			v1 += r1[i] * s1
			v2 += r2[i] * s2
			v3 += r3[i] * s3
		}
		mean[h*stride], vars[h*stride] = mu0, v0+noise[h]
		mean[(h+1)*stride], vars[(h+1)*stride] = mu1, v1+noise[h+1]
		mean[(h+2)*stride], vars[(h+2)*stride] = mu2, v2+noise[h+2]
		mean[(h+3)*stride], vars[(h+3)*stride] = mu3, v3+noise[h+3]
	}
	for ; h < n; h++ {
		mu, v := rowMoments(rows[h*d:(h+1)*d], m, P)
		mean[h*stride], vars[h*stride] = mu, v+noise[h]
	}
}

// forecastRows holds, per group of chains with the same kernel and
// measurement row, H·Aʰ and Σ_{i<h} (H·Aⁱ)·Q·(H·Aⁱ)ᵀ of the forecast's
// current step h, and (horizons) those of every step of a forecast.
type forecastRows struct {
	group []int             // per chain: its group
	kerns []kernel.Temporal // per group: the kernel
	first []int             // per group: a chain of it
	rows  [][]float64       // per group: H·Aʰ
	noise []float64         // per group: the noise sum
	tmp   []float64
	// Per group, H·Aʰ for h = 1, …, n (row after row) and the noise sums;
	// the forecast's moments per horizon (h−1)·N_p + product.
	all, noises [][]float64
	mean, vars  []float64
}

// horizons steps every group from h = 0 to n, keeping each step's row
// and noise sum in all and noises.
func (f *forecastRows) horizons(o *Online, n int) {
	if len(f.all) != len(f.first) {
		f.all, f.noises = make([][]float64, len(f.first)), make([][]float64, len(f.first))
	}
	for h := 0; h < n; h++ {
		f.next(o)
		for g, r := range f.rows {
			if h == 0 {
				f.all[g], f.noises[g] = f.all[g][:0], f.noises[g][:0]
			}
			f.all[g] = append(f.all[g], r...)
			f.noises[g] = append(f.noises[g], f.noise[g])
		}
	}
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
