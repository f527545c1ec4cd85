package ratelimit_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ratelimit"
)

func validConfig() ratelimit.Config {
	return ratelimit.Config{
		Name:      "per-client",
		Algorithm: "sliding_window",
		Capacity:  100,
		Rate:      "60s",
		BucketKey: []string{"conn.client_ip"},
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*ratelimit.Config)
		fields []string
	}{
		{"valid", func(*ratelimit.Config) {}, nil},
		{"valid at every maximum", func(c *ratelimit.Config) {
			c.Name = strings.Repeat("é", 1023)
			c.Capacity = ratelimit.MaxCapacity
			c.Rate = "24h"
			c.BucketKey = []string{"req.host", "conn.client_ip", "req.headers['x-api-key']", `req.headers["x"]`,
				"getReqHeader('X-Api-Key')", `getReqHeader("Authorization")`, "req.host", "req.host", "req.host", "req.host"}
		}, nil},
		{"valid composite rate", func(c *ratelimit.Config) { c.Rate = "1h30m" }, nil},
		{"empty config", func(c *ratelimit.Config) { *c = ratelimit.Config{} },
			[]string{"name", "algorithm", "capacity", "rate", "bucket_key"}},
		{"name of 1024 characters", func(c *ratelimit.Config) { c.Name = strings.Repeat("é", 1024) }, []string{"name"}},
		{"name not utf-8", func(c *ratelimit.Config) { c.Name = "\xff" }, []string{"name"}},
		{"unknown algorithm", func(c *ratelimit.Config) { c.Algorithm = "token_bucket" }, []string{"algorithm"}},
		{"long algorithm is quoted short", func(c *ratelimit.Config) { c.Algorithm = strings.Repeat("é", 500) }, []string{"algorithm"}},
		{"algorithm case matters", func(c *ratelimit.Config) { c.Algorithm = "Sliding_Window" }, []string{"algorithm"}},
		{"capacity zero", func(c *ratelimit.Config) { c.Capacity = 0 }, []string{"capacity"}},
		{"capacity over max", func(c *ratelimit.Config) { c.Capacity = ratelimit.MaxCapacity + 1 }, []string{"capacity"}},
		{"rate not a duration", func(c *ratelimit.Config) { c.Rate = "1 minute" }, []string{"rate"}},
		{"rate too short", func(c *ratelimit.Config) { c.Rate = "50s" }, []string{"rate"}},
		{"rate not a multiple of 10s", func(c *ratelimit.Config) { c.Rate = "65s" }, []string{"rate"}},
		{"no bucket key", func(c *ratelimit.Config) { c.BucketKey = nil }, []string{"bucket_key"}},
		{"eleven bucket key elements", func(c *ratelimit.Config) { c.BucketKey = slices.Repeat([]string{"req.host"}, 11) }, []string{"bucket_key"}},
		{"bad elements named by index", func(c *ratelimit.Config) {
			c.BucketKey = []string{"req.host", "req.path", "conn.client_ip", "getReqHeader('bad header')"}
		}, []string{"bucket_key[1]", "bucket_key[3]"}},
		{"too many and bad", func(c *ratelimit.Config) {
			c.BucketKey = append(slices.Repeat([]string{"req.host"}, 10), "nope")
		}, []string{"bucket_key", "bucket_key[10]"}},
		{"everything wrong", func(c *ratelimit.Config) {
			*c = ratelimit.Config{Name: strings.Repeat("x", 5000), Algorithm: "fixed", Capacity: 3e9, Rate: "25h", BucketKey: []string{""}}
		}, []string{"name", "algorithm", "capacity", "rate", "bucket_key[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.edit(&c)
			err := c.Validate()
			checkViolations(t, err, tt.fields)
			if err != nil && len(err.Error()) > 2000 {
				t.Errorf("message of %d bytes echoes too much input", len(err.Error()))
			}
		})
	}
}

