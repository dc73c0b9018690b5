package test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docFlag finds a go test flag that names tests or benchmarks in a
// document: -run, -bench and -skip (also as -test.run and so on for a
// compiled test binary), then its pattern quoted with ' or ", or bare.
// The pattern may start on the next line (a command wrapped in prose).
var docFlag = regexp.MustCompile(`(?:^|[\s(` + "`" + `])-(?:test\.)?(run|bench|skip)(?:=|\s+)(?:'([^']*)'|"([^"]*)"|([^\s'"]+))`)

// testFunc matches the declaration of a test, benchmark, fuzz test or
// example.
var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)

// noTestPatterns select no test on purpose (`go test -run X -bench …`
// runs only the benchmarks), every one, or stand for a pattern in prose.
var noTestPatterns = map[string]bool{"X": true, "XXX": true, "^$": true, ".": true, "…": true, "...": true}

// docPattern is one -run, -bench or -skip pattern a document quotes.
type docPattern struct {
	file    string
	line    int
	flag    string // run, bench or skip
	pattern string // as written
}

// TestDocsNameExistingTests: every -run, -bench and -skip pattern that
// README.md and docs/*.md quote names tests or benchmarks that exist, so a
// document cannot tell a reader to run a test that was renamed or
// removed. Each alternative of a pattern (its top-level `|` branches, and
// those of a group like `Test(A|B)`) must match at least one function of
// the repository: a Test, Fuzz or Example function for -run and -skip, a
// Benchmark for -bench (by the top-level name, the part before the first
// `/`; sub-test names are built at run time).
func TestDocsNameExistingTests(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../README.md"}, files...)
	var pats []docPattern
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pats = append(pats, docPatterns(strings.TrimPrefix(f, "../"), string(b))...)
	}
	if len(pats) < 50 {
		t.Fatalf("found %d test patterns in README.md and docs/*.md; the parser is broken", len(pats))
	}
	names, err := repoTestFuncs("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(names["run"]) < 100 || len(names["bench"]) < 10 {
		t.Fatalf("found %d tests and %d benchmarks in the repository; the scan is broken", len(names["run"]), len(names["bench"]))
	}
	for _, p := range pats {
		for _, msg := range checkDocPattern(p, names) {
			t.Error(msg)
		}
	}
	t.Logf("%d patterns checked against %d tests and %d benchmarks", len(pats), len(names["run"]), len(names["bench"]))
}

