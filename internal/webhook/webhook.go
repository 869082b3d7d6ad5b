// Package webhook is the HTTP side of RealSync's webhooks (issue 16 item
// 6): the endpoints file (REALSYNC_WEBHOOKS_FILE) and the signed POST of
// one delivery. The outbox, retries and dead letters are the store's
// (store/webhooks).
//
// A delivery is a POST of {"type", "timestamp", "data": the room event}
// with the Standard Webhooks headers webhook-id (the event's message id,
// the same on every try and endpoint), webhook-timestamp (Unix seconds of
// the try) and webhook-signature ("v1,<base64 HMAC-SHA256 of
// id.timestamp.body under the endpoint's whsec_ secret>", then one more,
// space-separated, under each of its previous secrets), and
// webhook-retry-count (failed tries before this one). Any 2xx is success;
// anything else, a timeout or a network error is a failed try.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.yaml.in/yaml/v3"

	"github.com/realsync/realsync/internal/jsonout"

	"github.com/realsync/realsync/internal/configfile"
)

// Endpoint is one configured receiver.
type Endpoint struct {
	// ID names the endpoint in deliveries, dead letters and metrics.
	ID string `yaml:"id" json:"id"`
	// URL is where deliveries are POSTed (http or https).
	URL string `yaml:"url" json:"url"`
	// Secret is the Standard Webhooks signing secret, "whsec_<base64>".
	Secret string `yaml:"secret" json:"secret"`
	// PreviousSecrets also sign every try while a secret is rotated
	// (Standard Webhooks: a signature header holds several, a receiver
	// accepts one it verifies), at most MaxPreviousSecrets.
	PreviousSecrets []string `yaml:"previousSecrets" json:"previousSecrets,omitempty"`
	// Events are the event types it receives; "*" is every type.
	Events []string `yaml:"events" json:"events"`
}

// EventTypes are the types a webhook can carry: the room events the
// store's scripts write to the outbox (not the stream-only snapshot,
// resumed and token_expiring) and the users' online status changes
// (store/sessions). An endpoint's events name some of them, or "*".
var EventTypes = []string{
	"state", "player_joined", "player_left", "player_connected", "player_disconnected", "room_updated", "message",
	"room_closed", "seats_reserved", "reservation_expired",
	"user_online", "user_platforms_changed", "user_offline",
}

// Load reads and checks the endpoints file at path; an error names the
// file and the field at fault.
func Load(path string) ([]Endpoint, error) {
	raw, err := configfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("webhooks file: %w", err)
	}
	eps, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("webhooks file %s: %w", path, err)
	}
	return eps, nil
}

// MaxPreviousSecrets bounds an endpoint's previousSecrets: each costs an
// HMAC of the body per try and 50 bytes of header.
const MaxPreviousSecrets = 3

// errNoEndpoints refuses a file that does not say which endpoints it
// has: most likely one caught half written.
var errNoEndpoints = errors.New("endpoints: none configured (write endpoints: [] for none)")

