package experiment

import (
	"math"
	"testing"
)

// TestSummarise: rows of several seeds regroup by dataset (seed suffix
// dropped), model and split, with the mean and sample standard deviation;
// failed (NaN) fits are left out.
func TestSummarise(t *testing.T) {
	nan := math.NaN()
	rows := []Row{
		{Dataset: "sales-9010@1", Model: "CGP", Split: "test", NLPD: 1, RMSE: 0.5, R2: 0.2},
		{Dataset: "sales-9010@2", Model: "CGP", Split: "test", NLPD: 3, RMSE: 0.7, R2: 0.4},
		{Dataset: "sales-9010@3", Model: "CGP", Split: "test", NLPD: nan, RMSE: nan, R2: nan},
		{Dataset: "sales-9010@1", Model: "CGP", Split: "train", NLPD: 2, RMSE: 0.4, R2: 0.5},
	}
	s := Summarise(rows, 2)
	if len(s) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(s), s)
	}
	g := s[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if g.Dataset != "sales-9010" || g.Split != "test" || g.Seeds != 2 {
		t.Fatalf("first group %+v", g)
	}
	// Two values a, b: mean (a+b)/2, sd |a−b|/√2.
	for _, c := range []struct {
		name string
		got  [2]float64
		want [2]float64
	}{
		{"NLPD", g.NLPD, [2]float64{2, math.Sqrt2}},
		{"NLPDStep", g.NLPDStep, [2]float64{4, 2 * math.Sqrt2}},
		{"RMSE", g.RMSE, [2]float64{0.6, 0.2 / math.Sqrt2}},
		{"R2", g.R2, [2]float64{0.3, 0.2 / math.Sqrt2}},
	} {
		if !near(c.got[0], c.want[0]) || !near(c.got[1], c.want[1]) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s[1].Seeds != 1 || s[1].RMSE != [2]float64{0.4, 0} {
		t.Errorf("single-seed group %+v", s[1])
	}
	SortSummaries(s, []string{"CGP"})
	if s[0].Split != "train" {
		t.Errorf("sorted: %s first, want train", s[0].Split)
	}
}
