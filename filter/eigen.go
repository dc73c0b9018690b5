package filter

import "github.com/dcgpd/dcgpd/internal/linalg"

// siteEigen factorises the full site block l2 (np×np) restricted to the
// products with positive precision, listed into idx: Λ_sub = V·diag(e)·Vᵀ
// with e in vals[:q] and V in vecs[:q·q] (q = len(idx), columns as in
// linalg.SymEigen). a is q×q scratch. It reports false if the decomposition
// failed. Whitening and ExpectedLog share it so that they drop the same
// directions.
func siteEigen(l2 []float64, np int, idx []int, a, vals, vecs []float64) bool {
	q := len(idx)
	for i, ki := range idx {
		for j := i; j < q; j++ {
			v := l2[ki*np+idx[j]]
			a[i*q+j], a[j*q+i] = v, v
		}
	}
	return linalg.SymEigen(a, q, vals, vecs)
}

// positiveIndex appends to idx[:0] the products whose diagonal site
// precision in the np×np block l2 is positive, and returns it.
func positiveIndex(idx []int, l2 []float64, np int) []int {
	idx = idx[:0]
	for k := 0; k < np; k++ {
		if l2[k*np+k] > 0 {
			idx = append(idx, k)
		}
	}
	return idx
}
