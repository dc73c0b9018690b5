package charging

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/geo"
)

// Site is a group of chargers: its name (the product), its position and
// Pool, the number of chargers it keeps in the protocol.
type Site struct {
	Name     string
	Lat, Lon float64
	Pool     int
}

// Network is a set of sites and the site of every charger.
type Network struct {
	Sites  []Site
	SiteOf map[string]int
}

// Validate checks that the network has sites with positive pools and
// distinct names and that every charger maps to one of them.
func (n *Network) Validate() error {
	if len(n.Sites) == 0 {
		return errors.New("charging: a network needs at least one site")
	}
	names := map[string]bool{}
	for i, s := range n.Sites {
		switch {
		case s.Name == "":
			return fmt.Errorf("charging: site %d has no name", i)
		case names[s.Name]:
			return fmt.Errorf("charging: site %q named twice", s.Name)
		case s.Pool < 1:
			return fmt.Errorf("charging: site %q has pool %d, want at least 1", s.Name, s.Pool)
		case math.IsNaN(s.Lat) || math.IsNaN(s.Lon) || math.Abs(s.Lat) > 90 || math.Abs(s.Lon) > 180:
			return fmt.Errorf("charging: site %q at (%v, %v) is not a position", s.Name, s.Lat, s.Lon)
		}
		names[s.Name] = true
	}
	for c, i := range n.SiteOf {
		if i < 0 || i >= len(n.Sites) {
			return fmt.Errorf("charging: charger %q maps to site %d of %d", c, i, len(n.Sites))
		}
	}
	return nil
}

// GroupChargers returns a network of sites whose chargers are dealt
// round-robin from chargers in the order given (sort them for a
// reproducible grouping).
func GroupChargers(chargers []string, sites []Site) *Network {
	n := &Network{Sites: sites, SiteOf: make(map[string]int, len(chargers))}
	for i, c := range chargers {
		n.SiteOf[c] = i % len(sites)
	}
	return n
}

// Choice returns the protocol's choice of the other site a turned-away
// driver tries: row i holds P(j | i, diverts), proportional to
// exp(−d²_ij/(2ℓ²)) over j ≠ i with d the great-circle distance in
// metres (the diffusion model's graph weights). A row with no reachable
// site (one site, or every weight underflowing) is all zero: its drivers
// are lost.
func (n *Network) Choice(lengthscale float64) [][]float64 {
	ns := len(n.Sites)
	w := make([][]float64, ns)
	for i := range w {
		w[i] = make([]float64, ns)
		var sum float64
		for j := range w[i] {
			if i == j {
				continue
			}
			d := geo.Haversine(n.Sites[i].Lat, n.Sites[i].Lon, n.Sites[j].Lat, n.Sites[j].Lon)
			w[i][j] = math.Exp(-d * d / (2 * lengthscale * lengthscale))
			sum += w[i][j]
		}
		for j := range w[i] {
			if sum > 0 {
				w[i][j] /= sum
			} else {
				w[i][j] = 0
			}
		}
	}
	return w
}
