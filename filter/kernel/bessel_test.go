package kernel

import (
	"math"
	"testing"
)

// iveOrders are the orders of the columns of iveReference.
var iveOrders = [6]int{0, 1, 2, 5, 13, 20}

// iveReference holds I_j(z)·e^{−z} from mpmath (besseli·exp at 40 digits),
// chosen to exercise every branch of ive: the series (z ≤ 1), Miller's
// recurrence and the asymptotic expansion (z ≥ 1e4 for low orders).
var iveReference = []struct {
	z    float64
	want [6]float64
}{
	{1e-10, [6]float64{9.9999999990000000001e-1, 4.9999999995e-11, 1.249999999875e-21, 2.60416666640625e-54, 1.960332499415980251e-144, 3.9199043492328005754e-225}},
	{0.01, [6]float64{9.9007458514970749901e-1, 4.9503110471182756055e-3, 1.2375726052377898592e-5, 2.5782655181358727213e-14, 1.9408303310991126761e-40, 3.8809052697811111555e-65}},
	{0.5, [6]float64{6.4503527044915006811e-1, 1.5642080318487169714e-1, 1.9352057709663279537e-2, 4.9876055214701639354e-6, 1.4579112312897378082e-18, 2.2741587160374397307e-31}},
	{1, [6]float64{4.657596075936404365e-1, 2.0791041534970844887e-1, 4.9938776894223538763e-2, 9.9865714112086907179e-5, 7.3415186656289262442e-15, 1.4593174056818685961e-25}},
	{1.5, [6]float64{3.6743360905415833924e-1, 2.1903938742092567212e-1, 7.5381092492924109751e-2, 4.8431730426444447813e-4, 8.8613609076138191861e-13, 2.9873406275088970022e-22}},
	{3, [6]float64{2.4300035416182539847e-1, 1.9682671329730085363e-1, 1.1178254529695816272e-1, 4.5409031389258205638e-3, 1.8257904808816433701e-9, 7.5724438323916370209e-17}},
	{10, [6]float64{1.2783333716342860732e-1, 1.2126268138445551872e-1, 1.0358080088653750358e-1, 3.5284293614933962722e-2, 4.8361490354273427061e-5, 5.6786220145215239128e-9}},
	{47.3, [6]float64{5.8162038134069447878e-2, 5.7543896777520280053e-2, 5.5728892392948082971e-2, 4.4538954723336109143e-2, 9.6711931737800238495e-3, 8.6311997241385490771e-4}},
	{300, [6]float64{2.3042558415085461794e-2, 2.3004122040268950902e-2, 2.2889197601483668788e-2, 2.2100660233670359262e-2, 1.737877356969068038e-2, 1.1820202345559258552e-2}},
	{5000, [6]float64{5.642036898744588657e-3, 5.6414726668388859036e-3, 5.6397803096778531026e-3, 5.6279480170604768312e-3, 5.547478342075260002e-3, 5.4207880690083524521e-3}},
	{20000, [6]float64{2.8209655491591628818e-3, 2.8208950241388380876e-3, 2.820683459656748998e-3, 2.8192029525027505318e-3, 2.8090718159850775041e-3, 2.7928957770230669015e-3}},
	{100000, [6]float64{1.2615678379767767669e-3, 1.2615615301218171273e-3, 1.2615426067461743306e-3, 1.2614101510642607148e-3, 1.2605022580981598938e-3, 1.2590472111730347514e-3}},
	{3e6, [6]float64{2.303294425779518265e-4, 2.3032940418970819782e-4, 2.3032928902501570002e-4, 2.3032848287378051961e-4, 2.3032295505560433904e-4, 2.3031408779105280519e-4}},
	{1e12, [6]float64{3.9894228040148254572e-7, 3.9894228040128307458e-7, 3.9894228040068466116e-7, 3.9894228039649576722e-7, 3.9894228036777192303e-7, 3.9894228032169408965e-7}},
}

