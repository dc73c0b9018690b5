package charging

import (
	"fmt"
	"sort"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// EVSEStatus turns the outcome's served sessions into the OCPI EVSE
// status changes an operator's charger status would show: each site's
// pool as EVSEs <site>-1 … <site>-<pool>, all AVAILABLE at from; each
// session served at a site takes its lowest-numbered EVSE free at its
// start (one freed at that instant counts as free, as Simulate admits
// it) and makes it CHARGING from its start and AVAILABLE again at its
// end. The At of each change is its exact time (OCPI's last_updated).
// The changes come in time order (AVAILABLE before CHARGING at the
// same instant). Sessions starting before from are an error.
func (o *Outcome) EVSEStatus(from time.Time) ([]ocpi.StatusEvent, error) {
	sites := o.Network.Sites
	free := make([][]time.Time, len(sites))
	var out []ocpi.StatusEvent
	for s, site := range sites {
		free[s] = make([]time.Time, site.Pool)
		for i := range free[s] {
			free[s][i] = from
			out = append(out, ocpi.StatusEvent{Site: site.Name, EVSE: evseName(site.Name, i), Status: ocpi.StatusAvailable, At: from})
		}
	}
	for _, a := range o.Arrivals {
		s := a.ServedAt
		if s < 0 {
			continue
		}
		if a.Time.Before(from) {
			return nil, fmt.Errorf("charging: a session at %s starts before the status's start %s", a.Time.Format(time.RFC3339), from.Format(time.RFC3339))
		}
		slot := -1
		for i, f := range free[s] {
			if !f.After(a.Time) {
				slot = i
				break
			}
		}
		if slot < 0 {
			return nil, fmt.Errorf("charging: site %s has no free EVSE at %s for a session it served", sites[s].Name, a.Time.Format(time.RFC3339))
		}
		end := a.Time.Add(a.Duration)
		free[s][slot] = end
		name := evseName(sites[s].Name, slot)
		out = append(out, ocpi.StatusEvent{Site: sites[s].Name, EVSE: name, Status: ocpi.StatusCharging, At: a.Time},
			ocpi.StatusEvent{Site: sites[s].Name, EVSE: name, Status: ocpi.StatusAvailable, At: end})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].Status == ocpi.StatusAvailable && out[j].Status != ocpi.StatusAvailable
	})
	return out, nil
}

func evseName(site string, slot int) string { return fmt.Sprintf("%s-%d", site, slot+1) }
