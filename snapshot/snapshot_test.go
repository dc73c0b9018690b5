package snapshot

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// sample returns a snapshot with every field set, NaN and Inf where the
// daemon stores them (missing demand, unlimited supply).
func sample(rng *rand.Rand, np int, withJob bool) *Model {
	vec := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10))
		}
		return v
	}
	filt := func() Filter {
		f := Filter{Started: true, Time: 493000.5, LogLik: -12.25}
		for c := 0; c < np; c++ {
			f.Mean = append(f.Mean, vec(3))
			f.Cov = append(f.Cov, vec(9))
		}
		return f
	}
	obs := func() []Obs {
		o := make([]Obs, np)
		for k := range o {
			o[k] = Obs{Y: rng.Float64() * 10, Supply: math.Inf(1)}
			if k == 0 {
				o[k].Y = math.NaN()
			}
			if k == 1 {
				o[k].Supply, o[k].Censored = 3, true
			}
		}
		return o
	}
	bins := func(n int) []Bin {
		var out []Bin
		for i := 0; i < n; i++ {
			out = append(out, Bin{Index: int64(100 + i), Start: int64(100+i) * int64(time.Hour), T: float64(100 + i),
				Obs: obs(), Nat1: vec(np), Nat2: vec(np), Observed: i%2 == 0})
		}
		return out
	}
	names := make([]string, np)
	for k := range names {
		names[k] = "hub-" + string(rune('a'+k))
	}
	m := &Model{Name: "city", Products: names, BinWidth: time.Hour, Origin: 0, Applied: 123456,
		Revision: 3, Processed: 4000, SinceResmooth: 7, LastResmooth: 1_700_000_000_000_000_000,
		ModelParams: vec(4), LikParams: vec(2),
		Online: Online{Filter: filt(), Warm: true, Nat1: vec(np), Nat2: vec(np * np), PrevObserved: []bool{true, false, true}[:np]},
		Tail:   Online{Filter: filt(), Nat1: vec(np), Nat2: vec(np * np), PrevObserved: make([]bool, np)},
		Window: bins(5),
		Assembler: Assembler{Started: true, Next: 105, ClockSet: true, Clock: 105 * int64(time.Hour),
			Open: []OpenBin{{Index: 105, Obs: obs(), Have: []bool{false, true, true}[:np], Received: 42}}},
		Latest: []byte(`{"schema":1}`)}
	if withJob {
		start := filt()
		m.Job = &Job{ApplyAt: 110, Bins: bins(3), Start: &start, ModelParams: vec(4), LikParams: vec(2), Relearn: true}
		m.MeanScale = []float64{0.5, 1, 2.5}[:np] // the prior mean's level, written last when set
	}
	return m
}

// sameBits compares two snapshots number by number, NaN equal to NaN
// with the same bits.
func sameBits(t *testing.T, a, b *Model) {
	t.Helper()
	ea, eb := Marshal(a), Marshal(b)
	if !bytes.Equal(ea, eb) {
		t.Fatal("re-encoded snapshots differ")
	}
	if o := b.Window[0].Obs[0]; !math.IsNaN(o.Y) || !math.IsInf(o.Supply, 1) {
		t.Fatal("NaN demand or infinite supply lost")
	}
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name   string
		np     int
		job    bool
		digest bool
	}{{"one product", 1, false, false}, {"three products", 3, false, false}, {"with job", 3, true, false},
		{"config digest, no level", 3, false, true}, {"config digest and level", 3, true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			m := sample(rng, tc.np, tc.job)
			if tc.digest {
				m.ConfigDigest = []byte{0xde, 0xad, 0, 0xbe, 0xef}
			}
			got, err := Unmarshal(Marshal(m))
			if err != nil {
				t.Fatal(err)
			}
			sameBits(t, m, got)
			if !reflect.DeepEqual(m.MeanScale, got.MeanScale) {
				t.Fatalf("prior mean level %v, decoded %v", m.MeanScale, got.MeanScale)
			}
			if !bytes.Equal(m.ConfigDigest, got.ConfigDigest) {
				t.Fatalf("config digest %x, decoded %x", m.ConfigDigest, got.ConfigDigest)
			}
			// Field-wise equality where reflect can judge (no NaN there).
			if !reflect.DeepEqual(m.Online, got.Online) || !reflect.DeepEqual(m.ModelParams, got.ModelParams) ||
				(m.Job == nil) != (got.Job == nil) || m.Applied != got.Applied || m.BinWidth != got.BinWidth {
				t.Fatal("decoded snapshot differs from the encoded one")
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	good := Marshal(sample(rng, 3, true))
	flip := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 0x10
		return b
	}
	newer := append([]byte(nil), good...)
	newer[len(magic)] = Version + 1
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"not a snapshot", []byte("hello, this is not a snapshot file at all"), ErrCorrupt},
		{"truncated", good[:len(good)/2], ErrCorrupt},
		{"one byte short", good[:len(good)-1], ErrCorrupt},
		{"trailing byte", append(append([]byte(nil), good...), 0), ErrCorrupt},
		{"payload bit flip", flip(headerLen + 40), ErrCorrupt},
		{"checksum bit flip", flip(len(good) - 2), ErrCorrupt},
		{"newer version", newer, ErrVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Unmarshal(tc.data)
			if !errors.Is(err, tc.want) || m != nil {
				t.Fatalf("got %v, %v; want nil and %v", m != nil, err, tc.want)
			}
		})
	}
}

