package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
)

// The hardening settings reach the server: mode allow-list, CORS,
// the request timeout on a withheld body, and the header cap.
func TestHardeningSettings(t *testing.T) {
	t.Parallel()
	in := start(t, buildBinary(t), "REALSYNC_MODES=battle", "REALSYNC_CORS_ORIGINS=https://game.example",
		"REALSYNC_REQUEST_TIMEOUT=1s") // every request below must end within it on a loaded CI machine too
	token := guest(t, in, "alice")
	if status, body := call(t, "POST", in.url+"/v1/rooms", token, map[string]any{"name": "a", "mode": "race", "region": "eu"}); status != 422 {
		t.Fatalf("mode outside REALSYNC_MODES: %d %v", status, body)
	}
	if status, body := call(t, "POST", in.url+"/v1/rooms", token, map[string]any{"name": "a", "mode": "battle", "region": "eu"}); status != 201 {
		t.Fatalf("allowed mode: %d %v", status, body)
	}

	req, _ := http.NewRequest("OPTIONS", in.url+"/v1/rooms", nil)
	req.Header.Set("Origin", "https://game.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Origin") != "https://game.example" {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}

	// the header cap is api.MaxHeaderBytes (64 KiB): 40 KiB of headers,
	// more than the largest valid presence query's request line, pass;
	// 80 KiB are 431
	for _, c := range []struct {
		padding, status int
	}{{40 << 10, 200}, {api.MaxHeaderBytes + 16<<10, http.StatusRequestHeaderFieldsTooLarge}} {
		req, _ = http.NewRequest("GET", in.url+"/v1/rooms", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Padding", strings.Repeat("p", c.padding))
		res, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Fatalf("%d KiB header: %d, want %d", c.padding>>10, res.StatusCode, c.status)
		}
	}

	u, _ := url.Parse(in.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/rooms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bounded wait for the outcome
	res, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != 408 {
		t.Fatalf("withheld body: %v %v", res, err)
	}
}
