package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// NewCertificateExpiry returns the gauge of the API listener's TLS
// certificate's expiry, realsync_tls_certificate_expiry_timestamp_seconds
// (its NotAfter, Unix seconds): registered only when the instance serves
// TLS (REALSYNC_TLS_CERT), so that an alert on its distance from time()
// never fires for an instance without one. The files are read once at
// start: this says how long the one in force has left.
func NewCertificateExpiry(notAfter time.Time) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_tls_certificate_expiry_timestamp_seconds",
		Help: "When the API listener's TLS certificate (REALSYNC_TLS_CERT, read at start) expires, in Unix seconds; only with TLS."})
	g.Set(float64(notAfter.Unix()))
	return g
}
