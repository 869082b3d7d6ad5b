package realsync

import "context"

// idempotencyKeyCtx carries an Idempotency-Key (WithIdempotencyKey).
type idempotencyKeyCtx struct{}

// WithIdempotencyKey returns ctx carrying key, which CreateRoom,
// QuickJoin and SendMessage called with it send as their Idempotency-Key
// (the convenience calls take no parameters of their own for it): sent
// again under the same key after a 503, a timeout or a lost answer, the
// call is applied once and answered as its first run was (see the
// IdempotencyKey parameter in openapi.yaml: 1..255 visible ASCII
// characters, a new key per intended operation). A dedicated server that
// retries SendMessage without one posts the message twice.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKeyCtx{}, key)
}

// idempotencyKey is the key ctx carries (WithIdempotencyKey), nil for
// none.
func idempotencyKey(ctx context.Context) *IdempotencyKey {
	if k, ok := ctx.Value(idempotencyKeyCtx{}).(string); ok {
		return &k
	}
	return nil
}