// TestCheckRefusesInconsistent: a well-formed file with inconsistent
// contents (e.g. written by a buggy build) is refused too.
func TestCheckRefusesInconsistent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name  string
		spoil func(m *Model)
	}{
		{"NaN state", func(m *Model) { m.Online.Filter.Mean[0][0] = math.NaN() }},
		{"covariance size", func(m *Model) { m.Online.Filter.Cov[1] = m.Online.Filter.Cov[1][:4] }},
		{"site size", func(m *Model) { m.Window[2].Nat1 = nil }},
		{"bins out of order", func(m *Model) { m.Window[3].Index = m.Window[1].Index }},
		{"no products", func(m *Model) { m.Products = nil }},
		{"zero bin width", func(m *Model) { m.BinWidth = 0 }},
		{"infinite hyperparameter", func(m *Model) { m.LikParams[0] = math.Inf(1) }},
		{"job bins", func(m *Model) { m.Job.Bins[0].Obs = m.Job.Bins[0].Obs[:1] }},
		{"level count", func(m *Model) { m.MeanScale = m.MeanScale[:2] }},
		{"level not positive", func(m *Model) { m.MeanScale[1] = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sample(rng, 3, true)
			tc.spoil(m)
			if _, err := Unmarshal(Marshal(m)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestFileStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snaps")
	s := &FileStore{Dir: dir}
	if _, _, _, err := Load(s, "city"); err != nil {
		t.Fatalf("empty store: %v", err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := sample(rng, 3, false), sample(rng, 3, true)
	a.Applied, b.Applied = 10, 20
	for _, m := range []*Model{a, b} {
		if err := s.Write("city", Marshal(m)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, %v; want 0700", st.Mode().Perm(), err)
	}
	for _, g := range []Generation{Current, Previous} {
		st, err := os.Stat(s.Path("city", g))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s file mode %v, %v; want 0600", g, st.Mode().Perm(), err)
		}
	}
	m, g, refused, err := Load(s, "city")
	if err != nil || g != Current || len(refused) != 0 || m.Applied != 20 {
		t.Fatalf("load: %v %v %v %v", m != nil, g, refused, err)
	}
	// A damaged current snapshot: the previous one is used, the refusal
	// reported.
	cur := s.Path("city", Current)
	data, _ := os.ReadFile(cur)
	if err := os.WriteFile(cur, data[:len(data)-9], 0o600); err != nil {
		t.Fatal(err)
	}
	m, g, refused, err = Load(s, "city")
	if err != nil || g != Previous || len(refused) != 1 || !errors.Is(refused[0].Err, ErrCorrupt) || m.Applied != 10 {
		t.Fatalf("fallback: %v %v %v %v", m != nil, g, refused, err)
	}
	// A crash between the two renames leaves only the previous file.
	if err := os.Remove(cur); err != nil {
		t.Fatal(err)
	}
	if m, g, _, err = Load(s, "city"); err != nil || g != Previous || m.Applied != 10 {
		t.Fatalf("no current: %v %v %v", m != nil, g, err)
	}
	// Both damaged: no state, no error (the daemon replays from the
	// stream), both refusals reported.
	if err := os.WriteFile(s.Path("city", Previous), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cur, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if m, _, refused, err = Load(s, "city"); m != nil || err != nil || len(refused) != 2 {
		t.Fatalf("both damaged: %v %v %v", m != nil, refused, err)
	}
	// A snapshot of a newer format is refused with an error: starting
	// afresh would drop its state silently.
	newer := Marshal(a)
	newer[len(magic)] = Version + 1
	if err := os.WriteFile(cur, newer, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err = Load(s, "city"); !errors.Is(err, ErrVersion) {
		t.Fatalf("newer version: %v", err)
	}
	// Another model's file under this name is refused.
	if err := os.WriteFile(cur, Marshal(a), 0o600); err != nil {
		t.Fatal(err)
	}
	if m, _, refused, _ = Load(s, "other"); m != nil || len(refused) != 0 {
		t.Fatalf("other model: %v %v", m != nil, refused)
	}
}

// TestFileStoreWriteFailure: a store that cannot write keeps the current
// snapshot and leaves no temporary file.
func TestFileStoreWriteFailure(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: directory permissions do not stop writes; the daemon's injected failing store covers this path")
	}
	dir := t.TempDir()
	s := &FileStore{Dir: dir}
	rng := rand.New(rand.NewPCG(9, 10))
	m := sample(rng, 2, false)
	if err := s.Write("x", Marshal(m)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if err := s.Write("x", Marshal(sample(rng, 2, true))); err == nil {
		t.Fatal("write into a read-only directory succeeded")
	}
	got, g, _, err := Load(s, "x")
	if err != nil || g != Current || got.Job != nil {
		t.Fatalf("current snapshot changed: %v %v", g, err)
	}
}
