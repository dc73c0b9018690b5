package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestFormatLatentTurnedAway: a product full in the bin ends its line
// with the demand it turned away; the others do not mention it.
func TestFormatLatentTurnedAway(t *testing.T) {
	ta := 0.25
	m := &wire.LatentMessage{Model: "ev", Kind: wire.KindFiltered, BinStart: time.Date(2024, 5, 8, 13, 45, 0, 0, time.UTC),
		Estimates: []wire.Estimate{{Product: "site-east", Mean: 0.1, TurnedAway: &ta}, {Product: "site-north", Mean: 0.1, Observed: true}}}
	lines := strings.Split(strings.TrimSpace(formatLatent(m)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  turned away 0.2500") || strings.Contains(lines[1], "turned away") {
		t.Errorf("lines %q", lines)
	}
}
