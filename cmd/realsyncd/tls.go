package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"

	"github.com/realsync/realsync/internal/configfile"
	"github.com/realsync/realsync/internal/metrics"
)

// protocolSettings choose how the API listener speaks (issue 15, item 6):
// plain HTTP/1.1 (the default); TLS with HTTP/2 by ALPN (HTTP/1.1 still
// accepted), so a browser's event streams share one connection instead of
// six per origin; or h2c, unencrypted HTTP/2 with prior knowledge, for a
// proxy that ends TLS and speaks HTTP/2 to the instances (HTTP/1.1 is still
// accepted on the same port). The metrics and pprof listeners stay plain
// HTTP/1.1.
type protocolSettings struct {
	// TLSCert and TLSKey: REALSYNC_TLS_CERT and REALSYNC_TLS_KEY, PEM files
	// of the certificate (chain) and its private key; both or neither. They
	// are read once at start: a renewed certificate takes a restart (a
	// rolling one loses no event, clients resume with Last-Event-ID).
	TLSCert, TLSKey string
	// H2C: REALSYNC_H2C, default false; plain-text listeners only.
	H2C bool
}

// TLS reports whether the API listener serves TLS.
func (p protocolSettings) TLS() bool { return p.TLSCert != "" }

// scheme is the API's URL scheme: https with TLS, else http.
func (p protocolSettings) scheme() string {
	if p.TLS() {
		return "https"
	}
	return "http"
}

// protocolFlags declares the settings' flags on fs, with env's values as
// defaults; the returned function checks them after fs.Parse (the key pair
// loads), reporting each bad value through bad.
func protocolFlags(fs *flag.FlagSet, env func(k, def string) string) func(bad func(name, msg string)) protocolSettings {
	var p protocolSettings
	var h2c string
	fs.StringVar(&p.TLSCert, "tls-cert", env("REALSYNC_TLS_CERT", ""), "PEM certificate (chain) of the API listener, with -tls-key: HTTPS and HTTP/2 (REALSYNC_TLS_CERT)")
	fs.StringVar(&p.TLSKey, "tls-key", env("REALSYNC_TLS_KEY", ""), "PEM private key of -tls-cert (REALSYNC_TLS_KEY)")
	fs.StringVar(&h2c, "h2c", env("REALSYNC_H2C", "false"), "accept unencrypted HTTP/2 with prior knowledge besides HTTP/1.1, for a proxy speaking h2c (REALSYNC_H2C)")
	return func(bad func(name, msg string)) protocolSettings {
		var err error
		if p.H2C, err = strconv.ParseBool(h2c); err != nil {
			bad("REALSYNC_H2C", "must be true or false")
		}
		switch {
		case (p.TLSCert == "") != (p.TLSKey == ""):
			bad("REALSYNC_TLS_CERT, REALSYNC_TLS_KEY", "set both (PEM certificate and its private key) or neither")
		case p.TLSCert != "":
			// the error names files and PEM blocks, never key material
			if _, err := loadKeyPair(p.TLSCert, p.TLSKey); err != nil {
				bad("REALSYNC_TLS_CERT, REALSYNC_TLS_KEY", err.Error())
			}
			if p.H2C {
				bad("REALSYNC_H2C", "is for a plain-text listener; with REALSYNC_TLS_CERT HTTP/2 is negotiated by TLS already")
			}
		}
		return p
	}
}

// configure sets srv's protocols, and its certificate with TLS. HTTP/2 is
// served by golang.org/x/net/http2 (a newer version of the code net/http
// bundles, with its settings open), with its random write scheduler
// (http2Server); unless GODEBUG has http2server=0, Go's switch that turns
// HTTP/2 off (an advisory's stopgap): then HTTP/1.1 alone, TLS offering
// no h2 by ALPN (net/http would offer it for srv.Protocols, with no
// server behind it) and h2c refused.
func (p protocolSettings) configure(srv *http.Server) error {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	srv.Protocols = &protocols
	h2 := !http2Off(os.Getenv("GODEBUG"))
	switch {
	case p.TLS():
		cert, err := loadKeyPair(p.TLSCert, p.TLSKey)
		if err != nil {
			return err
		}
		protocols.SetHTTP2(h2)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	case p.H2C:
		protocols.SetUnencryptedHTTP2(h2)
	default:
		return nil
	}
	if !h2 {
		return nil
	}
	//lint:ignore SA1019 x/net's own server, for its write scheduler (http2Server)
	return http2.ConfigureServer(srv, http2Server())
}

