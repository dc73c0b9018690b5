package csvio

import (
	"encoding/csv"
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
	index      map[string]int
}

// Index returns the position of product name.
func (p *Products) Index(name string) (int, bool) {
	i, ok := p.index[name]
	return i, ok
}

// ReadProducts parses a PRODUCTS CSV: product,<feature columns>. An
// input over MaxProductsBytes is refused.
func ReadProducts(r io.Reader, name string) (*Products, error) {
	cr := csv.NewReader(newLimitReader(r, maxProductsBytes, "MaxProductsBytes"))
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: reading header: %w", name, err)
	}
	for i := range header {
		header[i] = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(header[i], "\ufeff")))
	}
	if len(header) < 1 || header[0] != "product" {
		return nil, fmt.Errorf("%s:1: first column must be \"product\"", name)
	}
	p := &Products{Columns: header[1:], index: map[string]int{}}
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
		f := make([]float64, len(p.Columns))
		for i := range f {
			v, err := parseNumber(rec[i+1], 0)
			if err != nil || strings.TrimSpace(rec[i+1]) == "" {
				if err == nil {
					err = errors.New("empty")
				}
				return nil, fmt.Errorf("%s:%d: column %s: %w", name, line, p.Columns[i], err)
			}
			f[i] = v
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
