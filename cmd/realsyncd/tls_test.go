package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"maps"
	mathbig "math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
)

// REALSYNC_TLS_CERT, REALSYNC_TLS_KEY and REALSYNC_H2C: good values parse,
// flags win, the pair is both or neither and must load, h2c is for plain
// text only; bad values name their variables, never the key's contents.
func TestParseConfigProtocols(t *testing.T) {
	t.Parallel()
	cert, key, _ := redistest.SelfSigned(t)
	otherCert, _, _ := redistest.SelfSigned(t)
	keyPEM, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	keyBody := strings.Split(string(keyPEM), "\n")[1] // a line of the key's base64
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	os.WriteFile(garbage, []byte("not a PEM file\n"), 0o600)
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		tls    bool   // want TLS()
		h2c    bool   // want H2C
		scheme string // want scheme()
		err    string // want an error naming this, "" for none
	}{
		{name: "Defaults", scheme: "http"},
		{name: "TLS", env: map[string]string{"REALSYNC_TLS_CERT": cert, "REALSYNC_TLS_KEY": key}, tls: true, scheme: "https"},
		{name: "TLSFlags", args: []string{"-tls-cert", cert, "-tls-key", key}, tls: true, scheme: "https"},
		{name: "H2C", env: map[string]string{"REALSYNC_H2C": "true"}, h2c: true, scheme: "http"},
		{name: "H2CFlagWins", env: map[string]string{"REALSYNC_H2C": "true"}, args: []string{"-h2c=false"}, scheme: "http"},
		{name: "H2COff", env: map[string]string{"REALSYNC_H2C": "0"}, scheme: "http"},
		{name: "CertOnly", env: map[string]string{"REALSYNC_TLS_CERT": cert}, err: "REALSYNC_TLS_KEY"},
		{name: "KeyOnly", args: []string{"-tls-key", key}, err: "REALSYNC_TLS_CERT"},
		{name: "MissingCert", env: map[string]string{"REALSYNC_TLS_CERT": "/nonexistent/cert.pem", "REALSYNC_TLS_KEY": key}, err: "REALSYNC_TLS_CERT"},
		{name: "NotPEM", env: map[string]string{"REALSYNC_TLS_CERT": cert, "REALSYNC_TLS_KEY": garbage}, err: "REALSYNC_TLS_KEY"},
		{name: "KeyOfAnotherCert", env: map[string]string{"REALSYNC_TLS_CERT": otherCert, "REALSYNC_TLS_KEY": key}, err: "REALSYNC_TLS_KEY"},
		{name: "KeyAsCert", env: map[string]string{"REALSYNC_TLS_CERT": key, "REALSYNC_TLS_KEY": key}, err: "REALSYNC_TLS_CERT"},
		{name: "BadH2C", env: map[string]string{"REALSYNC_H2C": "yes"}, err: "REALSYNC_H2C"},
		{name: "H2CWithTLS", env: map[string]string{"REALSYNC_TLS_CERT": cert, "REALSYNC_TLS_KEY": key, "REALSYNC_H2C": "true"}, err: "REALSYNC_H2C"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err, keyBody)
			if ok && (c.TLS() != tc.tls || c.H2C != tc.h2c || c.scheme() != tc.scheme) {
				t.Errorf("tls %v, h2c %v, scheme %s; want %v, %v, %s", c.TLS(), c.H2C, c.scheme(), tc.tls, tc.h2c, tc.scheme)
			}
		})
	}
}

// HTTP/2, by TLS or h2c, is served by golang.org/x/net/http2 with its
// random write scheduler (http2Server: the round-robin one of net/http's
// bundled server walks every open stream of a connection once a batch of
// frames); plain HTTP/1.1 installs no HTTP/2 server.
func TestHTTP2ServerAndItsScheduler(t *testing.T) {
	t.Parallel()
	cert, key, _ := redistest.SelfSigned(t)
	tests := []struct {
		name  string
		p     protocolSettings
		proto string // the TLSNextProto entry x/net installs, "" none
	}{
		{name: "Plain", p: protocolSettings{}},
		{name: "H2C", p: protocolSettings{H2C: true}, proto: "unencrypted_http2"},
		{name: "TLS", p: protocolSettings{TLSCert: cert, TLSKey: key}, proto: "h2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &http.Server{}
			if err := tc.p.configure(srv); err != nil {
				t.Fatal(err)
			}
			if tc.proto == "" {
				if srv.TLSNextProto != nil {
					t.Errorf("an HTTP/2 server installed for plain HTTP/1.1: %v", slices.Collect(maps.Keys(srv.TLSNextProto)))
				}
				return
			}
			if srv.TLSNextProto[tc.proto] == nil {
				t.Errorf("no %q server installed: %v", tc.proto, slices.Collect(maps.Keys(srv.TLSNextProto)))
			}
		})
	}
	// x/net's Server, built with Go 1.27, ignores it (an unsupported
	// scheduler's type): the choice must be made again then
	//lint:ignore SA1019 the scheduler http2Server sets
	if ws := fmt.Sprintf("%T", http2Server().NewWriteScheduler()); ws != "*http2.randomWriteScheduler" {
		t.Errorf("write scheduler %s, want x/net's random one", ws)
	}
	// its deadline around each write would lift a gathered connection's
	// send deadline (gatheredConn)
	//lint:ignore SA1019 the server http2Server configures
	if d := http2Server().WriteByteTimeout; d != 0 {
		t.Errorf("WriteByteTimeout %v, want none: HTTP/2 connections' writes are gathered", d)
	}
}

