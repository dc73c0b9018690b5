package csvio

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// endless repeats s forever.
type endless struct {
	s string
	i int
}

func (e *endless) Read(p []byte) (int, error) {
	for n := range p {
		p[n] = e.s[e.i%len(e.s)]
		e.i++
	}
	return len(p), nil
}

// rows writes "i,a,2,3\n" for i = 1, 2, … forever.
type rows struct {
	buf []byte
	i   int
}

func (r *rows) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		r.i++
		r.buf = []byte(strconv.Itoa(r.i) + ",a,2,3\n")
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// lowered sets the limits to small values for the test.
func lowered(t *testing.T, obs, products int64, cells int) {
	t.Helper()
	o, p, c := maxObsBytes, maxProductsBytes, maxGridCells
	maxObsBytes, maxProductsBytes, maxGridCells = obs, products, cells
	t.Cleanup(func() { maxObsBytes, maxProductsBytes, maxGridCells = o, p, c })
}

// TestInputLimits: a file at its limit is read; one byte more, an endless
// stream or a single endless line is refused with an error naming the
// file and the limit.
func TestInputLimits(t *testing.T) {
	obs := "time,product,demand,supply\n1,a,2,3\n2,a,1,3\n"
	prods := "product,x\na,0\nb,1\n"
	lowered(t, int64(len(obs)), int64(len(prods)), 4)
	readObs := func(r io.Reader) error { _, err := ReadObs(r, "obs.csv"); return err }
	readProducts := func(r io.Reader) error { _, err := ReadProducts(r, "p.csv"); return err }
	cases := []struct {
		name string
		read func(io.Reader) error
		in   io.Reader
		want string // "" = accepted
	}{
		{"obs at the limit", readObs, strings.NewReader(obs), ""},
		{"obs one byte over", readObs, strings.NewReader(obs + "\n"), "MaxObsBytes"},
		{"obs endless rows", readObs, io.MultiReader(strings.NewReader("time,product,demand,supply\n"), &rows{}), "MaxObsBytes"},
		{"obs endless line", readObs, &endless{s: "x"}, "MaxObsBytes"},
		{"products at the limit", readProducts, strings.NewReader(prods), ""},
		{"products one byte over", readProducts, strings.NewReader(prods + "\n"), "MaxProductsBytes"},
		{"products endless line", readProducts, io.MultiReader(strings.NewReader("product,x\n"), &endless{s: "a"}), "MaxProductsBytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.read(c.in)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), ".csv") {
				t.Fatalf("got %v, want ErrTooLarge naming the file and %s", err, c.want)
			}
		})
	}
}

// TestGridLimit: Build refuses a grid of more than MaxGridCells cells
// before allocating it.
func TestGridLimit(t *testing.T) {
	lowered(t, MaxObsBytes, MaxProductsBytes, 4)
	o, err := ReadObs(strings.NewReader("time,product,demand,supply\n1,a,1,3\n1,b,1,3\n2,a,1,3\n"), "obs.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(o, FromObs(o)); err != nil {
		t.Fatalf("2 × 2 cells: %v", err)
	}
	o, err = ReadObs(strings.NewReader("time,product,demand,supply\n1,a,1,3\n1,b,1,3\n2,a,1,3\n3,a,1,3\n"), "obs.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(o, FromObs(o)); err == nil || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "obs.csv: ") || !strings.Contains(err.Error(), "MaxGridCells") {
		t.Fatalf("3 × 2 cells: got %v", err)
	}
}
