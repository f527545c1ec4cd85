package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// commandHelp is what a command's -h prints. Every command and
// subcommand prints its help through write, so that all read alike:
//
//	usage: edgeplane COMMAND ...
//
//	One line: what the command does.
//
//	Further paragraphs, when there is more to say.
//
//	Commands:                  (a command that has subcommands)
//	  NAME  what it does
//
//	A group of flags:          (one heading per purpose)
//	  -flag TYPE               what it sets (default ...)
//
//	Environment:
//	  EDGEPLANE_...            the variables the command reads
//
//	Example:
//	  edgeplane COMMAND ...
type commandHelp struct {
	usage    string      // the command line's form, after "usage: "
	summary  string      // one line
	about    string      // further paragraphs ("" for none), blank-line separated
	commands [][2]string // subcommands and what each does
	groups   []flagGroup
	// flagEnv, when not nil, is the flag set whose every flag is also
	// read from EDGEPLANE_<FLAG> (see parseFlags).
	flagEnv *flag.FlagSet
	env     []envVar // the variables read besides flagEnv's
	example string   // command lines, one a line
}

// flagGroup is a heading of a command's help and the flags under it.
type flagGroup struct {
	title string
	fs    *flag.FlagSet
	names []string // in the order shown; nil: every flag of fs
}

// envVar is an environment variable a command reads.
type envVar struct{ name, about string }

// helpWidth is the width help text is wrapped to.
const helpWidth = 80

// helpFlagColumn is where a flag's description starts when its name
// leaves room.
const helpFlagColumn = 26

// write prints h in the common format.
func (h *commandHelp) write(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", h.usage, h.summary)
	if h.about != "" {
		b.WriteString("\n")
		for i, p := range strings.Split(strings.TrimSpace(h.about), "\n\n") {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(wrap(strings.Join(strings.Fields(p), " "), "", "", helpWidth))
		}
	}
	if len(h.commands) > 0 {
		b.WriteString("\nCommands:\n")
		for _, c := range h.commands {
			writeItem(&b, c[0], c[1])
		}
	}
	groups := h.groups
	if rest := h.ungrouped(); len(rest) > 0 {
		groups = append(groups, flagGroup{title: "Other flags", fs: h.flagEnv, names: rest})
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		for _, f := range g.flags() {
			name, usage := flag.UnquoteUsage(f)
			item := "-" + f.Name
			if name != "" {
				item += " " + name
			}
			if d := defaultText(f, name); d != "" && !strings.Contains(usage, "(default") {
				usage += " (default " + d + ")"
			}
			writeItem(&b, item, usage)
		}
	}
	b.WriteString("\nEnvironment:\n")
	if h.flagEnv == nil && len(h.env) == 0 {
		b.WriteString("  none: this command reads no environment variable\n")
	}
	if h.flagEnv != nil {
		writeItem(&b, "EDGEPLANE_<FLAG>", h.flagEnvText())
	}
	for _, v := range h.env {
		writeItem(&b, v.name, v.about)
	}
	b.WriteString("\nExample:\n")
	for _, line := range strings.Split(strings.TrimSpace(h.example), "\n") {
		b.WriteString("  " + strings.TrimSpace(line) + "\n")
	}
	io.WriteString(w, b.String())
}

// flags returns g's flags in order.
func (g flagGroup) flags() []*flag.Flag {
	var out []*flag.Flag
	if g.names == nil {
		g.fs.VisitAll(func(f *flag.Flag) { out = append(out, f) })
		return out
	}
	for _, n := range g.names {
		f := g.fs.Lookup(n)
		if f == nil {
			panic("help: no flag -" + n + " in " + g.fs.Name()) // a heading names a flag that was renamed
		}
		out = append(out, f)
	}
	return out
}

// ungrouped returns the flags of h.flagEnv that no group shows.
func (h *commandHelp) ungrouped() []string {
	if h.flagEnv == nil {
		return nil
	}
	shown := map[string]bool{}
	for _, g := range h.groups {
		if g.fs != h.flagEnv {
			continue
		}
		for _, f := range g.flags() {
			shown[f.Name] = true
		}
	}
	var rest []string
	h.flagEnv.VisitAll(func(f *flag.Flag) {
		if !shown[f.Name] {
			rest = append(rest, f.Name)
		}
	})
	return rest
}

// flagEnvText says how h.flagEnv's flags are read from the environment,
// with the first two flags shown as examples.
func (h *commandHelp) flagEnvText() string {
	var ex []string
	for _, g := range h.groups {
		for _, f := range g.flags() {
			if g.fs == h.flagEnv && len(ex) < 2 {
				ex = append(ex, "-"+f.Name+" as "+envName(f.Name))
			}
		}
	}
	return "each flag not given on the command line (" + strings.Join(ex, ", ") + "); a flag on the command line wins"
}

// envName is the environment variable of the flag named name.
func envName(name string) string {
	return "EDGEPLANE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// defaultText returns f's default as help shows it, "" for a zero one.
func defaultText(f *flag.Flag, typ string) string {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return ""
	}
	if typ == "string" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// writeItem writes an indented item and its description, wrapped: on
// the item's line when it leaves room, else on the next.
func writeItem(b *strings.Builder, item, about string) {
	head := "  " + item
	pad := strings.Repeat(" ", helpFlagColumn)
	if len(head) < helpFlagColumn-1 {
		b.WriteString(wrap(about, head+strings.Repeat(" ", helpFlagColumn-len(head)), pad, helpWidth))
		return
	}
	b.WriteString(head + "\n")
	b.WriteString(wrap(about, pad, pad, helpWidth))
}

// wrap fills text's words into lines of at most width columns, the
// first starting with first, the others with indent.
func wrap(text, first, indent string, width int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, w := range strings.Fields(text) {
		if !empty && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}