func TestConfigOptions(t *testing.T) {
	c := validConfig()
	c.Rate = "1h30m"
	c.BucketKey = []string{"req.host", "getReqHeader('X-Api-Key')"}
	o, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	if want := (ratelimit.Options{Capacity: 100, Window: 90 * time.Minute}); o != want {
		t.Fatalf("Options() = %+v, want %+v", o, want)
	}
	els, err := c.KeyElements()
	if err != nil {
		t.Fatal(err)
	}
	want := []ratelimit.KeyElement{{Kind: ratelimit.KeyHost}, {Kind: ratelimit.KeyHeader, Header: "x-api-key"}}
	if !slices.Equal(els, want) {
		t.Fatalf("KeyElements() = %v, want %v", els, want)
	}
	c.Capacity = 0
	if _, err := c.Options(); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Fatalf("Options() of an invalid config: %v", err)
	}
	if _, err := c.KeyElements(); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Fatalf("KeyElements() of an invalid config: %v", err)
	}
}

func TestConfigJSON(t *testing.T) {
	var c ratelimit.Config
	in := `{"name":"n","algorithm":"sliding_window","capacity":5,"rate":"10m","bucket_key":["req.host"]}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(c)
	if string(out) != in {
		t.Fatalf("round trip: %s, want %s", out, in)
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration // 0: invalid
	}{
		{"60s", time.Minute},
		{"90s", 90 * time.Second},
		{"10m", 10 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"24h", 24 * time.Hour},
		{"1.5m", 90 * time.Second},
		{"60000ms", time.Minute},
		{"+70s", 70 * time.Second},
		{"", 0},
		{"60", 0},
		{"59s", 0},
		{"50s", 0},
		{"-60s", 0},
		{"24h10s", 0},
		{"25h", 0},
		{"61s", 0},
		{"60.5s", 0},
		{"60s ", 0},
		{" 60s", 0},
		{"1d", 0},
		{"9999999999999999999h", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ratelimit.ParseRate(tt.in)
			if tt.want == 0 {
				if err == nil || apierr.CodeOf(err) != apierr.InvalidArgument {
					t.Fatalf("ParseRate(%q) = %v, %v; want an invalid-argument error", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseRate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseKeyElement(t *testing.T) {
	tests := []struct {
		in   string
		want ratelimit.KeyElement // zero: invalid
	}{
		{"req.host", ratelimit.KeyElement{Kind: ratelimit.KeyHost}},
		{"conn.client_ip", ratelimit.KeyElement{Kind: ratelimit.KeyClientIP}},
		{"conn.client_ip_prefix", ratelimit.KeyElement{Kind: ratelimit.KeyClientIPPrefix}},
		{"conn.client_ip_prefix ", ratelimit.KeyElement{}},
		{"conn.client_ip_prefix(64)", ratelimit.KeyElement{}},
		{"req.headers['x-api-key']", ratelimit.KeyElement{Kind: ratelimit.KeyHeader, Header: "x-api-key"}},
		{`req.headers["x-api-key"]`, ratelimit.KeyElement{Kind: ratelimit.KeyHeader, Header: "x-api-key"}},
		{"req.headers['X-Api-Key']", ratelimit.KeyElement{Kind: ratelimit.KeyHeader, Header: "x-api-key"}},
		{"getReqHeader('X-Api-Key')", ratelimit.KeyElement{Kind: ratelimit.KeyHeader, Header: "x-api-key"}},
		{`getReqHeader("Authorization")`, ratelimit.KeyElement{Kind: ratelimit.KeyHeader, Header: "authorization"}},
		{"getReqHeader('a!#$%&*+-.^_`|~9')", ratelimit.KeyElement{Kind: ratelimit.KeyHeader, Header: "a!#$%&*+-.^_`|~9"}},
		{`getReqHeader("it's")`, ratelimit.KeyElement{Kind: ratelimit.KeyHeader, Header: "it's"}},
		{"", ratelimit.KeyElement{}},
		{"req.path", ratelimit.KeyElement{}},
		{"REQ.HOST", ratelimit.KeyElement{}},
		{" req.host", ratelimit.KeyElement{}},
		{"req.headers[x-api-key]", ratelimit.KeyElement{}},
		{"req.headers['x-api-key\"]", ratelimit.KeyElement{}},
		{"req.headers['']", ratelimit.KeyElement{}},
		{"req.headers[' x']", ratelimit.KeyElement{}},
		{"req.headers['a:b']", ratelimit.KeyElement{}},
		{"req.headers['it's']", ratelimit.KeyElement{}},
		{"req.headers['x']x", ratelimit.KeyElement{}},
		{"req.headers[']", ratelimit.KeyElement{}},
		{"getReqHeader('x'", ratelimit.KeyElement{}},
		{"getReqHeader(x)", ratelimit.KeyElement{}},
		{"getreqheader('x')", ratelimit.KeyElement{}},
		{"getReqHeader('é')", ratelimit.KeyElement{}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ratelimit.ParseKeyElement(tt.in)
			if tt.want == (ratelimit.KeyElement{}) {
				if err == nil || apierr.CodeOf(err) != apierr.InvalidArgument {
					t.Fatalf("ParseKeyElement(%q) = %v, %v; want an invalid-argument error", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseKeyElement(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestKeyElementString(t *testing.T) {
	tests := []struct {
		el   ratelimit.KeyElement
		want string
		kind string
	}{
		{ratelimit.KeyElement{Kind: ratelimit.KeyHost}, "req.host", "host"},
		{ratelimit.KeyElement{Kind: ratelimit.KeyClientIP}, "conn.client_ip", "client_ip"},
		{ratelimit.KeyElement{Kind: ratelimit.KeyClientIPPrefix}, "conn.client_ip_prefix", "client_ip_prefix"},
		{ratelimit.KeyElement{Kind: ratelimit.KeyHeader, Header: "x-a"}, "req.headers['x-a']", "header"},
		{ratelimit.KeyElement{}, "invalid", "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.el.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
			if got := tt.el.Kind.String(); got != tt.kind {
				t.Fatalf("Kind.String() = %q, want %q", got, tt.kind)
			}
		})
	}
}

// decodeKey splits a key built with AppendKeyPart back into its parts.
func decodeKey(key []byte) ([]string, bool) {
	var parts []string
	for len(key) > 0 {
		n, w := binary.Uvarint(key)
		if w <= 0 || n > uint64(len(key)-w) {
			return nil, false
		}
		parts = append(parts, string(key[w:w+int(n)]))
		key = key[w+int(n):]
	}
	return parts, true
}

func TestAppendKeyPart(t *testing.T) {
	tests := []struct {
		name string
		a, b []string // distinct tuples
	}{
		{"boundary moves", []string{"a", "bc"}, []string{"ab", "c"}},
		{"empty part is a part", []string{""}, nil},
		{"two empties and one", []string{"", ""}, []string{""}},
		{"length byte lookalike", []string{"\x01a"}, []string{"a"}},
		{"separator lookalike", []string{"a|b"}, []string{"a", "b"}},
		{"long part", []string{strings.Repeat("x", 300)}, []string{strings.Repeat("x", 299), ""}},
	}
	build := func(parts []string) []byte {
		var k []byte
		for _, p := range parts {
			k = ratelimit.AppendKeyPart(k, p)
		}
		return k
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, kb := build(tt.a), build(tt.b)
			if string(ka) == string(kb) {
				t.Fatalf("%q and %q collide as %q", tt.a, tt.b, ka)
			}
			for _, parts := range [][]string{tt.a, tt.b} {
				got, ok := decodeKey(build(parts))
				if !ok || !slices.Equal(got, parts) && len(parts)+len(got) > 0 {
					t.Fatalf("%q decodes to %q, %v", parts, got, ok)
				}
			}
		})
	}
}

// FuzzAppendKeyPart checks that keys decode to exactly their parts, so
// different tuples never share a key.
func FuzzAppendKeyPart(f *testing.F) {
	f.Add("a", "bc", "")
	f.Add("", "", "\x00")
	f.Add("\x02ab", "x", strings.Repeat("y", 200))
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var k []byte
		for _, p := range []string{a, b, c} {
			k = ratelimit.AppendKeyPart(k, p)
		}
		got, ok := decodeKey(k)
		if !ok || !slices.Equal(got, []string{a, b, c}) {
			t.Fatalf("(%q, %q, %q) decodes to %q, %v", a, b, c, got, ok)
		}
	})
}

// FuzzParseRate checks that every accepted rate is in range and a whole
// multiple of 10s, that it round-trips through Duration.String, and that
// every rejection is an invalid-argument error.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"60s", "90s", "10m", "1h30m", "24h", "1.5m", "60000ms", "", "59s", "-60s", "25h", "1d", "1h-1m", "0x10s", "1e2s", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ratelimit.ParseRate(s)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument || len(apierr.ViolationsOf(err)) != 1 {
				t.Fatalf("ParseRate(%q): error %v is not one invalid-argument violation", s, err)
			}
			return
		}
		if d < ratelimit.MinRate || d > ratelimit.MaxRate || d%(10*time.Second) != 0 {
			t.Fatalf("ParseRate(%q) = %v: out of range", s, d)
		}
		if again, err := ratelimit.ParseRate(d.String()); err != nil || again != d {
			t.Fatalf("ParseRate(%q) = %v, but ParseRate(%q) = %v, %v", s, d, d.String(), again, err)
		}
	})
}

