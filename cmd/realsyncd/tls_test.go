package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
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
