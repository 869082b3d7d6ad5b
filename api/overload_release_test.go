package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// stalledWriter is a connection whose client reads nothing (over HTTP/2, a
// flow-control window kept at 0): the answer's Write blocks until unblock
// is closed.
type stalledWriter struct {
	*httptest.ResponseRecorder
	writing, unblock chan struct{}
}

func (w *stalledWriter) Write(b []byte) (int, error) {
	close(w.writing)
	<-w.unblock
	return w.ResponseRecorder.Write(b)
}

// A request gives its admission place back once its answer is ready, not
// once it is written: a client that reads its answer slowly (an abuse
// tester's HTTP/2 client granting no window held each place to the write
// deadline, 15 s, and kept most other requests refused 503 OVERLOADED)
// holds none; and a request that writes nothing gives it back when it
// returns, once either way.
func TestAdmissionPlaceLeftOnceTheAnswerIsReady(t *testing.T) {
	s := &Server{admission: newAdmitter(Admission{Max: 1}), metrics: noMetrics{}}
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"WriteHeader then Write", func(w http.ResponseWriter) { w.WriteHeader(200); w.Write([]byte("{}")) }},
		{"Write alone", func(w http.ResponseWriter) { w.Write([]byte("{}")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &stalledWriter{ResponseRecorder: httptest.NewRecorder(), writing: make(chan struct{}), unblock: make(chan struct{})}
			x := &exchange{ResponseWriter: w, status: http.StatusOK}
			r := httptest.NewRequest("GET", "/v1/rooms/r1/state", nil)
			r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x))
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.admit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { tc.answer(w) })).ServeHTTP(x, r)
			}()
			select {
			case <-w.writing:
			case <-time.After(10 * time.Second):
				t.Fatal("the answer's write never began")
			}
			free := s.admission.sem.TryAcquire(1)
			if free {
				s.admission.sem.Release(1)
			}
			close(w.unblock)
			<-done // a second release would panic (more released than held)
			if !free {
				t.Fatal("a request whose answer is being written still held its admission place")
			}
			if !s.admission.sem.TryAcquire(1) {
				t.Fatal("the place is not free once the request ended")
			}
			s.admission.sem.Release(1)
		})
	}
	// a request that writes nothing gives it back as it returns
	x := &exchange{ResponseWriter: httptest.NewRecorder(), status: http.StatusOK}
	r := httptest.NewRequest("GET", "/v1/rooms/r1/state", nil)
	s.admit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(x, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x)))
	if !s.admission.sem.TryAcquire(1) {
		t.Fatal("a request that wrote nothing kept its place")
	}
}
