package stream

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// TestCoupledModelSizeRefused: a model coupling its products through a
// product kernel or full diffusion sites is refused at start beyond
// config.MaxCoupledProducts with an error naming the key; an independent model
// with diagonal sites of the same size builds.
func TestCoupledModelSizeRefused(t *testing.T) {
	city := func(np int) *csvio.Products {
		p := &csvio.Products{}
		for k := 0; k < np; k++ {
			p.Names = append(p.Names, fmt.Sprintf("s%d", k))
			p.Features = append(p.Features, []float64{250 * float64(k%20), 250 * float64(k/20)})
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		np      int
		product string
		sites   string
		wantKey string // "" : builds
	}{
		{"independent diagonal city", 2 * config.MaxCoupledProducts, "", "", ""},
		{"product kernel at the limit", config.MaxCoupledProducts, "matern32", "", ""},
		{"product kernel beyond", config.MaxCoupledProducts + 1, "matern32", "", "model.product"},
		{"full sites beyond", config.MaxCoupledProducts + 1, "", "full", "model.diffusion.sites"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &config.ModelConfig{Name: "city", Bin: config.Duration{Duration: time.Hour}}
			m.Model = spec.Model{Likelihood: "diffusion"}
			m.Model.Product.Kernel = tc.product
			m.Model.Product.Lengthscale = 500
			m.Model.Diffusion.Sites = tc.sites
			_, err := buildModel(city(tc.np), m)
			switch {
			case tc.wantKey == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantKey != "" && err == nil:
				t.Fatal("a coupled model beyond the limit was built")
			case tc.wantKey != "" && !strings.HasPrefix(err.Error(), tc.wantKey+":"):
				t.Fatalf("error %q does not start with %s", err, tc.wantKey)
			}
		})
	}
}
