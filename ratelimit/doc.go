// Package ratelimit is an in-process, keyed, sliding-window rate limiter
// that never admits more than its capacity in any window, with constant
// memory per key and no allocation per request.
package ratelimit
