package credentials_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/credentials"
)

// jsonStrings are strings whose encodings differ between encoders: HTML
// escapes, line separators, non-ASCII, invalid UTF-8, control characters.
var jsonStrings = []string{"", "cr_0EReVdLuOSi6MMSeu91MCUT4Anx", "<&>", "a\u2028b\u2029", "é", "\xff\xfe", "\"\\\n\t\x00\x7f", "<&>\u2028é\xc3("}

// jsonTimes are CreatedAt values: zero, with a zone, with nanoseconds, a
// monotonic reading, and the ones encoding/json refuses.
var jsonTimes = []time.Time{
	{},
	time.Date(2026, 11, 24, 0, 56, 43, 0, time.UTC),
	time.Date(2026, 11, 24, 0, 56, 43, 120, time.FixedZone("", -(3*3600+30*60))),
	time.Now(),
	time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
}

// checkAppendJSON checks c.AppendJSON against encoding/json.Marshal(c):
// the same bytes after what dst held, or both failing with dst unchanged.
func checkAppendJSON(t *testing.T, c *credentials.Credential) {
	t.Helper()
	want, err := json.Marshal(c)
	got, ok := c.AppendJSON([]byte("x"))
	switch {
	case err != nil && (ok || string(got) != "x"):
		t.Errorf("AppendJSON(%#v) = %s, %v; encoding/json fails (%v)", c, got, ok, err)
	case err == nil && (!ok || !bytes.Equal(got, append([]byte("x"), want...))):
		t.Errorf("AppendJSON(%#v) = %s, %v; encoding/json writes x%s", c, got, ok, want)
	}
}

func TestCredentialAppendJSON(t *testing.T) {
	tok := "tok<&>\u2028"
	full := credentials.Credential{ID: "cr_1", URI: "https://api.example.com/credentials/cr_1?a=1&b=<2>",
		CreatedAt: jsonTimes[2], Description: "é\u2028", Metadata: `{"k":"<v>"}`, Token: &tok,
		ACL: []string{"bind:*.example.com", "bind:a=<b>"}, OwnerID: "usr_1"}
	for name, c := range map[string]*credentials.Credential{
		"nil":           nil,
		"zero":          {},
		"full":          &full,
		"empty acl":     {ACL: []string{}},
		"one rule":      {ACL: []string{"*"}},
		"empty token":   {Token: new(string)},
		"year 10000":    {CreatedAt: jsonTimes[4], ACL: []string{"*"}},
		"zone 24 hours": {CreatedAt: jsonTimes[5]},
	} {
		t.Run(name, func(t *testing.T) {
			checkAppendJSON(t, c)
		})
	}
}

// TestCredentialAppendJSONRandom compares AppendJSON with encoding/json on
// random credentials made of jsonStrings and jsonTimes, nil and non-nil
// tokens, and nil, empty and longer ACLs.
func TestCredentialAppendJSONRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		s := jsonStrings[r.IntN(len(jsonStrings))]
		if r.IntN(2) == 0 {
			s += jsonStrings[r.IntN(len(jsonStrings))]
		}
		return s
	}
	for range 2000 {
		c := &credentials.Credential{ID: str(), URI: str(), CreatedAt: jsonTimes[r.IntN(len(jsonTimes))],
			Description: str(), Metadata: str(), OwnerID: str()}
		if r.IntN(2) == 0 {
			tok := str()
			c.Token = &tok
		}
		if n := r.IntN(4) - 1; n >= 0 { // -1: a nil ACL
			c.ACL = make([]string, n)
			for i := range c.ACL {
				c.ACL[i] = str()
			}
		}
		checkAppendJSON(t, c)
	}
}

// FuzzCredentialAppendJSON compares AppendJSON with encoding/json on
// credentials made of fuzzed strings and times.
func FuzzCredentialAppendJSON(f *testing.F) {
	f.Add("cr_1", "<&>\u2028é", "\xff", "bind:*.example.com", int64(1795568203), int64(5), 0, true, 2)
	f.Add("", "", "", "", int64(0), int64(0), 3600, false, 0)
	f.Add("", "", "", "", int64(253402300800), int64(0), 0, false, -1)
	f.Fuzz(func(t *testing.T, id, desc, meta, rule string, sec, nsec int64, offset int, token bool, rules int) {
		c := &credentials.Credential{ID: id, URI: "/credentials/" + id, CreatedAt: time.Unix(sec, nsec).In(time.FixedZone("", offset)),
			Description: desc, Metadata: meta, OwnerID: rule + id}
		if token {
			c.Token = &meta
		}
		if rules >= 0 {
			c.ACL = make([]string, rules%4)
			for i := range c.ACL {
				c.ACL[i] = rule
			}
		}
		checkAppendJSON(t, c)
	})
}

func BenchmarkCredentialJSON(b *testing.B) {
	tok := "tk_2RUDQvRrF4a4BcwNVXwBX9u0rFL6aWZKkOdEmZVkPxwZjxL"
	c := &credentials.Credential{ID: "cr_0EReVdLuOSi6MMSeu91MCUT4Anx", URI: "https://api.example.com/credentials/cr_0EReVdLuOSi6MMSeu91MCUT4Anx",
		CreatedAt: time.Date(2026, 11, 24, 0, 56, 43, 0, time.UTC), Description: "load", Metadata: "patched", Token: &tok,
		ACL: []string{"bind:*.example.com"}, OwnerID: "usr_0EReVdL2T2cUX9nyK3mkUB5X59l"}
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf, _ = c.AppendJSON(buf[:0])
		}
	})
	b.Run("AppendJSON-nil", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := c.AppendJSON(nil); !ok {
				b.Fatal("AppendJSON failed")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