// ktRelErr returns |got − want|/|want| (|got − want| if want is 0).
func ktRelErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestIveReference(t *testing.T) {
	const tol = 3e-15
	for _, c := range iveReference {
		for i, j := range iveOrders {
			if got := ive(j, c.z); ktRelErr(got, c.want[i]) > tol {
				t.Errorf("ive(%d, %g) = %.17g, want %.17g (rel err %.2g > %g)", j, c.z, got, c.want[i], ktRelErr(got, c.want[i]), tol)
			}
			if got := ive(-j, c.z); ktRelErr(got, c.want[i]) > tol {
				t.Errorf("ive(%d, %g) = %.17g, want I_{−j} = I_j = %.17g", -j, c.z, got, c.want[i])
			}
		}
		// The sequence form must agree with the single-order form (it may
		// take another branch, as the asymptotic threshold depends on the
		// highest order).
		seq := make([]float64, 21)
		iveSeq(seq, c.z)
		for i, j := range iveOrders {
			if ktRelErr(seq[j], c.want[i]) > tol {
				t.Errorf("iveSeq(z=%g)[%d] = %.17g, want %.17g", c.z, j, seq[j], c.want[i])
			}
		}
	}
}

// TestIveReferenceNotes checks the periodic series weights q_j² = c_j·Ive_j(ℓ⁻²)
// (s = 1) listed in section 7 of the reference notes, to the digits given.
func TestIveReferenceNotes(t *testing.T) {
	for _, c := range []struct {
		lengthscale float64
		want        []float64
		sum3        float64 // Σ_{j≤3}
		tol         float64 // one unit in the last digit given
	}{
		// The notes' 0.0000166 is 1.6546e-5 (mpmath) rounded twice, hence a
		// tolerance of one unit rather than half a unit in the last digit.
		{1, []float64{0.4657596, 0.4158208, 0.0998776, 0.0163106, 0.0020139, 0.0001997, 0.0000166}, 0.997769, 1e-7},
		{0.5, []float64{0.207002, 0.357502, 0.235253, 0.122249, 0.051880, 0.018489, 0.005658}, 0.922005, 1e-6},
	} {
		q := make([]float64, len(c.want))
		if err := periodicCoefficients(q, 1, c.lengthscale); err != nil {
			t.Fatal(err)
		}
		for j := range q {
			if math.Abs(q[j]-c.want[j]) > c.tol {
				t.Errorf("ℓ=%g: q_%d² = %.9f, want %.7f ± %g", c.lengthscale, j, q[j], c.want[j], c.tol)
			}
		}
		if s := q[0] + q[1] + q[2] + q[3]; math.Abs(s-c.sum3) > 5e-7 {
			t.Errorf("ℓ=%g: Σ_{j≤3} q_j² = %.9f, want %.6f", c.lengthscale, s, c.sum3)
		}
	}
}

// iveTrapezoid is the quadrature route (1/π)∫₀^π e^{−2z sin²(θ/2)} cos(jθ) dθ
// by the trapezoid rule, which converges geometrically for this periodic
// integrand (the aliasing error is about Ive_{2n−j}(z)). Its rounding error
// is absolute (relative to Ive_0), so it checks only orders whose value is
// not tiny against Ive_0.
func iveTrapezoid(j int, z float64, n int) float64 {
	var s float64
	for k := 0; k <= n; k++ {
		th := math.Pi * float64(k) / float64(n)
		sh := math.Sin(th / 2)
		v := math.Exp(-2*z*sh*sh) * math.Cos(float64(j)*th)
		if k == 0 || k == n {
			v /= 2
		}
		s += v
	}
	return s / float64(n)
}

// iveLogSeries is the power series with each term from math.Lgamma, a
// route independent of ive's running products, for moderate z.
func iveLogSeries(j int, z float64) float64 {
	var s float64
	lz := math.Log(z / 2)
	for k := 0; k < 400; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		ljk, _ := math.Lgamma(float64(j + k + 1))
		t := math.Exp(float64(2*k+j)*lz - lk - ljk - z)
		s += t
		if k > int(z) && t < 1e-18*s {
			break
		}
	}
	return s
}

