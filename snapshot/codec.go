package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// encoder appends little-endian fields to a buffer.
type encoder struct{ b []byte }

func (e *encoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) i64(v int64)  { e.u64(uint64(v)) }
func (e *encoder) f64(v float64) {
	e.u64(math.Float64bits(v))
}
func (e *encoder) boolean(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *encoder) bytes(v []byte) { e.u64(uint64(len(v))); e.b = append(e.b, v...) }
func (e *encoder) str(v string)   { e.u64(uint64(len(v))); e.b = append(e.b, v...) }
func (e *encoder) f64s(v []float64) {
	e.u64(uint64(len(v)))
	for _, x := range v {
		e.f64(x)
	}
}
func (e *encoder) bools(v []bool) {
	e.u64(uint64(len(v)))
	for _, x := range v {
		e.boolean(x)
	}
}

// errShort reports a payload that ends before its fields do.
var errShort = errors.New("payload ends early")

// decoder reads what encoder wrote. The first error sticks; every length
// is checked against the bytes left, so no field can make it allocate
// more than the payload's size.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) u64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail(errShort)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) i64() int64   { return int64(d.u64()) }
func (d *decoder) f64() float64 { return math.Float64frombits(d.u64()) }

func (d *decoder) boolean() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < 1 {
		d.fail(errShort)
		return false
	}
	v := d.b[0]
	d.b = d.b[1:]
	if v > 1 {
		d.fail(fmt.Errorf("boolean byte %d", v))
	}
	return v == 1
}

// count reads a length whose elements take at least size bytes each.
func (d *decoder) count(size int) int {
	n := d.u64()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/size) {
		d.fail(fmt.Errorf("length %d exceeds the %d bytes left", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.count(1)
	if d.err != nil {
		return nil
	}
	v := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes()) }

func (d *decoder) f64s() []float64 {
	n := d.count(8)
	if d.err != nil || n == 0 {
		return nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = d.f64()
	}
	return v
}

func (d *decoder) bools() []bool {
	n := d.count(1)
	if d.err != nil || n == 0 {
		return nil
	}
	v := make([]bool, n)
	for i := range v {
		v[i] = d.boolean()
	}
	return v
}
