package ratelimit

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
)

// Limits of the rate-limit action config (SPEC 2.8 and 8).
const (
	// AlgorithmSlidingWindow is the only allowed value of [Config.Algorithm].
	AlgorithmSlidingWindow = "sliding_window"
	// MaxCapacity is the largest allowed capacity.
	MaxCapacity = 2_000_000_000
	// MaxNameLength bounds [Config.Name]: a name has fewer than this many
	// characters (runes).
	MaxNameLength = 1024
	// MinRate is the shortest allowed rate.
	MinRate = 60 * time.Second
	// MaxRate is the longest allowed rate.
	MaxRate = 24 * time.Hour
	// RateStep is the granularity of rates: a rate is a whole multiple of
	// it.
	RateStep = 10 * time.Second
	// MaxBucketKeyElements bounds the number of bucket key elements.
	MaxBucketKeyElements = 10
)

// Config is the rate-limit traffic policy action config (SPEC 2.8).
// Every field is required; [Config.Validate] checks them all.
type Config struct {
	// Name names this rate limit configuration; 1 to 1023 characters.
	Name string `json:"name"`
	// Algorithm is the limiting algorithm; only "sliding_window".
	Algorithm string `json:"algorithm"`
	// Capacity is the number of requests a bucket admits within Rate;
	// 1 to [MaxCapacity].
	Capacity uint64 `json:"capacity"`
	// Rate is the window over which Capacity applies, in Go duration
	// syntax ("90s", "10m", "1h30m"); see [ParseRate].
	Rate string `json:"rate"`
	// BucketKey lists the 1 to 10 elements that form a request's bucket
	// key; see [ParseKeyElement].
	BucketKey []string `json:"bucket_key"`
}

// Validate returns nil when c is a valid config, else an
// [*apierr.Error] with code [apierr.InvalidArgument] listing every
// violation, each naming its field ("name", "algorithm", "capacity",
// "rate", "bucket_key", "bucket_key[3]").
func (c Config) Validate() error {
	return c.ValidateKeys(func(s string) error {
		_, err := ParseKeyElement(s)
		return err
	})
}

// ValidateKeys is [Config.Validate] with the caller's parser of bucket key
// elements, for a host that accepts more forms than [ParseKeyElement] (the
// policy package also accepts CEL expressions). parse is called once per
// element; the violations of its error are reported under
// "bucket_key[i]". Every other rule, the number of elements included, is
// Validate's.
func (c Config) ValidateKeys(parse func(element string) error) error {
	var vs apierr.Violations
	switch n := utf8.RuneCountInString(c.Name); {
	case n == 0:
		vs.Add("name", "is required: a name of 1 to %d characters", MaxNameLength-1)
	case !utf8.ValidString(c.Name):
		vs.Add("name", "must be valid UTF-8")
	case n >= MaxNameLength:
		vs.Add("name", "must be fewer than %d characters, got %d", MaxNameLength, n)
	}
	switch c.Algorithm {
	case AlgorithmSlidingWindow:
	case "":
		vs.Add("algorithm", "is required: the only allowed value is %q", AlgorithmSlidingWindow)
	default:
		vs.Add("algorithm", "must be %q, got %s", AlgorithmSlidingWindow, quoteShort(c.Algorithm))
	}
	if c.Capacity < 1 || c.Capacity > MaxCapacity {
		vs.Add("capacity", "must be between 1 and %d, got %d", MaxCapacity, c.Capacity)
	}
	if _, err := ParseRate(c.Rate); err != nil {
		vs.AddError("rate", err)
	}
	switch n := len(c.BucketKey); {
	case n == 0:
		vs.Add("bucket_key", "is required: 1 to %d elements", MaxBucketKeyElements)
	case n > MaxBucketKeyElements:
		vs.Add("bucket_key", "must have at most %d elements, got %d", MaxBucketKeyElements, n)
	}
	for i, s := range c.BucketKey {
		if err := parse(s); err != nil {
			vs.AddError(fmt.Sprintf("bucket_key[%d]", i), err)
		}
	}
	return vs.Err()
}

// Options returns the [Limiter] options of a valid config, with MaxKeys
// left at its default, or the error of [Config.Validate].
func (c Config) Options() (Options, error) {
	if err := c.Validate(); err != nil {
		return Options{}, err
	}
	w, _ := ParseRate(c.Rate)
	return Options{Capacity: c.Capacity, Window: w}, nil
}

// KeyElements returns the parsed bucket key elements of a valid config, or
// the error of [Config.Validate].
func (c Config) KeyElements() ([]KeyElement, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	els := make([]KeyElement, len(c.BucketKey))
	for i, s := range c.BucketKey {
		els[i], _ = ParseKeyElement(s)
	}
	return els, nil
}

// ParseRate parses a rate: a Go duration ("90s", "10m", "1h30m") that is a
// whole multiple of 10s between 60s and 24h inclusive. A failure is an
// [*apierr.Error] with code [apierr.InvalidArgument] and one violation
// whose field is empty (callers prefix it, as [Config.Validate] does with
// "rate").
func ParseRate(s string) (time.Duration, error) {
	if s == "" {
		return 0, apierr.Invalidf("", "is required: a duration such as \"60s\", \"10m\" or \"1h30m\", from 60s to 24h in whole multiples of 10s")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, apierr.Invalidf("", "must be a duration such as \"60s\", \"10m\" or \"1h30m\", got %s", quoteShort(s))
	}
	if d < MinRate || d > MaxRate {
		return 0, apierr.Invalidf("", "must be between 60s and 24h, got %s", quoteShort(s))
	}
	if d%RateStep != 0 {
		return 0, apierr.Invalidf("", "must be a whole multiple of 10s, got %s", quoteShort(s))
	}
	return d, nil
}

// quoteShort quotes s for an error message, shortened so that a huge input
// does not make a huge message.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q...", s[:cut])
}
