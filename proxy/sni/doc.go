// Package sni reads the TLS ClientHello at the start of a connection
// without consuming it: [Peek] returns what the hello says (server name,
// ALPN protocols, versions, cipher suites, extensions) and a net.Conn that
// replays every byte read so far before reading on from the original
// connection. A TLS listener uses it to pick an edge by server name and
// then either terminate TLS on the returned conn (tls.Server) or pass its
// bytes through untouched to a backend.
//
// The hello is parsed by crypto/tls itself, not by a parser of our own:
// Peek runs a server handshake over a connection that records what it
// reads and refuses every write, and stops it from the
// tls.Config.GetConfigForClient callback, so a hello is accepted exactly
// when crypto/tls would accept it, and nothing (not even an alert) is
// ever written to the client.
//
// # Server name
//
// [Hello.ServerName] is the server_name the client sent, unchanged (not
// lower-cased: DNS names are case-insensitive and the caller compares them
// as it sees fit). It is empty when the client sent none: clients send no
// SNI for an IP-literal address, and some old or bespoke clients none at
// all. With Encrypted Client Hello ([Hello.ECH]) it is the outer, public
// name: the name the client means is encrypted, and Peek has no keys.
//
// # Errors
//
// Every failure to read a hello wraps one of the sentinels, for
// errors.Is (the others: setting the conn's read deadline failed, or a
// context's error, below):
// [ErrNotTLS] (the first bytes are not a TLS handshake record: plain HTTP,
// SSH, random bytes, an SSLv2 hello), [ErrTruncated] (the client closed
// before a whole hello arrived), [ErrTimeout] (the hello did not arrive
// within [Options.Timeout]), [ErrTooLarge] (more than [Options.MaxBytes]
// read without a whole hello), [ErrBadHello] (TLS records that crypto/tls
// rejects as a ClientHello), and [ErrOptions] for bad [Options]. A
// cancelled context gives an error that wraps context.Canceled (its
// cause); a context deadline before the timeout gives [ErrTimeout] that
// also wraps context.DeadlineExceeded.
//
// # Limits
//
//   - Peek reads at most [Options.MaxBytes] bytes (default
//     [DefaultMaxBytes], 68 KiB: crypto/tls accepts a handshake message of
//     up to 65,536+4 bytes, which in full-size records is 65,565 bytes with
//     the record headers); a client that needs more gets [ErrTooLarge].
//     Memory held by one Peek is about three times the bytes the client
//     sent (crypto/tls's buffers and the recording), all released when
//     Peek returns except the recording, which the returned conn frees
//     once it has been read.
//   - Peek waits at most [Options.Timeout] (default [DefaultTimeout], 10
//     s) for the whole hello, however slowly it trickles in: it sets a
//     read deadline on the conn for the peek and clears it (to none)
//     before returning, replacing any read deadline the caller had set.
//   - A hello crypto/tls cannot parse fails the peek, even for a passthrough
//     backend that might have accepted it (a server name with a trailing
//     dot, a malformed ECH extension, duplicate extensions).
//   - Bytes the client sent after its hello (TLS 1.3 early data) may be
//     read during the peek; they are replayed too, in order.
package sni
