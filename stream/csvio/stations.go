package csvio

import (
	"fmt"
	"io"
	"strings"
)

// ReadStations parses a stations CSV, station,name,lat,lon,capacity (a
// bike-share system's station list; name and capacity may be left out,
// other columns are ignored), as products: the station ids, features
// lat,lon (geographic) and, with the column, their capacities (empty: 0,
// not known). An input over MaxProductsBytes is refused.
func ReadStations(r io.Reader, name string) (*Products, error) {
	cr, header, err := openCSV(r, maxProductsBytes, "MaxProductsBytes", name)
	if err != nil {
		return nil, err
	}
	col, err := headerColumns(header, name, []string{"station", "lat", "lon"})
	if err != nil {
		return nil, err
	}
	capCol, withCap := col["capacity"]
	p := &Products{Columns: []string{"lat", "lon"}, Geographic: true, index: map[string]int{}}
	for line := 2; ; line++ {
		rec, done, err := nextRecord(cr, len(header), name, line)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		id := strings.TrimSpace(rec[col["station"]])
		if err := checkProduct(id); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if _, dup := p.index[id]; dup {
			return nil, fmt.Errorf("%s:%d: duplicate station %q", name, line, id)
		}
		vals := []string{rec[col["lat"]], rec[col["lon"]]}
		capIdx := -1
		if withCap {
			vals, capIdx = append(vals, rec[capCol]), 2
		}
		f, capacity, err := productValues(vals, capIdx, p.Columns)
		if err == nil && (f[0] < -90 || f[0] > 90 || f[1] < -180 || f[1] > 360) {
			err = fmt.Errorf("lat,lon (%v, %v) out of range", f[0], f[1])
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		p.index[id] = len(p.Names)
		p.Names = append(p.Names, id)
		p.Features = append(p.Features, f)
		if withCap {
			p.Capacity = append(p.Capacity, capacity)
		}
	}
	if len(p.Names) == 0 {
		return nil, fmt.Errorf("%s: no stations", name)
	}
	return p, nil
}

// Only returns the products of p that names lists (in p's order), and
// the names p does not have.
func (p *Products) Only(names []string) (*Products, []string) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := &Products{Columns: p.Columns, Geographic: p.Geographic, index: map[string]int{}}
	for k, n := range p.Names {
		if !want[n] {
			continue
		}
		delete(want, n)
		out.index[n] = len(out.Names)
		out.Names = append(out.Names, n)
		out.Features = append(out.Features, p.Features[k])
		if p.Capacity != nil {
			out.Capacity = append(out.Capacity, p.Capacity[k])
		}
	}
	var missing []string
	for _, n := range names {
		if want[n] {
			missing = append(missing, n)
			delete(want, n)
		}
	}
	return out, missing
}
