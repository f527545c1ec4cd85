package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
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
		return usageError{flagValueError(fs, err)}
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
		env := envName(f.Name)
		if v := getenv(env); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				bad = usageError{envError(env, v, f, err)}
			}
		}
	})
	return bad
}

// envError says why the value v of the variable env could not set the
// flag f: the variable, the value, the flag and the forms it accepts.
func envError(env, v string, f *flag.Flag, err error) string {
	return fmt.Sprintf("%s=%q (the flag -%s): %s", env, v, f.Name, valueForms(f, err))
}

// valueForms says which values f accepts; err is f's own complaint,
// said when f is of a kind of its own.
func valueForms(f *flag.Flag, err error) string {
	var forms string
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool:
			forms = "want true or false (or 1, 0, t, f)"
		case int, int64, uint, uint64:
			forms = "want a whole number, such as " + cmpDefault(f.DefValue, "10")
		case float64:
			forms = "want a number, such as 1.5"
		case time.Duration:
			forms = "want a duration: a number and a unit (ms, s, m, h), such as " + cmpDefault(f.DefValue, "30s") + " or 1h30m"
		}
	}
	if forms == "" { // a flag of its own kind: its error says what it wants
		forms = err.Error()
	}
	return forms
}

// badValue matches the flag package's error for a value its flag could
// not parse.
var badValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): parse error$`)

// flagValueError returns err's message, with the forms the flag
// accepts in place of "parse error".
func flagValueError(fs *flag.FlagSet, err error) string {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil || fs.Lookup(m[2]) == nil {
		return err.Error()
	}
	f := fs.Lookup(m[2])
	return fmt.Sprintf("-%s %q: %s", f.Name, m[1], valueForms(f, err))
}

// cmpDefault returns def unless it is a zero value, else example.
func cmpDefault(def, example string) string {
	switch def {
	case "", "0", "0s":
		return example
	}
	return def
}
