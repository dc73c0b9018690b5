package synth

import (
	"errors"
	"fmt"
	"math"
)

// RMSE is sqrt(mean over the rows idx (nil: all rows) and all products of
// (truth − est)²), the paper's RMSE. NaNs propagate.
func RMSE(truth, est [][]float64, idx []int) (float64, error) {
	rows, np, err := metricRows(truth, est, idx)
	if err != nil {
		return 0, fmt.Errorf("synth: RMSE: %w", err)
	}
	s := 0.0
	for _, i := range rows {
		for k := range np {
			d := truth[i][k] - est[i][k]
			s += d * d
		}
	}
	return math.Sqrt(s / float64(len(rows)*np)), nil
}

// R2 is scikit-learn's r2_score(truth, est) with multioutput=
// 'uniform_average' over the rows idx (nil: all rows): per product
// 1 − SS_res/SS_tot around that product's own mean, then the unweighted
// mean over products. A constant truth column scores 1 if predicted exactly
// and 0 otherwise (scikit-learn's force_finite).
func R2(truth, est [][]float64, idx []int) (float64, error) {
	rows, np, err := metricRows(truth, est, idx)
	if err != nil {
		return 0, fmt.Errorf("synth: R2: %w", err)
	}
	total := 0.0
	for k := range np {
		mean := 0.0
		for _, i := range rows {
			mean += truth[i][k]
		}
		mean /= float64(len(rows))
		res, tot := 0.0, 0.0
		for _, i := range rows {
			d, c := truth[i][k]-est[i][k], truth[i][k]-mean
			res += d * d
			tot += c * c
		}
		switch {
		case tot != 0:
			total += 1 - res/tot
		case res == 0:
			total++
		}
	}
	return total / float64(np), nil
}

// NLPDGaussian is the per-observation mean of −log N(y | mean, predVar)
// over all entries (the univariate models' NLPD, with predVar the
// predictive variance including observation noise). Every predVar must be
// > 0.
func NLPDGaussian(y, mean, predVar [][]float64) (float64, error) {
	rows, np, err := metricRows(y, mean, nil)
	if err != nil {
		return 0, fmt.Errorf("synth: NLPD: %w", err)
	}
	if _, _, err := metricRows(y, predVar, nil); err != nil {
		return 0, fmt.Errorf("synth: NLPD variances: %w", err)
	}
	s := 0.0
	for _, i := range rows {
		for k := range np {
			v := predVar[i][k]
			if !(v > 0) {
				return 0, fmt.Errorf("synth: NLPD: predictive variance %v at row %d product %d is not > 0", v, i, k)
			}
			d := y[i][k] - mean[i][k]
			s += 0.5*math.Log(2*math.Pi*v) + 0.5*d*d/v
		}
	}
	return s / float64(len(rows)*np), nil
}

// Scores are the paper's four metrics on one split.
type Scores struct {
	NLPD, RMSE, R2, RMSEFunct float64
}

// Evaluate scores a predictive mean and variance (latent variance plus
// noise) against a split's true demand: Gaussian NLPD, RMSE, R² against
// TrueY, and "RMSE funct." against TrueF (NaN where TrueF is unknown).
// predVar may be nil, leaving NLPD NaN.
func Evaluate(s *Split, mean, predVar [][]float64) (Scores, error) {
	var sc Scores
	var err error
	if sc.RMSE, err = RMSE(s.TrueY, mean, nil); err != nil {
		return Scores{}, err
	}
	if sc.R2, err = R2(s.TrueY, mean, nil); err != nil {
		return Scores{}, err
	}
	if sc.RMSEFunct, err = RMSEFunct(s, mean); err != nil {
		return Scores{}, err
	}
	sc.NLPD = math.NaN()
	if predVar != nil {
		if sc.NLPD, err = NLPDGaussian(s.TrueY, mean, predVar); err != nil {
			return Scores{}, err
		}
	}
	return sc, nil
}

// RMSEFunct is the paper's "RMSE funct.": RMSE of est against the split's
// noiseless generating function TrueF (NaN when TrueF is unknown).
func RMSEFunct(s *Split, est [][]float64) (float64, error) {
	return RMSE(s.TrueF, est, nil)
}

// metricRows checks that a and b have the same shape and returns the rows
// to score (idx, or all rows) and the number of columns.
func metricRows(a, b [][]float64, idx []int) ([]int, int, error) {
	if len(a) == 0 {
		return nil, 0, errors.New("no rows")
	}
	if len(b) != len(a) {
		return nil, 0, fmt.Errorf("%d rows vs %d", len(a), len(b))
	}
	np := len(a[0])
	if np == 0 {
		return nil, 0, errors.New("no columns")
	}
	for i := range a {
		if len(a[i]) != np || len(b[i]) != np {
			return nil, 0, fmt.Errorf("row %d has %d/%d columns, want %d", i, len(a[i]), len(b[i]), np)
		}
	}
	if idx == nil {
		idx = make([]int, len(a))
		for i := range idx {
			idx[i] = i
		}
	}
	if len(idx) == 0 {
		return nil, 0, errors.New("empty index set")
	}
	for _, i := range idx {
		if i < 0 || i >= len(a) {
			return nil, 0, fmt.Errorf("row index %d out of range [0, %d)", i, len(a))
		}
	}
	return idx, np, nil
}
