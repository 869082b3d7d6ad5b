package main

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/anchor"
)

// anchorHandler answers POST /anchor with one run of the anchor script
// (internal/anchor: EVALSHA, EVAL on NOSCRIPT), for the minimal server
// with -redis: the request whose Redis time the store's mutations are
// measured against.
func anchorHandler(c redis.UniversalClient) http.HandlerFunc {
	var seq atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		uid := "u" + strconv.FormatInt(seq.Add(1)%1000, 10)
		res, err := anchor.Script.Run(r.Context(), c, anchor.Keys, uid, `"anchor"`, anchor.Channel).Slice()
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"code":"REDIS"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"playerId":%v}`, res[1])
	}
}
