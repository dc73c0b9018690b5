package gbfs

import (
	"errors"
	"fmt"
	"strings"
)

// ErrDuplicateStation is the error of a StationProblem for a station_id
// listed more than once in a file: every copy is refused, since which one
// is true cannot be told.
var ErrDuplicateStation = errors.New("every copy refused (which one is true cannot be told)")

// refuseDuplicates drops every station whose id is listed more than once
// (ids: each list entry's id, "" when it could not be read) and returns
// one problem per such id, in order of first listing.
func refuseDuplicates[S any](stations []S, id func(*S) string, ids []string) ([]S, []StationProblem) {
	at := make(map[string][]int, len(ids))
	var order []string
	for i, s := range ids {
		if s == "" {
			continue
		}
		if at[s] == nil {
			order = append(order, s)
		}
		at[s] = append(at[s], i)
	}
	var problems []StationProblem
	for _, s := range order {
		if n := len(at[s]); n > 1 {
			entries := make([]string, n)
			for k, i := range at[s] {
				entries[k] = fmt.Sprintf("#%d", i)
			}
			problems = append(problems, StationProblem{Station: s,
				Err: fmt.Errorf("listed %d times (entries %s): %w", n, strings.Join(entries, ", "), ErrDuplicateStation)})
		}
	}
	if len(problems) == 0 {
		return stations, nil
	}
	kept := stations[:0]
	for i := range stations {
		if len(at[id(&stations[i])]) == 1 {
			kept = append(kept, stations[i])
		}
	}
	return kept, problems
}
