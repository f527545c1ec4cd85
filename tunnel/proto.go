package tunnel

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"golang.ngrok.com/muxado/v2"
)

// Stream types of the agent protocol: the first four bytes of every
// stream, big-endian (see ../shared/agent-protocol.md §1.5).
const (
	typeAuth        muxado.StreamType = 0
	typeBind        muxado.StreamType = 1
	typeUnbind      muxado.StreamType = 2
	typeProxy       muxado.StreamType = 3
	typeRestart     muxado.StreamType = 4
	typeStop        muxado.StreamType = 5
	typeUpdate      muxado.StreamType = 6
	typeStartLabel  muxado.StreamType = 7
	typeSrvInfo     muxado.StreamType = 8
	typeStopTunnel  muxado.StreamType = 9
	typeHeartbeat   muxado.StreamType = 0xFFFFFFFF
	protocolVersion                   = "3"
)

// MaxMessageBytes bounds one RPC message an agent sends (Auth, Bind,
// StartTunnelWithLabel, Unbind, SrvInfo). The largest legitimate one is
// a Bind with a traffic policy; the policy's own bound
// (policy/limits.MaxDocumentBytes) is below it.
const MaxMessageBytes = 256 << 10

// MaxAuthBytes bounds the Auth message, and so every frame and request
// before a session's Auth: its largest parts are the session's metadata
// (agents.MaxMetadataBytes, which JSON may write as six bytes a byte)
// and the cookie.
const MaxAuthBytes = 32 << 10

// Bounds of the frames an agent's session reads (see
// internal/muxframe): a frame's header announcing more than these is
// refused before its payload is read, and the session closed with a
// protocol error.
const (
	// windowSize is every stream's receive window (muxado's default,
	// which both SDKs assume of the server): a DATA frame is at most it.
	windowSize = 256 << 10
	// maxUnauthFrame bounds one DATA frame before Auth: the Auth
	// message, with its stream's 4-byte type and the JSON encoder's
	// newline.
	maxUnauthFrame = MaxAuthBytes + 8
	// maxUnauthBytes bounds the data of all frames before Auth: the
	// Auth, the heartbeat's first beats, a few requests refused.
	maxUnauthBytes = 2 * maxUnauthFrame
)

// Heartbeats a session answers; the beat past them closes the session.
// The SDKs beat every 10 s by default (the Rust SDK also once at the
// start): an agent whose heartbeat interval is below 1/HeartbeatRate
// (200 ms) is closed once its burst is spent.
const (
	// HeartbeatRate is how many beats a second a session's heartbeat
	// gets answered, over time.
	HeartbeatRate = 5
	// HeartbeatBurst is how many beats a session's heartbeat gets
	// answered at once.
	HeartbeatBurst = 10
	// HeartbeatsBeforeAuth is how many beats a session's heartbeat gets
	// answered before its Auth succeeded.
	HeartbeatsBeforeAuth = 3
)

// authMsg is the agent's Auth request. Field names are the protocol's;
// encoding/json matches keys case-insensitively, so the Rust agent's
// "AuthToken" decodes into Authtoken too.
type authMsg struct {
	Version  []string
	ClientID string `json:"ClientId"`
	Extra    authExtra
}

type authExtra struct {
	OS                   string
	Arch                 string
	Authtoken            string
	Version              string
	UserAgent            string
	Metadata             string
	Cookie               string
	HeartbeatInterval    int64
	HeartbeatTolerance   int64
	StopUnsupportedError *string
	ClientType           string
	LegNumber            uint32
}

type authResp struct {
	Version  string
	ClientID string `json:"ClientId"`
	Error    string
	Extra    authRespExtra
}

type authRespExtra struct {
	Version          string
	Region           string
	Cookie           string
	AccountName      string
	SessionDuration  int64
	PlanName         string
	Banner           string
	ConnectAddresses []struct{} // always empty: no multi-leg sessions
}

// bindMsg is an endpoint Bind. Opts is kept raw: it is decoded by
// proto, and echoed to the agent, which sends it back on a rebind.
type bindMsg struct {
	ID            string `json:"Id"`
	Proto         string
	ForwardsTo    string
	ForwardsProto string
	Opts          json.RawMessage
	Extra         bindExtra
}

type bindExtra struct {
	Name           string
	Token          string
	IPPolicyRef    string
	Metadata       string
	Description    string
	Bindings       []string
	PoolingEnabled bool
}

type bindResp struct {
	ID    string `json:"Id"`
	URL   string
	Proto string
	Opts  json.RawMessage
	Error string
	Extra bindRespExtra
}

type bindRespExtra struct {
	Token string
}

type startLabelMsg struct {
	Labels        map[string]string
	ForwardsTo    string
	ForwardsProto string
	Metadata      string
}

type startLabelResp struct {
	ID    string `json:"Id"`
	Error string
}

type unbindMsg struct {
	ID    string `json:"Id"`
	Extra json.RawMessage
}

type unbindResp struct {
	Error string
	Extra json.RawMessage
}

type srvInfoResp struct {
	Region string
}

// errorResp is the answer to a request the server does not take (any
// RPC before Auth, an unknown one).
type errorResp struct {
	Error string
}

// stopTunnelMsg ends one tunnel without a reconnect (no response).
type stopTunnelMsg struct {
	ID        string `json:"Id"`
	Message   string
	ErrorCode string
}

// proxyHeader precedes a proxied connection's bytes, as an 8-byte
// little-endian length and that many bytes of JSON. Every key is always
// written: the Rust agent requires all five.
type proxyHeader struct {
	ID             string `json:"Id"`
	ClientAddr     string
	Proto          string
	EdgeType       string
	PassthroughTLS bool
}

// readMessage decodes one JSON value of at most MaxMessageBytes from r,
// which the agent does not half-close after its request.
func readMessage(r io.Reader, v any) error { return readMessageMax(r, v, MaxMessageBytes) }

// readMessageMax decodes one JSON value of at most limit bytes from r.
func readMessageMax(r io.Reader, v any, limit int64) error {
	lr := &io.LimitedReader{R: r, N: limit}
	if err := json.NewDecoder(lr).Decode(v); err != nil {
		if lr.N <= 0 {
			return apierr.New(apierr.PayloadTooLarge, "the message is larger than %d bytes", limit)
		}
		return apierr.New(apierr.InvalidArgument, "the message is not the expected JSON object")
	}
	return nil
}

// protoError renders err as the agent protocol carries errors: the
// message, a blank line, and the error's stable code on a line of its
// own ("...\n\nERR_SERVICE_104"), which both SDKs parse out. An error
// that is not an *apierr.Error is internal: its text is not sent.
func protoError(err error) string {
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code == apierr.Internal {
		return "internal error\n\n" + apierr.Internal.Wire()
	}
	msg := strings.TrimSpace(e.Msg)
	return msg + "\n\n" + e.Code.Wire()
}
