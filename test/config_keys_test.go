package test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/config"
)

// TestConfigFilesDocumentEveryKey: every key the daemon's configuration
// decodes has a line "key =" (set, or commented out) in dcgpd.toml, and every key
// of a model's [model] and [fit] tables in config.toml, as both files
// promise.
func TestConfigFilesDocumentEveryKey(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile("../" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	daemonFile, modelFile := read("dcgpd.toml"), read("config.toml")
	var walk func(prefix string, ty reflect.Type)
	walk = func(prefix string, ty reflect.Type) {
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("toml") == "" {
				walk(prefix, f.Type) // an embedded struct's keys are the outer table's
				continue
			}
			tag := strings.Split(f.Tag.Get("toml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(config.Duration{}) && ft.Name() != "Time" {
				walk(prefix+tag+".", ft)
				continue
			}
			key := prefix + tag
			file, name := daemonFile, "dcgpd.toml"
			if strings.HasPrefix(key, "models.model.") || strings.HasPrefix(key, "models.fit.") {
				file, name = modelFile, "config.toml"
			}
			if !regexp.MustCompile(`(?m)^#?\s*` + regexp.QuoteMeta(tag) + `\s*=`).Match(file) {
				t.Errorf("%s: not in %s", key, name)
			}
		}
	}
	walk("", reflect.TypeOf(config.Config{}))
}
