package spec

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/cvi"
)

// poolValues are fitted rows of two cells: levels (row means) 2, 4, 0, 6
// and 100; c's level is not positive, so it is not pooled. By hand, the
// shape is the mean of a/2 = [0.5, 1.5], b/4 = d/6 = e/100 = [1, 1]:
// [0.875, 1.125]; the fitted mean level is (2+4+6+100)/4 = 28.
func poolValues() map[string][]float64 {
	return map[string][]float64{"a": {1, 3}, "b": {4, 4}, "c": {0, 0}, "d": {6, 6}, "e": {100, 100}}
}

func poolMean(values map[string][]float64) Mean {
	return Mean{Kind: "periodic", Period: 2, Step: 1, Values: values}
}

// TestPooledProfile checks the pooled rows against the hand computation
// above, for each way of setting a new product's level.
func TestPooledProfile(t *testing.T) {
	shape := []float64{0.875, 1.125}
	scaled := func(l float64) []float64 { return []float64{l * shape[0], l * shape[1]} }
	for _, tc := range []struct {
		name  string
		sum   Summary
		want  map[string][]float64
		by    map[string]string
		own   int
		clean bool
	}{
		{name: "no capacity or features: the fitted mean level",
			sum:  Summary{Names: []string{"a", "x"}},
			want: map[string][]float64{"a": {1, 3}, "x": scaled(28)}, by: map[string]string{"x": PoolByMean}, own: 1},
		{name: "capacity: 20 docks at (2+4)/(10+30) per dock",
			sum:  Summary{Names: []string{"a", "b", "x"}, Capacity: []float64{10, 30, 20}},
			want: map[string][]float64{"a": {1, 3}, "b": {4, 4}, "x": scaled(3)}, by: map[string]string{"x": PoolByCapacity}, own: 2},
		{name: "no capacity of its own: the 3 nearest of a, b, d, e",
			sum: Summary{Names: []string{"x", "a", "b", "d", "e"}, Capacity: []float64{0, 1, 1, 1, 1},
				Features: [][]float64{{0}, {1}, {2}, {3}, {100}}},
			want: map[string][]float64{"x": scaled(4), "a": {1, 3}, "b": {4, 4}, "d": {6, 6}, "e": {100, 100}},
			by:   map[string]string{"x": PoolByNeighbours}, own: 4},
		{name: "a pooled product is nobody's neighbour",
			sum:  Summary{Names: []string{"x", "y", "a"}, Features: [][]float64{{0}, {0.1}, {5}}},
			want: map[string][]float64{"x": scaled(2), "y": scaled(2), "a": {1, 3}},
			by:   map[string]string{"x": PoolByNeighbours, "y": PoolByNeighbours}, own: 1},
		{name: "geographic neighbours",
			sum: Summary{Names: []string{"x", "a", "e"}, Geographic: true,
				Features: [][]float64{{40.75, -73.99}, {40.76, -73.99}, {40.70, -73.90}}},
			want: map[string][]float64{"x": scaled(51), "a": {1, 3}, "e": {100, 100}},
			by:   map[string]string{"x": PoolByNeighbours}, own: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, rep, err := poolMean(poolValues()).PooledProfile(tc.sum)
			if err != nil {
				t.Fatal(err)
			}
			for k, name := range tc.sum.Names {
				for c, v := range tc.want[name] {
					if math.Abs(p.M[k][c]-v) > 1e-12 {
						t.Errorf("%s: %v, want %v", name, p.M[k], tc.want[name])
						break
					}
				}
			}
			if !reflect.DeepEqual(rep.By, tc.by) || rep.Own != tc.own || rep.Rows != 5 || rep.Unused != 5-tc.own || rep.Fitted != 4 {
				t.Errorf("report %+v, want by %v, own %d", rep, tc.by, tc.own)
			}
		})
	}
}