// TestDocsPatternCheckCatchesMissing: the check reports a pattern naming
// a test that does not exist, with its document and line, and an
// alternative of a group that does not exist, and accepts patterns whose
// every alternative exists.
func TestDocsPatternCheckCatchesMissing(t *testing.T) {
	t.Parallel()
	names := map[string][]string{
		"run":   {"TestAlpha", "TestBetaOne", "TestBetaTwo"},
		"bench": {"BenchmarkGamma"},
	}
	doc := "Run it:\n\n`go test -run 'TestAlpha|TestGone' ./x/`, then\n" +
		"`go test -run X -bench 'Gamma/City(500|2000)$' ./y/` and `go test -run\nTestBeta(One|Three) ./z/`;\n" +
		"`/tmp/x.test -test.bench '^BenchmarkMissing$'` | `-run 'TestAlpha\\|TestBetaTwo'` | -skip ^TestBetaOne$\n"
	pats := docPatterns("doc.md", doc)
	var got []string
	for _, p := range pats {
		got = append(got, checkDocPattern(p, names)...)
	}
	want := []string{
		`doc.md:3: -run 'TestAlpha|TestGone': no test matches TestGone`,
		`doc.md:4: -run 'TestBeta(One|Three)': no test matches TestBetaThree`,
		`doc.md:6: -bench '^BenchmarkMissing$': no benchmark matches ^BenchmarkMissing$`,
	}
	if len(pats) != 7 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d patterns %+v; reports:\n%s\nwant:\n%s", len(pats), pats, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// docPatterns returns the -run, -bench and -skip patterns of a document.
func docPatterns(file, text string) []docPattern {
	var out []docPattern
	for _, m := range docFlag.FindAllStringSubmatchIndex(text, -1) {
		var pat string
		for g := 2; g <= 4; g++ { // quoted with ', with ", or bare
			if a := m[2*g]; a >= 0 {
				pat = text[a:m[2*g+1]]
				break
			}
		}
		if m[8] >= 0 { // bare: drop what ends the command in prose
			pat = strings.TrimRight(pat, "`,.;:")
			for strings.HasSuffix(pat, ")") && strings.Count(pat, ")") > strings.Count(pat, "(") {
				pat = strings.TrimRight(strings.TrimSuffix(pat, ")"), "`,.;:")
			}
		}
		// A pattern inside a Markdown table escapes its |.
		pat = strings.ReplaceAll(pat, `\|`, "|")
		line := 1 + strings.Count(text[:m[2]], "\n")
		out = append(out, docPattern{file: file, line: line, flag: text[m[2]:m[3]], pattern: pat})
	}
	return out
}

// checkDocPattern returns a message for each alternative of p's
// top-level name pattern that matches no function in names[p.flag's
// kind], or for a pattern that does not compile.
func checkDocPattern(p docPattern, names map[string][]string) []string {
	if noTestPatterns[p.pattern] {
		return nil
	}
	kind, what := "run", "test"
	if p.flag == "bench" {
		kind, what = "bench", "benchmark"
	}
	where := fmt.Sprintf("%s:%d: -%s '%s'", p.file, p.line, p.flag, p.pattern)
	top := splitTopLevel(p.pattern, '/')[0] // the top-level name, as go test splits it
	if top == "" {
		return nil
	}
	var msgs []string
	for _, alt := range expandAlternatives(top) {
		re, err := regexp.Compile(alt)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		found := false
		for _, n := range names[kind] {
			if re.MatchString(n) {
				found = true
				break
			}
		}
		if !found {
			msgs = append(msgs, fmt.Sprintf("%s: no %s matches %s", where, what, alt))
		}
	}
	return msgs
}

// expandAlternatives turns a pattern into its alternatives: the
// top-level `|` branches, and each group `(a|b)` (or `(a)?`) without
// nested groups replaced by each of its choices, so that every name a
// pattern lists is checked on its own. At most 256 alternatives.
func expandAlternatives(s string) []string {
	var out []string
	for _, branch := range splitTopLevel(s, '|') {
		out = append(out, expandGroups(branch)...)
		if len(out) > 256 {
			return out[:256]
		}
	}
	return out
}

// innerGroup matches a group with no group inside it, and an optional ?.
var innerGroup = regexp.MustCompile(`\(([^()]*)\)(\?)?`)

// expandGroups replaces the first group of s without nested groups by
// each of its choices (and the empty string if it is optional),
// recursively.
func expandGroups(s string) []string {
	loc := innerGroup.FindStringSubmatchIndex(s)
	if loc == nil {
		return []string{s}
	}
	choices := splitTopLevel(s[loc[2]:loc[3]], '|')
	if loc[4] >= 0 {
		choices = append(choices, "")
	}
	var out []string
	for _, c := range choices {
		out = append(out, expandGroups(s[:loc[0]]+c+s[loc[1]:])...)
	}
	return out
}

// splitTopLevel splits s at sep outside brackets and parentheses (at '/'
// as go test splits a -run or -bench pattern into levels).
func splitTopLevel(s string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// repoTestFuncs returns the names of the repository's tests (Test, Fuzz
// and Example functions, under "run") and benchmarks (under "bench"),
// read from every _test.go file under root.
func repoTestFuncs(root string) (map[string][]string, error) {
	names := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			kind := "run"
			if strings.HasPrefix(m[1], "Benchmark") {
				kind = "bench"
			}
			names[kind] = append(names[kind], m[1])
		}
		return nil
	})
	return names, err
}
