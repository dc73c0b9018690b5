package filter

import "github.com/dcgpd/dcgpd/internal/linalg"

// tblocks is a chain's transition T = I_m ⊗ A (m copies of a d×d A) cut
// into dense diagonal blocks: the finest partition of A into consecutive
// diagonal blocks outside of which A, and the process noise Q when given,
// are zero. Stacked per-product kernels, sums and periodic harmonics are
// block-diagonal, so products with T cost Σ n_b² instead of d² per row of
// each copy, with no test for zeros in the inner loops.
type tblocks struct {
	D     int
	all2  bool      // every block is 1×1 or 2×2: sandwich2 applies
	blk   []tblock  // the blocks of T, in order
	a, q  []float64 // the blocks of A (or Aᵀ) and of Q's symmetric part, row-major
	reach []int     // scratch: the largest index each index is coupled to
}

// tblock is one diagonal block of T: rows and columns o..o+n−1, entries a
// (and q) row-major.
type tblock struct {
	o, n int
	a, q []float64
}

// set cuts the d×d transition a (transposed if t) and, unless q is nil,
// the process noise q into blocks, for m copies.
func (tb *tblocks) set(a, q []float64, d, m int, t bool) {
	tb.D = m * d
	if cap(tb.reach) < d {
		tb.reach = make([]int, d)
	}
	reach := tb.reach[:d]
	for i := range reach {
		reach[i] = i
	}
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			if a[i*d+j] != 0 || (q != nil && q[i*d+j] != 0) {
				lo, hi := min(i, j), max(i, j)
				reach[lo] = max(reach[lo], hi)
			}
		}
	}
	// A block ends at i once nothing at or before i couples beyond i.
	tb.blk = tb.blk[:0]
	start, end, size := 0, 0, 0
	for i := 0; i < d; i++ {
		end = max(end, reach[i])
		if end == i {
			tb.blk = append(tb.blk, tblock{o: start, n: i + 1 - start})
			size += (i + 1 - start) * (i + 1 - start)
			start = i + 1
		}
	}
	tb.a = linalg.Resize(tb.a, size)
	if q != nil {
		tb.q = linalg.Resize(tb.q, size)
	}
	p := 0
	for b := range tb.blk {
		bk := &tb.blk[b]
		o, n := bk.o, bk.n
		bk.a, bk.q = tb.a[p:p+n*n], nil
		if q != nil {
			bk.q = tb.q[p : p+n*n]
		}
		p += n * n
		for r := 0; r < n; r++ {
			for c := 0; c < n; c++ {
				if t {
					bk.a[r*n+c] = a[(o+c)*d+o+r]
				} else {
					bk.a[r*n+c] = a[(o+r)*d+o+c]
				}
				if q != nil {
					bk.q[r*n+c] = 0.5 * (q[(o+r)*d+o+c] + q[(o+c)*d+o+r])
				}
			}
		}
	}
	// The other copies share the first one's entries.
	nb := len(tb.blk)
	for c := 1; c < m; c++ {
		for _, bk := range tb.blk[:nb] {
			bk.o += c * d
			tb.blk = append(tb.blk, bk)
		}
	}
	tb.all2 = true
	for _, bk := range tb.blk {
		tb.all2 = tb.all2 && bk.n <= 2
	}
}

// mulBlock writes rows o..o+n−1 of dst = T·x, where T's block there is
// the n×n a.
func mulBlock(dst, x, a []float64, o, n int) {
	if n == 2 {
		a := a[:4]
		x0, x1 := x[o], x[o+1]
		dst[o], dst[o+1] = a[0]*x0+a[1]*x1, a[2]*x0+a[3]*x1
		return
	}
	xb := x[o : o+n]
	for r := 0; r < n; r++ {
		ar := a[r*n : (r+1)*n]
		var s float64
		for k, v := range xb {
			s += ar[k] * v
		}
		dst[o+r] = s
	}
}

