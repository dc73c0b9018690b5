package csvio

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// FuzzReadProducts: any input yields products or an error, never a
// panic; accepted products have unique non-empty names, one finite value
// per feature column, coordinates in range when geographic, and survive a
// round trip through the CSV writer.
func FuzzReadProducts(f *testing.F) {
	for _, s := range []string{
		"product,lat,lon\ns1,40.7,-73.9\ns2,40.71,-73.95\n",
		"product,x,y\na,0,0\nb,1e3,-2.5\n",
		"product\nonly-names\n\"quoted, name\"\n",
		"\ufeffProduct , X\n a , 1\n",
		"product,lat,lon\na,91,0\n",
		"product,x\na,NaN\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ReadProducts(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkProducts(t, p)
		// Write them back and read them again.
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		_ = w.Write(append([]string{"product"}, p.Columns...))
		for i, n := range p.Names {
			rec := []string{n}
			for _, v := range p.Features[i] {
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
			_ = w.Write(rec)
		}
		w.Flush()
		back, err := ReadProducts(&b, "back.csv")
		if err != nil {
			t.Fatalf("written back, refused: %v\n%q", err, b.String())
		}
		if strings.Join(back.Names, "\x00") != strings.Join(p.Names, "\x00") || strings.Join(back.Columns, "\x00") != strings.Join(p.Columns, "\x00") || back.Geographic != p.Geographic {
			t.Fatalf("round trip: %q %q -> %q %q", p.Names, p.Columns, back.Names, back.Columns)
		}
		for i := range p.Features {
			for j := range p.Features[i] {
				if back.Features[i][j] != p.Features[i][j] {
					t.Fatalf("round trip: %s.%s %v -> %v", p.Names[i], p.Columns[j], p.Features[i][j], back.Features[i][j])
				}
			}
		}
	})
}

func checkProducts(t *testing.T, p *Products) {
	t.Helper()
	if len(p.Names) == 0 || len(p.Features) != len(p.Names) {
		t.Fatalf("%d names, %d feature rows", len(p.Names), len(p.Features))
	}
	for i, n := range p.Names {
		if n == "" || n != strings.TrimSpace(n) || strings.IndexFunc(n, unicode.IsControl) >= 0 {
			t.Fatalf("name %q", n)
		}
		if k, ok := p.Index(n); !ok || k != i {
			t.Fatalf("Index(%q) = %d, %v; want %d", n, k, ok, i)
		}
		if len(p.Features[i]) != len(p.Columns) {
			t.Fatalf("%s: %d features, %d columns", n, len(p.Features[i]), len(p.Columns))
		}
		for _, v := range p.Features[i] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: feature %v", n, v)
			}
		}
		if p.Geographic && (p.Features[i][0] < -90 || p.Features[i][0] > 90 || p.Features[i][1] < -180 || p.Features[i][1] > 360) {
			t.Fatalf("%s: lat,lon %v", n, p.Features[i])
		}
	}
}

// FuzzReadObsRoundTrip: accepted OBS rows have finite times, a product,
// a finite or missing demand, a finite non-negative or unlimited supply,
// censoring only with a demand and a finite supply; written back as CSV
// they read back the same.
func FuzzReadObsRoundTrip(f *testing.F) {
	for _, s := range []string{
		"time,product,demand,supply,censored\n2018-06-01T00:00,a,3,5,0\n2018-06-01T00:00,b,4,4,1\n2018-06-01T01:00:00Z,a,,5,0\n2018-06-01T02:00,b,2,,0\n",
		"time,product,demand,supply\n1,a,2,3\n2,a,,\n2.5,\"b,c\",-1,0\n",
		"supply,demand,product,time,censored\n3,3,x,2024-01-01 00:00,yes\n",
		"time,product,demand,supply\n2024-01-01T00:00:00.5+01:00,a,1,1\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		o, err := ReadObs(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for i, r := range o.Rows {
			switch {
			case math.IsNaN(r.Time) || math.IsInf(r.Time, 0):
				t.Fatalf("row %d: time %v", i, r.Time)
			case r.Product == "" || r.Product != strings.TrimSpace(r.Product) || strings.IndexFunc(r.Product, unicode.IsControl) >= 0:
				t.Fatalf("row %d: product %q", i, r.Product)
			case math.IsInf(r.Demand, 0):
				t.Fatalf("row %d: demand %v", i, r.Demand)
			case math.IsNaN(r.Supply) || r.Supply < 0 || math.IsInf(r.Supply, -1):
				t.Fatalf("row %d: supply %v", i, r.Supply)
			case r.Censored && (math.IsNaN(r.Demand) || math.IsInf(r.Supply, 1)):
				t.Fatalf("row %d: censored without a demand or a supply: %+v", i, r)
			}
		}
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		_ = w.Write([]string{"time", "product", "demand", "supply", "censored"})
		num := func(v float64) string {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return ""
			}
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		for _, r := range o.Rows {
			_ = w.Write([]string{r.TimeText, r.Product, num(r.Demand), num(r.Supply), strconv.FormatBool(r.Censored)})
		}
		w.Flush()
		back, err := ReadObs(&b, "back.csv")
		if err != nil {
			t.Fatalf("written back, refused: %v\n%q", err, b.String())
		}
		if back.Kind != o.Kind || len(back.Rows) != len(o.Rows) {
			t.Fatalf("round trip: kind %v, %d rows -> %v, %d rows", o.Kind, len(o.Rows), back.Kind, len(back.Rows))
		}
		for i, r := range o.Rows {
			q := back.Rows[i]
			same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
			if q.Time != r.Time || q.Product != r.Product || !same(q.Demand, r.Demand) || q.Supply != r.Supply || q.Censored != r.Censored {
				t.Fatalf("round trip row %d: %+v -> %+v", i, r, q)
			}
		}
	})
}

// FuzzParseTime: a time parses to a finite number of the kind its text
// says, or an error; a numeric time formatted back parses to itself.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"1", "-2.5e3", "2018-06-01T00:00", "2018-06-01 00:00:00", "2018-06-01T00:00:00.123456789Z", "2018-06-01T00:00+05:30", "1e400", "NaN", "0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, kind, err := ParseTime(s)
		if err != nil {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%q: %v", s, v)
		}
		if kind == Numeric {
			back, k2, err := ParseTime(strconv.FormatFloat(v, 'g', -1, 64))
			if err != nil || k2 != Numeric || back != v {
				t.Fatalf("%q: %v formatted back gives %v, %v, %v", s, v, back, k2, err)
			}
		}
	})
}

// TestProductNamesWithoutControlCharacters: a product name with a line
// break (inside quotes) or another control character is refused, naming
// the file and line.
func TestProductNamesWithoutControlCharacters(t *testing.T) {
	for _, name := range []string{"\"a\r\nb\"", "\"a\nb\"", "a\x00b", "a\tb"} {
		_, err := ReadProducts(strings.NewReader("product,x\n"+name+",1\n"), "p.csv")
		if err == nil || !strings.Contains(err.Error(), "p.csv:2: product") || !strings.Contains(err.Error(), "control character") {
			t.Errorf("products %q: %v", name, err)
		}
		_, err = ReadObs(strings.NewReader("time,product,demand,supply\n1,"+name+",1,2\n"), "o.csv")
		if err == nil || !strings.Contains(err.Error(), "o.csv:2: product") || !strings.Contains(err.Error(), "control character") {
			t.Errorf("obs %q: %v", name, err)
		}
	}
}
