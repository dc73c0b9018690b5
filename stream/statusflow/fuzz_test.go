package statusflow

import (
	"fmt"
	"testing"
	"time"
)

// fuzzSamples decodes data, 4 bytes a sample: station (3 of them), seconds
// since the station's... previous sample of any station (0 repeats a
// time), bikes as a signed byte (negative ones are refused), and flags:
// renting, returning, vehicle ids (bikes ids from an offset in the top
// nibble), advance the watermark to the sample's time.
func fuzzSamples(data []byte) (samples []Sample, advance []bool) {
	now := t0
	for i := 0; i+4 <= len(data); i += 4 {
		now = now.Add(time.Duration(data[i+1]) * time.Second)
		f := data[i+3]
		s := Sample{Station: fmt.Sprint("s", data[i]%3), At: now, Bikes: int(int8(data[i+2])), Docks: -1,
			Renting: f&1 != 0, Returning: f&2 != 0, HasVehicles: f&4 != 0}
		if s.HasVehicles {
			for v := range max(0, s.Bikes) {
				s.Vehicles = append(s.Vehicles, fmt.Sprint("v", v+int(f>>4)))
			}
		}
		samples = append(samples, s)
		advance = append(advance, f&8 != 0)
	}
	return samples, advance
}

// FuzzDeriver feeds arbitrary sample streams: nothing panics, every bin
// is well formed, and (no gap being possible: steps under 256 s) each
// station's bins add up to its last accepted bikes minus its first.
func FuzzDeriver(f *testing.F) {
	f.Add([]byte{0, 10, 5, 3, 0, 30, 1, 3, 1, 0, 7, 7, 0, 30, 9, 11, 2, 200, 200, 0})
	f.Add([]byte{0, 0, 3, 7, 0, 0, 3, 7, 0, 30, 3, 0x17, 0, 30, 0, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := DefaultConfig()
		cfg.MaxGap = time.Hour
		d, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		first, last := map[string]int{}, map[string]int{}
		net := map[string]int{}
		collect := func(bins []Bin) {
			for _, b := range bins {
				if b.Pickups < 0 || b.Returns < 0 || b.MovedOut < 0 || b.MovedIn < 0 || b.Coverage < 0 || b.Coverage > 1 ||
					b.Observed != (b.Coverage > 0) || !(b.ExpectedHidden >= 0) {
					t.Fatalf("bad bin %+v", b)
				}
				net[b.Station] += b.Returns + b.MovedIn - b.Pickups - b.MovedOut
			}
		}
		samples, advance := fuzzSamples(data)
		for i, s := range samples {
			if d.Add(s) == nil {
				if _, ok := first[s.Station]; !ok {
					first[s.Station] = s.Bikes
				}
				last[s.Station] = s.Bikes
			}
			if advance[i] {
				bins, err := d.Advance(s.At)
				if err != nil {
					t.Fatal(err)
				}
				collect(bins)
			}
		}
		bins, err := d.Advance(t0.Add(100 * 24 * time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		collect(bins)
		for st, b := range first {
			if got, want := net[st], last[st]-b; got != want && d.Stats().Gaps == 0 {
				t.Fatalf("station %s: bins net %d, bikes changed %d", st, got, want)
			}
		}
	})
}