// sandwich writes dst = T·src·Tᵀ, plus I_m ⊗ Q if withQ, for the symmetric
// D×D src, through tmp (D×D scratch) = T·src on the lower block triangle,
// and y = T·x. The lower triangle of dst is formed and mirrored, so dst is
// exactly symmetric. Blocks go last to first, each finishing its columns of
// dst once the rows of tmp below it are known.
func (tb *tblocks) sandwich(dst, src, tmp []float64, withQ bool, y, x []float64) {
	D := tb.D
	dst, src, tmp = dst[:D*D], src[:D*D], tmp[:D*D]
	if tb.all2 {
		tb.sandwich2(dst, src, withQ, y, x)
		return
	}
	for b := len(tb.blk) - 1; b >= 0; b-- {
		bk := &tb.blk[b]
		q := bk.q
		if !withQ {
			q = nil
		}
		if bk.n == 3 {
			block3(dst, src, tmp, bk.a, q, bk.o, D, y, x)
			continue
		}
		leftBlock(tmp, src, bk.a, bk.o, bk.n, D)
		rightBlock(dst, tmp, bk.a, q, bk.o, bk.n, D)
		mulBlock(y, x, bk.a, bk.o, bk.n)
	}
}

// sandwich2 is sandwich when every block is 1×1 or 2×2 (Matérn-1/2 and
// -3/2 states, periodic harmonics): block (i, j) of dst is A_i·S_ij·A_jᵀ
// (+ Q_i on the diagonal), formed for j ≤ i in one pass with the
// arithmetic of leftBlock and rightBlock (T·S first, then ·Tᵀ), so the
// result is the same to the last bit, without tmp.
// One pass over the 1×1 and 2×2 blocks kept in one function: it is the
// per-bin prediction's inner loop (BenchmarkFilterStep), tested
// bit-identical to the block-by-block code.
func (tb *tblocks) sandwich2(dst, src []float64, withQ bool, y, x []float64) {
	D := tb.D
	for i := range tb.blk {
		bi := &tb.blk[i]
		o, two := bi.o, bi.n == 2
		var a00, a01, a10, a11 float64
		if two {
			a00, a01, a10, a11 = bi.a[0], bi.a[1], bi.a[2], bi.a[3]
			x0, x1 := x[o], x[o+1]
			y[o], y[o+1] = a00*x0+a01*x1, a10*x0+a11*x1
		} else {
			a00 = bi.a[0]
			y[o] = a00 * x[o]
		}
		r0 := src[o*D : (o+1)*D]
		r1 := r0
		if two {
			r1 = src[(o+1)*D : (o+2)*D]
		}
		for j := range tb.blk[:i] {
			bj := &tb.blk[j]
			p, twoJ := bj.o, bj.n == 2
			b := bj.a
			// t = A_i·S_ij, row by row as leftBlock.
			t00 := rowDot(a00, a01, r0[p], r1[p], two)
			var t01, t10, t11 float64
			if twoJ {
				t01 = rowDot(a00, a01, r0[p+1], r1[p+1], two)
			}
			if two {
				t10 = rowDot(a10, a11, r0[p], r1[p], true)
				if twoJ {
					t11 = rowDot(a10, a11, r0[p+1], r1[p+1], true)
				}
			}
			// v = t·A_jᵀ, as rightBlock, and its mirror image.
			var b00, b01, b10, b11 float64
			if twoJ {
				b00, b01, b10, b11 = b[0], b[1], b[2], b[3]
			} else {
				b00 = b[0]
			}
			dst[o*D+p] = rowDot(b00, b01, t00, t01, twoJ)
			dst[p*D+o] = dst[o*D+p]
			if twoJ {
				dst[o*D+p+1] = rowDot(b10, b11, t00, t01, true)
				dst[(p+1)*D+o] = dst[o*D+p+1]
			}
			if two {
				dst[(o+1)*D+p] = rowDot(b00, b01, t10, t11, twoJ)
				dst[p*D+o+1] = dst[(o+1)*D+p]
				if twoJ {
					dst[(o+1)*D+p+1] = rowDot(b10, b11, t10, t11, true)
					dst[(p+1)*D+o+1] = dst[(o+1)*D+p+1]
				}
			}
		}
		// The diagonal block from its lower triangle, as diagBlock.
		var q []float64
		if withQ {
			q = bi.q
		}
		if !two {
			var v float64
			v += a00 * (a00 * r0[o])
			if q != nil {
				v += q[0]
			}
			dst[o*D+o] = v
			continue
		}
		if q == nil {
			q = zeroBlock[:]
		}
		s00, s01, s10, s11 := r0[o], r0[o+1], r1[o], r1[o+1]
		t00, t01 := a00*s00+a01*s10, a00*s01+a01*s11
		t10, t11 := a10*s00+a11*s10, a10*s01+a11*s11
		v00 := a00*t00 + a01*t01 + q[0]
		v10 := a00*t10 + a01*t11 + q[2]
		v11 := a10*t10 + a11*t11 + q[3]
		dst[o*D+o], dst[o*D+o+1], dst[(o+1)*D+o], dst[(o+1)*D+o+1] = v00, v10, v10, v11
	}
}

