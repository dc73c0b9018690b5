package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingProductsFileRefusedAtLoad: a products file that cannot be
// read is refused when the configuration is loaded, naming the file's
// line and key, not after the daemon has started NATS.
func TestMissingProductsFileRefusedAtLoad(t *testing.T) {
	dir := t.TempDir()
	cfg := "[[models]]\nname = \"bikes\"\nbin = \"1h\"\nproducts = \"products.csv\"\n"
	p := filepath.Join(dir, "dcgpd.toml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+":4: models[0] (bikes).products: ") || !strings.Contains(err.Error(), "products.csv") {
		t.Fatalf("missing products file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "products.csv"), []byte("product,x\na,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(p); err != nil {
		t.Fatalf("with the file there: %v", err)
	}
}
