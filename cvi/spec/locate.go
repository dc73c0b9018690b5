package spec

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// keyError is an error about one place of a model configuration: line
// finds that place in the file's text (0: not found).
type keyError struct {
	err  error
	line func(b []byte) int
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// valuesError is err about product name's row of model.mean.values (""
// for the table itself), located at that row or, without one, at the
// table's header.
func valuesError(name string, err error) error {
	return &keyError{err: err, line: func(b []byte) int {
		if name != "" {
			q := regexp.QuoteMeta(name)
			re := regexp.MustCompile(`^\s*("` + q + `"|'` + q + `'|` + q + `)\s*=`)
			if l := lineMatching(b, re, "model.mean.values"); l > 0 {
				return l
			}
		}
		return KeyLine(b, "model.mean.values")
	}}
}

// lineMatching returns the first line matching re after the header of
// table (a dotted key), or 0.
func lineMatching(b []byte, re *regexp.Regexp, table string) int {
	header := regexp.MustCompile(`^\s*\[\s*` + regexp.QuoteMeta(table) + `\s*\]`)
	in := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 64*1024), len(b)+1)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case header.MatchString(text):
			in = true
		case in && strings.HasPrefix(strings.TrimSpace(text), "["):
			in = false
		case in && re.MatchString(text):
			return line
		}
	}
	return 0
}

// errorLine returns the line of b an error is about, or 0.
func errorLine(b []byte, err error) int {
	var ke *keyError
	if errors.As(err, &ke) {
		return ke.line(b)
	}
	return 0
}

// InFile returns err about the model configuration file path: "path: line
// N: err" when the line err is about can be found in the file, "path:
// err" otherwise. For the errors of Build and Learn with a loaded file
// (a product without a row of model.mean.values, say).
func InFile(path string, err error) error {
	if err == nil {
		return nil
	}
	if b, rerr := os.ReadFile(path); rerr == nil {
		if l := errorLine(b, err); l > 0 {
			return fmt.Errorf("%s: line %d: %w", path, l, err)
		}
	}
	return fmt.Errorf("%s: %w", path, err)
}
