package evseflow

import (
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

var fuzzStatuses = []ocpi.Status{ocpi.StatusAvailable, ocpi.StatusCharging, ocpi.StatusBlocked, ocpi.StatusReserved,
	ocpi.StatusOutOfOrder, ocpi.StatusUnknown, "FREE", ""}

// FuzzDeriver feeds arbitrary poll sequences (each 4 bytes: minutes
// since the last poll, EVSE, status, last_updated offset) and checks
// that every emitted bin is sane, in order and emitted once.
func FuzzDeriver(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 1, 1, 1, 3, 2, 0, 0, 5, 9, 2, 5, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 200, 3, 7, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := New(Config{Origin: t0, Bin: 5 * time.Minute, MaxGap: 4 * time.Minute}, []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		seen := map[string]bool{}
		var last time.Time
		check := func(bins []Bin) {
			for _, x := range bins {
				key := x.Site + x.Start.String()
				if seen[key] {
					t.Fatalf("bin emitted twice: %+v", x)
				}
				seen[key] = true
				if x.Start.Before(last) {
					t.Fatalf("bins out of order: %+v after %v", x, last)
				}
				last = x.Start
				if x.Started < 0 || x.Ended < 0 || x.Possible < 0 || !(x.Coverage >= 0 && x.Coverage <= 1) || x.Observed != (x.Coverage > 0) ||
					(!x.Observed && (x.Started+x.Ended+x.Possible > 0)) || x.End.Sub(x.Start) != 5*time.Minute {
					t.Fatalf("bad bin %+v", x)
				}
			}
		}
		for i := 0; i+3 < len(b); i += 4 {
			now = now.Add(time.Duration(b[i]) * 20 * time.Second)
			site := []string{"a", "b", "z"}[int(b[i+1])%3]
			e := ocpi.StatusEvent{Site: site, EVSE: []string{"1", "2", ""}[int(b[i+1]/3)%3], Status: fuzzStatuses[int(b[i+2])%len(fuzzStatuses)],
				At: now.Add(time.Duration(int(b[i+3])-200) * 10 * time.Second)}
			_ = d.Poll(now, []ocpi.StatusEvent{e})
			check(d.Advance(now))
		}
		check(d.Advance(now.Add(time.Hour)))
	})
}
