package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// Version is the format this package writes and reads. A file of another
// version is refused with ErrVersion: a format change bumps it and either
// adds a migration here or tells the user to start the model afresh.
const Version = 1

// magic opens every snapshot file.
const magic = "DCGPSNAP"

// headerLen is magic, version (uint32) and payload length (uint64);
// the payload is followed by a CRC-32C of header and payload.
const headerLen = len(magic) + 4 + 8

// Errors a caller tells apart: a damaged file and a file of another
// format version.
var (
	ErrCorrupt = errors.New("snapshot is corrupt")
	ErrVersion = errors.New("snapshot format version is not supported")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Marshal encodes m as a complete snapshot file.
func Marshal(m *Model) []byte {
	e := &encoder{b: make([]byte, headerLen, 4096)}
	copy(e.b, magic)
	binary.LittleEndian.PutUint32(e.b[len(magic):], Version)
	m.encode(e)
	binary.LittleEndian.PutUint64(e.b[len(magic)+4:], uint64(len(e.b)-headerLen))
	e.b = binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
	return e.b
}

// Unmarshal decodes a snapshot file, verifying its magic, version,
// length and checksum first; on any error nothing is returned.
func Unmarshal(b []byte) (*Model, error) {
	if len(b) < headerLen+4 || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a dcgpd snapshot (%d bytes)", ErrCorrupt, len(b))
	}
	if v := binary.LittleEndian.Uint32(b[len(magic):]); v != Version {
		return nil, fmt.Errorf("%w: file has version %d, this dcgpd reads %d", ErrVersion, v, Version)
	}
	n := binary.LittleEndian.Uint64(b[len(magic)+4:])
	if n != uint64(len(b)-headerLen-4) {
		return nil, fmt.Errorf("%w: payload length %d, file holds %d (truncated?)", ErrCorrupt, n, len(b)-headerLen-4)
	}
	body := b[:len(b)-4]
	if want, got := binary.LittleEndian.Uint32(b[len(b)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	return decodePayload(body[headerLen:])
}

// decodePayload decodes a verified payload; it fails cleanly on any
// inconsistency (the fuzz tests feed it arbitrary bytes).
func decodePayload(p []byte) (*Model, error) {
	d := &decoder{b: p}
	m := &Model{}
	m.decode(d)
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Errorf("%d bytes after the last field", len(d.b)))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, d.err)
	}
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return m, nil
}

func (m *Model) encode(e *encoder) {
	e.str(m.Name)
	e.u64(uint64(len(m.Products)))
	for _, p := range m.Products {
		e.str(p)
	}
	e.i64(int64(m.BinWidth))
	e.i64(m.Origin)
	e.u64(m.Applied)
	e.i64(m.Stream)
	e.i64(m.Revision)
	e.i64(m.Processed)
	e.i64(m.SinceResmooth)
	e.i64(m.LastResmooth)
	e.f64s(m.ModelParams)
	e.f64s(m.LikParams)
	m.Online.encode(e)
	m.Tail.encode(e)
	encodeBins(e, m.Window)
	a := &m.Assembler
	e.boolean(a.Started)
	e.i64(a.Next)
	e.boolean(a.ClockSet)
	e.i64(a.Clock)
	e.u64(uint64(len(a.Open)))
	for _, o := range a.Open {
		e.i64(o.Index)
		encodeObs(e, o.Obs)
		e.bools(o.Have)
		e.i64(o.Received)
		e.u64(o.MinSeq)
	}
	e.boolean(m.Job != nil)
	if j := m.Job; j != nil {
		e.i64(j.ApplyAt)
		encodeBins(e, j.Bins)
		e.boolean(j.Start != nil)
		if j.Start != nil {
			j.Start.encode(e)
		}
		e.f64s(j.ModelParams)
		e.f64s(j.LikParams)
		e.boolean(j.Relearn)
	}
	e.bytes(m.Latest)
	// Optional trailing fields, in order; a field is written when it or a
	// later one is set, so that an older file (ending earlier) reads as
	// their absence.
	if len(m.MeanScale) > 0 || len(m.ConfigDigest) > 0 {
		e.f64s(m.MeanScale)
	}
	if len(m.ConfigDigest) > 0 {
		e.bytes(m.ConfigDigest)
	}
}

