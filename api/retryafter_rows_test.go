package api

import (
	"net/http"
	"testing"
)

// Every 503 of the error table has its Retry-After (retryAfters), so a
// 503 added later cannot go without one.
func TestEvery503RowHasRetryAfter(t *testing.T) {
	for _, p := range problems {
		if p.status == http.StatusServiceUnavailable && retryAfters[p.code] == nil {
			t.Errorf("503 %s has no Retry-After: add it to retryAfters", p.code)
		}
	}
}