// FuzzParseKeyElement checks that accepted elements have a lower-case
// token header exactly when they are headers, and round-trip through
// String.
func FuzzParseKeyElement(f *testing.F) {
	for _, s := range []string{"req.host", "conn.client_ip", "conn.client_ip_prefix", "req.headers['x-api-key']", `req.headers["X"]`,
		"getReqHeader('X-Api-Key')", `getReqHeader("a")`, "", "req.headers['']", "getReqHeader('a b')", "req.headers['it's']"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		el, err := ratelimit.ParseKeyElement(s)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument || len(apierr.ViolationsOf(err)) != 1 {
				t.Fatalf("ParseKeyElement(%q): error %v is not one invalid-argument violation", s, err)
			}
			return
		}
		switch el.Kind {
		case ratelimit.KeyHost, ratelimit.KeyClientIP, ratelimit.KeyClientIPPrefix:
			if el.Header != "" {
				t.Fatalf("ParseKeyElement(%q) = %+v: header set", s, el)
			}
		case ratelimit.KeyHeader:
			if el.Header == "" || el.Header != strings.ToLower(el.Header) || strings.ContainsAny(el.Header, " \t\"():;[]{}\\/,<>=?@") {
				t.Fatalf("ParseKeyElement(%q) = %+v: header not a lower-case token", s, el)
			}
		default:
			t.Fatalf("ParseKeyElement(%q) = %+v: bad kind", s, el)
		}
		if again, err := ratelimit.ParseKeyElement(el.String()); err != nil || again != el {
			t.Fatalf("ParseKeyElement(%q) = %+v, but its String %q parses to %+v, %v", s, el, el.String(), again, err)
		}
	})
}

