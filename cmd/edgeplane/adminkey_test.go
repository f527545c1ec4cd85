package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeStaleAPIKey: serve says where its admin key comes from, and
// warns when EDGEPLANE_API_KEY is set on a store in use that does not
// hold it (the variable only applies to an empty store), and only then:
// not on the first start, not when the variable is one of the store's
// keys, not without the variable. The warning's commands name the store.
func TestServeStaleAPIKey(t *testing.T) {
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	first, other := "epk_"+strings.Repeat("f", 40), "epk_"+strings.Repeat("o", 40)
	for _, step := range []struct {
		name    string
		env     string // EDGEPLANE_API_KEY
		say     string // in stdout
		warn    bool
		works   string // a key the API takes
		refused string // a key it refuses
	}{
		{"first start", first, "admin API key: from EDGEPLANE_API_KEY", false, first, other},
		{"the same key again", first, "EDGEPLANE_API_KEY is one of its keys", false, first, other},
		{"another key", other, "store in use", true, first, other},
		{"no key", "", "the admin's key is the one shown at the store's first start", false, first, other},
	} {
		t.Run(step.name, func(t *testing.T) {
			s := startServe(t, []string{"-store", spec}, map[string]string{"EDGEPLANE_API_KEY": step.env, "EDGEPLANE_RATE_LIMIT": "0"})
			defer s.stop()
			out := s.stdout.String()
			if !strings.Contains(out, step.say) {
				t.Errorf("stdout lacks %q: %s", step.say, out)
			}
			warned := strings.Contains(out, "warning: EDGEPLANE_API_KEY is ignored")
			if warned != step.warn {
				t.Errorf("warned: %v, want %v; stdout: %s", warned, step.warn, out)
			}
			if step.warn {
				for _, want := range []string{"gets 401", "edgeplane admin create-api-key -store " + spec + " -account ACCOUNT_ID -owner USER_ID",
					"edgeplane admin create-user -store " + spec, "another -store"} {
					if !strings.Contains(out, want) {
						t.Errorf("the warning lacks %q: %s", want, out)
					}
				}
			}
			for key, code := range map[string]int{step.works: 200, step.refused: 401} {
				auth := http.Header{"Authorization": {"Bearer " + key}, "Service-Version": {"2"}}
				if got, _ := get(t, "http://"+s.addr+"/credentials", auth); got != code {
					t.Errorf("GET /credentials with %s: %d, want %d", key[:8], got, code)
				}
			}
		})
	}
	// A memory: store is empty at every start: the variable is its key.
	s := startServe(t, []string{"-store", "memory:"}, map[string]string{"EDGEPLANE_API_KEY": other})
	if out := s.stdout.String(); strings.Contains(out, "warning") || !strings.Contains(out, "admin API key: from EDGEPLANE_API_KEY") {
		t.Errorf("memory: stdout: %s", out)
	}
}

func TestShellQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"sqlite:/tmp/a/edgeplane.db", "sqlite:/tmp/a/edgeplane.db"},
		{"127.0.0.1:4443", "127.0.0.1:4443"},
		{"/home/me/My Files/ca.pem", "'/home/me/My Files/ca.pem'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
		{"", "''"},
	} {
		if got := shellQuote(c.in); got != c.want {
			t.Errorf("shellQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
