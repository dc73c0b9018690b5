package csvio

import (
	"errors"
	"fmt"
	"io"
)

// Input limits. A larger input is refused with an error naming the limit
// instead of exhausting memory (an endless stream, a runaway export, a
// file with one line of gigabytes): the readers keep every row, and
// Build allocates the whole grid.
const (
	// MaxProductsBytes bounds a PRODUCTS file.
	MaxProductsBytes = 64 << 20
	// MaxObsBytes bounds an OBS file.
	MaxObsBytes = 1 << 30
	// MaxGridCells bounds the bins × products grid Build makes from an
	// OBS file (2^26 cells: 1.5 GiB of observations, far beyond a fit
	// that completes).
	MaxGridCells = 1 << 26
)

// The limits in force; tests lower them.
var (
	maxProductsBytes int64 = MaxProductsBytes
	maxObsBytes      int64 = MaxObsBytes
	maxGridCells           = MaxGridCells
)

// ErrTooLarge is wrapped by every error about an input over its limit.
var ErrTooLarge = errors.New("input too large")

// limitReader reads r until more than max bytes have come, then fails
// with an error naming the limit.
type limitReader struct {
	r    io.Reader
	left int64 // max+1 - bytes read
	max  int64
	name string // the limit's name, csvio.MaxObsBytes
}

func newLimitReader(r io.Reader, max int64, name string) *limitReader {
	return &limitReader{r: r, left: max + 1, max: max, name: name}
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("%w: more than %d bytes (csvio.%s)", ErrTooLarge, l.max, l.name)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
