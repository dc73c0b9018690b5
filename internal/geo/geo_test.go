package geo

import (
	"math"
	"math/rand"
	"testing"
)

// centralAngle is an independent route to the great-circle angle: the
// atan2 of |u×v| and u·v for the unit vectors, well conditioned at every
// separation.
func centralAngle(lat1, lon1, lat2, lon2 float64) float64 {
	unit := func(lat, lon float64) [3]float64 {
		la, lo := lat*math.Pi/180, lon*math.Pi/180
		return [3]float64{math.Cos(la) * math.Cos(lo), math.Cos(la) * math.Sin(lo), math.Sin(la)}
	}
	u, v := unit(lat1, lon1), unit(lat2, lon2)
	cx := [3]float64{u[1]*v[2] - u[2]*v[1], u[2]*v[0] - u[0]*v[2], u[0]*v[1] - u[1]*v[0]}
	return math.Atan2(math.Sqrt(cx[0]*cx[0]+cx[1]*cx[1]+cx[2]*cx[2]), u[0]*v[0]+u[1]*v[1]+u[2]*v[2])
}

func TestHaversine(t *testing.T) {
	// One degree of arc is R·π/180 = 111195.08 m.
	oneDeg := EarthRadius * math.Pi / 180
	if math.Abs(oneDeg-111195.08) > 0.01 {
		t.Fatalf("R·π/180 = %.4f", oneDeg)
	}
	for _, c := range []struct {
		lat1, lon1, lat2, lon2, want float64
	}{
		{0, 0, 1, 0, oneDeg},          // along a meridian
		{45, 10, 46, 10, oneDeg},      // along a meridian, off the equator
		{0, 0, 0, 1, oneDeg},          // along the equator
		{0, 179.5, 0, -179.5, oneDeg}, // across the antimeridian
		{89.5, 0, 89.5, 180, oneDeg},  // across the pole
		{0, 0, 0, 180, math.Pi * EarthRadius},
		{90, 0, -90, 0, math.Pi * EarthRadius},
		{30, 40, -30, -140, math.Pi * EarthRadius},
		{12.3, 45.6, 12.3, 45.6, 0},
	} {
		got := Haversine(c.lat1, c.lon1, c.lat2, c.lon2)
		if math.Abs(got-c.want) > 1e-9*math.Max(c.want, 1) {
			t.Errorf("Haversine(%g, %g, %g, %g) = %.6f m, want %.6f", c.lat1, c.lon1, c.lat2, c.lon2, got, c.want)
		}
	}
	if Haversine(40.7, -74, 40.7, -74) != 0 || Chord(40.7, -74, 40.7, -74) != 0 {
		t.Error("distance from a point to itself is not exactly 0")
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 500; i++ {
		lat1, lon1 := 180*rng.Float64()-90, 360*rng.Float64()-180
		// Mix of near (metres) and far pairs.
		scale := math.Pow(10, -5+7*rng.Float64())
		lat2 := math.Max(-90, math.Min(90, lat1+scale*(2*rng.Float64()-1)))
		lon2 := lon1 + scale*(2*rng.Float64()-1)
		got := Haversine(lat1, lon1, lat2, lon2)
		want := EarthRadius * centralAngle(lat1, lon1, lat2, lon2)
		// The vector route loses ~eps·R absolutely (cross product of unit
		// vectors), hence the absolute term.
		if math.Abs(got-want) > 1e-9*want+1e-8 {
			t.Errorf("Haversine(%g, %g, %g, %g) = %.12g, vector route %.12g", lat1, lon1, lat2, lon2, got, want)
		}
		if got != Haversine(lat2, lon2, lat1, lon1) {
			t.Errorf("Haversine is not symmetric at (%g, %g), (%g, %g)", lat1, lon1, lat2, lon2)
		}
		// The chord is 2R·sin(c/2).
		chord := 2 * EarthRadius * math.Sin(want/EarthRadius/2)
		if got := Chord(lat1, lon1, lat2, lon2); math.Abs(got-chord) > 1e-9*chord+1e-8 {
			t.Errorf("Chord(%g, %g, %g, %g) = %.12g, want %.12g", lat1, lon1, lat2, lon2, got, chord)
		}
	}
	if !math.IsNaN(Haversine(math.NaN(), 0, 0, 0)) {
		t.Error("Haversine of NaN is not NaN")
	}
}

func TestMetric(t *testing.T) {
	p, q := []float64{40.7, -74}, []float64{40.71, -73.99}
	for _, c := range []struct {
		m    Metric
		name string
		want float64
	}{
		{Euclidean, "euclidean", math.Hypot(0.01, 0.01)},
		{GreatCircle, "great-circle", Haversine(40.7, -74, 40.71, -73.99)},
		{Chordal, "chordal", Chord(40.7, -74, 40.71, -73.99)},
	} {
		if c.m.String() != c.name {
			t.Errorf("%d: name %q, want %q", int(c.m), c.m.String(), c.name)
		}
		if d := c.m.Distance(p, q); math.Abs(d-c.want) > 1e-12*c.want {
			t.Errorf("%v: distance %v, want %v", c.m, d, c.want)
		}
		if d2, d := c.m.SquaredDistance(p, q), c.m.Distance(p, q); math.Abs(d2-d*d) > 1e-12*d2 {
			t.Errorf("%v: squared distance %v, distance² %v", c.m, d2, d*d)
		}
		if c.m.SquaredDistance(p, p) != 0 {
			t.Errorf("%v: distance from a point to itself is not 0", c.m)
		}
	}
	if Metric(7).String() != "Metric(7)" {
		t.Errorf("unknown metric: %q", Metric(7).String())
	}
}
