// Package relay copies bytes both ways between two connections: the data
// path of a TCP edge, and of a TLS edge once its connection is terminated
// or passed through. [Pipe] runs both directions until both are done,
// half-closing as each ends, and stops on an error, an idle timeout or its
// context.
//
// # Copy paths
//
// Each direction picks its copy once: TCP to TCP, it is
// (*net.TCPConn).ReadFrom, which Linux does with splice(2), so the bytes
// never enter user space; into a TCP connection from a conn with a WriteTo
// method (a wrapper such as package proxy/sni's replaying conn, which
// writes its replayed bytes and then splices) it is that WriteTo;
// otherwise (TLS, wrappers) it loops through a pooled 32 KiB buffer
// ([BufferSize]), so a direction allocates nothing per read.
//
// # Idle timeout
//
// With [Options.IdleTimeout] set, each direction copies in windows of half
// the timeout, each ended by a read deadline on its source; a read
// deadline wakes a splice without losing data (the kernel pipe is empty
// while splice waits to read), so the timeout does not defeat splice.
// After each window a direction reports whether it moved bytes, and the
// pipe is closed when both directions vouch for a whole IdleTimeout in
// which neither moved a byte: a download-only stream keeps the pipe open
// however quiet the upload side is. A direction that has ended vouches
// from its last byte on, and so does one stuck writing (see Limits).
//
// # Limits
//
//   - The idle timeout is coarse: the pipe closes between IdleTimeout and
//     twice IdleTimeout after the last byte moved, never sooner. An idle
//     pipe wakes each direction every IdleTimeout/2.
//   - A direction blocked writing to a peer that does not read counts as
//     idle once it is an IdleTimeout past the end of its window, so a
//     client that stops reading (a slow-read attack) does not hold a pipe
//     open. The flip side: a peer so slow that one buffer takes it longer
//     than that is cut too, and the buffer is 32 KiB on the buffered path
//     but up to 1 MiB on the splice path (Go's splice pipe size): with a
//     5 minute IdleTimeout, a reader slower than about 3.5 KB/s. (A
//     relay goroutine not scheduled for a whole IdleTimeout looks stuck
//     too: keep the timeout in seconds, not milliseconds.) Pipe sets
//     no write deadlines: a write timeout loses the data in flight on the
//     splice path and makes a *tls.Conn unusable.
//   - A connection without a CloseWrite method cannot be half-closed: its
//     peer sees EOF only when the pipe ends (when the other direction
//     ends too).
//   - Pipe takes the connections' read deadlines for itself when the idle
//     timeout is set, and closes both connections before it returns.
//   - Two goroutines per pipe (the caller's and one more), and at most one
//     pooled buffer per direction that does not splice.
package relay