// GODEBUG=http2server=0, Go's switch that turns HTTP/2 off, is obeyed:
// no HTTP/2 server is installed and none is asked of net/http (over TLS
// it would offer h2 by ALPN for srv.Protocols with no server behind it:
// a client that took it got a broken connection); the last setting of it
// wins, as Go reads GODEBUG.
func TestHTTP2OffByGODEBUG(t *testing.T) {
	for _, tc := range []struct {
		godebug string
		off     bool
	}{
		{"", false},
		{"http2server=0", true},
		{"gctrace=1, http2server=0", true},
		{"http2server=0,http2server=1", false},
		{"http2server=1,http2server=0", true},
		{"http2client=0", false},
		{"xhttp2server=0", false},
	} {
		if got := http2Off(tc.godebug); got != tc.off {
			t.Errorf("http2Off(%q) = %v, want %v", tc.godebug, got, tc.off)
		}
	}
	cert, key, _ := redistest.SelfSigned(t)
	t.Setenv("GODEBUG", "http2server=0")
	for _, p := range []protocolSettings{{H2C: true}, {TLSCert: cert, TLSKey: key}} {
		srv := &http.Server{}
		if err := p.configure(srv); err != nil {
			t.Fatal(err)
		}
		if srv.TLSNextProto != nil {
			t.Errorf("%+v with http2server=0: x/net's server installed: %v", p, slices.Collect(maps.Keys(srv.TLSNextProto)))
		}
		if pr := srv.Protocols; !pr.HTTP1() || pr.HTTP2() || pr.UnencryptedHTTP2() {
			t.Errorf("%+v with http2server=0: protocols %v, want HTTP/1.1 alone", p, pr)
		}
	}
}

// A certificate that has expired is an error in the log at start, one that
// expires within certWarnWithin a warning, another nothing; each has its
// expiry exported (realsync_tls_certificate_expiry_timestamp_seconds). A
// tester's find: an expired certificate was served without a word, and
// nothing told before every client failed.
func TestCertificateExpiryToldAtStart(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name     string
		notAfter time.Time
		logged   string // "" for nothing
	}{
		{"Expired", now.Add(-24 * time.Hour), `level=ERROR msg="the TLS certificate has expired`},
		{"ExpiresSoon", now.Add(72 * time.Hour), `level=WARN msg="the TLS certificate expires soon`},
		{"Valid", now.Add(90 * 24 * time.Hour), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			tmpl := &x509.Certificate{SerialNumber: mathbig.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
				NotBefore: now.Add(-48 * time.Hour), NotAfter: c.notAfter}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
			if err != nil {
				t.Fatal(err)
			}
			var buf testlog.Buffer
			reg := prometheus.NewRegistry()
			certificateExpiry(reg, slog.New(slog.NewTextHandler(&buf, nil)), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, now)
			logged := buf.String()
			if c.logged == "" && logged != "" || c.logged != "" && !strings.Contains(logged, c.logged) {
				t.Errorf("logged %q, want %q", logged, c.logged)
			}
			mfs, err := reg.Gather()
			if err != nil || len(mfs) != 1 || mfs[0].GetName() != "realsync_tls_certificate_expiry_timestamp_seconds" {
				t.Fatalf("metrics %v (%v), want the certificate's expiry alone", mfs, err)
			}
			if got := mfs[0].GetMetric()[0].GetGauge().GetValue(); got != float64(c.notAfter.Unix()) {
				t.Errorf("expiry %v, want %d", got, c.notAfter.Unix())
			}
		})
	}
}
