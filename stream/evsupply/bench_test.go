package evsupply

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// BenchmarkCensor times the daemon's per-bin status work for a charging
// model, per size (sites × 4 EVSEs: 2,000 chargers = 500 sites): one op
// is Censor on one 5-minute bin of every site, with the tracker holding
// 3 hours of statuses (each EVSE changing every 30 minutes on average)
// and a poll a minute.
//
//	go test -run X -bench Censor -benchmem ./stream/evsupply/
func BenchmarkCensor(b *testing.B) {
	for _, np := range []int{100, 500} {
		b.Run(fmt.Sprintf("sites=%d/chargers=%d", np, 4*np), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			cfg := DefaultConfig()
			cfg.Model = "ev"
			names := make([]string, np)
			for k := range names {
				names[k] = fmt.Sprintf("site-%d", k)
			}
			tr := NewTracker(cfg, names)
			statuses := []ocpi.Status{ocpi.StatusAvailable, ocpi.StatusCharging}
			for _, site := range names {
				for e := range 4 {
					evse := fmt.Sprintf("%s-%d", site, e)
					for m := -180.0; m < 0; m += rng.ExpFloat64() * 30 {
						tr.Ingest(status(site, evse, statuses[rng.IntN(2)], m))
					}
				}
			}
			for m := -180; m <= 5; m++ {
				tr.Ingest(poll(float64(m)))
			}
			obs := make([]cvi.Obs, np)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := range obs {
					obs[k] = cvi.Obs{Y: 1, Supply: math.Inf(1)}
				}
				tr.Censor(names, obs, at(-5), at(0))
			}
		})
	}
}
