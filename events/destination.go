package events

import (
	"crypto/rand"
	"encoding/base64"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/validate"
)

// DestinationPrefix starts every event destination identifier.
const DestinationPrefix = "ed_"

// Bounds of event destinations.
const (
	// MaxDestinationsPerAccount is the most event destinations one account
	// may have.
	MaxDestinationsPerAccount = 100
	// MaxSubscriptionDestinations is the most destinations one subscription
	// may send to.
	MaxSubscriptionDestinations = 10
	// MaxTargetHeaders is the most headers an HTTP target may add.
	MaxTargetHeaders = 20
	// MaxTargetHeaderBytes bounds one header's name and value together.
	MaxTargetHeaderBytes = 1024
	// MaxTargetURLBytes bounds an HTTP target's URL.
	MaxTargetURLBytes = 2048
	// SecretPrefix starts every webhook secret: the Standard Webhooks
	// form, "whsec_" then the key in standard base64.
	SecretPrefix = "whsec_"
	// secretBytes is the length of a generated key.
	secretBytes = 32
	// minSecretBytes and maxSecretBytes bound a given key.
	minSecretBytes, maxSecretBytes = 24, 64
)

// FormatJSON is the only format events are serialized in.
const FormatJSON = "json"

// Delivery states of a destination ([DeliveryStatus].State).
const (
	// StateOK: every event so far was delivered, or is being delivered
	// on its first attempt.
	StateOK = "ok"
	// StateRetrying: an event failed and is being retried; later events
	// wait.
	StateRetrying = "retrying"
	// StateFailing: an event failed for longer than the retry window;
	// every later event gets one attempt until one succeeds.
	StateFailing = "failing"
)

// Destination is an event destination: where the events of the
// subscriptions that name it are sent. The shape is the original
// service's (id, uri, created_at, description, metadata, format,
// target), with a target of edgeplane's own, http, and the state of
// delivery.
type Destination struct {
	// ID is the destination's identifier, DestinationPrefix followed by an
	// opaque string.
	ID string `json:"id"`
	// URI locates the destination, {base_url}/event_destinations/<id>.
	URI string `json:"uri"`
	// CreatedAt is when the destination was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the destination is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Format is how events are serialized: always "json".
	Format string `json:"format"`
	// Target is where events go.
	Target Target `json:"target"`
	// Delivery is the state of delivery to the destination.
	Delivery DeliveryStatus `json:"delivery"`
}

// Target is where a destination's events go: one of its fields is set.
// edgeplane delivers to http only; the original service's other targets
// are shown as null.
type Target struct {
	// HTTP is a webhook target.
	HTTP *HTTPTarget `json:"http"`
	// Firehose is the original service's; always null.
	Firehose *struct{} `json:"firehose"`
	// Kinesis is the original service's; always null.
	Kinesis *struct{} `json:"kinesis"`
	// CloudwatchLogs is the original service's; always null.
	CloudwatchLogs *struct{} `json:"cloudwatch_logs"`
	// Datadog is the original service's; always null.
	Datadog *struct{} `json:"datadog"`
}

// HTTPTarget is a webhook target: each event is POSTed to URL as JSON,
// signed as Standard Webhooks specifies (headers webhook-id,
// webhook-timestamp and webhook-signature) with Secret.
type HTTPTarget struct {
	// URL receives the events.
	URL string `json:"url"`
	// Secret signs the events, "whsec_" then a base64 key. It is shown
	// once, in the response of the create that set it (or of an update
	// that set a new one), and null ever after.
	Secret *string `json:"secret"`
	// Headers are sent with every event; never nil.
	Headers map[string]string `json:"headers"`
}

// DeliveryStatus is the state of delivery to a destination, as the
// replica that delivers last recorded it. It tells the destination's
// owner how far behind delivery is in time only: store revisions (the
// change feed's positions, which every account's writes advance) are
// never shown, since their count would tell one account how much the
// others write.
type DeliveryStatus struct {
	// State is "ok", "retrying" or "failing".
	State string `json:"state"`
	// LagSeconds is how long the oldest event not yet delivered has
	// waited: the event being retried while the state is retrying or
	// failing, 0 when none waits.
	LagSeconds float64 `json:"lag_seconds"`
	// Attempts is how many times the event now being retried was tried.
	Attempts int `json:"attempts"`
	// LastError is the error of the last failed attempt, "" after a
	// success.
	LastError string `json:"last_error"`
	// LastDeliveredAt is when an event was last delivered.
	LastDeliveredAt *time.Time `json:"last_delivered_at"`
	// Delivered counts the events delivered.
	Delivered int64 `json:"delivered"`
	// Dropped counts events given up after the retry window.
	Dropped int64 `json:"dropped"`
	// Skipped counts the times events were lost because the change
	// feed had discarded them before they were delivered (the
	// destination was behind for longer than the feed keeps changes).
	// How many events each time is not known, since they were never
	// read; the server's operator sees the revisions lost in the
	// server's log and metrics.
	Skipped int64 `json:"skipped"`
}

// TargetParams are the target of a create or update: exactly one of its
// fields, and only http is supported.
type TargetParams struct {
	// HTTP is the webhook target.
	HTTP *HTTPTargetParams `json:"http"`
	// Firehose is the original service's: refused, naming http.
	Firehose *Unsupported `json:"firehose"`
	// Kinesis is the original service's: refused, naming http.
	Kinesis *Unsupported `json:"kinesis"`
	// CloudwatchLogs is the original service's: refused, naming http.
	CloudwatchLogs *Unsupported `json:"cloudwatch_logs"`
	// Datadog is the original service's: refused, naming http.
	Datadog *Unsupported `json:"datadog"`
}

