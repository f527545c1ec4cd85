package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"authtoken, shown once: ept_",
		"bind domain api.staging.example.com    true",
		"bind domain staging.example.com        false",
		"bind address 1.tcp.example.com:20003   false",
		"bind labels map[env:prod]",
		"invalid create: invalid request: acl[0]:",
		"the account has 1 credential(s); token in list responses: <nil>",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
