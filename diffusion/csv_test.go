package diffusion

import (
	"strings"
	"testing"
)

func TestReadTransitionCSV(t *testing.T) {
	products := []string{"3711", "366", "496", "3641"}
	in := "\ufeffFrom, To, Prob\n" +
		"# bike hubs: nearest neighbour, some demand lost\n" +
		"3711,366,0.9\n" +
		"\n" +
		"366,3711,1\n" +
		"496,3641,0.5\n" +
		" 496 ,366, 0.25\n" +
		"3641,496,0\n"
	tr, err := ReadTransitionCSV(strings.NewReader(in), products)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{
		0, 0.9, 0, 0,
		1, 0, 0, 0,
		0, 0.25, 0, 0.5,
		0, 0, 0, 0,
	}
	got := denseT(t, tr)
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("T[%d,%d] = %v, want %v", k/4, k%4, got[k], want[k])
		}
	}
	wantSink := []float64{1 - 0.9, 0, 0.25, 1}
	for i, w := range wantSink {
		if !closeAbs(tr.Sink(i), w, 1e-15) {
			t.Errorf("sink of %s = %v, want %v", products[i], tr.Sink(i), w)
		}
	}
	if tr.NNZ() != 4 {
		t.Errorf("nnz %d, want 4 (zero probabilities not stored)", tr.NNZ())
	}
	// Sums just above 1 are within tolerance and rescaled.
	tr, err = ReadTransitionCSV(strings.NewReader("from,to,prob\na,b,0.6\na,c,0.4000000004\n"), []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if s := tr.At(0, 1) + tr.At(0, 2); !closeAbs(s, 1, 1e-16) || tr.Sink(0) != 0 {
		t.Errorf("rescaled row sums to %.17g, sink %v", s, tr.Sink(0))
	}
}

func TestReadTransitionCSVErrors(t *testing.T) {
	abc := []string{"a", "b", "c"}
	tests := []struct {
		name     string
		in       string
		products []string
		want     string
	}{
		{"empty", "", abc, "empty"},
		{"header", "src,dst,p\na,b,1\n", abc, "line 1: header must be from,to,prob"},
		{"unknown from", "from,to,prob\na,b,0.5\nx,b,0.5\n", abc, `line 3: unknown product "x"`},
		{"unknown to", "from,to,prob\n# c\na,zz,0.5\n", abc, `line 3: unknown product "zz"`},
		{"self-loop", "from,to,prob\nb,b,0.5\n", abc, "line 2: self-loop"},
		{"duplicate", "from,to,prob\na,b,0.5\nc,a,1\na,b,0.1\n", abc, "line 4: duplicate edge \"a\" -> \"b\" (first on line 2)"},
		{"above one", "from,to,prob\na,b,1.5\n", abc, "line 2: prob \"1.5\""},
		{"negative", "from,to,prob\na,b,-0.1\n", abc, "line 2: prob"},
		{"NaN", "from,to,prob\na,b,NaN\n", abc, "line 2: prob"},
		{"Inf", "from,to,prob\na,b,Inf\n", abc, "line 2: prob"},
		{"text", "from,to,prob\na,b,half\n", abc, "line 2: prob \"half\""},
		{"row sum", "from,to,prob\na,b,0.7\nb,a,1\na,c,0.4\n", abc, `line 4: product "a": probabilities sum to 1.1`},
		{"fields", "from,to,prob\na,b\n", abc, "line 2"},
		{"quote", "from,to,prob\na,\"b,1\n", abc, "transition CSV"},
		{"no products", "from,to,prob\n", nil, "no products"},
		{"duplicate product", "from,to,prob\n", []string{"a", " a"}, `"a" appears twice`},
		{"empty product", "from,to,prob\n", []string{"a", ""}, "empty name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadTransitionCSV(strings.NewReader(tc.in), tc.products)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "diffusion: ") {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
