package errs

import (
	"errors"
	"fmt"
	"testing"
)

var errBase = errors.New("kernel: variance must be > 0")

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{Within("kernel", errBase, "component 0"), "kernel: component 0: variance must be > 0"},
		{Within("filter", Within("kernel", errBase, "RBF kernel"), "product kernel"), "filter: product kernel: RBF kernel: variance must be > 0"},
		{Withinf("cvi", fmt.Errorf("bin %d: %w", 3, errBase), "smoother"), "cvi: smoother: bin 3: kernel: variance must be > 0"},
		{Within("cvi", errors.New("eigendecomposition failed"), ""), "cvi: eigendecomposition failed"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
		if !errors.Is(c.err, errBase) && c.want != "cvi: eigendecomposition failed" {
			t.Errorf("%q does not unwrap to the base error", c.err)
		}
	}
	if Within("cvi", nil, "x") != nil {
		t.Error("Within(nil) is not nil")
	}
}