// TestPooledProfileOwnRows: when every product has a row the profile is
// NewProfile's, and nothing is pooled.
func TestPooledProfileOwnRows(t *testing.T) {
	m := poolMean(map[string][]float64{"a": {1, 3}, "b": {4.25, -1}})
	names := []string{"b", "a"}
	want, err := m.NewProfile(names)
	if err != nil {
		t.Fatal(err)
	}
	got, rep, err := m.PooledProfile(Summary{Names: names, Capacity: []float64{3, 4}, Features: [][]float64{{0}, {1}}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || rep.Pooled() != 0 || rep.Own != 2 || rep.Unused != 0 {
		t.Errorf("profile %+v report %+v, want %+v and nothing pooled", got, rep, want)
	}
}

// TestPooledProfileErrors: nothing to pool, or a row of the wrong
// length, is refused naming the product.
func TestPooledProfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string][]float64
		is     error
		want   string
	}{
		{"no row with a positive level", map[string][]float64{"a": {0, 0}, "b": {-1, 1}}, ErrNoPool, `product "x"`},
		{"no rows at all", map[string][]float64{}, ErrNoPool, `product "a" and 1 more`},
		{"a short row", map[string][]float64{"a": {1, 2}, "b": {1}}, nil, `values["b"] has 1 values, want 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := poolMean(tc.values).PooledProfile(Summary{Names: []string{"a", "x"}})
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %v mentioning %q", err, tc.is, tc.want)
			}
		})
	}
}

// pooledModelFile is a saved model's [model.mean] with one fitted product.
const pooledModelFile = `[model]
likelihood = "tobit"

[model.mean]
kind = "periodic"
period = 2.0
step = 1.0
estimate = false
level = "scale"

[model.mean.values]
"HB-101" = [1.0, 3.0]
`

// TestPooledServedModel builds a model file fitted on one product for that
// product and a new one: the new one gets the fitted shape at the fitted
// level, its level starts at 1 and is re-estimated like the other's.
func TestPooledServedModel(t *testing.T) {
	s, err := Decode(strings.NewReader(pooledModelFile))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"HB-101", "MH-0101"}
	b, err := s.Build(Summary{Variance: 1, MedianStep: 1, NP: 2, Names: names}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.Mean.M, [][]float64{{1, 3}, {1, 3}}) || b.Pooling.By["MH-0101"] != PoolByMean || b.Pooling.Pooled() != 1 {
		t.Fatalf("profile %v, pooling %+v", b.Mean.M, b.Pooling)
	}
	if b.MeanScale() != nil || !reflect.DeepEqual(b.MeanBase().M, b.Mean.M) {
		t.Fatalf("levels %v before any estimate, want none (1)", b.MeanScale())
	}
	// A week at the fitted level at HB-101 and twice the pooled level at
	// MH-0101: the levels re-estimated are 1 and 2.
	times := []float64{0, 1, 2, 3}
	obs := make([]cvi.Obs, 8)
	f := make([]float64, 8)
	for n, tm := range times {
		for k := range names {
			f[n*2+k] = float64(k+1) * b.MeanBase().At(tm, k)
		}
	}
	s2 := make([]float64, 2)
	b.MeanBase().EstimateScale(times, obs, f, 2, b.MeanScale(), s2)
	b.SetMeanScale(s2)
	if !reflect.DeepEqual(s2, []float64{1, 2}) || !reflect.DeepEqual(b.Mean.M[1], []float64{2, 6}) {
		t.Errorf("levels %v, profile %v; want [1 2] and MH-0101 at [2 6]", s2, b.Mean.M)
	}
}

// TestModelErrorLines: errors about model.mean.values name the line, and
// InFile the file, for errors of Decode and of Build.
func TestModelErrorLines(t *testing.T) {
	bad := strings.Replace(pooledModelFile, `"HB-101" = [1.0, 3.0]`, "\"HB-101\" = [1.0, 3.0]\n\"HB-102\" = [1.0]", 1)
	if _, err := Decode(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 13: ") || !strings.Contains(err.Error(), "has 1 values") {
		t.Errorf("short row: err %v, want line 13", err)
	}
	unknown := strings.Replace(pooledModelFile, "level = ", "levle = 1\nlevel = ", 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.toml")
	if err := os.WriteFile(path, []byte(unknown), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+": line 9: unknown key") {
		t.Errorf("unknown key: err %v, want %s: line 9", err, path)
	}
	zero := strings.Replace(pooledModelFile, "[1.0, 3.0]", "[0.0, 0.0]", 1)
	if err := os.WriteFile(path, []byte(zero), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Build(Summary{Variance: 1, MedianStep: 1, NP: 1, Names: []string{"MH-0101"}}, "")
	if err = InFile(path, err); err == nil || !strings.HasPrefix(err.Error(), path+": line 11: ") || !strings.Contains(err.Error(), `"MH-0101"`) {
		t.Errorf("nothing to pool: err %v, want %s: line 11 naming MH-0101", err, path)
	}
	if !strings.Contains(InFile(path, errors.New("x")).Error(), path+": x") || InFile(path, nil) != nil {
		t.Error("InFile of an error without a line, or of nil")
	}
}
