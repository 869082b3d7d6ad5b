package metrics_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/lobby"
)

// describing is a Registerer that notes the name of every metric a
// collector describes before it registers it.
type describing struct {
	prometheus.Registerer
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names[m[1]] = true
		}
	}
	return d.Registerer.Register(c)
}

func (d describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

// The metrics tables of README.md ("Observability") and docs/OPERATIONS.md
// ("Metrics") name every realsync_ metric an instance serves (those of
// metrics.New and the collectors cmd/realsyncd registers besides), and
// none it no longer does.
func TestMetricsTablesNameEveryMetric(t *testing.T) {
	reg := describing{Registerer: prometheus.NewRegistry(), names: map[string]bool{}}
	metrics.New(reg, "test")
	reg.MustRegister(
		metrics.NewShardStats(func(context.Context) (lobby.Stats, error) { return lobby.Stats{}, nil }, 0, 0).
			WithInstances(func(context.Context) (metrics.Fleet, error) { return metrics.Fleet{Live: 1, Settings: 1}, nil }).
			WithMasterShards(func(context.Context) (map[string]int, error) { return map[string]int{"m:1": 1}, nil }),
		metrics.NewOnlineUsers(func(context.Context) (int64, error) { return 0, nil }),
		metrics.NewCertificateExpiry(time.Now())) // with TLS
	for _, doc := range []struct{ path, section string }{
		{"../../README.md", "\n## Observability\n"},
		{"../../docs/OPERATIONS.md", "\n## Metrics\n"},
	} {
		b, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		i := strings.Index(text, doc.section)
		if i < 0 {
			t.Fatalf("%s: no section %q", doc.path, strings.TrimSpace(doc.section))
		}
		text = text[i+len(doc.section):]
		if j := strings.Index(text, "\n## "); j >= 0 {
			text = text[:j]
		}
		rows := map[string]bool{}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "| `realsync_") {
				rows[strings.Split(line, "`")[1]] = true
			}
		}
		for name := range reg.names {
			if strings.HasPrefix(name, "realsync_") && !rows[name] {
				t.Errorf("%s: %s is served but not in the metrics table", doc.path, name)
			}
		}
		for name := range rows {
			if !reg.names[name] {
				t.Errorf("%s: %s is in the metrics table but no instance serves it", doc.path, name)
			}
		}
	}
}
