// Command ocpiserver serves examples/ev-5min's charger status as an OCPI
// 2.2.1 locations endpoint on a simulated clock, for the README's EV
// quick start: `dcgpd ocpi --clock response` polls it, and with
// --served-products derives the sessions started from the status.
//
//	go build -o bin/ev-ocpi ./examples/ev-5min/ocpiserver
//	bin/ev-ocpi --events examples/ev-5min/evse.csv
//
// The clock starts at --start and runs --speed times faster than the
// wall clock (default: Wednesday 8 May 2024, 06:00 in the garage's time,
// a simulated minute per second: site-east fills within a minute).
// At each request every EVSE has its latest status in the events file
// (examples/ev-5min/evse.csv: the example's served sessions, CHARGING
// while a car charges), last_updated when it changed; the response's
// timestamp is the simulated time.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ev-ocpi:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ev-ocpi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8081", "address to serve on")
	eventsPath := fs.String("events", "examples/ev-5min/evse.csv", "EVSE status timeline CSV (time,site,evse,status)")
	startText := fs.String("start", "2024-05-08T13:00:00Z", "simulated time at start, RFC 3339")
	speed := fs.Float64("speed", 60, "simulated seconds per wall-clock second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start, err := time.Parse(time.RFC3339, *startText)
	if err != nil {
		return fmt.Errorf("--start: %w", err)
	}
	if !(*speed > 0) {
		return fmt.Errorf("--speed %v must be positive", *speed)
	}
	f, err := os.Open(*eventsPath)
	if err != nil {
		return err
	}
	events, err := ocpi.ReadEvents(f, *eventsPath)
	f.Close()
	if err != nil {
		return err
	}
	began := time.Now()
	clock := func() time.Time {
		return start.Add(time.Duration(float64(time.Since(began)) * *speed)).Truncate(time.Millisecond)
	}
	mux := http.NewServeMux()
	mux.Handle("/ocpi/2.2.1/locations", &locations{events: events, now: clock})
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "serving %d EVSE status changes at http://%s/ocpi/2.2.1/locations, simulated time from %s at %gx\n",
		len(events), *listen, start.Format(time.RFC3339), *speed)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// locations renders the OCPI locations response at the clock's time.
type locations struct {
	events []ocpi.StatusEvent // time order
	now    func() time.Time
}

type evseJSON struct {
	UID         string    `json:"uid"`
	Status      string    `json:"status"`
	LastUpdated time.Time `json:"last_updated"`
}

type locationJSON struct {
	ID          string     `json:"id"`
	EVSEs       []evseJSON `json:"evses"`
	LastUpdated time.Time  `json:"last_updated"`
}

func (l *locations) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now := l.now()
	locs := []locationJSON{}
	index := map[string]int{}
	evseAt := map[string]int{} // site/evse → index in its location
	for _, e := range l.events {
		if e.At.After(now) {
			break
		}
		i, ok := index[e.Site]
		if !ok {
			i = len(locs)
			index[e.Site] = i
			locs = append(locs, locationJSON{ID: e.Site})
		}
		loc := &locs[i]
		x := evseJSON{UID: e.EVSE, Status: string(e.Status), LastUpdated: e.At}
		if j, ok := evseAt[e.Site+"/"+e.EVSE]; ok {
			loc.EVSEs[j] = x
		} else {
			evseAt[e.Site+"/"+e.EVSE] = len(loc.EVSEs)
			loc.EVSEs = append(loc.EVSEs, x)
		}
		loc.LastUpdated = e.At
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Total-Count", strconv.Itoa(len(locs)))
	_ = json.NewEncoder(w).Encode(map[string]any{"data": locs, "status_code": 1000, "status_message": "Success", "timestamp": now})
}
