package inventory

import "math"

// normCDF is Φ(x).
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// normPDF is φ(x) (0 at ±∞).
func normPDF(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }

// normProb is P(a < Z < b) for a standard normal Z, computed in the
// tail that keeps its precision.
func normProb(a, b float64) float64 {
	if a > 0 {
		return 0.5 * (math.Erfc(a/math.Sqrt2) - math.Erfc(b/math.Sqrt2))
	}
	return 0.5 * (math.Erfc(-b/math.Sqrt2) - math.Erfc(-a/math.Sqrt2))
}

// normReach bounds |z| where a rule places nodes: P(|Z| > 8.5) ≈ 2e-17,
// below rounding of any output.
const normReach = 8.5

// baseNodes is the Gauss–Legendre rule (on [−1, 1]) that discretises
// the normal density over an interval for the Stieltjes procedure in
// truncGauss: 48 points integrate φ times a polynomial of degree < 32
// over any interval within ±normReach to rounding.
var baseX, baseW = legendre(48)

// legendre returns the n-point Gauss–Legendre rule on [−1, 1] (Newton on
// the Legendre polynomial from Chebyshev guesses).
func legendre(n int) (x, w []float64) {
	x, w = make([]float64, n), make([]float64, n)
	for i := range (n + 1) / 2 {
		z := math.Cos(math.Pi * (float64(i) + 0.75) / (float64(n) + 0.5))
		var dp float64
		for range 100 {
			p0, p1 := 1.0, z
			for k := 2; k <= n; k++ {
				p0, p1 = p1, (float64(2*k-1)*z*p1-float64(k-1)*p0)/float64(k)
			}
			dp = float64(n) * (z*p1 - p0) / (z*z - 1)
			dz := p1 / dp
			z -= dz
			if math.Abs(dz) < 1e-16 {
				break
			}
		}
		p0, p1 := 1.0, z
		for k := 2; k <= n; k++ {
			p0, p1 = p1, (float64(2*k-1)*z*p1-float64(k-1)*p0)/float64(k)
		}
		dp = float64(n) * (z*p1 - p0) / (z*z - 1)
		x[i], x[n-1-i] = -z, z
		w[i] = 2 / ((1 - z*z) * dp * dp)
		w[n-1-i] = w[i]
	}
	return x, w
}

// maxGauss bounds the nodes of one truncGauss rule.
const maxGauss = 16

// truncGauss writes into z[:n], w[:n] the n-point Gauss rule of the
// standard normal restricted to (a, b): Σ w_i g(z_i) = E[g(Z); a < Z < b]
// (the weights sum to P(a < Z < b)), exact for polynomials g of degree
// ≤ 2n − 1. The recurrence of the orthogonal polynomials comes from a
// discretised Stieltjes procedure on baseX; the nodes and weights from
// the eigen-decomposition of their Jacobi matrix (Golub–Welsch). It
// returns n, or fewer when the interval holds no mass. n ≤ maxGauss.
func truncGauss(a, b float64, n int, z, w []float64) int {
	a, b = math.Max(a, -normReach), math.Min(b, normReach)
	mass := normProb(a, b)
	if !(b > a) || mass <= 0 {
		return 0
	}
	half, mid := (b-a)/2, (b+a)/2
	var px, pw, p0, p1 [48]float64
	for i, x := range baseX {
		px[i] = mid + half*x
		pw[i] = half * baseW[i] * normPDF(px[i])
		p1[i] = 1
	}
	var alpha, beta [maxGauss]float64
	norm0 := 0.0
	for i := range pw {
		norm0 += pw[i]
	}
	prev := norm0
	for k := range n {
		num := 0.0
		for i := range pw {
			num += pw[i] * px[i] * p1[i] * p1[i]
		}
		alpha[k] = num / prev
		if k == n-1 {
			break
		}
		next := 0.0
		for i := range pw {
			q := (px[i]-alpha[k])*p1[i] - beta[k]*p0[i]
			p0[i], p1[i] = p1[i], q
			next += pw[i] * q * q
		}
		if !(next > 1e-300) {
			n = k + 1
			break
		}
		beta[k+1] = next / prev
		prev = next
	}
	// Jacobi matrix: diagonal alpha, off-diagonal √beta[1..n−1].
	var d, e, v [maxGauss]float64
	for k := range n {
		d[k] = alpha[k]
		if k+1 < n {
			e[k] = math.Sqrt(beta[k+1])
		}
	}
	v[0] = 1
	tridiagEigen(d[:n], e[:n], v[:n])
	for k := range n {
		z[k], w[k] = d[k], mass*v[k]*v[k]
		for j := k; j > 0 && z[j] < z[j-1]; j-- { // ascending nodes
			z[j], z[j-1] = z[j-1], z[j]
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
	return n
}

// tridiagEigen replaces d by the eigenvalues of the symmetric
// tridiagonal matrix with diagonal d and off-diagonal e[0..n−2] (e is
// destroyed) and v, given as the first unit vector, by the first
// components of the normalised eigenvectors (implicit QL with Wilkinson
// shifts, the first row of the eigenvector matrix carried along).
func tridiagEigen(d, e, v []float64) {
	n := len(d)
	if n > 0 {
		e[n-1] = 0
	}
	// z holds the first row of the accumulated rotations.
	var z [maxGauss]float64
	z[0] = 1
	for l := range n {
		for iter := 0; iter < 60; iter++ {
			m := l
			for ; m < n-1; m++ {
				dd := math.Abs(d[m]) + math.Abs(d[m+1])
				if math.Abs(e[m]) <= 1e-16*dd {
					break
				}
			}
			if m == l {
				break
			}
			g := (d[l+1] - d[l]) / (2 * e[l])
			r := math.Hypot(g, 1)
			g = d[m] - d[l] + e[l]/(g+math.Copysign(r, g))
			s, c, p := 1.0, 1.0, 0.0
			i := m - 1
			for ; i >= l; i-- {
				f, b := s*e[i], c*e[i]
				r = math.Hypot(f, g)
				e[i+1] = r
				if r == 0 {
					d[i+1] -= p
					e[m] = 0
					break
				}
				s, c = f/r, g/r
				g = d[i+1] - p
				r = (d[i]-g)*s + 2*c*b
				p = s * r
				d[i+1] = g + p
				g = c*r - b
				f = z[i+1]
				z[i+1] = s*z[i] + c*f
				z[i] = c*z[i] - s*f
			}
			if r == 0 && i >= l {
				continue
			}
			d[l] -= p
			e[l] = g
			e[m] = 0
		}
	}
	copy(v, z[:n])
}
