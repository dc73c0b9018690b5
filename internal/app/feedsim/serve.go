package feedsim

import (
	"encoding/json"
	"net/http"
	"time"
)

// Handler serves the feed at /gbfs.json, /station_information.json and
// /station_status.json, its URLs built from the request's host; now is
// the clock (time.Now outside tests).
func (s *Sim) Handler(now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /gbfs.json", func(w http.ResponseWriter, r *http.Request) {
		base := "http://" + r.Host
		feeds := []map[string]string{{"name": "station_information", "url": base + "/station_information.json"},
			{"name": "station_status", "url": base + "/station_status.json"}}
		write(w, now(), 60, map[string]any{"en": map[string]any{"feeds": feeds}})
	})
	mux.HandleFunc("GET /station_information.json", func(w http.ResponseWriter, r *http.Request) {
		list, _ := s.Snapshot(now())
		out := make([]map[string]any, len(list))
		for i, st := range list {
			out[i] = map[string]any{"station_id": st.ID, "name": st.Name, "lat": st.Lat, "lon": st.Lon, "capacity": st.Capacity}
		}
		write(w, now(), 60, map[string]any{"stations": out})
	})
	mux.HandleFunc("GET /station_status.json", func(w http.ResponseWriter, r *http.Request) {
		list, at := s.Snapshot(now())
		out := make([]map[string]any, len(list))
		for i, st := range list {
			out[i] = map[string]any{"station_id": st.ID, "num_bikes_available": st.Bikes, "num_docks_available": st.Capacity - st.Bikes,
				"is_installed": true, "is_renting": true, "is_returning": true, "last_reported": at.Unix()}
		}
		write(w, at, 1, map[string]any{"stations": out})
	})
	return mux
}

// write sends a GBFS 2.3 file.
func write(w http.ResponseWriter, updated time.Time, ttl int, data any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"last_updated": updated.Unix(), "ttl": ttl, "version": "2.3", "data": data})
}
