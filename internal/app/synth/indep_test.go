package synth

import (
	"testing"
)

func TestIndepShapesAndProtocol(t *testing.T) {
	// Paper censored fractions are not stated for A–C; print ours.
	for _, c := range []struct {
		name string
		gen  func(uint64) (*Dataset, error)
		np   int
	}{{"A", DatasetA, 2}, {"B", DatasetB, 2}, {"C", DatasetC, 3}} {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.gen(123)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			if len(d.Products) != c.np || d.Train.Len() != 400 || d.Test.Len() != 1000 {
				t.Fatalf("shape: %d products, %d train, %d test", len(d.Products), d.Train.Len(), d.Test.Len())
			}
			if d.Train.Times[0] != -17 || d.Train.Times[199] != 60 || d.Train.Times[200] != 75 || d.Train.Times[399] != 147 {
				t.Fatalf("train grid ends %v %v %v %v", d.Train.Times[0], d.Train.Times[199], d.Train.Times[200], d.Train.Times[399])
			}
			if d.Train.Index != nil || d.Test.Index != nil {
				t.Fatal("A/B/C splits are separate grids but carry an Index")
			}
			checkCapped(t, &d.Train)
			cf := d.Train.CensoredFraction()
			t.Logf("%s train censored fractions %.3f, test %.3f", c.name, cf, d.Test.CensoredFraction())
			for k, f := range cf {
				if f < 0.05 || f > 0.6 {
					t.Errorf("product %d censored fraction %.3f implausible", k, f)
				}
			}
			// Noise sd 0.1 around f.
			r, _ := RMSE(d.Train.TrueY, d.Train.TrueF, nil)
			if !near(r, 0.1, 0.01) {
				t.Errorf("train noise RMSE %v, want ≈ 0.1", r)
			}
			checkDeterministic(t, c.gen)
		})
	}
}

func TestIndepTransferRule(t *testing.T) {
	d, err := DatasetC(5)
	if err != nil {
		t.Fatal(err)
	}
	// Before the cap, product 2 gets e1 + e3 and products 1, 3 get e2/2.
	for i, y := range d.Train.TrueY {
		u := d.Train.Supply[i]
		e := []float64{max(y[0]-u[0], 0), max(y[1]-u[1], 0), max(y[2]-u[2], 0)}
		want := []float64{min(y[0], u[0]) + e[1]/2, min(y[1], u[1]) + e[0] + e[2], min(y[2], u[2]) + e[1]/2}
		for k := range want {
			if w := min(want[k], u[k]); !near(d.Train.Obs[i][k], w, 1e-15) {
				t.Fatalf("row %d product %d: obs %v, want %v", i, k, d.Train.Obs[i][k], w)
			}
			if d.Train.Censored[i][k] != (y[k] > u[k]) {
				t.Fatalf("row %d product %d: censored flag wrong", i, k)
			}
		}
	}
	for i := range d.Train.Supply {
		for _, u := range d.Train.Supply[i] {
			if u != 0.5 {
				t.Fatalf("C supply %v, want 0.5", u)
			}
		}
	}
}

func TestDatasetBSupply(t *testing.T) {
	d, err := DatasetB(3)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[float64]bool{}
	for _, row := range d.Test.Supply {
		for _, u := range row {
			if u < 0 || u >= 1 {
				t.Fatalf("B supply %v outside [0,1)", u)
			}
			distinct[u] = true
		}
	}
	if len(distinct) < 1000 {
		t.Fatalf("B test supply has %d distinct values, want fresh draws", len(distinct))
	}
	ref, err := DatasetBWith(3, BOptions{ReferenceTestSupply: true})
	if err != nil {
		t.Fatal(err)
	}
	first := ref.Train.Supply[0][0]
	for _, row := range ref.Test.Supply {
		for _, u := range row {
			if u != first {
				t.Fatalf("reference B test supply %v, want first draw %v", u, first)
			}
		}
	}
	// The option must not change the training data.
	if ref.Train.Obs[17][1] != d.Train.Obs[17][1] || ref.Test.TrueY[3][0] != d.Test.TrueY[3][0] {
		t.Fatal("ReferenceTestSupply changed the draws")
	}
}
