package demo

import (
	"fmt"
	"math"
	"os"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/dcgpd/dcgpd/internal/app/synth"
	"github.com/dcgpd/dcgpd/internal/plotstyle"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// demoPlot writes an SVG with one panel per station for the n most
// censored stations: observed demand (censored hours marked), true
// demand, and the daemon's latent mean with its 90% band (est per bin:
// the latest smoothed revision, else the filtered estimate).
func demoPlot(path string, ds *synth.Dataset, rows []demoRow, est []*wire.LatentMessage, n int) error {
	frac := ds.Train.CensoredFraction()
	order := make([]int, len(ds.Products))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return frac[order[a]] > frac[order[b]] })
	n = min(n, len(order))

	plots := make([][]*plot.Plot, n)
	for j := range n {
		p, err := stationPlot(ds, rows, est, order[j], j == 0)
		if err != nil {
			return err
		}
		p.Title.Text = fmt.Sprintf("%s: %.0f%% of observed hours censored", ds.Products[order[j]], 100*frac[order[j]])
		if j == n-1 {
			p.X.Label.Text = "days since start"
		}
		plots[j] = []*plot.Plot{p}
	}
	w, h := 28*vg.Centimeter, vg.Length(n)*7*vg.Centimeter
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	canvases := plot.Align(plots, draw.Tiles{Rows: n, Cols: 1, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}, dc)
	for j := range n {
		plots[j][0].Draw(canvases[j][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stationSeries are one station's points in days: the daemon's band,
// mean, the true demand, and the observed sales, uncensored and censored.
type stationSeries struct {
	upper, lower, mean, truth, obs, cens plotter.XYs
}

// newStationSeries collects station k's series from the data rows and the
// daemon's estimates per bin.
func newStationSeries(rows []demoRow, est []*wire.LatentMessage, k int) stationSeries {
	var s stationSeries
	for b, r := range rows {
		x := r.split.Times[r.i] / 24
		s.truth = append(s.truth, plotter.XY{X: x, Y: r.split.TrueY[r.i][k]})
		if r.train {
			pt := plotter.XY{X: x, Y: r.split.Obs[r.i][k]}
			if r.split.Saturated[r.i][k] {
				s.cens = append(s.cens, pt)
			} else {
				s.obs = append(s.obs, pt)
			}
		}
		if m := est[b]; m != nil && k < len(m.Estimates) {
			e := m.Estimates[k]
			s.mean = append(s.mean, plotter.XY{X: x, Y: e.Mean})
			s.upper = append(s.upper, plotter.XY{X: x, Y: e.Q95})
			s.lower = append(s.lower, plotter.XY{X: x, Y: e.Q05})
		}
	}
	return s
}

// stationPlot draws one station's panel.
func stationPlot(ds *synth.Dataset, rows []demoRow, est []*wire.LatentMessage, k int, legend bool) (*plot.Plot, error) {
	ser := newStationSeries(rows, est, k)
	upper, lower, mean, truth, obs, cens := ser.upper, ser.lower, ser.mean, ser.truth, ser.obs, ser.cens
	top := 0.0
	for _, xys := range []plotter.XYs{truth, upper, obs, cens} {
		for _, pt := range xys {
			top = max(top, pt.Y)
		}
	}
	p := plot.New()
	p.Y.Label.Text = "demand per hour"
	p.Y.Min = 0
	if legend {
		p.Y.Max = 10 * math.Ceil(1.5*top/10) // room for the legend above the data
	}
	p.X.Min, p.X.Max = rows[0].split.Times[rows[0].i]/24, rows[len(rows)-1].split.Times[rows[len(rows)-1].i]/24
	p.Add(plotter.NewGrid())
	var poly *plotter.Polygon
	if len(mean) > 0 {
		band := append(plotter.XYs{}, upper...)
		for i := len(lower) - 1; i >= 0; i-- {
			band = append(band, lower[i])
		}
		var err error
		if poly, err = plotter.NewPolygon(band); err != nil {
			return nil, err
		}
		poly.Color = plotstyle.Band
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	tl, err := plotter.NewLine(truth)
	if err != nil {
		return nil, err
	}
	tl.Color, tl.Width = plotstyle.True, vg.Points(0.8)
	tl.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
	p.Add(tl)
	var ml *plotter.Line
	if len(mean) > 0 {
		if ml, err = plotter.NewLine(mean); err != nil {
			return nil, err
		}
		ml.Color, ml.Width = plotstyle.Mean, vg.Points(1.3)
		p.Add(ml)
	}
	sc, err := plotter.NewScatter(obs)
	if err != nil {
		return nil, err
	}
	sc.Color, sc.Radius, sc.Shape = plotstyle.Observed, vg.Points(1.6), draw.CircleGlyph{}
	p.Add(sc)
	var cs *plotter.Scatter
	if len(cens) > 0 {
		if cs, err = plotter.NewScatter(cens); err != nil {
			return nil, err
		}
		cs.Color, cs.Radius, cs.Shape = plotstyle.Censored, vg.Points(2.6), draw.CrossGlyph{}
		cs.GlyphStyle.Color = plotstyle.Censored
		p.Add(cs)
	}
	if legend {
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.XOffs = 4 * vg.Millimeter
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		p.Legend.Add("true demand", tl)
		if ml != nil {
			p.Legend.Add("inferred latent demand (daemon)", ml)
			p.Legend.Add("its 90% band", poly)
		}
		p.Legend.Add("observed sales", sc)
		if cs != nil {
			p.Legend.Add("observed, censored (stock-out)", cs)
		}
	}
	return p, nil
}
