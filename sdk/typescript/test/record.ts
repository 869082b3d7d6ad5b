// What a stream told its listeners, recorded for the tests' assertions.
import type { LiveStream, StreamEvents } from "../src/index.js";

/** Log holds a stream's connection events, each kind in order. */
export type Log = { [K in keyof StreamEvents]: StreamEvents[K][] };

/** record starts recording s's connection events (every kind of StreamEvents) and returns the log it fills. */
export function record<E>(s: LiveStream<E>): Log {
  const log: Log = { connecting: [], open: [], reconnecting: [], resumed: [], closed: [], error: [], token_expiring: [] };
  for (const k of Object.keys(log) as (keyof StreamEvents)[]) {
    (s as unknown as LiveStream<object>).on(k, (e) => (log[k] as unknown[]).push(e));
  }
  return log;
}
