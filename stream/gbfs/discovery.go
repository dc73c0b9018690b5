package gbfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
)

// Discovery is an auto-discovery file (gbfs.json): where each feed is.
type Discovery struct {
	Header
	// Language is the feed list chosen from a 2.3 file (empty for 3.0,
	// whose single list has no language).
	Language string
	// Feeds maps each feed's name (station_status, ...) to its URL.
	Feeds map[string]string
}

// Feed names the poller reads.
const (
	FeedStationInformation = "station_information"
	FeedStationStatus      = "station_status"
)

type rawFeed struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

type rawFeeds struct {
	Feeds *[]rawFeed `json:"feeds"`
}

// DecodeDiscovery reads gbfs.json. A 2.3 file lists feeds per language
// (data.<lang>.feeds); the list in language is taken, else the first
// language in alphabetical order. A 3.0 file has one list (data.feeds).
// Feed URLs must be absolute http(s) URLs.
func DecodeDiscovery(data []byte, language string) (Discovery, error) {
	const file = "gbfs.json"
	h, body, err := decodeHeader(file, data)
	if err != nil {
		return Discovery{}, err
	}
	d := Discovery{Header: h}
	var list []rawFeed
	var v3 rawFeeds
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		if err := json.Unmarshal(body, &v3); err != nil {
			return Discovery{}, fmt.Errorf("%s: data: %w", file, err)
		}
	}
	if v3.Feeds != nil {
		list = *v3.Feeds
	} else {
		var langs map[string]rawFeeds
		if err := json.Unmarshal(body, &langs); err != nil {
			return Discovery{}, fmt.Errorf("%s: data is neither data.feeds (3.0) nor data.<language>.feeds (2.3): %w", file, err)
		}
		if len(langs) == 0 {
			return Discovery{}, fmt.Errorf("%s: data lists no language", file)
		}
		d.Language = language
		if _, ok := langs[language]; !ok {
			names := make([]string, 0, len(langs))
			for l := range langs {
				names = append(names, l)
			}
			sort.Strings(names)
			d.Language = names[0]
		}
		if langs[d.Language].Feeds == nil {
			return Discovery{}, fmt.Errorf("%s: data.%s.feeds missing", file, d.Language)
		}
		list = *langs[d.Language].Feeds
	}
	d.Feeds = make(map[string]string, len(list))
	for i, f := range list {
		if f.Name == "" {
			return Discovery{}, fmt.Errorf("%s: feed %d has no name", file, i)
		}
		u, err := url.Parse(f.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Discovery{}, fmt.Errorf("%s: feed %q: url %q is not an absolute http(s) URL", file, f.Name, f.URL)
		}
		d.Feeds[f.Name] = f.URL
	}
	if d.Feeds[FeedStationStatus] == "" {
		return Discovery{}, fmt.Errorf("%s: no %s feed listed", file, FeedStationStatus)
	}
	return d, nil
}
