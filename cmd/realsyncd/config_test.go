package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Good values of the observability settings parse, flags win over
// variables, and bad ones are reported naming the variable.
func TestParseConfigObservability(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		metrics string // want MetricsAddr
		format  string // want LogFormat
		err     string // want an error naming this, "" for none
	}{
		{name: "Defaults", format: "text"},
		{name: "JSON", env: map[string]string{"REALSYNC_LOG_FORMAT": "json"}, format: "json"},
		{name: "FlagWins", env: map[string]string{"REALSYNC_LOG_FORMAT": "json"}, args: []string{"-log-format", "text"}, format: "text"},
		{name: "MetricsPort", env: map[string]string{"REALSYNC_METRICS_ADDR": ":9090"}, metrics: ":9090", format: "text"},
		{name: "MetricsHost", args: []string{"-metrics-addr", "10.0.0.5:9090"}, metrics: "10.0.0.5:9090", format: "text"},
		{name: "MetricsIPv6", env: map[string]string{"REALSYNC_METRICS_ADDR": "[::1]:9090"}, metrics: "[::1]:9090", format: "text"},
		{name: "BadFormat", env: map[string]string{"REALSYNC_LOG_FORMAT": "logfmt"}, err: "REALSYNC_LOG_FORMAT"},
		{name: "MetricsNoPort", env: map[string]string{"REALSYNC_METRICS_ADDR": "localhost"}, err: "REALSYNC_METRICS_ADDR"},
		{name: "MetricsBadPort", env: map[string]string{"REALSYNC_METRICS_ADDR": ":99999"}, err: "REALSYNC_METRICS_ADDR"},
		{name: "MetricsNamedPort", env: map[string]string{"REALSYNC_METRICS_ADDR": ":http"}, err: "REALSYNC_METRICS_ADDR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(func(k string) string { return tc.env[k] }, tc.args)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case c.MetricsAddr != tc.metrics || c.LogFormat != tc.format:
				t.Errorf("metrics %q, format %q; want %q and %q", c.MetricsAddr, c.LogFormat, tc.metrics, tc.format)
			}
		})
	}
}

// go-redis' own lines come out as structured warnings of the process'
// logger, JSON included.
func TestRedisLinesThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	redisLogger{newLogger(&buf, "json", "info")}.Printf(context.Background(), "redis: %s: %d", "Unexpected conn state", 3)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	if line["level"] != "WARN" || line["component"] != "go-redis" || line["msg"] != "redis client" ||
		line["detail"] != "redis: Unexpected conn state: 3" {
		t.Errorf("line %v", line)
	}
}

// The room quotas and the presence debounce: defaults, flags over
// variables, 0 switches off, and every bad value named.
func TestParseConfigQuotas(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want quotaSettings // when err is ""
		err  string        // want an error naming this, "" for none
	}{
		{name: "Defaults", want: quotaSettings{PresenceDebounce: 3 * time.Second, MaxRoomsOwned: 5, MaxRoomsJoined: 20, MaxStreamsPerUser: 16}},
		{name: "Off", env: map[string]string{"REALSYNC_PRESENCE_DEBOUNCE": "0", "REALSYNC_MAX_ROOMS_OWNED": "0", "REALSYNC_MAX_ROOMS_JOINED": "0",
			"REALSYNC_MAX_STREAMS_PER_USER": "0"}},
		{name: "FlagsWin", env: map[string]string{"REALSYNC_MAX_ROOMS_OWNED": "2"},
			args: []string{"-max-rooms-owned", "7", "-max-rooms-joined", "9", "-presence-debounce", "500ms"},
			want: quotaSettings{PresenceDebounce: 500 * time.Millisecond, MaxRoomsOwned: 7, MaxRoomsJoined: 9, MaxStreamsPerUser: 16}},
		{name: "StreamsFlagWins", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "4"}, args: []string{"-max-streams-per-user", "3"},
			want: quotaSettings{PresenceDebounce: 3 * time.Second, MaxRoomsOwned: 5, MaxRoomsJoined: 20, MaxStreamsPerUser: 3}},
		{name: "StreamsFromEnv", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "64"},
			want: quotaSettings{PresenceDebounce: 3 * time.Second, MaxRoomsOwned: 5, MaxRoomsJoined: 20, MaxStreamsPerUser: 64}},
		{name: "NegativeStreams", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "-1"}, err: "REALSYNC_MAX_STREAMS_PER_USER"},
		{name: "WordStreams", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "lots"}, err: "REALSYNC_MAX_STREAMS_PER_USER"},
		{name: "HugeStreams", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "10001"}, err: "REALSYNC_MAX_STREAMS_PER_USER"},
		{name: "NegativeOwned", env: map[string]string{"REALSYNC_MAX_ROOMS_OWNED": "-1"}, err: "REALSYNC_MAX_ROOMS_OWNED"},
		{name: "WordJoined", env: map[string]string{"REALSYNC_MAX_ROOMS_JOINED": "many"}, err: "REALSYNC_MAX_ROOMS_JOINED"},
		{name: "HugeJoined", env: map[string]string{"REALSYNC_MAX_ROOMS_JOINED": "10001"}, err: "REALSYNC_MAX_ROOMS_JOINED"},
		{name: "DebounceNoUnit", env: map[string]string{"REALSYNC_PRESENCE_DEBOUNCE": "3"}, err: "REALSYNC_PRESENCE_DEBOUNCE"},
		{name: "DebounceTooLong", env: map[string]string{"REALSYNC_PRESENCE_DEBOUNCE": "2m"}, err: "REALSYNC_PRESENCE_DEBOUNCE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(func(k string) string { return tc.env[k] }, tc.args)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case c.quotaSettings != tc.want:
				t.Errorf("got %+v, want %+v", c.quotaSettings, tc.want)
			}
		})
	}
}
