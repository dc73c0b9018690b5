package flowsim

import (
	"fmt"
	"io"
)

// Write prints r as a text table: the world's totals, then one row per
// variant.
func (r *Result) Write(out io.Writer, title string) error {
	_, err := fmt.Fprintf(out, "%s\n%d station-hours; riders served: %d pickups, %d returns; turned away by the simulated stock: %d pickups, %d returns; bikes moved by trucks: %d\n",
		title, r.StationHours, r.Pickups, r.Returns, r.UnmetPickups, r.UnmetReturns, r.TruckBikes)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "%-6s %-6s %-6s %9s %9s %9s %9s %12s %8s %9s %8s\n",
		"poll", "source", "trucks", "pick.bias", "pick.rmse", "ret.bias", "ret.rmse", "bias+hidden", "above", "censored", "moved"); err != nil {
		return err
	}
	for _, s := range r.Scores {
		src, det := "counts", "off"
		if s.IDs {
			src = "ids"
		}
		if s.Detect {
			det = "on"
		}
		if _, err := fmt.Fprintf(out, "%-6v %-6s %-6s %9.3f %9.3f %9.3f %9.3f %12.3f %8d %8.1f%% %8d\n",
			s.Poll, src, det, s.PickupBias, s.PickupRMSE, s.ReturnBias, s.ReturnRMSE, s.HiddenBias, s.Above, 100*s.Censored, s.Moved); err != nil {
			return err
		}
	}
	return nil
}
