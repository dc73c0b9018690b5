package filter

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// obsWork turns sites into whitened observation rows; it is shared by the
// batch and the online filter so both compute exactly the same update.
type obsWork struct {
	h      []float64 // H of the scalar chain being run
	rows   []hrow    // product k's measurement in the joint state
	cw, z  []float64 // whitened observation of one bin
	g, lam []float64 // site-whitening scratch
}

// hrow is one product's measurement row in the joint state: H_k placed at
// offset off.
type hrow struct {
	off int
	h   []float64
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
		r.h = resize(r.h, d)
		kern.Measurement(r.h)
		r.off = off
		off += d
	}
	p.h = p.rows[0].h
	p.cw, p.z = resize(p.cw, np*off), resize(p.z, np)
	p.g, p.lam = resize(p.g, np*np), resize(p.lam, np*np)
}

// scalarObs whitens a scalar site (λ₁, λ₂) of a single-product chain.
func (p *obsWork) scalarObs(l1, l2 float64) (r int, logdet float64) {
	if l2 <= 0 {
		return 0, 0
	}
	sq := math.Sqrt(l2)
	for i, h := range p.h {
		p.cw[i] = sq * h
	}
	p.z[0] = l1 / sq
	return 1, 0.5 * math.Log(l2)
}

// whiten turns bin n's site over all products into r whitened rows
// z = Cw·x + e, e ~ N(0, I): with Λ = L·Lᵀ, Cw = Lᵀ·B·(I⊗H) and
// z = L⁻¹·λ₁. It returns r and log|L|, the Jacobian that makes
// log N(z | …) + log|L| = log N(ỹ | …) for an invertible Λ. Products with
// zero precision drop out; a singular full block is factorised through its
// eigendecomposition.
func (p *obsWork) whiten(m *Model, l1, l2 []float64, full bool) (r int, logdet float64, err error) {
	np := m.np
	D := m.StateDim()
	g := p.g // r×np rows of Lᵀ·B
	if !full {
		for k := 0; k < np; k++ {
			if l2[k] <= 0 {
				continue
			}
			sq := math.Sqrt(l2[k])
			for j := 0; j < np; j++ {
				g[r*np+j] = sq * m.b[k*np+j]
			}
			p.z[r] = l1[k] / sq
			logdet += 0.5 * math.Log(l2[k])
			r++
		}
	} else {
		r, logdet, err = p.whitenFull(m, l1, l2)
		if err != nil {
			return 0, 0, err
		}
	}
	cw := p.cw[:r*D]
	for i := range cw {
		cw[i] = 0
	}
	for row := 0; row < r; row++ {
		for j := 0; j < np; j++ {
			gv := g[row*np+j]
			if gv == 0 {
				continue
			}
			hr := p.rows[j]
			for a, ha := range hr.h {
				cw[row*D+hr.off+a] = gv * ha
			}
		}
	}
	return r, logdet, nil
}

// whitenFull factorises a full site block restricted to the products with
// non-zero precision.
func (p *obsWork) whitenFull(m *Model, l1, l2 []float64) (r int, logdet float64, err error) {
	np := m.np
	idx := make([]int, 0, np)
	for k := 0; k < np; k++ {
		if l2[k*np+k] > 0 {
			idx = append(idx, k)
		}
	}
	q := len(idx)
	if q == 0 {
		return 0, 0, nil
	}
	lam := p.lam[:q*q]
	for a, i := range idx {
		for b, j := range idx {
			lam[a*q+b] = l2[i*np+j]
		}
	}
	g := p.g
	if cholesky(lam, q) {
		// Rows of Lᵀ·B_sub, z = L⁻¹ λ₁.
		for a := 0; a < q; a++ {
			logdet += math.Log(lam[a*q+a])
			for j := 0; j < np; j++ {
				var v float64
				for b := a; b < q; b++ {
					v += lam[b*q+a] * m.b[idx[b]*np+j]
				}
				g[a*np+j] = v
			}
		}
		for a := 0; a < q; a++ {
			v := l1[idx[a]]
			for b := 0; b < a; b++ {
				v -= lam[a*q+b] * p.z[b]
			}
			p.z[a] = v / lam[a*q+a]
		}
		return q, logdet, nil
	}
	// Positive semi-definite block: Λ = V·diag(e)·Vᵀ, keep e > tol.
	idx, eig, ok := siteBlock(l2, np)
	if !ok {
		return 0, 0, errors.New("filter: site precision block cannot be factorised")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	maxv := 0.0
	for _, v := range vals {
		maxv = math.Max(maxv, v)
	}
	for c, e := range vals {
		if e < -1e-10*maxv {
			return 0, 0, errors.New("filter: site precision block is not positive semi-definite")
		}
		if e <= 1e-13*maxv*float64(q) {
			continue
		}
		sq := math.Sqrt(e)
		var z float64
		for j := 0; j < np; j++ {
			g[r*np+j] = 0
		}
		for a := range idx {
			va := vecs.At(a, c)
			z += va * l1[idx[a]]
			for j := 0; j < np; j++ {
				g[r*np+j] += sq * va * m.b[idx[a]*np+j]
			}
		}
		p.z[r] = z / sq
		logdet += 0.5 * math.Log(e)
		r++
	}
	return r, logdet, nil
}

// siteBlock returns the products with positive precision in a full site
// block and the eigendecomposition of the block restricted to them (nil
// when there are none); ok is false if the decomposition failed.
func siteBlock(l2 []float64, np int) (idx []int, eig *mat.EigenSym, ok bool) {
	for k := 0; k < np; k++ {
		if l2[k*np+k] > 0 {
			idx = append(idx, k)
		}
	}
	q := len(idx)
	if q == 0 {
		return nil, nil, true
	}
	sym := mat.NewSymDense(q, nil)
	for a, i := range idx {
		for b := a; b < q; b++ {
			sym.SetSym(a, b, l2[i*np+idx[b]])
		}
	}
	eig = new(mat.EigenSym)
	if !eig.Factorize(sym, true) {
		return idx, nil, false
	}
	return idx, eig, true
}