// FuzzConfig decodes arbitrary JSON into a Config and checks that Validate
// either accepts it, and then Options and New accept it too, or returns an
// invalid-argument error whose violations all name known fields.
func FuzzConfig(f *testing.F) {
	f.Add(`{"name":"n","algorithm":"sliding_window","capacity":5,"rate":"10m","bucket_key":["req.host"]}`)
	f.Add(`{"name":"","algorithm":"","capacity":0,"rate":"","bucket_key":[]}`)
	f.Add(`{"name":"x","algorithm":"sliding_window","capacity":2000000000,"rate":"24h","bucket_key":["getReqHeader('X')","conn.client_ip"]}`)
	f.Add(`{"capacity":18446744073709551615,"rate":"1h30m","bucket_key":["req.headers['a']","b","c","d","e","f","g","h","i","j","k"]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		var c ratelimit.Config
		if json.Unmarshal([]byte(in), &c) != nil {
			return
		}
		err := c.Validate()
		if err == nil {
			o, err := c.Options()
			if err != nil {
				t.Fatalf("valid config %+v: Options: %v", c, err)
			}
			if _, err := ratelimit.New(o); err != nil {
				t.Fatalf("valid config %+v: New: %v", c, err)
			}
			if c.Name == "" || utf8.RuneCountInString(c.Name) >= 1024 || len(c.BucketKey) == 0 || len(c.BucketKey) > 10 {
				t.Fatalf("config %+v accepted", c)
			}
			return
		}
		var e *apierr.Error
		if !errors.As(err, &e) || e.Code != apierr.InvalidArgument || len(e.Violations) == 0 {
			t.Fatalf("Validate: %v is not an invalid-argument error with violations", err)
		}
		for _, v := range e.Violations {
			switch {
			case v.Field == "name", v.Field == "algorithm", v.Field == "capacity", v.Field == "rate", v.Field == "bucket_key":
			case strings.HasPrefix(v.Field, "bucket_key[") && strings.HasSuffix(v.Field, "]"):
			default:
				t.Fatalf("violation of unknown field %q", v.Field)
			}
			if v.Reason == "" {
				t.Fatalf("violation of %q without a reason", v.Field)
			}
		}
	})
}

func TestAppendPrefixKeyPart(t *testing.T) {
	tests := []struct {
		name   string
		ip     string // "" for the zero Addr
		v4, v6 int
		want   string
	}{
		{"IPv4 default keeps the address", "198.51.100.10", 32, 64, "198.51.100.10/32"},
		{"IPv4 /24", "198.51.100.10", 24, 64, "198.51.100.0/24"},
		{"IPv6 /64", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", 32, 64, "2001:db8:1:2::/64"},
		{"IPv6 /48", "2001:db8:1:2::1", 32, 48, "2001:db8:1::/48"},
		{"IPv6 /128, longest text", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 32, 128, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"},
		{"IPv4-mapped counts as IPv4", "::ffff:198.51.100.10", 24, 64, "198.51.100.0/24"},
		{"zone dropped", "fe80::1%eth0", 32, 64, "fe80::/64"},
		{"invalid address", "", 32, 64, ""},
		{"length out of range", "198.51.100.10", 33, 64, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ip netip.Addr
			if tt.ip != "" {
				ip = netip.MustParseAddr(tt.ip)
			}
			got := ratelimit.AppendPrefixKeyPart([]byte("x"), ip, tt.v4, tt.v6)
			if want := ratelimit.AppendKeyPart([]byte("x"), tt.want); string(got) != string(want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
	buf := make([]byte, 0, 64)
	ip := netip.MustParseAddr("2001:db8:1:2:aaaa:bbbb:cccc:dddd")
	if n := testing.AllocsPerRun(100, func() { buf = ratelimit.AppendPrefixKeyPart(buf[:0], ip, 32, 64) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzAppendPrefixKeyPart checks that the part is AppendKeyPart of the
// masked prefix's text for any address and lengths.
func FuzzAppendPrefixKeyPart(f *testing.F) {
	f.Add([]byte{198, 51, 100, 10}, 24, 64)
	f.Add([]byte{0x20, 1, 0xd, 0xb8, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1}, 32, 56)
	f.Fuzz(func(t *testing.T, raw []byte, v4, v6 int) {
		ip, _ := netip.AddrFromSlice(raw)
		got := ratelimit.AppendPrefixKeyPart(nil, ip, v4, v6)
		want := ""
		if ip.IsValid() {
			u := ip.Unmap()
			bits := v6
			if u.Is4() {
				bits = v4
			}
			if p, err := u.Prefix(bits); err == nil {
				want = p.String()
			}
		}
		if string(got) != string(ratelimit.AppendKeyPart(nil, want)) {
			t.Fatalf("AppendPrefixKeyPart(%v, %d, %d) = %q, want the part of %q", ip, v4, v6, got, want)
		}
	})
}

func TestValidateKeys(t *testing.T) {
	c := ratelimit.Config{Name: "n", Algorithm: "sliding_window", Capacity: 1, Rate: "60s",
		BucketKey: []string{"req.host", "custom(1)", "bad"}}
	var seen []string
	err := c.ValidateKeys(func(s string) error {
		seen = append(seen, s)
		if s == "bad" {
			return apierr.Invalidf("", "is bad")
		}
		return nil
	})
	vs := apierr.ViolationsOf(err)
	if len(seen) != 3 || len(vs) != 1 || vs[0].Field != "bucket_key[2]" || vs[0].Reason != "is bad" {
		t.Fatalf("seen %q, violations %v", seen, vs)
	}
	c.BucketKey = make([]string, ratelimit.MaxBucketKeyElements+1)
	if err := c.ValidateKeys(func(string) error { return nil }); len(apierr.ViolationsOf(err)) != 1 || apierr.ViolationsOf(err)[0].Field != "bucket_key" {
		t.Fatalf("11 elements: %v", err)
	}
}
