package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/rooms"
)

// maxIdempotencyKey is the longest Idempotency-Key accepted.
const maxIdempotencyKey = 255

var (
	// errKeyReused: the key was used with another body or route.
	errKeyReused = rooms.ErrKeyReused
	// errKeyInUse: the same request with the key is still running.
	errKeyInUse = errors.New("a request with this idempotency key is still running")
	// errKeysLimited: the caller's kept answers hold idempotency.Budget
	// bytes already; a new key waits for the oldest to expire
	errKeysLimited = errors.New("the answers kept for this caller's idempotency keys hold their budget: send a new key later, or the request without one")
)

// idempotent serves r with h, honouring its Idempotency-Key (key, nil
// when the header is absent; see openapi.yaml's IdempotencyKey): a
// successful answer is recorded and replayed to the same request sent
// again; a request whose key was used otherwise, or is in use, is refused;
// an error answer frees the key (the request changed nothing, or, after a
// 503, may have: see the spec). Without a store of answers
// (Config.Idempotency) the header is ignored.
//
// A request with a key runs detached from its client (detach). A client's
// hang-up used to cancel it: the store call in flight completed, but the
// next step failed (a quick-join's read of the room it had just made), the
// request ended 499 with its key freed as after an error, and the retry
// ran again (another answer, or a second room). Now it runs to its end,
// within the request timeout and unless a shutdown cuts it: its answer is
// recorded, or its key freed, as for a client that waited, and the retry
// with the key gets that answer, or 409 IDEMPOTENCY_KEY_IN_USE while it
// still runs. Its answer is written all the same (a client that only
// half-closed its connection reads it), and the request is recorded as
// 499 unless it failed with a 5xx (answeredGone).
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, key *string, h http.HandlerFunc) {
	s.keyed(w, r, key, h, false)
}

// idempotentLive is idempotent for a request whose handler answers a run
// again with the key's first result as it is now (a keyed ticket create):
// the same request sent again after an answer was recorded runs h again
// (not recording its answer), where idempotent replays the recorded one.
// Another request under the key, or the key in use, is refused the same.
func (s *Server) idempotentLive(w http.ResponseWriter, r *http.Request, key *string, h http.HandlerFunc) {
	s.keyed(w, r, key, h, true)
}

// answeredKey marks the context of a request idempotentLive runs again:
// its key's answer was recorded (answeredBefore).
type answeredKey struct{}

// answeredBefore tells a handler run by idempotentLive that its request's
// key was answered before (the same request, sent again).
func answeredBefore(ctx context.Context) bool { b, _ := ctx.Value(answeredKey{}).(bool); return b }

