package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TLSServer is a redis-server that takes TLS connections only, with a
// self-signed certificate for 127.0.0.1.
type TLSServer struct {
	URL  string // rediss://127.0.0.1:<port>?skip_verify=true
	port int
	dir  string
	cert string
	key  string
	cmd  *exec.Cmd
	tb   testing.TB
}

// SelfSigned writes a self-signed certificate for 127.0.0.1, ::1 and
// localhost and its key as PEM files in a temporary directory; it returns
// their paths and the certificate's pool, for clients to trust it.
func SelfSigned(tb testing.TB) (certFile, keyFile string, pool *x509.CertPool) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "realsync test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		tb.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// StartTLSServer starts a TLS-only redis-server on a free loopback port,
// stopped when the test ends.
func StartTLSServer(tb testing.TB) *TLSServer {
	tb.Helper()
	dir := tb.TempDir()
	certFile, keyFile, _ := SelfSigned(tb)
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	s := &TLSServer{URL: "rediss://127.0.0.1:" + strconv.Itoa(port) + "?skip_verify=true", port: port, dir: dir,
		cert: certFile, key: keyFile, tb: tb}
	s.start()
	tb.Cleanup(s.stop)
	return s
}

// Restart kills the server and starts it again on the same port, with no
// data: as a restart without persistence.
func (s *TLSServer) Restart() {
	s.stop()
	s.start()
}

func (s *TLSServer) start() {
	s.tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		s.tb.Fatal(err)
	}
	s.cmd, err = placed(bin, []string{"--port", "0", "--tls-port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--tls-cert-file", s.cert, "--tls-key-file", s.key, "--tls-ca-cert-file", s.cert, "--tls-auth-clients", "no",
		"--dir", s.dir, "--save", "", "--appendonly", "no", "--logfile", filepath.Join(s.dir, "redis.log")})
	if err != nil {
		s.tb.Fatal(err)
	}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatal(err)
	}
	go s.cmd.Wait()
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			c.Close()
			return
		}
	}
	s.tb.Fatalf("TLS redis-server on %s did not start (log in %s)", addr, s.dir)
}

func (s *TLSServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		addr := "127.0.0.1:" + strconv.Itoa(s.port)
		for range 100 {
			c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
			if err != nil {
				break
			}
			c.Close()
			time.Sleep(20 * time.Millisecond)
		}
		s.cmd = nil
	}
}
