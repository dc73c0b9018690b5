package test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// module is the import path every package of the repository starts with.
const module = "github.com/dcgpd/dcgpd"

// goPackage is one package of the module as `go list` reports it.
type goPackage struct {
	path    string   // relative to the module ("" for its root)
	dir     string   // on disk
	deps    []string // every package it imports, directly or not
	sources []string // non-test Go files
}

// listPackages runs `go list` over the whole module.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .Deps \" \"}}\t{{join .GoFiles \" \"}}", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []goPackage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			t.Fatalf("go list line %q", sc.Text())
		}
		pkgs = append(pkgs, goPackage{path: strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/"), dir: f[1],
			deps: strings.Fields(f[2]), sources: strings.Fields(f[3])})
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; want the whole module", len(pkgs))
	}
	return pkgs
}

// under reports whether path is pkg or one of its subpackages.
func under(path, pkg string) bool { return path == pkg || strings.HasPrefix(path, pkg+"/") }

// TestDependencyDirection holds the layering docs/architecture.md states:
// the math (filter, diffusion, cvi, inventory and the numeric foundations) knows
// nothing of NATS, HTTP, snapshots, the configuration or the serving
// packages; the runner (stream) knows nothing of NATS or of who wires it;
// the foundations under internal/ import no application; and only
// cmd/dcgpd and the tests reach the applications under internal/app.
func TestDependencyDirection(t *testing.T) {
	math := []string{"filter", "diffusion", "cvi", "inventory", "internal/linalg", "internal/mathx", "internal/geo", "internal/errs"}
	serving := []string{"stream", "snapshot", "config", "daemon", "cmd", "internal/app"}
	foundations := []string{"internal/linalg", "internal/mathx", "internal/geo", "internal/errs", "internal/plotstyle", "internal/ratelimit", "internal/procstat", "internal/dirlock"}
	type rule struct {
		from   []string // packages (with their subpackages) the rule is for
		except []string // of those, the ones it is not for
		exact  bool     // from names packages without their subpackages
		never  []string // import paths (module-relative, or external prefixes) they must not reach
		why    string
	}
	rules := []rule{
		{from: math, never: append([]string{"github.com/nats-io", "net/http"}, serving...),
			why: "the math knows nothing of NATS, HTTP, snapshots, the configuration or serving"},
		{from: []string{"stream/wire"}, never: []string{"stream", "config", "snapshot", "daemon", "cvi", "filter", "github.com/nats-io"},
			why: "the wire format imports no other package of dcgpd"},
		{from: []string{"config"}, never: []string{"stream", "snapshot", "daemon", "github.com/nats-io", "net/http"},
			why: "the configuration is read by the serving packages, never the other way"},
		{from: []string{"stream", "stream/wire", "stream/csvio"}, exact: true,
			never: []string{"github.com/nats-io", "daemon", "cmd", "stream/natsio", "stream/cluster", "stream/page", "stream/query", "snapshot/jsstore"},
			why:   "a runner knows nothing of NATS or of what wires it"},
		{from: []string{"snapshot"}, except: []string{"snapshot/jsstore"}, never: []string{"github.com/nats-io", "stream", "cvi", "filter"},
			why: "snapshots store plain numbers"},
		{from: []string{"stream", "snapshot", "config", "daemon", "cvi", "filter", "diffusion"}, never: []string{"cmd", "internal/app"},
			why: "the library and the daemon import no command or application"},
		{from: foundations, never: []string{"internal/app", "cvi", "filter", "diffusion", "stream", "snapshot", "config", "daemon"},
			why: "a foundation imports only the standard library, gonum and other foundations"},
	}
	for _, p := range listPackages(t) {
		for _, r := range rules {
			in := false
			for _, f := range r.from {
				in = in || p.path == f || !r.exact && under(p.path, f)
			}
			for _, e := range r.except {
				in = in && !under(p.path, e)
			}
			if !in {
				continue
			}
			for _, d := range p.deps {
				rel, ours := strings.CutPrefix(d, module+"/")
				for _, n := range r.never {
					std := !strings.Contains(n, ".") && !ours && d == n // a standard package, by its exact path
					external := strings.Contains(n, ".") && (d == n || strings.HasPrefix(d, n+"/"))
					if std || external || ours && !strings.Contains(n, ".") && under(rel, n) {
						t.Errorf("%s imports %s: %s", p.path, d, r.why)
					}
				}
			}
		}
	}
}

// maxPackageLines is the size past which a package's doc.go must say why
// it is one package (a paragraph starting "Size.").
const maxPackageLines = 3000

// TestPackageSize: no package holds more than maxPackageLines lines of
// non-test Go without a reason in its doc.go.
func TestPackageSize(t *testing.T) {
	for _, p := range listPackages(t) {
		n := 0
		for _, f := range p.sources {
			b, err := os.ReadFile(filepath.Join(p.dir, f))
			if err != nil {
				t.Fatal(err)
			}
			n += bytes.Count(b, []byte("\n"))
		}
		if n <= maxPackageLines {
			continue
		}
		doc, err := os.ReadFile(filepath.Join(p.dir, "doc.go"))
		if err != nil || !bytes.Contains(doc, []byte("\n//\n// Size. ")) {
			t.Errorf("%s has %d lines without tests, over %d, and its doc.go gives no reason (a paragraph \"Size. ...\")", p.path, n, maxPackageLines)
		}
	}
}
