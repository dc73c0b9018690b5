package stream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigSizeLimit: a configuration of MaxConfigBytes is read; one
// byte more, in memory, in a file or from an endless device, is refused
// with an error naming the file and the limit, without reading on.
func TestConfigSizeLimit(t *testing.T) {
	pad := func(n int) []byte {
		b := []byte(goodConfig + "#")
		b = append(b, strings.Repeat("x", n-len(b)-1)...)
		return append(b, '\n')
	}
	if _, err := DecodeConfig(pad(MaxConfigBytes)); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if _, err := DecodeConfig(pad(MaxConfigBytes + 1)); err == nil || !strings.HasPrefix(err.Error(), "0: ") || !strings.Contains(err.Error(), "MaxConfigBytes") {
		t.Fatalf("one byte over, in memory: %v", err)
	}
	p := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(p, pad(MaxConfigBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(p); err == nil || !strings.HasPrefix(err.Error(), p+":0: ") || !strings.Contains(err.Error(), "MaxConfigBytes") {
		t.Fatalf("one byte over, in a file: %v", err)
	}
	t.Run("endless device", func(t *testing.T) {
		if _, err := os.Stat("/dev/zero"); err != nil {
			t.Skipf("no /dev/zero here: %v", err)
		}
		if _, err := LoadConfig("/dev/zero"); err == nil || !strings.Contains(err.Error(), "MaxConfigBytes") {
			t.Fatalf("/dev/zero: %v", err)
		}
	})
}

// TestConfigErrorHidesSecrets: a malformed password or token is reported
// by line, without the piece of it the TOML parser quotes.
func TestConfigErrorHidesSecrets(t *testing.T) {
	for _, line := range []string{
		"password = hunter2secret",
		"token = hunter2secret",
		"token = 'hunter2secret' trailing",
		`password = "hunter2secret`,
		"password = 0xhunter2secret",
	} {
		in := "[nats]\n" + line + "\n" + goodConfig
		_, err := DecodeConfig([]byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), "2: ") {
			t.Errorf("%s: got %v, want an error on line 2", line, err)
			continue
		}
		if strings.Contains(err.Error(), "hunter") {
			t.Errorf("%s: the error shows the secret: %v", line, err)
		}
	}
	// Other keys keep the parser's message.
	_, err := DecodeConfig([]byte("[nats]\nprefix = dcgp\n" + goodConfig))
	if err == nil || !strings.Contains(err.Error(), "dcgp") {
		t.Errorf("prefix: %v", err)
	}
}