// Parse decodes and checks an endpoints file's content: every endpoint
// has a unique id, an absolute http(s) url, a whsec_ base64 secret (and
// previous secrets, MaxPreviousSecrets at most, none of them the secret)
// and at least one event type; unknown fields are errors. An empty list
// (`endpoints: []`) is no endpoint, on purpose: events go nowhere until
// some are configured; an empty file, or one without the list, is refused.
func Parse(raw []byte) ([]Endpoint, error) {
	var f struct {
		Endpoints *[]Endpoint `yaml:"endpoints"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errNoEndpoints
		}
		return nil, err
	}
	if f.Endpoints == nil {
		return nil, errNoEndpoints
	}
	eps := *f.Endpoints
	if eps == nil {
		eps = []Endpoint{}
	}
	seen := map[string]bool{}
	for i, ep := range eps {
		at := fmt.Sprintf("endpoints[%d]", i)
		if ep.ID == "" {
			return nil, fmt.Errorf("%s.id: required", at)
		}
		if seen[ep.ID] {
			return nil, fmt.Errorf("%s.id: %q appears twice", at, ep.ID)
		}
		seen[ep.ID] = true
		u, err := url.Parse(ep.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// not echoed: a password or a ?token= may be in it, and a URL
			// that does not parse has no reliable place to cut them out
			return nil, fmt.Errorf("%s.url: not an absolute http(s) URL (not shown: it may hold a secret)", at)
		}
		if _, err := NewSigner(ep.Secret); err != nil {
			return nil, fmt.Errorf("%s.secret: %w", at, err)
		}
		if len(ep.PreviousSecrets) > MaxPreviousSecrets {
			return nil, fmt.Errorf("%s.previousSecrets: %d, at most %d", at, len(ep.PreviousSecrets), MaxPreviousSecrets)
		}
		for j, old := range ep.PreviousSecrets {
			if _, err := NewSigner(old); err != nil {
				return nil, fmt.Errorf("%s.previousSecrets[%d]: %w", at, j, err)
			}
			if old == ep.Secret || slices.Contains(ep.PreviousSecrets[:j], old) {
				// signed twice with it: the rotation is most likely half
				// written
				return nil, fmt.Errorf("%s.previousSecrets[%d]: the secret or an earlier previous one again", at, j)
			}
		}
		if len(ep.Events) == 0 {
			return nil, fmt.Errorf("%s.events: at least one event type (or \"*\") required", at)
		}
		for j, e := range ep.Events {
			if e == "" {
				return nil, fmt.Errorf("%s.events[%d]: empty", at, j)
			}
			if e != "*" && !slices.Contains(EventTypes, e) {
				// a typo would receive nothing, silently
				return nil, fmt.Errorf("%s.events[%d]: unknown event type %q: one of %s, or \"*\" for all", at, j, e, strings.Join(EventTypes, ", "))
			}
		}
	}
	return eps, nil
}

// NewSigner checks a whsec_ secret and returns its Standard Webhooks
// signer (the specification's reference library).
func NewSigner(secret string) (*standardwebhooks.Webhook, error) {
	const prefix = "whsec_"
	if len(secret) <= len(prefix) || secret[:len(prefix)] != prefix {
		return nil, errors.New(`must be "whsec_" followed by the base64 key`)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, errors.New("the key after whsec_ is not base64")
	}
	return wh, nil
}

// Delivery is one try to send: the message id, the event's type and JSON,
// and the failed tries before it.
type Delivery struct {
	MessageID  string
	Endpoint   string
	Type       string
	Event      []byte
	RetryCount int
}

// Sender POSTs deliveries to the configured endpoints with a client of its
// own (bounded by Timeout), never on an API request's path.
type Sender struct {
	client  *http.Client
	eps     atomic.Pointer[map[string]endpoint] // replaced whole by SetEndpoints
	now     func() time.Time
	timeout time.Duration
}

type endpoint struct {
	Endpoint
	signers []*standardwebhooks.Webhook // the secret's, then the previous ones'
}

// NewSender builds a sender for eps (checked by Parse); timeout bounds a
// whole try (connect, send, answer); now is the clock of webhook-timestamp
// (nil: time.Now).
func NewSender(eps []Endpoint, timeout time.Duration, now func() time.Time) (*Sender, error) {
	if now == nil {
		now = time.Now
	}
	s := &Sender{client: &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a redirect is not a delivery
	}}, now: now, timeout: timeout}
	if err := s.SetEndpoints(eps); err != nil {
		return nil, err
	}
	return s, nil
}

// SetEndpoints puts eps (checked by Parse) in force for the next tries:
// an endpoint's new url or secret is used from its next try on; a try of
// an endpoint no longer in eps fails. On an error nothing changes.
func (s *Sender) SetEndpoints(eps []Endpoint) error {
	m := make(map[string]endpoint, len(eps))
	for _, ep := range eps {
		e := endpoint{Endpoint: ep}
		for _, secret := range append([]string{ep.Secret}, ep.PreviousSecrets...) {
			sg, err := NewSigner(secret)
			if err != nil {
				return fmt.Errorf("webhook endpoint %s: %w", ep.ID, err)
			}
			e.signers = append(e.signers, sg)
		}
		m[ep.ID] = e
	}
	s.eps.Store(&m)
	return nil
}

// Payload is the body of a delivery.
func Payload(d Delivery) ([]byte, error) {
	var ev struct {
		TS string `json:"ts"`
	}
	if err := json.Unmarshal(d.Event, &ev); err != nil {
		return nil, fmt.Errorf("webhook: event %s is not JSON: %w", d.MessageID, err)
	}
	return jsonout.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{d.Type, ev.TS, d.Event})
}

// Send makes one try of d: nil on a 2xx answer.
func (s *Sender) Send(ctx context.Context, d Delivery) error {
	ep, ok := (*s.eps.Load())[d.Endpoint]
	if !ok {
		return fmt.Errorf("webhook endpoint %q is not configured", d.Endpoint)
	}
	body, err := Payload(d)
	if err != nil {
		return err
	}
	ts := s.now()
	sigs := make([]string, len(ep.signers))
	for i, sg := range ep.signers {
		if sigs[i], err = sg.Sign(d.MessageID, ts, body); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "realsync-webhooks")
	req.Header.Set("webhook-id", d.MessageID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", strings.Join(sigs, " "))
	req.Header.Set("webhook-retry-count", strconv.Itoa(d.RetryCount))
	resp, err := s.client.Do(req)
	if err != nil {
		return redactURLError(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // draining for reuse only
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &StatusError{Endpoint: d.Endpoint, Code: resp.StatusCode}
	}
	return nil
}

// StatusError is a try the endpoint answered with a status other than 2xx.
type StatusError struct {
	Endpoint string
	Code     int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("webhook endpoint %s answered %d", e.Endpoint, e.Code)
}

// Answered says whether the endpoint refused this delivery while up: a 4xx
// other than 408 and 429 (a type its receiver does not take, say). A 5xx,
// 408 or 429 says it is down or overloaded (store/webhooks sends it one
// try at a time then).
func (e *StatusError) Answered() bool {
	return e.Code >= 400 && e.Code < 500 && e.Code != 408 && e.Code != 429
}
