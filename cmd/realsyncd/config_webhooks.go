package main

import (
	"context"
	"flag"
	"log/slog"
	"strconv"
	"time"

	"github.com/realsync/realsync/internal/webhook"
	"github.com/realsync/realsync/store"
)

// webhookOutboxLen is each shard's webhook outbox cap (MAXLEN ~) when
// webhooks are on: entries are deleted once fanned out, so it only bounds
// a backlog no instance dispatches (README, "Webhooks").
const webhookOutboxLen = 100_000

// webhookTimeout bounds one try of one delivery (store.WebhookConfig.ClaimIdle,
// 1 min by default, is well above it).
const webhookTimeout = 10 * time.Second

// webhookSettings are the webhook endpoints and tries (issue 16 item 6),
// parsed apart from the rest of the configuration.
type webhookSettings struct {
	// WebhooksFile: REALSYNC_WEBHOOKS_FILE, the endpoints (webhook.Parse);
	// unset: webhooks off, no outbox written.
	WebhooksFile     string
	WebhookEndpoints []webhook.Endpoint
	// WebhookMaxAttempts: REALSYNC_WEBHOOK_MAX_ATTEMPTS, default 8: tries
	// of a delivery before it is dead-lettered.
	WebhookMaxAttempts int
}

// webhookFlags declares the settings' flags on fs, with env's values as
// defaults; the returned function checks them after fs.Parse.
func webhookFlags(fs *flag.FlagSet, env func(k, def string) string) func(bad func(name, msg string)) webhookSettings {
	var file, attempts string
	fs.StringVar(&file, "webhooks-file", env("REALSYNC_WEBHOOKS_FILE", ""), "YAML or JSON file of webhook endpoints (id, url, secret, events); unset: no webhooks (REALSYNC_WEBHOOKS_FILE)")
	fs.StringVar(&attempts, "webhook-max-attempts", env("REALSYNC_WEBHOOK_MAX_ATTEMPTS", "8"), "tries of a webhook delivery before it goes to the dead letters (REALSYNC_WEBHOOK_MAX_ATTEMPTS)")
	return func(bad func(name, msg string)) webhookSettings {
		w := webhookSettings{WebhooksFile: file}
		n, err := strconv.Atoi(attempts)
		if err != nil || n < 1 || n > 100 {
			bad("REALSYNC_WEBHOOK_MAX_ATTEMPTS", "must be a whole number from 1 to 100")
		}
		w.WebhookMaxAttempts = n
		if file != "" {
			if w.WebhookEndpoints, err = webhook.Load(file); err != nil {
				bad("REALSYNC_WEBHOOKS_FILE", err.Error())
			}
		}
		return w
	}
}

// outboxLen is store.Config.WebhookOutboxLen: 0 (off) without endpoints.
func (w webhookSettings) outboxLen() int {
	if len(w.WebhookEndpoints) == 0 {
		return 0
	}
	return webhookOutboxLen
}

// runWebhooks delivers the webhook outbox until ctx ends (a no-op with
// webhooks off), as consumer instance.
func runWebhooks(ctx context.Context, w webhookSettings, st *store.Store, instance string, m store.WebhookMetrics, log *slog.Logger) {
	if len(w.WebhookEndpoints) == 0 {
		return
	}
	sender, err := webhook.NewSender(w.WebhookEndpoints, webhookTimeout, nil)
	if err != nil { // checked by webhook.Load already
		log.Error("webhooks", "err", err)
		return
	}
	eps := make([]store.WebhookEndpoint, len(w.WebhookEndpoints))
	for i, ep := range w.WebhookEndpoints {
		eps[i] = store.WebhookEndpoint{ID: ep.ID, Events: ep.Events}
	}
	d, err := st.Webhooks(store.WebhookConfig{Endpoints: eps, Consumer: instance, MaxAttempts: w.WebhookMaxAttempts, Metrics: m,
		Send: func(ctx context.Context, d store.WebhookDelivery) error {
			return sender.Send(ctx, webhook.Delivery(d))
		}})
	if err != nil {
		log.Error("webhooks", "err", err)
		return
	}
	d.Run(ctx, func(err error) { log.Warn("webhook dispatch", "err", err) })
}
