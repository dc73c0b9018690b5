package gbfs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStations: a daemon reads the recorded systems' stations once; a
// discovery without station_information, a failing station_information
// and a malformed one are errors that name the file.
func TestStations(t *testing.T) {
	noInfo := filepath.Join(t.TempDir(), "gbfs.json")
	if err := os.WriteFile(noInfo, []byte(`{"last_updated": 1714982430, "ttl": 60, "version": "2.3", "data": {"en": {"feeds": [
		{"name": "station_status", "url": "{{BASE}}/v2.3/en/station_status.json"}]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, version string
		setup         func(fs *feedServer)
		want          string // stations and the first's "id name capacity", or the error
	}{
		{"2.3", "v2.3", nil, "5: 72 W 52 St & 11 Ave 55"},
		{"3.0", "v3.0", nil, "4: bcn:1 Gran Via Corts Catalanes, 760 46"},
		{"no station_information", "v2.3", func(fs *feedServer) { fs.files["/v2.3/gbfs.json"] = noInfo }, "gbfs: gbfs.json lists no station_information feed"},
		{"503", "v2.3", func(fs *feedServer) { fs.statuses["/v2.3/en/station_information.json"] = http.StatusServiceUnavailable }, "station_information: GET http://"},
		{"malformed", "v2.3", func(fs *feedServer) {
			fs.files["/v2.3/en/station_information.json"] = filepath.Join("testdata", "bad", "malformed.json")
		}, "station_information: station_information.json: malformed JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFeedServer(t)
			if tc.setup != nil {
				tc.setup(fs)
			}
			p, _, _ := newTestPoller(t, fs, tc.version, &memPublisher{})
			si, err := p.Stations(context.Background())
			got := ""
			if err != nil {
				got = err.Error()
				var fe *FeedError
				if !errors.As(err, &fe) {
					t.Errorf("error %v is not a *FeedError", err)
				}
			} else {
				s := si.Stations[0]
				got = fmt.Sprintf("%d: %s %s %d", len(si.Stations), s.ID, s.Name, s.Capacity)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want %q…", got, tc.want)
			}
		})
	}
}
