// Command rsload drives running realsyncd instances and measures them.
//
// The sse scenario opens N event streams spread over rooms and instances,
// writes state patches at a set rate through the instances, and reports
// events delivered per second and delivery latency (PATCH response to
// arrival on a stream). Everything it does is bounded by -duration.
//
//	go run ./cmd/rsload -urls http://127.0.0.1:8080 -streams 1000 -rooms 10 -rate 500 -duration 10s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Config is one run's parameters.
type Config struct {
	URLs     []string
	Rooms    int
	Streams  int
	Rate     int // patches per second, over all rooms
	Duration time.Duration
	JSON     bool
}

func main() {
	var c Config
	var urls string
	flag.StringVar(&urls, "urls", "http://127.0.0.1:8080", "comma-separated realsyncd base URLs")
	flag.IntVar(&c.Rooms, "rooms", 10, "rooms")
	flag.IntVar(&c.Streams, "streams", 100, "SSE streams, spread over rooms and instances (up to 99 players per room, several streams each)")
	flag.IntVar(&c.Rate, "rate", 200, "state patches per second, over all rooms")
	flag.DurationVar(&c.Duration, "duration", 10*time.Second, "how long to write")
	flag.BoolVar(&c.JSON, "json", false, "print the report as JSON")
	flag.Parse()
	c.URLs = strings.Split(urls, ",")
	if c.Rooms < 1 || c.Streams < 1 || c.Rate < 1 || c.Duration <= 0 || c.Duration > time.Hour {
		fmt.Fprintln(os.Stderr, "rsload: -rooms, -streams, -rate must be positive and -duration in (0, 1h]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Duration+2*time.Minute)
	defer cancel()
	r, err := runSSE(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rsload:", err)
		os.Exit(1)
	}
	if c.JSON {
		json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	r.print(os.Stdout, c)
}

// client talks to the instances; no connection limit, so every stream
// gets its own connection.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0}}

// call sends a JSON request and decodes a JSON answer into out.
func call(ctx context.Context, method, url, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	if out != nil {
		return json.NewDecoder(res.Body).Decode(out)
	}
	return nil
}

func guest(ctx context.Context, base, name string) (string, error) {
	var g struct{ Token string }
	err := call(ctx, "POST", base+"/v1/auth/guest", "", map[string]any{"name": name}, &g)
	return g.Token, err
}
