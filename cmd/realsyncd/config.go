package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/realsync/realsync/store"
)

// Config is realsyncd's configuration: environment variables, mirrored by
// flags (a flag wins over its variable).
type Config struct {
	Addr            string        // REALSYNC_ADDR, default :8080
	RedisURL        string        // REALSYNC_REDIS_URL
	ClusterAddrs    []string      // REALSYNC_REDIS_CLUSTER_ADDRS, comma-separated
	JWTSecret       string        // REALSYNC_JWT_SECRET; random per start when empty
	GuestAuth       bool          // REALSYNC_GUEST_AUTH, default true
	Shards          int           // REALSYNC_SHARDS, default 16
	KeyPrefix       string        // REALSYNC_KEY_PREFIX, default rs
	SSEHeartbeat    time.Duration // REALSYNC_SSE_HEARTBEAT, default 15s
	DisconnectGrace time.Duration // REALSYNC_DISCONNECT_GRACE, default 30s; 0 never
	PresenceTTL     time.Duration // REALSYNC_PRESENCE_TTL, default 15s
	LogLevel        string        // REALSYNC_LOG_LEVEL: debug, info (default), warn, error
	PprofAddr       string        // REALSYNC_PPROF_ADDR: loopback address for net/http/pprof; unset: off
	ShutdownTimeout time.Duration // REALSYNC_SHUTDOWN_TIMEOUT, default 30s: SIGTERM to exit, at most

	secretGenerated bool
}

// ParseConfig reads the environment through getenv and the flags in args.
// Every bad value is reported, naming its variable.
func ParseConfig(getenv func(string) string, args []string) (Config, error) {
	return parseConfig(getenv, args, nil)
}

// parseConfig is ParseConfig; more, when set, adds a subcommand's own flags.
func parseConfig(getenv func(string) string, args []string, more func(*flag.FlagSet)) (Config, error) {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	var c Config
	var cluster, guest, shards, heartbeat, grace, presence, shutdown string
	fs := flag.NewFlagSet("realsyncd", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", env("REALSYNC_ADDR", ":8080"), "listen address (REALSYNC_ADDR)")
	fs.StringVar(&c.RedisURL, "redis-url", env("REALSYNC_REDIS_URL", ""), "standalone Redis URL (REALSYNC_REDIS_URL); none: embedded store")
	fs.StringVar(&cluster, "redis-cluster-addrs", env("REALSYNC_REDIS_CLUSTER_ADDRS", ""), "Cluster seed nodes, comma-separated (REALSYNC_REDIS_CLUSTER_ADDRS)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", env("REALSYNC_JWT_SECRET", ""), "HS256 secret shared by all instances (REALSYNC_JWT_SECRET)")
	fs.StringVar(&guest, "guest-auth", env("REALSYNC_GUEST_AUTH", "true"), "allow guest tokens (REALSYNC_GUEST_AUTH)")
	fs.StringVar(&shards, "shards", env("REALSYNC_SHARDS", "16"), "hash-tag shards, fixed for a deployment (REALSYNC_SHARDS)")
	fs.StringVar(&c.KeyPrefix, "key-prefix", env("REALSYNC_KEY_PREFIX", "rs"), "prefix of every Redis key (REALSYNC_KEY_PREFIX)")
	fs.StringVar(&heartbeat, "sse-heartbeat", env("REALSYNC_SSE_HEARTBEAT", "15s"), "SSE comment interval (REALSYNC_SSE_HEARTBEAT)")
	fs.StringVar(&grace, "disconnect-grace", env("REALSYNC_DISCONNECT_GRACE", "30s"), "removal delay of disconnected players, 0 never (REALSYNC_DISCONNECT_GRACE)")
	fs.StringVar(&presence, "presence-ttl", env("REALSYNC_PRESENCE_TTL", "15s"), "lifetime of a stream's presence lease, renewed every third (REALSYNC_PRESENCE_TTL)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env("REALSYNC_PPROF_ADDR", ""), "serve net/http/pprof on this loopback address (REALSYNC_PPROF_ADDR)")
	fs.StringVar(&c.LogLevel, "log-level", env("REALSYNC_LOG_LEVEL", "info"), "debug, info, warn or error (REALSYNC_LOG_LEVEL)")
	fs.StringVar(&shutdown, "shutdown-timeout", env("REALSYNC_SHUTDOWN_TIMEOUT", "30s"), "longest time from SIGTERM to exit (REALSYNC_SHUTDOWN_TIMEOUT)")
	if more != nil {
		more(fs)
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	var errs []string
	bad := func(name, msg string) { errs = append(errs, name+": "+msg) }
	if cluster != "" {
		for _, a := range strings.Split(cluster, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.ClusterAddrs = append(c.ClusterAddrs, a)
			}
		}
	}
	if c.RedisURL != "" && !strings.HasPrefix(c.RedisURL, "redis://") && !strings.HasPrefix(c.RedisURL, "rediss://") {
		bad("REALSYNC_REDIS_URL", "must start with redis:// or rediss://")
	}
	var err error
	if c.GuestAuth, err = strconv.ParseBool(guest); err != nil {
		bad("REALSYNC_GUEST_AUTH", "must be true or false")
	}
	if c.Shards, err = strconv.Atoi(shards); err != nil || c.Shards < 1 || c.Shards > store.MaxShards {
		bad("REALSYNC_SHARDS", fmt.Sprintf("must be an integer 1..%d", store.MaxShards))
	}
	if c.SSEHeartbeat, err = time.ParseDuration(heartbeat); err != nil || c.SSEHeartbeat <= 0 {
		bad("REALSYNC_SSE_HEARTBEAT", "must be a positive duration such as 15s")
	}
	if c.DisconnectGrace, err = time.ParseDuration(grace); err != nil || c.DisconnectGrace < 0 {
		bad("REALSYNC_DISCONNECT_GRACE", "must be a duration such as 30s, or 0")
	}
	if c.PresenceTTL, err = time.ParseDuration(presence); err != nil || c.PresenceTTL < 300*time.Millisecond {
		bad("REALSYNC_PRESENCE_TTL", "must be a duration of at least 300ms such as 15s")
	}
	if c.ShutdownTimeout, err = time.ParseDuration(shutdown); err != nil || c.ShutdownTimeout <= 0 {
		bad("REALSYNC_SHUTDOWN_TIMEOUT", "must be a positive duration such as 30s")
	}
	if c.KeyPrefix == "" || strings.ContainsAny(c.KeyPrefix, "{}: \t\n") {
		bad("REALSYNC_KEY_PREFIX", "must be non-empty without braces, colons or spaces")
	}
	if c.PprofAddr != "" && !strings.HasPrefix(c.PprofAddr, "127.0.0.1:") && !strings.HasPrefix(c.PprofAddr, "localhost:") {
		bad("REALSYNC_PPROF_ADDR", "must be a loopback address such as 127.0.0.1:6060")
	}
	if _, ok := logLevels[c.LogLevel]; !ok {
		bad("REALSYNC_LOG_LEVEL", "must be debug, info, warn or error")
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("bad configuration:\n  %s", strings.Join(errs, "\n  "))
	}
	if c.JWTSecret == "" {
		b := make([]byte, 32)
		rand.Read(b)
		c.JWTSecret, c.secretGenerated = hex.EncodeToString(b), true
	}
	return c, nil
}
