package geo

import "math"

// EarthRadius is the mean Earth radius in metres (IUGG R₁).
const EarthRadius = 6371008.8

// Haversine returns the great-circle distance in metres between two points
// given by latitude and longitude in degrees, on a sphere of radius
// EarthRadius. It is exactly 0 for identical points, symmetric, and
// accurate for nearby and antipodal points alike (the atan2 form, where
// asin(√a) loses accuracy near antipodes). NaN input gives NaN.
func Haversine(lat1, lon1, lat2, lon2 float64) float64 {
	a := haversineTerm(lat1, lon1, lat2, lon2)
	return 2 * EarthRadius * math.Atan2(math.Sqrt(a), math.Sqrt(1-a))
}

// Chord returns the straight-line distance in metres through the Earth
// between two points given in degrees, 2R·sin(c/2) for central angle c: a
// Euclidean distance in ℝ³, so every stationary kernel of it is positive
// definite, and within about c²/24 of Haversine.
func Chord(lat1, lon1, lat2, lon2 float64) float64 {
	return 2 * EarthRadius * math.Sqrt(haversineTerm(lat1, lon1, lat2, lon2))
}

// haversineTerm returns sin²(c/2) for the central angle c between two
// points, clamped to [0, 1] against rounding. The differences are taken in
// degrees before the conversion, which keeps nearby points accurate.
func haversineTerm(lat1, lon1, lat2, lon2 float64) float64 {
	const rad = math.Pi / 180
	sp := math.Sin((lat2 - lat1) * rad / 2)
	sl := math.Sin((lon2 - lon1) * rad / 2)
	a := sp*sp + math.Cos(lat1*rad)*math.Cos(lat2*rad)*sl*sl
	return math.Min(math.Max(a, 0), 1)
}
