package csvio

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Products is a parsed PRODUCTS file.
type Products struct {
	Names      []string
	Columns    []string
	Features   [][]float64
	Geographic bool // the feature columns are exactly lat, lon
	// Capacity is each product's value of a "capacity" column (docks,
	// say), which is not a feature; nil without the column.
	Capacity []float64
	index    map[string]int
}

// Index returns the position of product name.
func (p *Products) Index(name string) (int, bool) {
	i, ok := p.index[name]
	return i, ok
}

// ReadProducts parses a PRODUCTS CSV: product,<feature columns>. A column
// named capacity is not a feature: its values (>= 0; empty: 0, not
// known) go to Capacity, and
// the rest are the features (lat,lon,capacity is geographic). An input
// over MaxProductsBytes is refused.
func ReadProducts(r io.Reader, name string) (*Products, error) {
	cr, header, err := openCSV(r, maxProductsBytes, "MaxProductsBytes", name)
	if err != nil {
		return nil, err
	}
	for i := range header {
		header[i] = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(header[i], "\ufeff")))
	}
	if len(header) < 1 || header[0] != "product" {
		return nil, fmt.Errorf("%s:1: first column must be \"product\"", name)
	}
	p := &Products{index: map[string]int{}}
	capCol := -1 // the capacity column's index in a record
	for i, c := range header[1:] {
		if c == "capacity" && capCol < 0 {
			capCol = i + 1
			continue
		}
		p.Columns = append(p.Columns, c)
	}
	p.Geographic = len(p.Columns) == 2 && p.Columns[0] == "lat" && p.Columns[1] == "lon"
	for line := 2; ; line++ {
		rec, done, err := nextRecord(cr, len(header), name, line)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		id := strings.TrimSpace(rec[0])
		if err := checkProduct(id); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if _, dup := p.index[id]; dup {
			return nil, fmt.Errorf("%s:%d: duplicate product %q", name, line, id)
		}
		f, capacity, err := productValues(rec[1:], capCol-1, p.Columns)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if capCol > 0 {
			p.Capacity = append(p.Capacity, capacity)
		}
		if p.Geographic && (f[0] < -90 || f[0] > 90 || f[1] < -180 || f[1] > 360) {
			return nil, fmt.Errorf("%s:%d: lat,lon (%v, %v) out of range", name, line, f[0], f[1])
		}
		p.index[id] = len(p.Names)
		p.Names = append(p.Names, id)
		p.Features = append(p.Features, f)
	}
	if len(p.Names) == 0 {
		return nil, fmt.Errorf("%s: no products", name)
	}
	return p, nil
}

// productValues parses a products row's values (after the name): the
// features, named columns, and the capacity at index capIdx (-1: none).
func productValues(vals []string, capIdx int, columns []string) (f []float64, capacity float64, err error) {
	f = make([]float64, 0, len(columns))
	for i, text := range vals {
		col := "capacity"
		if i != capIdx {
			col = columns[len(f)]
		} else if strings.TrimSpace(text) == "" {
			continue // not known: 0
		}
		v, err := parseNumber(text, 0)
		if err != nil || strings.TrimSpace(text) == "" {
			if err == nil {
				err = errors.New("empty")
			}
			return nil, 0, fmt.Errorf("column %s: %w", col, err)
		}
		if i == capIdx {
			if v < 0 {
				return nil, 0, fmt.Errorf("column capacity: %v is negative", v)
			}
			capacity = v
			continue
		}
		f = append(f, v)
	}
	return f, capacity, nil
}

// FromObs lists the products of an OBS file in order of first appearance,
// without features (for Independent models).
func FromObs(o *Obs) *Products {
	p := &Products{index: map[string]int{}}
	for _, r := range o.Rows {
		if _, ok := p.index[r.Product]; !ok {
			p.index[r.Product] = len(p.Names)
			p.Names = append(p.Names, r.Product)
		}
	}
	return p
}