// http2Off reports whether godebug (GODEBUG's value) turns net/http's
// HTTP/2 server off: http2server=0, the last setting of it winning.
func http2Off(godebug string) bool {
	off := false
	for kv := range strings.SplitSeq(godebug, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "http2server" {
			off = v == "0"
		}
	}
	return off
}

// http2Server is the HTTP/2 server's configuration: net/http's defaults
// (250 streams a connection, its flow-control windows), but the random
// write scheduler, not the round-robin one net/http's bundled server
// always uses. Round robin keeps every open stream of a connection in its
// ring and walks the whole ring each time it finds nothing to write, which
// it does once per batch of frames it sends: with event streams, hundreds
// open a connection and a few written at a time, that walk was 13% of the
// server's CPU. The random scheduler holds only the streams with frames
// waiting; it ignores priorities (RealSync's answers and events have none
// to honour), and takes control frames first as round robin does.
// Measured, 2 000 h2c streams at 100 patches/s: 59–68 → 44–49 µs of
// server CPU an event (docs/PERFORMANCE-HISTORY.md, "The HTTP/2 write
// scheduler").
//
// x/net deprecates both (a Server of its own, a scheduler chosen): built
// with Go 1.27, its Server wraps net/http's, which ignores the scheduler
// and defaults to the RFC 9218 priority one (measured here in x/net's
// form: between the two). TestHTTP2ServerAndItsScheduler fails then,
// for this choice to be made again, not lost unseen.
//
// No WriteByteTimeout: x/net would set a deadline around each of its
// writes and clear it after, and a gathered connection's write returns
// before its bytes are sent (gatheredConn), so the clearing would lift the
// deadline of the send under way, a closing connection's included.
//
//lint:ignore SA1019 see above
func http2Server() *http2.Server {
	//lint:ignore SA1019 see above
	return &http2.Server{NewWriteScheduler: func() http2.WriteScheduler { return http2.NewRandomWriteScheduler() }}
}

// serve serves srv on ln, with TLS when configured (configure ran).
func (p protocolSettings) serve(srv *http.Server, ln net.Listener) error {
	if p.TLS() {
		return srv.ServeTLS(ln, "", "")
	}
	return srv.Serve(ln)
}

// certWarnWithin is how close to its expiry a certificate must be at
// start to be warned of.
const certWarnWithin = 14 * 24 * time.Hour

// certificateExpiry exports when the API certificate cert expires
// (metrics.NewCertificateExpiry, on reg) and logs, at start, one that has
// expired (an error: clients refuse it) or expires within certWarnWithin
// (a warning): the files are read once at start, so without it nothing
// told before every client failed (a tester's find: an expired
// certificate was served without a word).
func certificateExpiry(reg prometheus.Registerer, log *slog.Logger, cert tls.Certificate, now time.Time) {
	leaf := cert.Leaf
	if leaf == nil && len(cert.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	if leaf == nil {
		return
	}
	reg.MustRegister(metrics.NewCertificateExpiry(leaf.NotAfter))
	switch left := leaf.NotAfter.Sub(now); {
	case left <= 0:
		log.Error("the TLS certificate has expired: clients refuse it; renew it and restart (REALSYNC_TLS_CERT is read at start)",
			"notAfter", leaf.NotAfter.UTC(), "subject", leaf.Subject.String())
	case left < certWarnWithin:
		log.Warn("the TLS certificate expires soon: renew it and restart (REALSYNC_TLS_CERT is read at start)",
			"notAfter", leaf.NotAfter.UTC(), "left", left.Round(time.Hour), "subject", leaf.Subject.String())
	}
}

// loadKeyPair is tls.LoadX509KeyPair reading the files with
// configfile.Read: a FIFO or a device named by mistake is refused, not
// waited on.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := configfile.Read(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := configfile.Read(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}
