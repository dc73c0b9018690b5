package errs

import (
	"fmt"
	"strings"
)

// packages are the prefixes dcgpd's packages put on their errors.
var packages = []string{"kernel: ", "filter: ", "diffusion: ", "cvi: ", "synth: "}

// Within returns err with context for package pkg: its message reads
// "pkg: context: message", message being err's without a leading package
// prefix; an empty context gives "pkg: message". A nil err gives nil.
func Within(pkg string, err error, context string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, p := range packages {
		if strings.HasPrefix(msg, p) {
			msg = msg[len(p):]
			break
		}
	}
	if context != "" {
		msg = context + ": " + msg
	}
	return &wrapped{msg: pkg + ": " + msg, err: err}
}

// Withinf is Within with a formatted context.
func Withinf(pkg string, err error, format string, args ...any) error {
	return Within(pkg, err, fmt.Sprintf(format, args...))
}

// wrapped is an error with context added by Within.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
