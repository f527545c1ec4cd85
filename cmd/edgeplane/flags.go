package main

import (
	"errors"
	"flag"
	"io"
	"strings"
)

// parseFlags parses args into fs, then sets every flag not given on the
// command line from the environment variable EDGEPLANE_<NAME> (the flag's
// name in upper case, dashes as underscores). -h prints the usage to
// stdout and returns errHelp.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return errHelp{}
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{"unexpected arguments: " + strings.Join(fs.Args(), " ")}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var bad error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || bad != nil {
			return
		}
		env := "EDGEPLANE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				bad = usageError{env + ": " + err.Error()}
			}
		}
	})
	return bad
}
