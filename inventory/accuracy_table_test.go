package inventory

import (
	"fmt"
	"math"
)

// accStation is one station of the accuracy table.
type accStation struct {
	regime  string
	st      Station
	lf, mf  Forecast
	sd, rho float64
}

// name is the station's row label.
func (a *accStation) name() string {
	return fmt.Sprintf("%-8s C=%-2d s0=%-2d sd=%-4.2f rho=%.1f", a.regime, a.st.Capacity, a.st.Bikes, a.sd, a.rho)
}

// accRegimes are the two flows' mean profiles over h bins: busy and
// commuter days, quiet, night, draining and evening stations.
var accRegimes = []struct {
	name  string
	means func(h int) (lam, mu []float64)
}{
	{"busy", func(h int) ([]float64, []float64) { return dayFrom(0, h, 1.5) }},
	{"commuter", func(h int) ([]float64, []float64) { return dayFrom(0, h, 1) }},
	{"quiet", func(h int) ([]float64, []float64) { return flat(h, 0.5), flat(h, 0.5) }},
	{"night", func(h int) ([]float64, []float64) { return wave(h, 0.6, 0), wave(h, 0.6, 2) }},
	{"drain", func(h int) ([]float64, []float64) { return flat(h, 3), flat(h, 1) }},
	{"evening", func(h int) ([]float64, []float64) { return dayFrom(18, h, 1) }},
}

func dayFrom(hour, h int, scale float64) ([]float64, []float64) {
	l, m := dayRates(h + hour)
	l, m = l[hour:], m[hour:]
	for k := range l {
		l[k] *= scale
		m[k] *= scale
	}
	return l, m
}

func flat(h int, v float64) []float64 {
	x := make([]float64, h)
	for k := range x {
		x[k] = v
	}
	return x
}

func wave(h int, amp, phase float64) []float64 {
	x := make([]float64, h)
	for k := range x {
		x[k] = amp * math.Sin(2*math.Pi*float64(k)/float64(h)+phase)
	}
	return x
}

// accStations spans the regimes × forecast sd {0.5, 1.5, 3} a bin × ρ
// ∈ {0, 0.5, 1}: 54 stations of 24 bins, capacities 8 to 40 and
// starting stocks from 10% to 80% full (quiet stations: capacity 15, 3
// bikes, the example).
func accStations() []accStation {
	const h = 24
	caps := []int{25, 40, 12, 20, 30, 8, 35}
	fracs := []float64{0.3, 0.5, 0.8, 0.1, 0.6}
	var out []accStation
	n := 0
	for ri, rg := range accRegimes {
		for si, sd := range []float64{0.5, 1.5, 3} {
			for qi, rho := range []float64{0, 0.5, 1} {
				c := caps[(ri+si+qi)%len(caps)]
				st := Station{Capacity: c, Bikes: int(fracs[n%len(fracs)] * float64(c))}
				if rg.name == "quiet" {
					st = Station{Capacity: 15, Bikes: 3}
				}
				lm, mm := rg.means(h)
				out = append(out, accStation{regime: rg.name, st: st, sd: sd, rho: rho,
					lf: Forecast{Mean: lm, Var: flat(h, sd*sd)}, mf: Forecast{Mean: mm, Var: flat(h, sd*sd)}})
				n++
			}
		}
	}
	return out
}
