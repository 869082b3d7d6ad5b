// eventSourceTransport, without a server: a fake EventSource refused before
// it opened, and a fake fetch whose answer (the request that reads why)
// is the stream itself, fed in chunks. That answer is read as EventSource
// reads an event stream (WHATWG HTML, "event stream interpretation"), and
// its connection ends exactly once, whoever ends it.
import { describe, it, mock } from "node:test";
import assert from "node:assert/strict";
import { eventSourceTransport, type EventSourceLike, type StreamFailure, type StreamRequest } from "../src/index.js";

/** A fake EventSource that is refused (readyState CLOSED, then error) as soon as refuse() is called. */
class RefusedEventSource implements EventSourceLike {
  readyState = 0;
  onerror: ((e: unknown) => void) | null = null;
  onopen: ((e: unknown) => void) | null = null;
  addEventListener(): void {}
  close(): void {
    this.readyState = 2;
  }
  refuse(): void {
    this.readyState = 2;
    this.onerror?.({ type: "error" });
  }
}

/** A body fed by hand: push chunks, end it; it records whether it was cancelled. */
class Body {
  cancelled = false;
  private ctl!: ReadableStreamDefaultController<Uint8Array>;
  readonly stream = new ReadableStream<Uint8Array>({
    start: (c) => {
      this.ctl = c;
    },
    cancel: () => {
      this.cancelled = true;
    },
  });
  push(chunk: string | Uint8Array): void {
    if (this.cancelled) return; // as a server's bytes after the client went
    this.ctl.enqueue(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
  }
  end(): void {
    this.ctl.close();
  }
}

interface Seen {
  log: string[];
  events: { type: string; data: string; id: string }[];
  errors: StreamFailure[];
  errored: Promise<StreamFailure>;
}

/**
 * connect opens a connection of types over a refused fake EventSource; the
 * request that reads why answers with answer (called with the request's
 * signal; it may ignore it, as a fetch wrapper may). Hooks run on open.
 */
function connect(answer: (signal: AbortSignal) => Promise<Response>, types = ["message", "state"], onOpen?: () => void) {
  const es = new RefusedEventSource();
  let failed!: (f: StreamFailure) => void;
  const seen: Seen = { log: [], events: [], errors: [], errored: new Promise((r) => (failed = r)) };
  const fetch = ((_url: string, init: RequestInit) => answer(init.signal!)) as unknown as typeof globalThis.fetch;
  const req: StreamRequest = { url: "http://x/v1/me/events?token=t", headers: {}, types, fetch };
  const conn = eventSourceTransport(() => es).connect(req, {
    open: () => {
      seen.log.push("open");
      onOpen?.();
    },
    event: (type, data, id) => {
      seen.log.push("event");
      seen.events.push({ type, data, id });
    },
    error: (f) => {
      seen.log.push("error");
      seen.errors.push(f);
      failed(f);
    },
  });
  es.refuse();
  return { conn, seen };
}

/** stream answers 200 text/event-stream with body. */
function stream(body: Body): () => Promise<Response> {
  return async () => new Response(body.stream, { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

/** tick lets the transport read what was pushed (its reads are promise jobs and the fetch's). */
async function tick(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

/** read feeds chunks to a refused connection's adopted stream, ends it, and returns what was seen. */
async function read(chunks: (string | Uint8Array)[], types?: string[]): Promise<Seen> {
  const body = new Body();
  const { seen } = connect(stream(body), types);
  for (const c of chunks) {
    body.push(c);
    await tick();
  }
  body.end();
  await seen.errored;
  return seen;
}

/** bytes splits s's UTF-8 into chunks of n bytes (multi-byte characters split across them). */
function bytes(s: string, n: number): Uint8Array[] {
  const b = new TextEncoder().encode(s);
  const out: Uint8Array[] = [];
  for (let i = 0; i < b.length; i += n) out.push(b.slice(i, i + n));
  return out;
}

describe("eventSourceTransport reads a stream the refusal's request opened as EventSource would", () => {
  // What the server writes (sse/frame.go): a retry line, frames with an
  // id, a type and data lines, heartbeat comments.
  const server = "retry: 3000\n\n" +
    "id: 1-0\nevent: state\ndata: {\"v\":1,\"s\":\"é😀\"}\n\n" +
    ": ping\n\n" +
    "event: state\ndata: {\"v\":2}\n\n" +
    "id: 2-0\nevent: other\ndata: {}\n\n" +
    "id: 3-0\nevent: state\ndata: {\"v\":3}\n\n";
  const want = [
    { type: "state", data: "{\"v\":1,\"s\":\"é😀\"}", id: "1-0" },
    { type: "state", data: "{\"v\":2}", id: "1-0" }, // no id line: the last one kept
    { type: "state", data: "{\"v\":3}", id: "3-0" }, // "other" is not listened to
  ];

  for (const n of [1, 2, 3, 7, 1 << 20]) {
    it(`the server's frames in chunks of ${n} bytes: every event listened to, with its id, then one error`, async () => {
      const seen = await read(bytes(server, n));
      assert.deepEqual(seen.events, want);
      assert.deepEqual(seen.log, ["open", "event", "event", "event", "error"]);
      assert.equal(seen.errors[0].status, 0);
    });
  }

  const cases: { name: string; chunks: string[]; want: { type: string; data: string; id: string }[] }[] = [
    { name: "CRLF, CR and LF line ends", chunks: ["data: a\r\n\r\ndata: b\r\rdata: c\n\n"],
      want: [{ type: "message", data: "a", id: "" }, { type: "message", data: "b", id: "" }, { type: "message", data: "c", id: "" }] },
    { name: "a CRLF split across chunks is one line end", chunks: ["data: a\r", "\n\r", "\ndata: b\r", "\n", "\r", "\n"],
      want: [{ type: "message", data: "a", id: "" }, { type: "message", data: "b", id: "" }] },
    { name: "a leading BOM is skipped", chunks: ["\uFEFFdata: a\n\n"], want: [{ type: "message", data: "a", id: "" }] },
    { name: "data with and without the space, several lines joined", chunks: ["data:a\ndata: b\ndata:  c\ndata\n\n"],
      want: [{ type: "message", data: "a\nb\n c\n", id: "" }] },
    { name: "an empty data line is an event with empty data", chunks: ["data:\n\n"], want: [{ type: "message", data: "", id: "" }] },
    { name: "an id holding NUL is ignored", chunks: ["id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n"],
      want: [{ type: "message", data: "a", id: "1" }, { type: "message", data: "b", id: "1" }] },
    { name: "an empty id resets the last event id", chunks: ["id: 1\ndata: a\n\nid\ndata: b\n\nid: 2\ndata: c\n\nid:\ndata: d\n\n"],
      want: [{ type: "message", data: "a", id: "1" }, { type: "message", data: "b", id: "" }, { type: "message", data: "c", id: "2" },
        { type: "message", data: "d", id: "" }] },
    { name: "an event without data is not dispatched, its type not kept", chunks: ["event: state\nid: 1\n\ndata: a\n\n"],
      want: [{ type: "message", data: "a", id: "1" }] },
    { name: "an event the stream ends in is not dispatched", chunks: ["data: a\n\ndata: b\n"], want: [{ type: "message", data: "a", id: "" }] },
    { name: "unknown fields, a field name with a space, retry lines are ignored", chunks: ["foo: x\ndata : y\nretry: 10\nretry: x\ndata: a\n\n"],
      want: [{ type: "message", data: "a", id: "" }] },
    // A CR is a line end by itself: the blank line that ends an event can be
    // the last byte of the stream, or the last one before a long pause.
    { name: "an event whose blank line is a CR that ends the stream", chunks: ["data: a\r\r"], want: [{ type: "message", data: "a", id: "" }] },
    { name: "an event whose blank line is a CR then LF that ends the stream", chunks: ["data: a\r\n\r", "\n"], want: [{ type: "message", data: "a", id: "" }] },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const seen = await read(c.chunks);
      assert.deepEqual(seen.events, c.want);
      assert.deepEqual(seen.errors.length, 1);
    });
  }

  it("multi-byte UTF-8 split across chunks, and invalid bytes as U+FFFD", async () => {
    const seen = await read([...bytes("data: é😀€\n\n", 1), new Uint8Array([0x64, 0x61, 0x74, 0x61, 0x3a, 0xff, 0x0a, 0x0a])]);
    assert.deepEqual(seen.events.map((e) => e.data), ["é😀€", "\uFFFD"]);
  });

  it("an event whose blank line is a CR is reported without waiting for the stream's next bytes", async () => {
    const body = new Body();
    const { conn, seen } = connect(stream(body));
    body.push("data: a\r\r");
    await tick();
    assert.deepEqual(seen.events, [{ type: "message", data: "a", id: "" }]);
    conn.close();
  });
});

describe("eventSourceTransport's adopted stream ends once, and is not left open", () => {
  it("close() while the request that reads why is under way: nothing reported, the request aborted", async () => {
    let aborted = false;
    const { conn, seen } = connect((signal) => new Promise((_, reject) => {
      signal.addEventListener("abort", () => {
        aborted = true;
        reject(signal.reason);
      });
    }));
    await tick();
    conn.close();
    await tick();
    assert.ok(aborted);
    assert.deepEqual(seen.log, []);
  });

  it("close() while the request is under way, answered by the stream all the same (a fetch that ignores its signal): the body cancelled", async () => {
    const body = new Body();
    let answer!: () => void;
    const { conn, seen } = connect(() => new Promise((resolve) => {
      answer = () => resolve(new Response(body.stream, { status: 200, headers: { "Content-Type": "text/event-stream" } }));
    }));
    await tick();
    conn.close();
    answer();
    await tick();
    assert.ok(body.cancelled, "the body left open");
    assert.deepEqual(seen.log, []);
  });

  it("the refusal's 10 s bound does not cut the stream it opened", async () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const body = new Body();
      const { conn, seen } = connect(stream(body));
      body.push("data: a\n\n");
      await tick();
      mock.timers.tick(60_000);
      body.push("data: b\n\n");
      await tick();
      assert.deepEqual(seen.log, ["open", "event", "event"]);
      assert.ok(!body.cancelled);
      conn.close();
    } finally {
      mock.timers.reset();
    }
  });

  it("close() while the stream is read: its body cancelled, nothing reported after", async () => {
    const body = new Body();
    const { conn, seen } = connect(stream(body));
    body.push("data: a\n\n");
    await tick();
    conn.close();
    body.push("data: b\n\n");
    await tick();
    assert.ok(body.cancelled);
    assert.deepEqual(seen.log, ["open", "event"]);
  });

  it("close() from the open handler (a fetch whose body its signal does not end): the body cancelled", async () => {
    const body = new Body();
    let conn: { close(): void } | undefined;
    const c = connect(stream(body), undefined, () => conn?.close());
    conn = c.conn;
    body.push("data: a\n\n");
    await tick();
    assert.ok(body.cancelled, "the body left open");
    assert.deepEqual(c.seen.log, ["open"]);
  });

  it("an event handler that throws: one error, and the body cancelled", async () => {
    const body = new Body();
    const es = new RefusedEventSource();
    const errors: StreamFailure[] = [];
    const fetch = (async () => new Response(body.stream, { status: 200, headers: { "Content-Type": "text/event-stream" } })) as unknown as typeof globalThis.fetch;
    eventSourceTransport(() => es).connect({ url: "http://x/", headers: {}, types: ["message"], fetch }, {
      open: () => undefined,
      event: () => {
        throw new Error("listener");
      },
      error: (f) => errors.push(f),
    });
    es.refuse();
    body.push("data: a\n\n");
    await tick();
    assert.equal(errors.length, 1);
    assert.ok(body.cancelled, "the body left open");
  });

  it("a 200 event stream with no body is a dropped connection (status 0), not a page", async () => {
    const { seen } = connect(async () => new Response(null, { status: 200, headers: { "Content-Type": "text/event-stream" } }));
    const f = await seen.errored;
    assert.equal(f.status, 0);
    assert.deepEqual(seen.log, ["error"]);
  });

  it("a 200 page is permanent (status 200)", async () => {
    const body = new Body();
    const { seen } = connect(async () => new Response(body.stream, { status: 200, headers: { "Content-Type": "text/html" } }));
    const f = await seen.errored;
    assert.equal(f.status, 200);
  });

  it("a refusal's status, problem and Retry-After", async () => {
    const { seen } = connect(async () => new Response(JSON.stringify({ type: "about:blank", title: "t", status: 409, code: "SESSION_EXISTS" }),
      { status: 409, headers: { "Content-Type": "application/problem+json", "Retry-After": "2" } }));
    const f = await seen.errored;
    assert.equal(f.status, 409);
    assert.equal(f.retryAfterMs, 2000);
  });
});
