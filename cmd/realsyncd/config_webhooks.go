package main

import (
	"context"
	"flag"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/realsync/realsync/internal/webhook"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// webhookOutboxLen is each shard's webhook outbox cap (MAXLEN ~) when
// webhooks are on: entries are deleted once fanned out, so it only bounds
// a backlog no instance dispatches (README, "Webhooks").
const webhookOutboxLen = 100_000

// webhookClaimFactor: a delivery an instance read and left unsettled for
// this many try timeouts (1 min at the default 10 s) was abandoned (the
// instance died): another takes it over (store.WebhookConfig.ClaimIdle).
const webhookClaimFactor = 6

// webhookSettings are the webhook endpoints and tries (issue 16 item 6),
// parsed apart from the rest of the configuration.
type webhookSettings struct {
	// WebhooksFile: REALSYNC_WEBHOOKS_FILE, the endpoints (webhook.Parse);
	// unset: webhooks off, no outbox written. Set, webhooks are on even
	// with no endpoint in force (endpoints: []): reloads may add some.
	WebhooksFile     string
	WebhookEndpoints []webhook.Endpoint
	// WebhookMaxAttempts: REALSYNC_WEBHOOK_MAX_ATTEMPTS, default 8: tries
	// of a delivery before it is dead-lettered.
	WebhookMaxAttempts int
	// WebhookTimeout: REALSYNC_WEBHOOK_TIMEOUT, default 10 s: bounds one
	// try (connect, send, answer); a delivery unsettled for 6× it is taken
	// over by another instance.
	WebhookTimeout time.Duration
	// WebhookBackoffBase, WebhookBackoffMax: REALSYNC_WEBHOOK_BACKOFF
	// "<base>,<max>", default "1s,10m": the n-th retry waits a uniform
	// random time below min(base·2^(n-1), max).
	WebhookBackoffBase, WebhookBackoffMax time.Duration
	// WebhookWorkers: REALSYNC_WEBHOOK_WORKERS, default 8: sends at once
	// per instance, to one endpoint all but one for each other endpoint, half at least;
	// at a receiver's answer time t an instance sends at most Workers/t a
	// second.
	WebhookWorkers int
	// WebhookMaxBacklog: REALSYNC_WEBHOOK_MAX_BACKLOG, default 10 000 (the
	// shards' deliveries bound, webhooks.Config.MaxDeliveries, and at most
	// that): one endpoint's deliveries pending or retrying in a shard;
	// past it the endpoint's new events go to the dead letters untried
	// (webhooks.Config.MaxBacklog).
	WebhookMaxBacklog int
}

// webhookMaxDeliveries is each shard's deliveries bound
// (webhooks.Config.MaxDeliveries, its default), the most
// REALSYNC_WEBHOOK_MAX_BACKLOG may be.
const webhookMaxDeliveries = 10_000

// webhookMinBacklog is the least REALSYNC_WEBHOOK_MAX_BACKLOG may be: a
// dispatch round fans out up to 256 of a shard's events per instance
// before it sends them, and they count until sent, so a bound of a few
// hundred refused a healthy endpoint's events in a burst.
const webhookMinBacklog = 1000

// webhookFlags declares the settings' flags on fs, with env's values as
// defaults; the returned function checks them after fs.Parse.
func webhookFlags(fs *flag.FlagSet, env func(k, def string) string) func(bad func(name, msg string)) webhookSettings {
	var file, attempts, timeout, backoff, workers, backlog string
	fs.StringVar(&file, "webhooks-file", env("REALSYNC_WEBHOOKS_FILE", ""), "YAML or JSON file of webhook endpoints (id, url, secret, events); unset: no webhooks (REALSYNC_WEBHOOKS_FILE)")
	fs.StringVar(&attempts, "webhook-max-attempts", env("REALSYNC_WEBHOOK_MAX_ATTEMPTS", "8"), "tries of a webhook delivery before it goes to the dead letters (REALSYNC_WEBHOOK_MAX_ATTEMPTS)")
	fs.StringVar(&timeout, "webhook-timeout", env("REALSYNC_WEBHOOK_TIMEOUT", "10s"), "bound of one webhook try; a delivery left 6x as long by a dead instance is taken over (REALSYNC_WEBHOOK_TIMEOUT)")
	fs.StringVar(&backoff, "webhook-backoff", env("REALSYNC_WEBHOOK_BACKOFF", "1s,10m"), "base,max of the full-jitter exponential wait before a webhook retry (REALSYNC_WEBHOOK_BACKOFF)")
	fs.StringVar(&workers, "webhook-workers", env("REALSYNC_WEBHOOK_WORKERS", "8"), "webhook sends at once per instance; to one endpoint all but one for each other endpoint, half at least (REALSYNC_WEBHOOK_WORKERS)")
	fs.StringVar(&backlog, "webhook-max-backlog", env("REALSYNC_WEBHOOK_MAX_BACKLOG", strconv.Itoa(webhookMaxDeliveries)), "one endpoint's webhook deliveries pending or retrying in a shard; past it its new events go to the dead letters untried (REALSYNC_WEBHOOK_MAX_BACKLOG)")
	return func(bad func(name, msg string)) webhookSettings {
		w := webhookSettings{WebhooksFile: file}
		n, err := strconv.Atoi(attempts)
		if err != nil || n < 1 || n > 100 {
			bad("REALSYNC_WEBHOOK_MAX_ATTEMPTS", "must be a whole number from 1 to 100")
		}
		w.WebhookMaxAttempts = n
		if w.WebhookWorkers, err = strconv.Atoi(workers); err != nil || w.WebhookWorkers < 1 || w.WebhookWorkers > 1024 {
			bad("REALSYNC_WEBHOOK_WORKERS", "must be a whole number from 1 to 1024")
		}
		if w.WebhookMaxBacklog, err = strconv.Atoi(backlog); err != nil || w.WebhookMaxBacklog < webhookMinBacklog || w.WebhookMaxBacklog > webhookMaxDeliveries {
			bad("REALSYNC_WEBHOOK_MAX_BACKLOG", "must be a whole number from 1000 (above a burst) to 10000 (a shard's deliveries bound)")
		}
		if d, err := time.ParseDuration(timeout); err != nil || d < 100*time.Millisecond || d > time.Minute {
			bad("REALSYNC_WEBHOOK_TIMEOUT", "must be a duration from 100ms to 1m")
		} else {
			w.WebhookTimeout = d
		}
		base, max, ok := strings.Cut(backoff, ",")
		b, errB := time.ParseDuration(strings.TrimSpace(base))
		m, errM := time.ParseDuration(strings.TrimSpace(max))
		if !ok || errB != nil || errM != nil || b < time.Millisecond || m < b || m > 24*time.Hour {
			bad("REALSYNC_WEBHOOK_BACKOFF", `must be "<base>,<max>" durations, 1ms <= base <= max <= 24h (e.g. "1s,10m")`)
		} else {
			w.WebhookBackoffBase, w.WebhookBackoffMax = b, m
		}
		if file != "" {
			if w.WebhookEndpoints, err = webhook.Load(file); err != nil {
				bad("REALSYNC_WEBHOOKS_FILE", err.Error())
			}
		}
		return w
	}
}

// outboxLen is store.Config.WebhookOutboxLen: 0 (off) without the file.
func (w webhookSettings) outboxLen() int {
	if w.WebhooksFile == "" {
		return 0
	}
	return webhookOutboxLen
}

// bounds are the dispatcher's bounds (MaxDeliveries, MaxBacklog), which
// a dead letter's replay keeps too (webhooks.NewDeadLetters).
func (w webhookSettings) bounds() webhooks.Config {
	return webhooks.Config{MaxDeliveries: webhookMaxDeliveries, MaxBacklog: w.WebhookMaxBacklog}
}

// deadLetters are the admin routes' dead letters: a replay keeps the
// dispatcher's bounds, and with webhooks on refuses a letter of an
// endpoint not in the file (runWebhooks follows its reloads); with
// webhooks off the instance knows no endpoints and does not check.
func (w webhookSettings) deadLetters(st *store.Store) *webhooks.DeadLetters {
	q := webhooks.NewDeadLetters(st.Base(), w.bounds())
	if w.WebhooksFile != "" {
		q.SetEndpoints(endpointIDs(w.WebhookEndpoints))
	}
	return q
}

// endpointIDs are the ids of eps.
func endpointIDs(eps []webhook.Endpoint) []string {
	ids := make([]string, len(eps))
	for i, ep := range eps {
		ids[i] = ep.ID
	}
	return ids
}

// runWebhooks delivers the webhook outbox until ctx ends (a no-op with
// webhooks off), as consumer instance; then it waits up to the webhook
// timeout for the sends in flight to end and settle (webhooks.Dispatcher.Run).
// Each reload of the endpoints file gives dl its endpoints too.
func runWebhooks(ctx context.Context, w webhookSettings, st *store.Store, dl *webhooks.DeadLetters, instance string, m webhookMetrics, log *slog.Logger) {
	if w.WebhooksFile == "" {
		return
	}
	sender, err := webhook.NewSender(w.WebhookEndpoints, w.WebhookTimeout, nil)
	if err != nil { // checked by webhook.Load already
		log.Error("webhooks", "err", err)
		return
	}
	cfg := w.bounds()
	cfg.Endpoints, cfg.Consumer, cfg.MaxAttempts, cfg.Workers, cfg.Metrics = dispatcherEndpoints(w.WebhookEndpoints), instance, w.WebhookMaxAttempts, w.WebhookWorkers, m
	cfg.BackoffBase, cfg.BackoffMax = w.WebhookBackoffBase, w.WebhookBackoffMax
	cfg.ClaimIdle, cfg.ShutdownWait = webhookClaimFactor*w.WebhookTimeout, w.WebhookTimeout
	cfg.Send = func(ctx context.Context, d webhooks.Delivery) error {
		err := sender.Send(ctx, webhook.Delivery(d))
		if err != nil && ctx.Err() == nil {
			// debug: an endpoint that is down fails every try (the
			// metrics count them, a dead letter keeps the last error)
			log.Debug("webhook try failed", "endpoint", d.Endpoint, "webhook_id", d.MessageID, "retry", d.RetryCount, "err", err)
		}
		return err
	}
	d, err := webhooks.New(st.Base(), cfg)
	if err != nil {
		log.Error("webhooks", "err", err)
		return
	}
	m.WebhookMaxBacklog(cfg.MaxBacklog) // in force once the dispatcher is
	go webhook.Watch(ctx, w.WebhooksFile, webhook.Reload, w.WebhookEndpoints, func(eps []webhook.Endpoint) {
		if err := sender.SetEndpoints(eps); err != nil { // checked by Parse already
			log.Error("webhooks", "err", err)
			return
		}
		d.SetEndpoints(dispatcherEndpoints(eps))
		dl.SetEndpoints(endpointIDs(eps))
	}, m.WebhooksFileLoaded, log)
	d.Run(ctx, func(err error) { log.Warn("webhook dispatch", "err", err) })
}

// webhookMetrics observe the dispatcher and the endpoints file's reloads.
type webhookMetrics interface {
	webhooks.Metrics
	WebhooksFileLoaded(ok bool)
	// WebhookMaxBacklog is REALSYNC_WEBHOOK_MAX_BACKLOG in force.
	WebhookMaxBacklog(n int)
}

// dispatcherEndpoints are eps as the dispatcher sees them.
func dispatcherEndpoints(eps []webhook.Endpoint) []webhooks.Endpoint {
	out := make([]webhooks.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = webhooks.Endpoint{ID: ep.ID, Events: ep.Events}
	}
	return out
}
