package csvio

import (
	"encoding/csv"
	"fmt"
	"io"
)

// openCSV starts reading the CSV file name from r, at most limit bytes
// (limitName names the limit in the refusal): leading spaces trimmed,
// rows of any length (nextRecord checks them against the header), and
// its header read.
func openCSV(r io.Reader, limit int64, limitName, name string) (*csv.Reader, []string, error) {
	cr := csv.NewReader(newLimitReader(r, limit, limitName))
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s:1: reading header: %w", name, err)
	}
	return cr, header, nil
}
