package snapshot

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// FuzzUnmarshal feeds whole files: anything that is not a valid snapshot
// must be refused with an error, never a panic or a half-filled model.
func FuzzUnmarshal(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	f.Add(Marshal(sample(rng, 3, true)))
	f.Add(Marshal(sample(rng, 1, false)))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Unmarshal(b)
		if err != nil {
			if m != nil {
				t.Fatal("model returned with an error")
			}
			return
		}
		if !bytes.Equal(Marshal(m), b) {
			t.Fatal("an accepted file does not re-encode to itself")
		}
	})
}

// FuzzDecodePayload skips the checksum and feeds the field decoder
// directly, where a checksum would otherwise stop almost every input.
func FuzzDecodePayload(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, m := range []*Model{sample(rng, 3, true), sample(rng, 2, false)} {
		b := Marshal(m)
		f.Add(b[headerLen : len(b)-4])
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := decodePayload(p)
		if err != nil {
			return
		}
		if err := m.Check(); err != nil {
			t.Fatalf("accepted an inconsistent snapshot: %v", err)
		}
		b := Marshal(m)
		if !bytes.Equal(b[headerLen:len(b)-4], p) {
			t.Fatal("an accepted payload does not re-encode to itself")
		}
	})
}
