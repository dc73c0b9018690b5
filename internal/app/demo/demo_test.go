package demo

import (
	"context"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/internal/app/synth"
)

func TestRunRefusesTinyClusters(t *testing.T) {
	for _, o := range []Options{{Hubs: 1, Days: 3}, {Hubs: 3, Days: 1}} {
		if err := Run(context.Background(), o, io.Discard, zerolog.Nop()); !errors.Is(err, ErrOptions) {
			t.Errorf("Run(%+v) = %v, want ErrOptions", o, err)
		}
	}
}

// TestDemoScore: RMSE split by observed and held-out rows, bins without
// an estimate skipped.
func TestDemoScore(t *testing.T) {
	train := &synth.Split{TrueY: [][]float64{{1, 2}, {3, 4}}}
	test := &synth.Split{TrueY: [][]float64{{5, 6}}}
	rows := []demoRow{{train, 0, true}, {test, 0, false}, {train, 1, true}}
	est := [][]float64{{2, 2}, {5, 9}, nil}
	obs, held := demoScore(est, rows, 2)
	if want := math.Sqrt(1.0 / 2); math.Abs(obs-want) > 1e-15 {
		t.Errorf("observed RMSE %v, want %v", obs, want)
	}
	if want := math.Sqrt(9.0 / 2); math.Abs(held-want) > 1e-15 {
		t.Errorf("held-out RMSE %v, want %v", held, want)
	}
}
