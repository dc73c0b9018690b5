package config

import (
	"strings"
	"testing"
	"time"
)

const goodConfig = `
[nats]
listen = "127.0.0.1:-1"

[[models]]
name = "midtown"
bin = "1h"
lateness = "10m"
[[models.product]]
name = "a"
features = [0.0, 0.0]
[[models.product]]
name = "b"
features = [300.0, 0.0]
[models.model]
likelihood = "diffusion"

[[models]]
name = "ev"
bin = "15m"
horizon = 8
[[models.product]]
name = "c1"
features = []
[models.resmooth]
window = 96
`

func TestDecodeConfig(t *testing.T) {
	c, err := DecodeConfig([]byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Models[0]
	if m.Bin.Duration != time.Hour || m.Lateness.Duration != 10*time.Minute || m.Horizon != 6 || m.Resmooth.Window != 168 || m.Online.Steps != 20 {
		t.Fatalf("defaults not filled: %+v", m)
	}
	if e := c.Models[1]; e.Horizon != 8 || e.Resmooth.Window != 96 || e.Resmooth.EveryBins != 24 {
		t.Fatalf("second model: %+v", e)
	}
	if c.NATS.Prefix != "dcgp" || c.HTTP.Listen != "127.0.0.1:9464" {
		t.Fatalf("defaults: %+v", c)
	}
}

// TestDecodeConfigErrors: every error names the line of the key at fault.
func TestDecodeConfigErrors(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{`bin = "15m"`, `bin = "fast"`, "20: "},
		{`horizon = 8`, `horizon = -1`, "21: models[1] (ev).horizon"},
		{`window = 96`, `window = 1`, "26: models[1] (ev).resmooth.window"},
		{`lateness = "10m"`, `latenes = "10m"`, `8: unknown key "models.latenes"`},
		{`name = "ev"`, `name = "e v"`, "19: models[1] (e v).name"},
		{`likelihood = "diffusion"`, `likelihood = "magic"`, "16: models[0] (midtown).model"},
	}
	for _, c := range cases {
		in := strings.Replace(goodConfig, c.from, c.to, 1)
		_, err := DecodeConfig([]byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want prefix %q", c.to, err, c.want)
		}
	}
}

// TestOriginDefault: an omitted origin is the Unix epoch, so bins are
// aligned to whole hours (days, …) of UTC (stream's
// TestAssemblerDefaultOrigin checks an assembler with it).
func TestOriginDefault(t *testing.T) {
	c, err := DecodeConfig([]byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Models[0].Origin.Equal(time.Unix(0, 0)) {
		t.Fatalf("origin %v", c.Models[0].Origin)
	}
}

// TestSnapshotEveryMessages: the message count that triggers a snapshot
// defaults to 4096, is capped at half of max_ack_pending, and must be
// positive.
func TestSnapshotEveryMessages(t *testing.T) {
	c := DefaultConfig()
	if c.Snapshot.EveryMessages != 4096 {
		t.Fatalf("default every_messages %d", c.Snapshot.EveryMessages)
	}
	c.Snapshot.EveryMessages = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "snapshot.every_messages") {
		t.Fatalf("every_messages 0: %v", err)
	}
}

// TestResmoothToleranceKey: resmooth.tolerance is read, and a value
// outside [0, 1) is refused with its line.
func TestResmoothToleranceKey(t *testing.T) {
	in := strings.Replace(goodConfig, "window = 96", "window = 96\ntolerance = 1e-6", 1)
	c, err := DecodeConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Models[1].Resmooth.Tolerance; got != 1e-6 {
		t.Errorf("tolerance %v, want 1e-6", got)
	}
	_, err = DecodeConfig([]byte(strings.Replace(in, "tolerance = 1e-6", "tolerance = 1.5", 1)))
	if err == nil || !strings.HasPrefix(err.Error(), "27: models[1] (ev).resmooth.tolerance") {
		t.Errorf("got %v", err)
	}
}
