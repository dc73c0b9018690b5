// Package storetest is the one test suite every snapshot.Store
// implementation runs (the file store, the in-memory fake here, the
// JetStream store in package stream), so they keep one contract.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/dcgpd/dcgpd/snapshot"
)

// Harness describes an implementation to the suite.
type Harness struct {
	// New returns an empty store.
	New func(t *testing.T) snapshot.Store
	// Damage alters the stored bytes of a model's generation behind the
	// store's back (a torn file, a bit flip in the server's copy); nil
	// skips the damage cases.
	Damage func(t *testing.T, s snapshot.Store, name string, g snapshot.Generation)
	// Large is the size of the large-value case (0: 3 MiB, above the
	// NATS default max_payload of 1 MiB).
	Large int
}

// Run runs every case of the contract.
func Run(t *testing.T, h Harness) {
	t.Run("empty", func(t *testing.T) { empty(t, h) })
	t.Run("generations", func(t *testing.T) { generations(t, h) })
	t.Run("names", func(t *testing.T) { names(t, h) })
	t.Run("large", func(t *testing.T) { large(t, h) })
	t.Run("load", func(t *testing.T) { load(t, h) })
	if h.Damage != nil {
		t.Run("damaged", func(t *testing.T) { damaged(t, h) })
	}
}

func empty(t *testing.T, h Harness) {
	s := h.New(t)
	for _, g := range []snapshot.Generation{snapshot.Current, snapshot.Previous} {
		if b, err := s.Read("m", g); !errors.Is(err, snapshot.ErrNotFound) {
			t.Errorf("%s of an empty store: %d bytes, %v; want ErrNotFound", g, len(b), err)
		}
	}
	if m, _, refused, err := snapshot.Load(s, "m"); m != nil || len(refused) != 0 || err != nil {
		t.Errorf("Load of an empty store: %v %v %v", m != nil, refused, err)
	}
}

// generations: a write makes the current the previous; the one before is
// gone; each read returns exactly what was written.
func generations(t *testing.T, h Harness) {
	s := h.New(t)
	want := [][]byte{[]byte("first"), []byte("second"), {}, []byte("fourth\x00\xff")}
	for i, w := range want {
		if err := s.Write("m", w); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		expect(t, s, "m", snapshot.Current, w)
		if i == 0 {
			if _, err := s.Read("m", snapshot.Previous); !errors.Is(err, snapshot.ErrNotFound) {
				t.Errorf("previous after one write: %v", err)
			}
		} else {
			expect(t, s, "m", snapshot.Previous, want[i-1])
		}
	}
}

func names(t *testing.T, h Harness) {
	s := h.New(t)
	for i, n := range []string{"a", "b", "a-b_c", "A"} {
		if err := s.Write(n, []byte(fmt.Sprint("value of ", n, i))); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range []string{"a", "b", "a-b_c", "A"} {
		expect(t, s, n, snapshot.Current, []byte(fmt.Sprint("value of ", n, i)))
		if _, err := s.Read(n, snapshot.Previous); !errors.Is(err, snapshot.ErrNotFound) {
			t.Errorf("%s previous: %v", n, err)
		}
	}
}

func large(t *testing.T, h Harness) {
	n := h.Large
	if n == 0 {
		n = 3 << 20
	}
	s := h.New(t)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	if err := s.Write("big", b); err != nil {
		t.Fatalf("writing %d bytes: %v", n, err)
	}
	expect(t, s, "big", snapshot.Current, b)
}

// Model returns a small valid snapshot of model name at input sequence
// applied.
func Model(name string, applied uint64) *snapshot.Model {
	return &snapshot.Model{Name: name, Applied: applied, Products: []string{"p"}, BinWidth: 3600e9,
		Online: snapshot.Online{Nat1: []float64{0}, Nat2: []float64{1}, PrevObserved: []bool{false}}}
}

func load(t *testing.T, h Harness) {
	s := h.New(t)
	for _, a := range []uint64{10, 20} {
		if err := s.Write("m", snapshot.Marshal(Model("m", a))); err != nil {
			t.Fatal(err)
		}
	}
	m, g, refused, err := snapshot.Load(s, "m")
	if err != nil || m == nil || g != snapshot.Current || len(refused) != 0 || m.Applied != 20 {
		t.Fatalf("Load: %v %v %v %v", m != nil, g, refused, err)
	}
}

// damaged: a damaged current snapshot is refused as corrupt and the
// previous one is used; both damaged leaves no state and no error.
func damaged(t *testing.T, h Harness) {
	s := h.New(t)
	for _, a := range []uint64{10, 20} {
		if err := s.Write("m", snapshot.Marshal(Model("m", a))); err != nil {
			t.Fatal(err)
		}
	}
	h.Damage(t, s, "m", snapshot.Current)
	m, g, refused, err := snapshot.Load(s, "m")
	if err != nil || m == nil || g != snapshot.Previous || len(refused) != 1 || !errors.Is(refused[0].Err, snapshot.ErrCorrupt) || m.Applied != 10 {
		t.Fatalf("damaged current: %v %v %v %v", m != nil, g, refused, err)
	}
	h.Damage(t, s, "m", snapshot.Previous)
	m, _, refused, err = snapshot.Load(s, "m")
	if m != nil || err != nil || len(refused) != 2 {
		t.Fatalf("both damaged: %v %v %v", m != nil, refused, err)
	}
	// A new write starts a good generation again.
	if err := s.Write("m", snapshot.Marshal(Model("m", 30))); err != nil {
		t.Fatal(err)
	}
	if m, g, _, err := snapshot.Load(s, "m"); err != nil || m == nil || g != snapshot.Current || m.Applied != 30 {
		t.Fatalf("after a new write: %v %v %v", m != nil, g, err)
	}
}

func expect(t *testing.T, s snapshot.Store, name string, g snapshot.Generation, want []byte) {
	t.Helper()
	got, err := s.Read(name, g)
	if err != nil {
		t.Fatalf("%s %s: %v", name, g, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s %s: %d bytes, want the %d written", name, g, len(got), len(want))
	}
}

// Mem is an in-memory snapshot.Store, safe for concurrent use.
type Mem struct {
	mu   sync.Mutex
	gens map[string][2][]byte
}

// Write implements snapshot.Store.
func (s *Mem) Write(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gens == nil {
		s.gens = map[string][2][]byte{}
	}
	g := s.gens[name]
	s.gens[name] = [2][]byte{append([]byte{}, data...), g[0]}
	return nil
}

// Read implements snapshot.Store.
func (s *Mem) Read(name string, g snapshot.Generation) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.gens[name][g]
	if b == nil {
		return nil, fmt.Errorf("%w: %s %s", snapshot.ErrNotFound, name, g)
	}
	return append([]byte{}, b...), nil
}

// Damage flips a byte of a generation held by a Mem.
func (s *Mem) Damage(name string, g snapshot.Generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.gens[name][g]; len(b) > 0 {
		b[len(b)/2] ^= 0x40
	}
}