func (m *Model) decode(d *decoder) {
	m.Name = d.str()
	if n := d.count(8); n > 0 {
		m.Products = make([]string, n)
		for i := range m.Products {
			m.Products[i] = d.str()
		}
	}
	m.BinWidth = time.Duration(d.i64())
	m.Origin = d.i64()
	m.Applied = d.u64()
	m.Stream = d.i64()
	m.Revision = d.i64()
	m.Processed = d.i64()
	m.SinceResmooth = d.i64()
	m.LastResmooth = d.i64()
	m.ModelParams = d.f64s()
	m.LikParams = d.f64s()
	m.Online.decode(d)
	m.Tail.decode(d)
	m.Window = decodeBins(d)
	a := &m.Assembler
	a.Started = d.boolean()
	a.Next = d.i64()
	a.ClockSet = d.boolean()
	a.Clock = d.i64()
	if n := d.count(8 * 4); n > 0 {
		a.Open = make([]OpenBin, n)
		for i := range a.Open {
			o := &a.Open[i]
			o.Index = d.i64()
			o.Obs = decodeObs(d)
			o.Have = d.bools()
			o.Received = d.i64()
			o.MinSeq = d.u64()
		}
	}
	if d.boolean() {
		j := &Job{}
		j.ApplyAt = d.i64()
		j.Bins = decodeBins(d)
		if d.boolean() {
			j.Start = &Filter{}
			j.Start.decode(d)
		}
		j.ModelParams = d.f64s()
		j.LikParams = d.f64s()
		j.Relearn = d.boolean()
		m.Job = j
	}
	m.Latest = d.bytes()
	if d.err == nil && len(d.b) > 0 {
		m.MeanScale = d.f64s()
	}
	if d.err == nil && len(d.b) > 0 {
		m.ConfigDigest = d.bytes()
	}
}

func (f *Filter) encode(e *encoder) {
	e.boolean(f.Started)
	e.f64(f.Time)
	e.f64(f.LogLik)
	e.u64(uint64(len(f.Mean)))
	for c := range f.Mean {
		e.f64s(f.Mean[c])
		e.f64s(f.Cov[c])
	}
}

func (f *Filter) decode(d *decoder) {
	f.Started = d.boolean()
	f.Time = d.f64()
	f.LogLik = d.f64()
	n := d.count(16)
	f.Mean, f.Cov = make([][]float64, n), make([][]float64, n)
	for c := 0; c < n; c++ {
		f.Mean[c] = d.f64s()
		f.Cov[c] = d.f64s()
	}
}

func (o *Online) encode(e *encoder) {
	o.Filter.encode(e)
	e.boolean(o.Warm)
	e.f64s(o.Nat1)
	e.f64s(o.Nat2)
	e.bools(o.PrevObserved)
}

func (o *Online) decode(d *decoder) {
	o.Filter.decode(d)
	o.Warm = d.boolean()
	o.Nat1 = d.f64s()
	o.Nat2 = d.f64s()
	o.PrevObserved = d.bools()
}

func encodeObs(e *encoder, obs []Obs) {
	e.u64(uint64(len(obs)))
	for _, o := range obs {
		e.f64(o.Y)
		e.f64(o.Supply)
		e.boolean(o.Censored)
	}
}

func decodeObs(d *decoder) []Obs {
	n := d.count(17)
	if n == 0 {
		return nil
	}
	obs := make([]Obs, n)
	for i := range obs {
		obs[i] = Obs{Y: d.f64(), Supply: d.f64(), Censored: d.boolean()}
	}
	return obs
}

func encodeBins(e *encoder, bins []Bin) {
	e.u64(uint64(len(bins)))
	for _, b := range bins {
		e.i64(b.Index)
		e.i64(b.Start)
		e.f64(b.T)
		encodeObs(e, b.Obs)
		e.f64s(b.Nat1)
		e.f64s(b.Nat2)
		e.boolean(b.Observed)
	}
}

func decodeBins(d *decoder) []Bin {
	n := d.count(8 * 6)
	if n == 0 {
		return nil
	}
	bins := make([]Bin, n)
	for i := range bins {
		b := &bins[i]
		b.Index = d.i64()
		b.Start = d.i64()
		b.T = d.f64()
		b.Obs = decodeObs(d)
		b.Nat1 = d.f64s()
		b.Nat2 = d.f64s()
		b.Observed = d.boolean()
	}
	return bins
}
