package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// What jwt-validation reads of JWTs and key sets besides the signature,
// which go-jose verifies: the key set document and the claims. The rules
// are those the action had with lestrrat-go/jwx, which the tests pin down.

// maxJWKSKeys is the most keys a key set may have.
const maxJWKSKeys = 1000

// jwkSet is a parsed JSON Web Key Set: the public keys (and symmetric
// keys) of its entries, in order.
type jwkSet struct{ keys []jose.JSONWebKey }

// lookup returns the first key with kid, or nil.
func (s *jwkSet) lookup(kid string) *jose.JSONWebKey {
	for i := range s.keys {
		if s.keys[i].KeyID == kid {
			return &s.keys[i]
		}
	}
	return nil
}

// parseJWKS parses a key set document, {"keys":[...]}, or a single key.
// An entry of a key type or curve go-jose does not know (an X25519
// encryption key, say) is skipped, as RFC 7517 section 5 advises; any
// other invalid entry makes the document invalid. A private key counts
// by its public half.
func parseJWKS(b []byte) (*jwkSet, error) {
	var doc struct {
		Keys *[]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	raw := []json.RawMessage{b}
	if doc.Keys != nil {
		raw = *doc.Keys
	}
	if len(raw) > maxJWKSKeys {
		return nil, fmt.Errorf("the key set has more than %d keys", maxJWKSKeys)
	}
	set := &jwkSet{keys: make([]jose.JSONWebKey, 0, len(raw))}
	for i, r := range raw {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(r); err != nil {
			if errors.Is(err, jose.ErrUnsupportedKeyType) {
				continue
			}
			return nil, fmt.Errorf("key #%d: %w", i, err)
		}
		if _, symmetric := k.Key.([]byte); !symmetric && !k.IsPublic() {
			k = k.Public()
		}
		set.keys = append(set.keys, k)
	}
	return set, nil
}

// jwtClaims are the claims of a verified token.
type jwtClaims struct {
	iss, sub      string
	aud           []string
	exp, nbf, iat time.Time
	has           struct{ exp, nbf, iat bool }
	all           map[string]any
}

// parseClaims decodes a JWT claims set. The registered claims must have
// their types: iss, sub and jti strings (null counts as ""), aud a string
// or a list of strings, exp, nbf and iat NumericDates (see numericDate).
func parseClaims(payload []byte) (*jwtClaims, error) {
	if p := bytes.TrimSpace(payload); len(p) == 0 || p[0] != '{' {
		return nil, errors.New("the claims are not a JSON object")
	}
	c := &jwtClaims{}
	if err := json.Unmarshal(payload, &c.all); err != nil {
		return nil, err
	}
	for name, v := range c.all {
		var err error
		switch name {
		case "iss":
			c.iss, err = stringClaim(v)
		case "sub":
			c.sub, err = stringClaim(v)
		case "jti":
			_, err = stringClaim(v)
		case "aud":
			c.aud, err = audienceClaim(v)
		case "exp":
			c.exp, err = numericDate(v)
			c.has.exp = true
		case "nbf":
			c.nbf, err = numericDate(v)
			c.has.nbf = true
		case "iat":
			c.iat, err = numericDate(v)
			c.has.iat = true
		}
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", name, err)
		}
	}
	return c, nil
}

var errClaimType = errors.New("wrong type")

func stringClaim(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", errClaimType
}

func audienceClaim(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, errClaimType
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, errClaimType
}

// numericDate reads an exp, nbf or iat claim: seconds since the epoch
// (the fraction ignored), as a number or a string of digits, or, from a
// non-conformant issuer, an RFC 3339 string. A negative number is
// refused.
func numericDate(v any) (time.Time, error) {
	var s string
	switch v := v.(type) {
	case float64:
		s = strconv.FormatFloat(v, 'f', 9, 64)
	case string:
		s = v
	default:
		return time.Time{}, errClaimType
	}
	if strings.Trim(s, "0123456789.") != "" {
		t, err := time.Parse(time.RFC3339, s)
		return t.UTC(), err
	}
	whole := s
	if i := strings.IndexByte(s, '.'); i > 0 {
		whole = s[:i]
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(n, 0).UTC(), nil
}

// Errors of validTimes.
var (
	errExpired     = errors.New("the token has expired")
	errNotYetValid = errors.New("the token is not valid yet")
	errIssuedLater = errors.New("the token was issued in the future")
)

// validTimes checks exp, nbf and iat against now, to the second, with
// jwtSkew of tolerance: the token is refused from exp+skew on, before
// nbf-skew, and when issued after now+skew.
func (c *jwtClaims) validTimes(now time.Time) error {
	now = now.Truncate(time.Second)
	switch {
	case c.has.iat && now.Before(c.iat.Truncate(time.Second).Add(-jwtSkew)):
		return errIssuedLater
	case c.has.exp && !now.Before(c.exp.Truncate(time.Second).Add(jwtSkew)):
		return errExpired
	case c.has.nbf && now.Before(c.nbf.Truncate(time.Second).Add(-jwtSkew)):
		return errNotYetValid
	}
	return nil
}

// get returns a claim as a var reads it: iss, sub and jti as strings,
// aud as a list of strings, exp, nbf and iat as times (which encode as
// RFC 3339 strings), others as decoded.
func (c *jwtClaims) get(name string) (any, bool) {
	v, ok := c.all[name]
	if !ok {
		return nil, false
	}
	switch name {
	case "iss":
		return c.iss, true
	case "sub":
		return c.sub, true
	case "jti":
		s, _ := stringClaim(v)
		return s, true
	case "aud":
		return c.aud, true
	case "exp":
		return c.exp, true
	case "nbf":
		return c.nbf, true
	case "iat":
		return c.iat, true
	}
	return v, true
}
