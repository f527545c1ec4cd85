package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionCmd prints what edgeplane was built from: the module version,
// the commit and the Go version.
func versionCmd(args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() { versionHelp().write(fs.Output()) }
	if err := parseFlags(fs, args, getenv, stdout); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	io.WriteString(stdout, versionText(bi))
	return nil
}

// versionHelp is version's -h.
func versionHelp() *commandHelp {
	return &commandHelp{
		usage:   "edgeplane version",
		summary: "Prints the module version edgeplane was built from, its commit and the Go version.",
		about: `The commit is the one go build recorded (with its time, and
"modified" when the working tree had changes); a build without version
control information (go run, go test, a module download) says so.`,
		example: "edgeplane version",
	}
}

// versionText is what version prints for the build bi (nil when the
// binary carries no build information):
//
//	edgeplane v1.2.0
//	commit 5f3c2a1e... (2025-01-02T03:04:05Z, modified)
//	go1.24.1 linux/amd64
func versionText(bi *debug.BuildInfo) string {
	version, commit := "(unknown)", ""
	var when, modified string
	if bi != nil {
		version = cmp.Or(bi.Main.Version, "(devel)")
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "modified"
				}
			}
		}
	}
	if commit == "" {
		commit = "unknown (this build recorded none)"
	} else if notes := strings.Join(nonEmpty(when, modified), ", "); notes != "" {
		commit += " (" + notes + ")"
	}
	return fmt.Sprintf("edgeplane %s\ncommit %s\n%s %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// nonEmpty returns the strings of ss that are not empty.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
