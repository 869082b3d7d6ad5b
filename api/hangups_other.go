//go:build !linux

package api

import "net"

// Hangups watches nothing here: every taken-over stream's line peeks
// (peerClosed) on each sweep. See hangups_linux.go.
type Hangups struct{}

// hangupWatch is never made here (watch returns nil).
type hangupWatch struct{}

// NewHangups returns a Hangups that watches nothing.
func NewHangups() (*Hangups, error) { return &Hangups{}, nil }

// watch watches nothing: the line peeks.
func (*Hangups) watch(net.Conn) *hangupWatch { return nil }

// onGone never calls f.
func (*hangupWatch) onGone(func()) {}

// unwatch does nothing.
func (*hangupWatch) unwatch() {}

// state knows nothing: the line peeks.
func (*hangupWatch) state() (gone, known bool) { return false, false }

// Close does nothing.
func (*Hangups) Close() error { return nil }