// rowDot is one row of a 1×1 or 2×2 block times (x, y): a0·x + a1·y, or
// a0·x alone for a 1×1 block.
func rowDot(a0, a1, x, y float64, two bool) float64 {
	if two {
		return a0*x + a1*y
	}
	return a0 * x
}

// block3 is leftBlock, rightBlock and mulBlock for a 3×3 block (a
// Matérn-5/2 state), in one pass.
func block3(dst, src, tmp, a, q []float64, o, D int, y, x []float64) {
	a = a[:9]
	a00, a01, a02 := a[0], a[1], a[2]
	a10, a11, a12 := a[3], a[4], a[5]
	a20, a21, a22 := a[6], a[7], a[8]
	x0, x1, x2 := x[o], x[o+1], x[o+2]
	y[o] = a00*x0 + a01*x1 + a02*x2
	y[o+1] = a10*x0 + a11*x1 + a12*x2
	y[o+2] = a20*x0 + a21*x1 + a22*x2
	// Rows o..o+2 of tmp, up to column o+2.
	for j := o * D; j <= o*D+o+2; j++ {
		x, y, z := src[j], src[j+D], src[j+2*D]
		tmp[j] = a00*x + a01*y + a02*z
		tmp[j+D] = a10*x + a11*y + a12*z
		tmp[j+2*D] = a20*x + a21*y + a22*z
	}
	// The diagonal block, from its lower triangle, plus Q's.
	var q0, q3, q4, q6, q7, q8 float64
	if q != nil {
		q = q[:9]
		q0, q3, q4, q6, q7, q8 = q[0], q[3], q[4], q[6], q[7], q[8]
	}
	t := o*D + o
	t10, t11, t12 := tmp[t+D], tmp[t+D+1], tmp[t+D+2]
	t20, t21, t22 := tmp[t+2*D], tmp[t+2*D+1], tmp[t+2*D+2]
	v00 := a00*tmp[t] + a01*tmp[t+1] + a02*tmp[t+2] + q0
	v10 := a00*t10 + a01*t11 + a02*t12 + q3
	v11 := a10*t10 + a11*t11 + a12*t12 + q4
	v20 := a00*t20 + a01*t21 + a02*t22 + q6
	v21 := a10*t20 + a11*t21 + a12*t22 + q7
	v22 := a20*t20 + a21*t21 + a22*t22 + q8
	dst[t], dst[t+1], dst[t+2] = v00, v10, v20
	dst[t+D], dst[t+D+1], dst[t+D+2] = v10, v11, v21
	dst[t+2*D], dst[t+2*D+1], dst[t+2*D+2] = v20, v21, v22
	// The rows below, and their mirror images.
	for i := o + 3; i < D; i++ {
		ti := i*D + o
		x, y, z := tmp[ti], tmp[ti+1], tmp[ti+2]
		v0 := a00*x + a01*y + a02*z
		v1 := a10*x + a11*y + a12*z
		v2 := a20*x + a21*y + a22*z
		dst[ti], dst[ti+1], dst[ti+2] = v0, v1, v2
		dst[o*D+i], dst[o*D+D+i], dst[o*D+2*D+i] = v0, v1, v2
	}
}