// Unsupported is a target edgeplane does not deliver to: any JSON value
// is accepted by the decoder so that validation can name it.
type Unsupported struct {
	set bool `json:"-"`
}

// UnmarshalJSON records that the target was given.
func (u *Unsupported) UnmarshalJSON(b []byte) error {
	u.set = string(b) != "null"
	return nil
}

// HTTPTargetParams are the parameters of an HTTP target.
type HTTPTargetParams struct {
	// URL is required: an absolute http or https URL, at most 2048 bytes.
	URL string `json:"url" validate:"required,maxbytes=2048,httpurl"`
	// Secret, "whsec_" then the standard base64 of a 24 to 64 byte key,
	// is generated when absent (on create; an update keeps the old one).
	Secret *string `json:"secret" validate:"omitnil,maxbytes=100"`
	// Headers are added to every request: at most 20, each name a valid
	// header name that is not one the delivery sets, name and value
	// together at most 1024 bytes.
	Headers map[string]string `json:"headers" validate:"max=20"`
}

// reservedHeaders are set by the delivery and cannot be configured.
var reservedHeaders = []string{"Content-Type", "Content-Length", "Host", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature",
	"Transfer-Encoding", "Connection", "User-Agent", "Te", "Trailer", "Upgrade", "Keep-Alive", "Proxy-Connection"}

// validate adds the violations of t under field prefix; required says
// that the target must be given.
func (t *TargetParams) validate(vs *apierr.Violations, prefix string) {
	other := false
	for _, o := range []struct {
		name string
		u    *Unsupported
	}{{"firehose", t.Firehose}, {"kinesis", t.Kinesis}, {"cloudwatch_logs", t.CloudwatchLogs}, {"datadog", t.Datadog}} {
		if o.u != nil && o.u.set {
			other = true
			vs.Add(prefix+"."+o.name, "is not a supported target; edgeplane delivers to target.http only (a signed webhook)")
		}
	}
	if t.HTTP == nil {
		if !other {
			vs.Add(prefix+".http", "is required: edgeplane delivers to target.http only (a signed webhook)")
		}
		return
	}
	validate.Into(vs, prefix+".http", t.HTTP)
	if t.HTTP.Secret != nil {
		if _, err := ParseSecret(*t.HTTP.Secret); err != nil {
			vs.Add(prefix+".http.secret", "%s", err.Error())
		}
	}
	if len(t.HTTP.Headers) <= MaxTargetHeaders {
		names := make([]string, 0, len(t.HTTP.Headers))
		for name := range t.HTTP.Headers {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			value := t.HTTP.Headers[name]
			field := prefix + ".http.headers." + name
			switch {
			case edges.CheckHeaderName(name) != "":
				vs.Add(prefix+".http.headers", "%q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~, at most %d bytes)", clip(name), edges.MaxHeaderNameBytes)
			case slices.Contains(reservedHeaders, textproto.CanonicalMIMEHeaderKey(name)):
				vs.Add(field, "is set by the delivery and cannot be configured")
			case len(name)+len(value) > MaxTargetHeaderBytes:
				vs.Add(field, "name and value must be at most %d bytes together", MaxTargetHeaderBytes)
			case strings.ContainsAny(value, "\r\n\x00"):
				vs.Add(field, "must not contain CR, LF or NUL")
			}
		}
	}
}

// clip shortens a value echoed in a message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// CreateDestinationParams are the parameters of creating an event
// destination.
type CreateDestinationParams struct {
	// Description is at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// Format is "json" (the default when empty).
	Format string `json:"format" validate:"omitempty,oneof=json"`
	// Target is required, with its http field set.
	Target *TargetParams `json:"target" validate:"-"`
	// VerifyWithTestEvent is the original service's; it is accepted and
	// ignored.
	VerifyWithTestEvent *bool `json:"verify_with_test_event"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreateDestinationParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Target == nil {
		vs.Add("target", "is required, with target.http set")
	} else {
		p.Target.validate(&vs, "target")
	}
	return vs.Err()
}

// UpdateDestinationParams are the parameters of updating an event
// destination; nil fields are left unchanged. A target replaces the
// old one, except that an http target without a secret keeps the old
// secret.
type UpdateDestinationParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// Format replaces the format: "json".
	Format *string `json:"format" validate:"omitnil,oneof=json"`
	// Target replaces the target.
	Target *TargetParams `json:"target" validate:"-"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateDestinationParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Target != nil {
		p.Target.validate(&vs, "target")
	}
	return vs.Err()
}

// NewSecret returns a new random webhook secret, "whsec_" followed by
// the base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ParseSecret returns the key of a webhook secret: "whsec_" followed by
// the standard base64 of 24 to 64 bytes.
func ParseSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, apierr.New(apierr.InvalidArgument, "must start with %q, followed by the base64 of a %d to %d byte key", SecretPrefix, minSecretBytes, maxSecretBytes)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(rest)
	if err != nil || len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, apierr.New(apierr.InvalidArgument, "must be %q followed by the standard base64 of a %d to %d byte key", SecretPrefix, minSecretBytes, maxSecretBytes)
	}
	return key, nil
}
