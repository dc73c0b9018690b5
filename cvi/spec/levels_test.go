package spec

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/cvi"
)

// levelsData is four days of hourly bins from 2018-07-01 (hours since the
// Unix epoch) of two products whose value in hour h of the day is
// 100k + h, product 1 never observed at 05:00, every seventh cell missing.
func levelsData() *cvi.Data {
	const n, np = 96, 2
	t0 := 17713.0 * 24 // 2018-07-01T00:00Z
	d := &cvi.Data{NP: np, Times: make([]float64, n), Obs: make([]cvi.Obs, n*np)}
	for i := range d.Times {
		d.Times[i] = t0 + float64(i)
		for k := 0; k < np; k++ {
			o := cvi.Obs{Y: float64(100*k + i%24), Supply: math.Inf(1)}
			if (i*np+k)%7 == 0 || (k == 1 && i%24 == 5) {
				o.Y = math.NaN()
			}
			d.Obs[i*np+k] = o
		}
	}
	return d
}

// TestBinOfDayLevels: the levels are the hour-of-day means of the observed
// values (exact here: every observed value of an hour is the same), a
// never-observed hour gets the product's overall mean, every cell of the
// data gets its level, and At wraps the period and takes any time.
func TestBinOfDayLevels(t *testing.T) {
	d := levelsData()
	l := Levels{Source: LevelsBinOfDay}
	if err := l.fill(d, Summarise(d, nil, false)); err != nil {
		t.Fatal(err)
	}
	d = Boundary{Levels: &l}.PrepareData(d)
	if l.Period != 24 || l.Step != 1 || len(l.Values) != 2 || len(l.Values[0]) != 24 {
		t.Fatalf("levels %+v", l)
	}
	var all, cnt float64
	for n := range d.Times {
		if o := d.Obs[n*2+1]; !math.IsNaN(o.Y) {
			all += o.Y
			cnt++
		}
	}
	for k, row := range l.Values {
		for h, v := range row {
			want := float64(100*k + h)
			if k == 1 && h == 5 {
				want = all / cnt
			}
			if math.Abs(v-want) > 1e-12*want {
				t.Errorf("product %d hour %d: level %v, want %v", k, h, v, want)
			}
		}
	}
	for n, tm := range d.Times {
		for k := 0; k < 2; k++ {
			if got, want := d.Obs[n*2+k].Level, l.Values[k][n%24]; got != want {
				t.Fatalf("cell (%d, %d): level %v, want %v", n, k, got, want)
			}
		}
		if l.At(tm+24*365, 0) != l.Values[0][n%24] || l.At(tm+0.5, 0) != l.Values[0][n%24] {
			t.Fatalf("At(%v) does not wrap the period", tm)
		}
	}
	if got := l.At(-1, 0); got != l.Values[0][23] {
		t.Errorf("At(-1) = %v, want hour 23's %v", got, l.Values[0][23])
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		if got := l.At(bad, 0); got != 0 {
			t.Errorf("At(%v) = %v, want 0", bad, got)
		}
	}
	if got := l.At(0, 5); got != 0 {
		t.Errorf("At of an unknown product = %v, want 0", got)
	}
	var none *Levels
	if none.At(3, 0) != 0 {
		t.Error("nil levels give a level")
	}
}

// TestLevelsSavedAndLoaded: Learn computes the levels, Fitted writes them,
// and the model file read back gives the same values bit for bit and the
// same cell levels on other data; a file for other products is refused.
func TestLevelsSavedAndLoaded(t *testing.T) {
	d := levelsData()
	sum := Summarise(d, nil, false)
	sp, err := Decode(strings.NewReader("[model]\nlikelihood = \"tobit\"\nlevel_noise = true\n[model.levels]\nsource = \"bin-of-day\"\n[fit]\nlearn = false\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := sp.Learn(context.Background(), d, sum, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Model.Levels.Values) != 0 {
		t.Fatal("Learn changed the caller's spec")
	}
	fitted, err := sp.Fitted(f.Built, sum)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := fitted.Encode(&buf, nil); err != nil {
		t.Fatal(err)
	}
	loaded, err := Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(loaded.Model.Levels, f.Built.Levels) {
		t.Fatalf("loaded %+v\nlearned %+v", loaded.Model.Levels, f.Built.Levels)
	}
	other := levelsData()
	for i := range other.Obs {
		other.Obs[i].Y += 1000 // the file's levels are used, not the data's
	}
	nb, err := loaded.Build(Summarise(other, nil, false), "")
	if err != nil {
		t.Fatal(err)
	}
	for n, tm := range other.Times {
		for k := 0; k < 2; k++ {
			if want := f.Built.Boundary().LevelAt(tm, k); nb.Levels.At(tm, k) != want || want != f.Engine.Data().Obs[n*2+k].Level {
				t.Fatalf("cell (%d, %d): loaded level %v, learned %v, fitted data's %v", n, k, nb.Levels.At(tm, k), want, f.Engine.Data().Obs[n*2+k].Level)
			}
		}
	}
	f2, err := loaded.Learn(context.Background(), other, Summarise(other, nil, false), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f2.Engine.Data().Obs[3].Level, f.Engine.Data().Obs[3].Level; got != want {
		t.Errorf("Learn on a loaded model set level %v, want the file's %v", got, want)
	}
	if other.Obs[3].Level != 0 {
		t.Errorf("Learn set a level on the caller's data: %v", other.Obs[3].Level)
	}
	three := &cvi.Data{NP: 3, Times: []float64{0, 1}, Obs: make([]cvi.Obs, 6)}
	for i := range three.Obs {
		three.Obs[i] = cvi.Obs{Y: 1, Supply: math.Inf(1)}
	}
	if _, err := loaded.Build(Summarise(three, nil, false), ""); err == nil || !strings.Contains(err.Error(), "values for 2 products") {
		t.Errorf("a model file for 2 products built for 3: %v", err)
	}
}

func TestLevelsDecodeErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"[model]\nlevel_noise = true\n[model.levels]\nsource = \"hour\"\n", "model.levels.source"},
		{"[model]\n[model.levels]\nsource = \"bin-of-day\"\n", "needs model.level_noise = true"},
		{"[model]\nlevel_noise = true\n[model.levels]\nperiod = 24.0\n", "need source"},
		{"[model]\nlevel_noise = true\n[model.levels]\nsource = \"bin-of-day\"\nperiod = 24.0\nstep = 1.0\nvalues = [[1.0, 2.0]]\n", "has 2 values, want 24"},
		{"[model]\nlevel_noise = true\n[model.levels]\nsource = \"bin-of-day\"\nvalues = [[1.0]]\n", "need period and step"},
		{"[model]\nlevel_noise = true\n[model.levels]\nsource = \"bin-of-day\"\nperiod = 24.0\nstep = 5.0\nvalues = [[1.0]]\n", "is not 1 to"},
		{"[model]\nlevel_noise = true\n[model.levels]\nsource = \"bin-of-day\"\nperiod = 2.0\nstep = 1.0\nvalues = [[1.0, nan]]\n", "finite"},
		{"[model]\nlevel_noise = true\n[model.levels]\nsource = \"bin-of-day\"\nstep = -1.0\n", "must be > 0"},
		{"[model]\nlevel_noise = true\n[model.levels]\nsource = \"bin-of-day\"\n[model.mean]\nkind = \"periodic\"\n", "the prior mean is the cells' level"},
	} {
		if _, err := Decode(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
}