func (s *Server) keyed(w http.ResponseWriter, r *http.Request, key *string, h http.HandlerFunc, live bool) {
	if key == nil || s.idem == nil {
		h(w, r)
		return
	}
	if !validIdempotencyKey(*key) {
		s.writeError(w, r, rooms.Invalid("Idempotency-Key", "must be 1..%d visible ASCII characters", maxIdempotencyKey))
		return
	}
	body, err := io.ReadAll(r.Body) // read whole and capped by limitBody already
	if err != nil {
		s.writeError(w, r, errMalformed)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	client := clientContext(r.Context()) // whether its client left: net/http's word, as soon as it said so
	r, release := s.detach(r)
	defer release()
	defer func() {
		if hungUp(client) {
			s.answeredGone(r)
		}
	}()
	ctx := r.Context()
	if err := ctx.Err(); err != nil { // cut before it began: a shutdown drains (Detached.Drain)
		s.writeError(w, r, err)
		return
	}
	c, err := s.idem.Claim(ctx, userFrom(ctx).ID, *key, fingerprint(r.Method, routeOf(r), body), 2*s.requestTimeout)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch c.Outcome {
	case idempotency.Replay:
		if live {
			h(w, r.WithContext(context.WithValue(r.Context(), answeredKey{}, true)))
		} else {
			replay(w, c.Answer)
		}
		return
	case idempotency.InUse:
		s.writeError(w, r, errKeyInUse)
		return
	case idempotency.Mismatch:
		s.writeError(w, r, errKeyReused)
		return
	case idempotency.OverBudget:
		s.writeError(w, r, retryIn{errKeysLimited, c.RetryAfter})
		return
	}
	rec := &answerRecorder{header: http.Header{}}
	h(rec, r)
	ctx = context.WithoutCancel(ctx) // the answer is kept even if a shutdown cut the request
	if rec.status >= 200 && rec.status < 300 {
		a := idempotency.Answer{Status: rec.status, ContentType: rec.header.Get("Content-Type"),
			Location: rec.header.Get("Location"), Body: rec.body.Bytes(), Receipt: rec.receipt}
		if ok, err := s.idem.Record(ctx, c, a); err != nil || !ok {
			s.log.Warn("idempotency: answer not recorded", "err", err, "lost", !ok, "request_id", requestID(ctx))
		}
	} else if err := s.idem.Release(ctx, c); err != nil {
		s.log.Warn("idempotency: key not released", "err", err, "request_id", requestID(ctx))
	}
	rec.writeTo(w) // also to a client that left: harmless, and one that only half-closed reads it
}

// answeredGone records r, a request with an Idempotency-Key whose client
// hung up while it ran detached and which was answered all the same (its
// answer written, for a client that only half-closed its connection), as
// 499 in the metrics and the access log (exchange.recorded): nobody may
// have read its answer. A 5xx stays as it is (the request timeout, Redis
// failing, a shutdown's cut): a server failure is one whether the client
// waited or not, and must show in the 5xx ratio. Its room counts follow
// the answer written (handBackRoomCounts).
func (s *Server) answeredGone(r *http.Request) {
	x := exchangeFrom(r.Context())
	if x == nil {
		return
	}
	s.log.Debug("client closed request; run to its end for its Idempotency-Key", methodAttr(r.Method),
		pathAttr(r.URL.Path), "status", x.status, "request_id", x.id)
	if x.status < 500 {
		x.recorded = statusClientClosed
	}
}

// validIdempotencyKey: 1..maxIdempotencyKey visible ASCII characters.
func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// keyOf is the Idempotency-Key a handler inside idempotent passes on to
// the store ("" when absent, or ignored for want of a store of answers).
func (s *Server) keyOf(key *string) string {
	if s.idem == nil {
		return ""
	}
	return deref(key)
}

// routeOf is r's route pattern with its path parameters as the handler
// reads them (decoded): the same key on another room, or to another user,
// is another request.
func routeOf(r *http.Request) string {
	route := routePattern(r)
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		for _, k := range rctx.URLParams.Keys {
			route += " " + k + "=" + pathParam(r, k)
		}
	}
	return route
}

// fingerprint identifies a request for its key: method, route (routeOf)
// and body.
func fingerprint(method, route string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method + " " + route + "\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// replay writes a recorded answer.
func replay(w http.ResponseWriter, a idempotency.Answer) {
	h := w.Header()
	h.Set("Content-Type", a.ContentType)
	if a.Location != "" {
		h.Set("Location", a.Location)
	}
	h.Set("Idempotent-Replayed", "true")
	h.Set("Content-Length", strconv.Itoa(len(a.Body)))
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}

// answerRecorder keeps a handler's answer to record it before it is sent.
type answerRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	// receipt: of the request's write, kept with its answer
	// (keepReceipt)
	receipt string
}

// keepReceipt keeps receipt, a store's of the write a request made
// (idempotency.Answer.Receipt), with its answer when w records it (the
// request has an Idempotency-Key): a replay checks the write was not lost.
func keepReceipt(w http.ResponseWriter, receipt string) {
	if a, ok := w.(*answerRecorder); ok {
		a.receipt = receipt
	}
}

func (a *answerRecorder) Header() http.Header { return a.header }

func (a *answerRecorder) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *answerRecorder) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(b)
}

// writeTo sends the recorded answer on w.
func (a *answerRecorder) writeTo(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	w.Write(a.body.Bytes())
}
