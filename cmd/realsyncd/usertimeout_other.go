//go:build !linux

package main

import (
	"net"
	"time"
)

// setUserTimeout does nothing: TCP_USER_TIMEOUT is Linux's.
func setUserTimeout(*net.TCPConn, time.Duration) error { return nil }