// leftBlock writes rows o..o+n−1 of tmp = T·src, where T's block there is
// the n×n a, over columns 0..o+n−1: those rightBlock reads. Blocks of
// one and two (Matérn-1/2 and -3/2 states, periodic harmonics) are
// unrolled.
func leftBlock(tmp, src, a []float64, o, n, D int) {
	L := o + n
	switch n {
	case 1:
		a00 := a[0]
		t0, s0 := tmp[o*D:o*D+L], src[o*D:o*D+L]
		for j, x := range s0 {
			t0[j] = a00 * x
		}
	case 2:
		a00, a01, a10, a11 := a[0], a[1], a[2], a[3]
		s0, s1 := src[o*D:o*D+L], src[(o+1)*D:(o+1)*D+L]
		t0, t1 := tmp[o*D:o*D+L], tmp[(o+1)*D:(o+1)*D+L]
		s1, t0, t1 = s1[:len(s0)], t0[:len(s0)], t1[:len(s0)]
		for j, x := range s0 {
			y := s1[j]
			t0[j] = a00*x + a01*y
			t1[j] = a10*x + a11*y
		}
	default:
		for r := 0; r < n; r++ {
			out := tmp[(o+r)*D : (o+r)*D+L]
			ar := a[r*n : (r+1)*n]
			clear(out)
			for k, v := range ar {
				if v == 0 {
					continue
				}
				in := src[(o+k)*D : (o+k)*D+L]
				in = in[:len(out)]
				for j := range out {
					out[j] += v * in[j]
				}
			}
		}
	}
}

// rightBlock writes columns o..o+n−1 of dst = tmp·Tᵀ (+ Q) on and below
// the diagonal, and their mirror images, where T's block there is the n×n
// a and q (nil for none) is Q's block.
func rightBlock(dst, tmp, a, q []float64, o, n, D int) {
	diagBlock(dst, tmp, a, q, o, n, D)
	// Rows below the block.
	switch n {
	case 1:
		a00 := a[0]
		for i := o + 1; i < D; i++ {
			v0 := a00 * tmp[i*D+o]
			dst[i*D+o], dst[o*D+i] = v0, v0
		}
	case 2:
		a00, a01, a10, a11 := a[0], a[1], a[2], a[3]
		d0, d1 := dst[o*D:(o+1)*D], dst[(o+1)*D:(o+2)*D]
		for i := o + 2; i < D; i++ {
			ti := tmp[i*D+o : i*D+o+2]
			x, y := ti[0], ti[1]
			v0 := a00*x + a01*y
			v1 := a10*x + a11*y
			di := dst[i*D+o : i*D+o+2]
			di[0], di[1] = v0, v1
			d0[i], d1[i] = v0, v1
		}
	default:
		for i := o + n; i < D; i++ {
			ti := tmp[i*D+o : i*D+o+n]
			for r := 0; r < n; r++ {
				ar := a[r*n : (r+1)*n]
				var s float64
				for k, v := range ti {
					s += ar[k] * v
				}
				dst[i*D+o+r], dst[(o+r)*D+i] = s, s
			}
		}
	}
}

var zeroBlock [4]float64

// diagBlock writes the n×n diagonal block at o of dst = tmp·Tᵀ + Q, where
// T's block there is a and Q's is q (nil for none), from its lower
// triangle.
func diagBlock(dst, tmp, a, q []float64, o, n, D int) {
	if n == 2 {
		if q == nil {
			q = zeroBlock[:] // adding zero changes nothing
		}
		t0, t1 := tmp[o*D+o:o*D+o+2], tmp[(o+1)*D+o:(o+1)*D+o+2]
		v00 := a[0]*t0[0] + a[1]*t0[1] + q[0]
		v10 := a[0]*t1[0] + a[1]*t1[1] + q[2]
		v11 := a[2]*t1[0] + a[3]*t1[1] + q[3]
		d0, d1 := dst[o*D+o:o*D+o+2], dst[(o+1)*D+o:(o+1)*D+o+2]
		d0[0], d0[1], d1[0], d1[1] = v00, v10, v10, v11
		return
	}
	for i := 0; i < n; i++ {
		ti := tmp[(o+i)*D+o : (o+i)*D+o+n]
		for r := 0; r <= i; r++ {
			ar := a[r*n : (r+1)*n]
			var s float64
			for k, v := range ti {
				s += ar[k] * v
			}
			if q != nil {
				s += q[i*n+r]
			}
			dst[(o+i)*D+o+r], dst[(o+r)*D+o+i] = s, s
		}
	}
}
