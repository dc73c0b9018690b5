package filter

import (
	"errors"
	"math"
	"slices"

	"github.com/dcgpd/dcgpd/internal/linalg"
)

// obsWork turns sites into whitened observation rows; it is shared by the
// batch and the online filter so both compute exactly the same update.
type obsWork struct {
	h      []float64 // H of the scalar chain being run
	rows   []hrow    // product k's measurement in the joint state
	sel    []int     // if every H_k is a unit vector: its index in the joint state
	fUnit  bool      // C_f's rows are the unit vectors at sel
	D      int       // joint state dimension
	cfp    []int     // C_f = B·(I⊗H) by rows: row k's non-zeros are
	cfj    []int     // cfv[cfp[k]:cfp[k+1]] in columns cfj[cfp[k]:cfp[k+1]]
	cfv    []float64 //
	cw, z  []float64 // whitened observation of one bin (cw: see rowsFrom)
	sup    []int     // the columns where some row of cw may be non-zero
	cs     []float64 // cw's columns sup, r×len(sup)
	pos    []int     // pos[sup[e]] = e
	supOf  []int     // the products sup was built from, if supOK
	supOK  bool
	unit   bool      // C_f's rows of supOf are the unit vectors of sup: cs = T
	used   []int     // scratch for supOf
	t, lam []float64 // whitening factor (rows of cw = t·C_f[idx]) and Λ scratch
	idx    []int     // products with positive precision
	mark   []bool    // D scratch for sup
	evals  []float64 // eigendecomposition of a semi-definite block
	evecs  []float64
}

// hrow is one product's measurement row in the joint state: H_k placed at
// offset off, whose non-zeros hv are at the joint state's indices hj.
type hrow struct {
	off int
	h   []float64
	hj  []int
	hv  []float64
}

// grow sizes the scratch for model m.
func (p *obsWork) grow(m *Model) {
	np := m.np
	if cap(p.rows) < np {
		p.rows = make([]hrow, np)
	}
	p.rows = p.rows[:np]
	off := 0
	for k := 0; k < np; k++ {
		kern := m.kernelOf(k)
		d := kern.Dim()
		r := &p.rows[k]
		r.h = linalg.Resize(r.h, d)
		kern.Measurement(r.h)
		r.off = off
		r.hj, r.hv = r.hj[:0], r.hv[:0]
		for a, h := range r.h {
			if h != 0 {
				r.hj, r.hv = append(r.hj, off+a), append(r.hv, h)
			}
		}
		off += d
	}
	p.D = off
	p.h = p.rows[0].h
	p.sel = p.sel[:0]
	for k := range p.rows {
		r := &p.rows[k]
		if len(r.hj) != 1 || r.hv[0] != 1 {
			p.sel = p.sel[:0]
			break
		}
		p.sel = append(p.sel, r.hj[0])
	}
	// C_f's rows mix the latents' measurement rows; their non-zeros come
	// in increasing columns, the latents' offsets increasing.
	p.cfp, p.cfj, p.cfv = append(p.cfp[:0], 0), p.cfj[:0], p.cfv[:0]
	for k := 0; k < np; k++ {
		for j, hr := range p.rows {
			bkj := m.b[k*np+j]
			if bkj == 0 {
				continue
			}
			for a, h := range hr.h {
				if h != 0 {
					p.cfj, p.cfv = append(p.cfj, hr.off+a), append(p.cfv, bkj*h)
				}
			}
		}
		p.cfp = append(p.cfp, len(p.cfj))
	}
	p.fUnit = len(p.sel) == np
	for k := 0; k < np && p.fUnit; k++ {
		e := p.cfp[k]
		p.fUnit = p.cfp[k+1] == e+1 && p.cfv[e] == 1 && p.cfj[e] == p.sel[k]
	}
	p.cw, p.z = linalg.Resize(p.cw, np*off), linalg.Resize(p.z, np)
	p.cs = linalg.Resize(p.cs, np*off)
	if cap(p.pos) < off {
		p.pos = make([]int, off)
	}
	p.pos = p.pos[:off]
	p.t, p.lam = linalg.Resize(p.t, np*np), linalg.Resize(p.lam, np*np)
	p.evals, p.evecs = linalg.Resize(p.evals, np), linalg.Resize(p.evecs, np*np)
	if cap(p.idx) < np {
		p.idx = make([]int, 0, np)
	}
	if cap(p.sup) < off {
		p.sup = make([]int, 0, off)
	}
	if cap(p.mark) < off {
		p.mark = make([]bool, off)
	}
	p.mark = p.mark[:off]
	if cap(p.used) < np {
		p.used, p.supOf = make([]int, 0, np), make([]int, 0, np)
	}
	p.supOK = false
}

