package csvio

import (
	"bytes"
	"encoding/csv"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestReadObs(t *testing.T) {
	in := "time,product,demand,supply,censored\n" +
		"2018-06-01T00:00,a,3,5,0\n" +
		"2018-06-01T00:00,b,4,4,1\n" +
		"2018-06-01T01:00:00Z,a,,5,0\n" +
		"2018-06-01T02:00,b,2,,0\n"
	o, err := ReadObs(strings.NewReader(in), "obs.csv")
	if err != nil {
		t.Fatal(err)
	}
	if o.Kind != Timestamp || len(o.Rows) != 4 {
		t.Fatalf("kind %v rows %d", o.Kind, len(o.Rows))
	}
	if d := o.Rows[2].Time - o.Rows[0].Time; d != 1 {
		t.Errorf("hours between rows: %v", d)
	}
	if !math.IsNaN(o.Rows[2].Demand) || !math.IsInf(o.Rows[3].Supply, 1) || !o.Rows[1].Censored {
		t.Errorf("rows: %+v", o.Rows)
	}
	ps := FromObs(o)
	g, err := Build(o, ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Data.Times) != 3 || g.Data.NP != 2 || g.Cell[3] != 2*2+1 {
		t.Errorf("grid: times %v cells %v", g.Data.Times, g.Cell)
	}
	if err := g.Data.Validate(); err != nil {
		t.Error(err)
	}
}

func TestReadObsErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"missing column", "time,product,demand\n1,a,2\n", `missing column "supply"`},
		{"bad number", "time,product,demand,supply\n1,a,x,3\n", "obs.csv:2: demand"},
		{"NaN", "time,product,demand,supply\n1,a,NaN,3\n", "obs.csv:2: demand"},
		{"negative supply", "time,product,demand,supply\n1,a,2,-1\n", "obs.csv:2: negative supply"},
		{"unsorted", "time,product,demand,supply\n2,a,1,3\n1,a,1,3\n", "obs.csv:3: time 1 before"},
		{"duplicate", "time,product,demand,supply\n1,a,1,3\n1,a,2,3\n", "obs.csv:3: duplicate row"},
		{"mixed times", "time,product,demand,supply\n1,a,1,3\n2018-01-01T00:00,a,1,3\n", "mixes"},
		{"bad time", "time,product,demand,supply\nyesterday,a,1,3\n", "obs.csv:2: time"},
		{"censored unlimited", "time,product,demand,supply,censored\n1,a,1,,1\n", "unlimited"},
		{"ragged", "time,product,demand,supply\n1,a,1\n", "obs.csv:2: 3 fields"},
		{"empty", "time,product,demand,supply\n", "no rows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadObs(strings.NewReader(c.in), "obs.csv")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want error containing %q", err, c.want)
			}
		})
	}
}

func TestUnknownProduct(t *testing.T) {
	o, err := ReadObs(strings.NewReader("time,product,demand,supply\n1,a,1,3\n1,zz,1,3\n"), "obs.csv")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ReadProducts(strings.NewReader("product,x,y\na,0,0\n"), "p.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(o, ps); err == nil || !strings.Contains(err.Error(), `obs.csv:3: unknown product "zz"`) {
		t.Errorf("got %v", err)
	}
}

func TestReadProducts(t *testing.T) {
	p, err := ReadProducts(strings.NewReader("product,lat,lon\ns1,40.7,-73.9\ns2,40.71,-73.95\n"), "p.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Geographic || len(p.Features) != 2 {
		t.Errorf("%+v", p)
	}
	for _, bad := range []string{"id,x\na,1\n", "product,x\na,\n", "product,x\na,1\na,2\n", "product,lat,lon\na,91,0\n",
		"product,lat,capacity,lon\na,40,-1,0\n", "product,capacity\na,x\n"} {
		if _, err := ReadProducts(strings.NewReader(bad), "p.csv"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestReadProductsCapacity: a capacity column is not a feature (lat, lon
// stay geographic wherever it is); an empty capacity is 0, not known.
func TestReadProductsCapacity(t *testing.T) {
	for _, tc := range []struct {
		in    string
		feats [][]float64
		caps  []float64
		geo   bool
	}{
		{"product,lat,lon,capacity\ns1,40.7,-73.9,31\ns2,40.71,-73.95,\n", [][]float64{{40.7, -73.9}, {40.71, -73.95}}, []float64{31, 0}, true},
		{"product,capacity,lat,lon\ns1,12,40.7,-73.9\n", [][]float64{{40.7, -73.9}}, []float64{12}, true},
		{"product,x,capacity\ns1,3,12\n", [][]float64{{3}}, []float64{12}, false},
		{"product,lat,lon\ns1,40.7,-73.9\n", [][]float64{{40.7, -73.9}}, nil, true},
	} {
		p, err := ReadProducts(strings.NewReader(tc.in), "p.csv")
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if !reflect.DeepEqual(p.Features, tc.feats) || !reflect.DeepEqual(p.Capacity, tc.caps) || p.Geographic != tc.geo {
			t.Errorf("%q: features %v capacity %v geographic %v", tc.in, p.Features, p.Capacity, p.Geographic)
		}
	}
}

func TestWritePosteriorQuotes(t *testing.T) {
	var b bytes.Buffer
	if err := WritePosterior(&b, []Estimate{{Time: "1", Product: `a,"b"`, Mean: 1.5}}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if recs[1][1] != `a,"b"` || recs[1][2] != "1.5" {
		t.Errorf("%q", recs)
	}
}

// FuzzReadObs: any input yields rows or an error, never a panic, and
// accepted rows satisfy the format's invariants.
func FuzzReadObs(f *testing.F) {
	f.Add("time,product,demand,supply\n1,a,2,3\n2,a,,\n")
	f.Add("time,product,demand,supply,censored\n2018-06-01T00:00,a,3,3,1\n")
	f.Add("product,time,supply,demand\nb,1e300,0,-1\n")
	f.Fuzz(func(t *testing.T, in string) {
		o, err := ReadObs(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			return
		}
		for i, r := range o.Rows {
			if math.IsNaN(r.Time) || math.IsInf(r.Time, 0) || r.Supply < 0 || math.IsNaN(r.Supply) {
				t.Fatalf("row %d accepted with bad values: %+v", i, r)
			}
			if i > 0 && r.Time < o.Rows[i-1].Time {
				t.Fatalf("unsorted rows accepted")
			}
		}
		g, err := Build(o, FromObs(o))
		if err != nil {
			t.Fatalf("build failed on accepted rows: %v", err)
		}
		if err := g.Data.Validate(); err != nil {
			t.Fatalf("accepted rows make invalid data: %v", err)
		}
	})
}
