package csvio

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Estimate is one POSTERIOR row: the latent true demand at an OBS row.
type Estimate struct {
	Time, Product                string
	Mean, Var, PredVar, Q05, Q95 float64
}

// WritePosterior writes the POSTERIOR CSV.
func WritePosterior(w io.Writer, rows []Estimate) error {
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString("time,product,mean,var,pred_var,q05,q95\n"); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for _, r := range rows {
		if _, err := fmt.Fprintf(bw, "%s,%s,%s,%s,%s,%s,%s\n", csvField(r.Time), csvField(r.Product), f(r.Mean), f(r.Var), f(r.PredVar), f(r.Q05), f(r.Q95)); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// csvField quotes s if it needs quoting.
func csvField(s string) string {
	for _, c := range s {
		if c == ',' || c == '"' || c == '\n' || c == '\r' {
			return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		}
	}
	return s
}
