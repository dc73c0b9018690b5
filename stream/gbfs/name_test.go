package gbfs

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortName(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want string
	}{
		{"Astor Pl", 20, "Astor Pl"},
		{"Astor Pl", 8, "Astor Pl"},
		{"Astor Pl", 5, "Astor"},
		{"Plaça d'Espanya", 5, "Plaç"}, // ç is two bytes: not cut in half
		{"Plaça d'Espanya", 4, "Pla"},
		{"", 3, ""},
		{strings.Repeat("é", 150), 200, strings.Repeat("é", 100)},
	} {
		got := shortName(tc.name, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("shortName(%q, %d) = %q, want %q", tc.name, tc.n, got, tc.want)
		}
	}
}
