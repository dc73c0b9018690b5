package diffusion

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ReadTransitionCSV reads an explicit transition matrix over the given
// products (their order fixes the indices). The format is CSV with the
// header line
//
//	from,to,prob
//
// followed by one line per edge: product from sends the fraction prob of
// its unsatisfied demand to product to. Names are matched exactly after
// trimming spaces; lines starting with '#' and blank lines are skipped.
// Rules, each reported with its line number: both names must be among
// products, from ≠ to (no self-loops), each (from, to) pair at most once,
// prob a number in [0, 1]. For every product the probabilities must sum to
// at most 1 + RowSumTolerance; the remainder goes to the sink (lost
// demand), and a product with no lines sends all of its excess to the sink.
// Zero probabilities are accepted and not stored.
func ReadTransitionCSV(r io.Reader, products []string) (*Transition, error) {
	index, err := productIndex(products)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = 3
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	if err := readTransitionHeader(cr); err != nil {
		return nil, err
	}
	rows, err := readTransitionEdges(cr, index, len(products))
	if err != nil {
		return nil, err
	}
	n := len(products)
	t := &Transition{n: n, rowPtr: make([]int, n+1), sink: make([]float64, n)}
	for i, row := range rows {
		slices.SortFunc(row, func(a, b csvEdge) int { return a.j - b.j })
		last := 0
		for _, e := range row {
			last = max(last, e.line)
			if e.p > 0 {
				t.col = append(t.col, e.j)
				t.val = append(t.val, e.p)
			}
		}
		t.rowPtr[i+1] = len(t.col)
		if err := t.closeExplicitRow(i); err != nil {
			return nil, fmt.Errorf("diffusion: transition CSV line %d: product %q: %w", last, products[i], err)
		}
	}
	return t, nil
}

// readTransitionHeader reads and checks the header line from,to,prob.
func readTransitionHeader(cr *csv.Reader) error {
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("diffusion: transition CSV is empty, want header from,to,prob")
	}
	if err != nil {
		return fmt.Errorf("diffusion: transition CSV: %w", err)
	}
	line, _ := cr.FieldPos(0)
	for k, want := range []string{"from", "to", "prob"} {
		h := strings.TrimSpace(head[k])
		if k == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		if !strings.EqualFold(h, want) {
			return fmt.Errorf("diffusion: transition CSV line %d: header must be from,to,prob, got %q", line, strings.Join(head, ","))
		}
	}
	return nil
}

// csvEdge is one line of a transition CSV: to product j with probability p.
type csvEdge struct {
	j    int
	p    float64
	line int
}

// readTransitionEdges reads the edge lines into one list per sending
// product, checking each line.
func readTransitionEdges(cr *csv.Reader, index map[string]int, n int) ([][]csvEdge, error) {
	rows := make([][]csvEdge, n)
	seen := make(map[[2]int]int)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("diffusion: transition CSV: %w", err)
		}
		line, _ := cr.FieldPos(0)
		from, to := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		i, ok := index[from]
		if !ok {
			return nil, fmt.Errorf("diffusion: transition CSV line %d: unknown product %q", line, from)
		}
		j, ok := index[to]
		if !ok {
			return nil, fmt.Errorf("diffusion: transition CSV line %d: unknown product %q", line, to)
		}
		if i == j {
			return nil, fmt.Errorf("diffusion: transition CSV line %d: self-loop %q -> %q is not allowed", line, from, to)
		}
		p, err := strconv.ParseFloat(strings.TrimSpace(rec[2]), 64)
		if err != nil || !(p >= 0 && p <= 1) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("diffusion: transition CSV line %d: prob %q is not a probability in [0, 1]", line, rec[2])
		}
		if first, dup := seen[[2]int{i, j}]; dup {
			return nil, fmt.Errorf("diffusion: transition CSV line %d: duplicate edge %q -> %q (first on line %d)", line, from, to, first)
		}
		seen[[2]int{i, j}] = line
		rows[i] = append(rows[i], csvEdge{j, p, line})
	}
}

// productIndex maps product names to indices, rejecting an empty list,
// empty names and duplicates.
func productIndex(products []string) (map[string]int, error) {
	if len(products) == 0 {
		return nil, fmt.Errorf("diffusion: no products given for the transition matrix")
	}
	index := make(map[string]int, len(products))
	for i, p := range products {
		name := strings.TrimSpace(p)
		if name == "" {
			return nil, fmt.Errorf("diffusion: product %d has an empty name", i)
		}
		if k, dup := index[name]; dup {
			return nil, fmt.Errorf("diffusion: product name %q appears twice (%d and %d)", name, k, i)
		}
		index[name] = i
	}
	return index, nil
}
