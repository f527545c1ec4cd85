package main

import "strings"

// shellQuote returns s as one word of a POSIX shell command line: as it
// is when it holds only characters no shell treats specially, else in
// single quotes (each single quote inside closes them, is escaped and
// reopens them).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
