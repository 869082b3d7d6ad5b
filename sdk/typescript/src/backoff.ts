// The reconnect delay of live streams: exponential backoff with full jitter.

/** BackoffOptions tune the reconnect delays of a live stream. */
export interface BackoffOptions {
  /** The cap of the first delay; doubled on every failure in a row. Default 500 ms. */
  initialMs?: number;
  /**
   * The largest cap, and the most a server's Retry-After or retry: field makes a stream wait. Default 10000 ms:
   * well below the server's disconnect grace (REALSYNC_DISCONNECT_GRACE, 30 s), so a stream dropped by an outage
   * of up to about 20 s comes back before its player is removed (with 30 s, one in seven lost their seat after
   * a 15 s outage). Keep it under a third of the grace.
   */
  maxMs?: number;
  /** A stream that stayed open this long starts over from initialMs when it drops. Default 30000 ms. */
  stableMs?: number;
  /** The random source of the jitter, [0, 1). Default Math.random. */
  random?: () => number;
}

/**
 * backoffDelay is the wait before the next attempt after `failures` (≥ 1)
 * failures in a row: a uniformly random delay in [0, cap], cap =
 * min(maxMs, initialMs · 2^(failures−1)) ("full jitter", so that clients
 * dropped together do not come back together).
 */
export function backoffDelay(failures: number, o: BackoffOptions = {}): number {
  const cap = Math.min(backoffMaxMs(o), (o.initialMs ?? 500) * 2 ** Math.max(0, failures - 1));
  return Math.round((o.random ?? Math.random)() * cap);
}

/** backoffMaxMs is the largest delay of the options: maxMs, 10000 ms by default. */
export function backoffMaxMs(o: BackoffOptions = {}): number {
  return o.maxMs ?? 10000;
}