func TestIveIndependentRoutes(t *testing.T) {
	for _, z := range []float64{0.3, 1.7, 4, 9.5, 27, 60, 250, 1800, 7000} {
		for j := 0; j <= 20; j++ {
			got := ive(j, z)
			// Trapezoid: 2n − j ≫ √(80z) makes the aliasing negligible.
			n := 64 + int(10*math.Sqrt(z))
			if got > 1e-3*ive(0, z) {
				if want := iveTrapezoid(j, z, n); ktRelErr(got, want) > 1e-13 {
					t.Errorf("ive(%d, %g) = %.17g, trapezoid %.17g (rel %.2g)", j, z, got, want, ktRelErr(got, want))
				}
			}
			// Lgamma series: each term's exponent carries a rounding error
			// of about eps·|exponent|, hence the looser tolerance.
			if z <= 60 {
				if want := iveLogSeries(j, z); ktRelErr(got, want) > 1e-12 {
					t.Errorf("ive(%d, %g) = %.17g, lgamma series %.17g (rel %.2g)", j, z, got, want, ktRelErr(got, want))
				}
			}
			// Asymptotic expansion, outside the range where ive uses it.
			if z >= 1800 && j <= 5 {
				if want := iveAsymptotic(j, z); ktRelErr(got, want) > 1e-14 {
					t.Errorf("ive(%d, %g) = %.17g, asymptotic %.17g (rel %.2g)", j, z, got, want, ktRelErr(got, want))
				}
			}
		}
	}
}

// TestIveBranchContinuity checks that neighbouring branches agree at the
// same z where they meet. (Comparing ive just below and above a boundary
// would not do: d log Ive_j/dz ≈ j/z − 1, so one ulp of z moves Ive_20 by
// ~4e-15 near z = 1.)
func TestIveBranchContinuity(t *testing.T) {
	for _, j := range []int{0, 1, 4, 12, 20} {
		for _, z := range []float64{iveSeriesMaxZ, iveAsymptoticZ(j)} {
			seq := make([]float64, j+1)
			iveMiller(seq, z)
			other := iveSeries(j, z)
			if z > iveSeriesMaxZ {
				other = iveAsymptotic(j, z)
			}
			if ktRelErr(seq[j], other) > 3e-15 {
				t.Errorf("order %d, z=%g: recurrence %.17g vs neighbouring branch %.17g (rel %.2g)", j, z, seq[j], other, ktRelErr(seq[j], other))
			}
		}
	}
}

// TestIveNormalisation checks e^{z} = I_0 + 2Σ_{j≥1} I_j in scaled form on
// the series branch, where it is not built in.
func TestIveNormalisation(t *testing.T) {
	for _, z := range []float64{1e-6, 0.1, 0.9} {
		seq := make([]float64, 30)
		iveSeq(seq, z)
		s := seq[0]
		for _, v := range seq[1:] {
			s += 2 * v
		}
		if math.Abs(s-1) > 4e-16 {
			t.Errorf("z=%g: Ive_0 + 2ΣIve_j = %.17g, want 1", z, s)
		}
	}
}

func TestIveSpecialValues(t *testing.T) {
	for _, c := range []struct {
		j    int
		z    float64
		want float64
	}{
		{0, 0, 1}, {1, 0, 0}, {20, 0, 0},
		{0, math.Inf(1), 0}, {3, math.Inf(1), 0},
		{0, 1e-320, 1}, {1, 1e-320, 5e-321},
	} {
		if got := ive(c.j, c.z); got != c.want {
			t.Errorf("ive(%d, %g) = %g, want %g", c.j, c.z, got, c.want)
		}
	}
	for _, z := range []float64{-1, math.NaN(), math.Inf(-1)} {
		if got := ive(2, z); !math.IsNaN(got) {
			t.Errorf("ive(2, %g) = %g, want NaN", z, got)
		}
	}
	iveSeq(nil, 3) // must not panic
}
