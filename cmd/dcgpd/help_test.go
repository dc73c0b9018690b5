package main

import (
	"context"
	"strings"
	"testing"
)

// TestHelp: every -h/--help below answers with its usage and exit code 0:
// fit's -save-model shows its value as a string (a backquoted phrase in a
// flag's usage would be taken for the value's name), version says what
// it prints, snapshot inspect --help opens no file named --help, and
// backtest -h lists the decision mode and its flags (indented under it).
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"fit", "-h"}, "-save-model string", "-save-model fit"},
		{[]string{"version", "--help"}, "Prints the module version", ""},
		{[]string{"snapshot", "inspect", "--help"}, "usage: dcgpd snapshot inspect FILE", "--help: no such file"},
		{[]string{"snapshot", "--help"}, "usage: dcgpd snapshot inspect FILE", ""},
		// backtest -h shows the decision mode and its flags too.
		{[]string{"backtest", "-h"}, "\n  -decision\n", ""},
		{[]string{"backtest", "-h"}, "\n      -stations string\n", ""},
		{[]string{"backtest", "-h"}, "\n      -counts string\n", ""},
		{[]string{"backtest", "--decision", "-h"}, "\n  -counts string\n", ""},
	} {
		var out, errOut strings.Builder
		code := run(context.Background(), tc.args, &out, &errOut)
		got := errOut.String()
		if code != 0 || !strings.Contains(got, tc.want) || tc.not != "" && strings.Contains(got, tc.not) {
			t.Errorf("dcgpd %s: exit %d, stderr %q; want exit 0 and %q", strings.Join(tc.args, " "), code, got, tc.want)
		}
	}
}