// unitF reports whether C_f's rows are unit vectors (at sel): independent
// products, each measured by one state component.
func (p *obsWork) unitF() bool { return p.fUnit }

// scalarObs whitens a scalar site (λ₁, λ₂) of a single-product chain,
// multiplying √λ₂ (see whiten) into det.
func (p *obsWork) scalarObs(l1, l2 float64, det *logProd) (r int) {
	p.sup, p.supOK = p.sup[:0], false
	if l2 <= 0 {
		return 0
	}
	sq := math.Sqrt(l2)
	for i, h := range p.h {
		p.cw[i] = sq * h
		if h != 0 {
			p.cs[len(p.sup)] = sq * h
			p.sup = append(p.sup, i)
		}
	}
	p.z[0] = l1 / sq
	det.mul(sq)
	return 1
}

// whiten turns bin n's site over all products into r whitened rows
// z = Cw·x + e, e ~ N(0, I): with Λ = L·Lᵀ, Cw = Lᵀ·B·(I⊗H) and
// z = L⁻¹·λ₁. It returns r and multiplies |L| into det: log|L| is the
// Jacobian that makes log N(z | …) + log|L| = log N(ỹ | …) for an
// invertible Λ. Products with zero precision drop out; a singular full
// block is factorised through its eigendecomposition. It also lists the
// support of Cw's rows in p.sup.
func (p *obsWork) whiten(m *Model, l1, l2 []float64, full bool, det *logProd) (r int, err error) {
	np := m.np
	var q int
	if !full {
		// T = diag(√λ) on the observed products.
		idx := p.idx[:0]
		for k := 0; k < np; k++ {
			if l2[k] > 0 {
				idx = append(idx, k)
			}
		}
		p.idx = idx
		q = len(idx)
		t := p.t[:q*q]
		clear(t)
		for a, k := range idx {
			sq := math.Sqrt(l2[k])
			t[a*q+a] = sq
			p.z[a] = l1[k] / sq
			det.mul(sq)
		}
		r = q
	} else {
		r, q, err = p.whitenFull(m, l1, l2, det)
		if err != nil {
			return 0, err
		}
	}
	p.rowsFrom(r, q)
	return r, nil
}

// rowsFrom writes the r whitened rows Cw = T·C_f[idx] (T r×q in p.t):
// their support sup and their columns there, cs. The full rows cw, which
// only the large (BLAS) update reads, are written only for it.
func (p *obsWork) rowsFrom(r, q int) {
	D := p.D
	t, idx := p.t[:r*q], p.idx[:q]
	// The support: C_f's columns of the products T uses, unchanged while
	// they are (every bin, when every product is always observed).
	used := p.used[:0]
	for b, k := range idx {
		for a := 0; a < r; a++ {
			if t[a*q+b] != 0 {
				used = append(used, k)
				break
			}
		}
	}
	p.used = used
	if !p.supOK || !slices.Equal(used, p.supOf) {
		mark := p.mark
		for _, k := range used {
			for _, j := range p.cfj[p.cfp[k]:p.cfp[k+1]] {
				mark[j] = true
			}
		}
		sup := p.sup[:0]
		for j, ok := range mark {
			if ok {
				p.pos[j] = len(sup)
				sup = append(sup, j)
				mark[j] = false
			}
		}
		p.sup, p.supOf, p.supOK = sup, append(p.supOf[:0], used...), true
		// Matérn kernels of independent products measure one component
		// each, with weight one.
		p.unit = len(sup) == len(used)
		for b, k := range used {
			e := p.cfp[k]
			if p.cfp[k+1] != e+1 || p.cfv[e] != 1 || p.pos[p.cfj[e]] != b {
				p.unit = false
			}
		}
	}
	ns := len(p.sup)
	cs := p.cs[:r*ns]
	if p.unit && ns == q {
		copy(cs, t)
	} else {
		p.scatterRows(cs, t, r, q, ns)
	}
	if r*D*D > linalg.SmallOps {
		cw := p.cw[:r*D]
		clear(cw)
		for a := 0; a < r; a++ {
			for e, j := range p.sup {
				cw[a*D+j] = cs[a*ns+e]
			}
		}
	}
}

// scatterRows writes cs = T·C_f[idx] on the columns sup.
func (p *obsWork) scatterRows(cs, t []float64, r, q, ns int) {
	idx := p.idx[:q]
	clear(cs)
	for a := 0; a < r; a++ {
		row := cs[a*ns : (a+1)*ns]
		for b, k := range idx {
			tb := t[a*q+b]
			if tb == 0 {
				continue
			}
			for e := p.cfp[k]; e < p.cfp[k+1]; e++ {
				row[p.pos[p.cfj[e]]] += tb * p.cfv[e]
			}
		}
	}
}

// whitenFull factorises a full site block Λ restricted to the products
// with non-zero precision (listed in p.idx, q of them) as Λ = Tᵀ·T: it
// writes the r×q whitening factor T (Lᵀ for Λ = L·Lᵀ, or √e·vᵀ per kept
// eigenpair of a singular block) into p.t and z = (Tᵀ)⁺·λ₁ into p.z.
func (p *obsWork) whitenFull(m *Model, l1, l2 []float64, det *logProd) (r, q int, err error) {
	np := m.np
	idx := positiveIndex(p.idx, l2, np)
	p.idx = idx
	q = len(idx)
	if q == 0 {
		return 0, 0, nil
	}
	if q == 2 && p.whitenPair(l1, l2, np, det) {
		return 2, 2, nil
	}
	lam := p.lam[:q*q]
	for a, i := range idx {
		for b, j := range idx {
			lam[a*q+b] = l2[i*np+j]
		}
	}
	if linalg.Cholesky(lam, q) {
		p.whitenCholesky(l1, lam, q, det)
		return q, q, nil
	}
	r, err = p.whitenEigen(l1, l2, np, lam, det)
	return r, q, err
}

// whitenPair is whitenFull for two products with the 2×2 Cholesky factor
// in closed form; it reports false, having written nothing, if the block
// is not positive definite.
func (p *obsWork) whitenPair(l1, l2 []float64, np int, det *logProd) bool {
	i0, i1 := p.idx[0], p.idx[1]
	l00 := math.Sqrt(l2[i0*np+i0])
	l10 := l2[i1*np+i0] / l00
	d := l2[i1*np+i1] - l10*l10
	if !(l00 > 0 && d > 0) {
		return false
	}
	l11 := math.Sqrt(d)
	det.mul(l00)
	det.mul(l11)
	t := p.t[:4]
	t[0], t[1], t[2], t[3] = l00, l10, 0, l11
	z0 := l1[i0] / l00
	p.z[0], p.z[1] = z0, (l1[i1]-l10*z0)/l11
	return true
}

// whitenCholesky is whitenFull for a positive definite block with lower
// Cholesky factor L in lam (q×q): T = Lᵀ, z = L⁻¹·λ₁.
func (p *obsWork) whitenCholesky(l1, lam []float64, q int, det *logProd) {
	t := p.t[:q*q]
	for a := 0; a < q; a++ {
		det.mul(lam[a*q+a])
		for b := 0; b < q; b++ {
			v := 0.0
			if b >= a {
				v = lam[b*q+a]
			}
			t[a*q+b] = v
		}
	}
	for a := 0; a < q; a++ {
		v := l1[p.idx[a]]
		for b := 0; b < a; b++ {
			v -= lam[a*q+b] * p.z[b]
		}
		p.z[a] = v / lam[a*q+a]
	}
}

// whitenEigen is whitenFull for a positive semi-definite block:
// Λ = V·diag(e)·Vᵀ, keeping e > tol; the rows of T are √e·vᵀ. lam is q×q
// scratch. It returns the number of rows kept.
func (p *obsWork) whitenEigen(l1, l2 []float64, np int, lam []float64, det *logProd) (r int, err error) {
	idx := p.idx
	q := len(idx)
	t := p.t[:q*q]
	vals, vecs := p.evals[:q], p.evecs[:q*q]
	if !siteEigen(l2, np, idx, lam, vals, vecs) {
		return 0, errors.New("filter: site precision block cannot be factorised")
	}
	maxv := 0.0
	for _, v := range vals {
		maxv = math.Max(maxv, v)
	}
	for c, e := range vals {
		if e < -1e-10*maxv {
			return 0, errors.New("filter: site precision block is not positive semi-definite")
		}
		if e <= 1e-13*maxv*float64(q) {
			continue
		}
		sq := math.Sqrt(e)
		var z float64
		for a := range idx {
			va := vecs[a*q+c]
			z += va * l1[idx[a]]
			t[r*q+a] = sq * va
		}
		p.z[r] = z / sq
		det.mul(sq)
		r++
	}
	return r, nil
}
