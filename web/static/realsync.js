var __defProp = Object.defineProperty;
var __defNormalProp = (obj, key, value) => key in obj ? __defProp(obj, key, { enumerable: true, configurable: true, writable: true, value }) : obj[key] = value;
var __publicField = (obj, key, value) => __defNormalProp(obj, typeof key !== "symbol" ? key + "" : key, value);

// node_modules/openapi-fetch/dist/index.mjs
var PATH_PARAM_RE = /\{[^{}]+\}/g;
var supportsRequestInitExt = () => {
  return typeof process === "object" && Number.parseInt(process?.versions?.node?.substring(0, 2)) >= 18 && process.versions.undici;
};
function randomID() {
  return Math.random().toString(36).slice(2, 11);
}
function createClient(clientOptions) {
  let {
    baseUrl = "",
    Request: CustomRequest = globalThis.Request,
    fetch: baseFetch = globalThis.fetch,
    querySerializer: globalQuerySerializer,
    bodySerializer: globalBodySerializer,
    pathSerializer: globalPathSerializer,
    headers: baseHeaders,
    requestInitExt = void 0,
    ...baseOptions
  } = { ...clientOptions };
  requestInitExt = supportsRequestInitExt() ? requestInitExt : void 0;
  baseUrl = removeTrailingSlash(baseUrl);
  const globalMiddlewares = [];
  async function coreFetch(schemaPath, fetchOptions) {
    const {
      baseUrl: localBaseUrl,
      fetch = baseFetch,
      Request = CustomRequest,
      headers,
      params = {},
      parseAs = "json",
      querySerializer: requestQuerySerializer,
      bodySerializer = globalBodySerializer ?? defaultBodySerializer,
      pathSerializer: requestPathSerializer,
      body,
      middleware: requestMiddlewares = [],
      ...init
    } = fetchOptions || {};
    let finalBaseUrl = baseUrl;
    if (localBaseUrl) {
      finalBaseUrl = removeTrailingSlash(localBaseUrl) ?? baseUrl;
    }
    let querySerializer = typeof globalQuerySerializer === "function" ? globalQuerySerializer : createQuerySerializer(globalQuerySerializer);
    if (requestQuerySerializer) {
      querySerializer = typeof requestQuerySerializer === "function" ? requestQuerySerializer : createQuerySerializer({
        ...typeof globalQuerySerializer === "object" ? globalQuerySerializer : {},
        ...requestQuerySerializer
      });
    }
    const pathSerializer = requestPathSerializer || globalPathSerializer || defaultPathSerializer;
    const serializedBody = body === void 0 ? void 0 : bodySerializer(
      body,
      // Note: we declare mergeHeaders() both here and below because it’s a bit of a chicken-or-egg situation:
      // bodySerializer() needs all headers so we aren’t dropping ones set by the user, however,
      // the result of this ALSO sets the lowest-priority content-type header. So we re-merge below,
      // setting the content-type at the very beginning to be overwritten.
      // Lastly, based on the way headers work, it’s not a simple “present-or-not” check becauase null intentionally un-sets headers.
      mergeHeaders(baseHeaders, headers, params.header)
    );
    const finalHeaders = mergeHeaders(
      // with no body, we should not to set Content-Type
      serializedBody === void 0 || // if serialized body is FormData; browser will correctly set Content-Type & boundary expression
      serializedBody instanceof FormData ? {} : {
        "Content-Type": "application/json"
      },
      baseHeaders,
      headers,
      params.header
    );
    const finalMiddlewares = [...globalMiddlewares, ...requestMiddlewares];
    const requestInit = {
      redirect: "follow",
      ...baseOptions,
      ...init,
      body: serializedBody,
      headers: finalHeaders
    };
    let id;
    let options;
    let request = new Request(
      createFinalURL(schemaPath, { baseUrl: finalBaseUrl, params, querySerializer, pathSerializer }),
      requestInit
    );
    let response;
    for (const key in init) {
      if (!(key in request)) {
        request[key] = init[key];
      }
    }
    if (finalMiddlewares.length) {
      id = randomID();
      options = Object.freeze({
        baseUrl: finalBaseUrl,
        fetch,
        parseAs,
        querySerializer,
        bodySerializer,
        pathSerializer
      });
      for (const m of finalMiddlewares) {
        if (m && typeof m === "object" && typeof m.onRequest === "function") {
          const result = await m.onRequest({
            request,
            schemaPath,
            params,
            options,
            id
          });
          if (result) {
            if (result instanceof Request) {
              request = result;
            } else if (result instanceof Response) {
              response = result;
              break;
            } else {
              throw new Error("onRequest: must return new Request() or Response() when modifying the request");
            }
          }
        }
      }
    }
    if (!response) {
      try {
        response = await fetch(request, requestInitExt);
      } catch (error2) {
        let errorAfterMiddleware = error2;
        if (finalMiddlewares.length) {
          for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
            const m = finalMiddlewares[i];
            if (m && typeof m === "object" && typeof m.onError === "function") {
              const result = await m.onError({
                request,
                error: errorAfterMiddleware,
                schemaPath,
                params,
                options,
                id
              });
              if (result) {
                if (result instanceof Response) {
                  errorAfterMiddleware = void 0;
                  response = result;
                  break;
                }
                if (result instanceof Error) {
                  errorAfterMiddleware = result;
                  continue;
                }
                throw new Error("onError: must return new Response() or instance of Error");
              }
            }
          }
        }
        if (errorAfterMiddleware) {
          throw errorAfterMiddleware;
        }
      }
      if (finalMiddlewares.length) {
        for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
          const m = finalMiddlewares[i];
          if (m && typeof m === "object" && typeof m.onResponse === "function") {
            const result = await m.onResponse({
              request,
              response,
              schemaPath,
              params,
              options,
              id
            });
            if (result) {
              if (!(result instanceof Response)) {
                throw new Error("onResponse: must return new Response() when modifying the response");
              }
              response = result;
            }
          }
        }
      }
    }
    const contentLength = response.headers.get("Content-Length");
    if (response.status === 204 || request.method === "HEAD" || contentLength === "0" && !response.headers.get("Transfer-Encoding")?.includes("chunked")) {
      return response.ok ? { data: void 0, response } : { error: void 0, response };
    }
    if (response.ok) {
      const getResponseData = async () => {
        if (parseAs === "stream") {
          return response.body;
        }
        if (parseAs === "json" && !contentLength) {
          const raw = await response.text();
          return raw ? JSON.parse(raw) : void 0;
        }
        return await response[parseAs]();
      };
      return { data: await getResponseData(), response };
    }
    let error = await response.text();
    try {
      error = JSON.parse(error);
    } catch {
    }
    return { error, response };
  }
  return {
    request(method, url, init) {
      return coreFetch(url, { ...init, method: method.toUpperCase() });
    },
    /** Call a GET endpoint */
    GET(url, init) {
      return coreFetch(url, { ...init, method: "GET" });
    },
    /** Call a PUT endpoint */
    PUT(url, init) {
      return coreFetch(url, { ...init, method: "PUT" });
    },
    /** Call a POST endpoint */
    POST(url, init) {
      return coreFetch(url, { ...init, method: "POST" });
    },
    /** Call a DELETE endpoint */
    DELETE(url, init) {
      return coreFetch(url, { ...init, method: "DELETE" });
    },
    /** Call a OPTIONS endpoint */
    OPTIONS(url, init) {
      return coreFetch(url, { ...init, method: "OPTIONS" });
    },
    /** Call a HEAD endpoint */
    HEAD(url, init) {
      return coreFetch(url, { ...init, method: "HEAD" });
    },
    /** Call a PATCH endpoint */
    PATCH(url, init) {
      return coreFetch(url, { ...init, method: "PATCH" });
    },
    /** Call a TRACE endpoint */
    TRACE(url, init) {
      return coreFetch(url, { ...init, method: "TRACE" });
    },
    /** Register middleware */
    use(...middleware) {
      for (const m of middleware) {
        if (!m) {
          continue;
        }
        if (typeof m !== "object" || !("onRequest" in m || "onResponse" in m || "onError" in m)) {
          throw new Error("Middleware must be an object with one of `onRequest()`, `onResponse() or `onError()`");
        }
        globalMiddlewares.push(m);
      }
    },
    /** Unregister middleware */
    eject(...middleware) {
      for (const m of middleware) {
        const i = globalMiddlewares.indexOf(m);
        if (i !== -1) {
          globalMiddlewares.splice(i, 1);
        }
      }
    }
  };
}
function serializePrimitiveParam(name, value, options) {
  if (value === void 0 || value === null) {
    return "";
  }
  if (typeof value === "object") {
    throw new Error(
      "Deeply-nested arrays/objects aren\u2019t supported. Provide your own `querySerializer()` to handle these."
    );
  }
  return `${name}=${options?.allowReserved === true ? value : encodeURIComponent(value)}`;
}
function serializeObjectParam(name, value, options) {
  if (!value || typeof value !== "object") {
    return "";
  }
  const values = [];
  const joiner = {
    simple: ",",
    label: ".",
    matrix: ";"
  }[options.style] || "&";
  if (options.style !== "deepObject" && options.explode === false) {
    for (const k in value) {
      values.push(k, options.allowReserved === true ? value[k] : encodeURIComponent(value[k]));
    }
    const final2 = values.join(",");
    switch (options.style) {
      case "form": {
        return `${name}=${final2}`;
      }
      case "label": {
        return `.${final2}`;
      }
      case "matrix": {
        return `;${name}=${final2}`;
      }
      default: {
        return final2;
      }
    }
  }
  for (const k in value) {
    const finalName = options.style === "deepObject" ? `${name}[${k}]` : k;
    values.push(serializePrimitiveParam(finalName, value[k], options));
  }
  const final = values.join(joiner);
  return options.style === "label" || options.style === "matrix" ? `${joiner}${final}` : final;
}
function serializeArrayParam(name, value, options) {
  if (!Array.isArray(value)) {
    return "";
  }
  if (options.explode === false) {
    const joiner2 = { form: ",", spaceDelimited: "%20", pipeDelimited: "|" }[options.style] || ",";
    const final = (options.allowReserved === true ? value : value.map((v) => encodeURIComponent(v))).join(joiner2);
    switch (options.style) {
      case "simple": {
        return final;
      }
      case "label": {
        return `.${final}`;
      }
      case "matrix": {
        return `;${name}=${final}`;
      }
      // case "spaceDelimited":
      // case "pipeDelimited":
      default: {
        return `${name}=${final}`;
      }
    }
  }
  const joiner = { simple: ",", label: ".", matrix: ";" }[options.style] || "&";
  const values = [];
  for (const v of value) {
    if (options.style === "simple" || options.style === "label") {
      values.push(options.allowReserved === true ? v : encodeURIComponent(v));
    } else {
      values.push(serializePrimitiveParam(name, v, options));
    }
  }
  return options.style === "label" || options.style === "matrix" ? `${joiner}${values.join(joiner)}` : values.join(joiner);
}
function createQuerySerializer(options) {
  return function querySerializer(queryParams) {
    const search = [];
    if (queryParams && typeof queryParams === "object") {
      for (const name in queryParams) {
        const value = queryParams[name];
        if (value === void 0 || value === null) {
          continue;
        }
        if (Array.isArray(value)) {
          if (value.length === 0) {
            continue;
          }
          search.push(
            serializeArrayParam(name, value, {
              style: "form",
              explode: true,
              ...options?.array,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        if (typeof value === "object") {
          search.push(
            serializeObjectParam(name, value, {
              style: "deepObject",
              explode: true,
              ...options?.object,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        search.push(serializePrimitiveParam(name, value, options));
      }
    }
    return search.join("&");
  };
}
function defaultPathSerializer(pathname, pathParams) {
  let nextURL = pathname;
  for (const match of pathname.match(PATH_PARAM_RE) ?? []) {
    let name = match.substring(1, match.length - 1);
    let explode = false;
    let style = "simple";
    if (name.endsWith("*")) {
      explode = true;
      name = name.substring(0, name.length - 1);
    }
    if (name.startsWith(".")) {
      style = "label";
      name = name.substring(1);
    } else if (name.startsWith(";")) {
      style = "matrix";
      name = name.substring(1);
    }
    if (!pathParams || pathParams[name] === void 0 || pathParams[name] === null) {
      continue;
    }
    const value = pathParams[name];
    if (Array.isArray(value)) {
      nextURL = nextURL.replace(match, serializeArrayParam(name, value, { style, explode }));
      continue;
    }
    if (typeof value === "object") {
      nextURL = nextURL.replace(match, serializeObjectParam(name, value, { style, explode }));
      continue;
    }
    if (style === "matrix") {
      nextURL = nextURL.replace(match, `;${serializePrimitiveParam(name, value)}`);
      continue;
    }
    nextURL = nextURL.replace(match, style === "label" ? `.${encodeURIComponent(value)}` : encodeURIComponent(value));
  }
  return nextURL;
}
function defaultBodySerializer(body, headers) {
  if (body instanceof FormData) {
    return body;
  }
  if (headers) {
    const contentType = headers.get instanceof Function ? headers.get("Content-Type") ?? headers.get("content-type") : headers["Content-Type"] ?? headers["content-type"];
    if (contentType === "application/x-www-form-urlencoded") {
      return new URLSearchParams(body).toString();
    }
  }
  return JSON.stringify(body);
}
function createFinalURL(pathname, options) {
  let finalURL = `${options.baseUrl}${pathname}`;
  if (options.params?.path) {
    finalURL = options.pathSerializer(finalURL, options.params.path);
  }
  let search = options.querySerializer(options.params.query ?? {});
  if (search.startsWith("?")) {
    search = search.substring(1);
  }
  if (search) {
    finalURL += `?${search}`;
  }
  return finalURL;
}
function mergeHeaders(...allHeaders) {
  const finalHeaders = new Headers();
  for (const h of allHeaders) {
    if (!h || typeof h !== "object") {
      continue;
    }
    const iterator = h instanceof Headers ? h.entries() : Object.entries(h);
    for (const [k, v] of iterator) {
      if (v === null) {
        finalHeaders.delete(k);
      } else if (Array.isArray(v)) {
        for (const v2 of v) {
          finalHeaders.append(k, v2);
        }
      } else if (v !== void 0) {
        finalHeaders.set(k, v);
      }
    }
  }
  return finalHeaders;
}
function removeTrailingSlash(url) {
  if (url.endsWith("/")) {
    return url.substring(0, url.length - 1);
  }
  return url;
}

// src/backoff.ts
function backoffDelay(failures, o = {}) {
  const cap = Math.min(backoffMaxMs(o), (o.initialMs ?? 500) * 2 ** Math.max(0, failures - 1));
  return Math.round((o.random ?? Math.random)() * cap);
}
function backoffMaxMs(o = {}) {
  return o.maxMs ?? 1e4;
}

// src/transport.ts
function eventSourceTransport(factory) {
  return {
    auth: "url",
    connect(req, on) {
      const es = factory(req.url);
      let done = false;
      let opened = false;
      let asking;
      const finish = (f) => {
        if (done) return;
        done = true;
        es.close();
        on.error(f);
      };
      es.onopen = () => {
        if (done) return;
        opened = true;
        on.open();
      };
      for (const t of req.types) {
        es.addEventListener(t, (e) => !done && on.event(t, e.data, e.lastEventId));
      }
      es.onerror = (e) => {
        if (done || asking) return;
        if (opened || es.readyState !== eventSourceClosed) {
          finish({ status: 0, cause: e });
          return;
        }
        es.close();
        asking = new AbortController();
        const signal = asking.signal;
        void refusal(req, signal).then(async (r) => {
          if (r instanceof Response) {
            if (done) {
              void r.body?.cancel().catch(() => void 0);
              return;
            }
            opened = true;
            on.open();
            const cause = await readEvents(r, req.types, signal, (t, data, id) => !done && on.event(t, data, id));
            finish({ status: 0, cause });
            return;
          }
          finish(r ?? { status: 0, cause: e });
        });
      };
      return {
        close() {
          done = true;
          asking?.abort();
          es.close();
        }
      };
    }
  };
}
var eventSourceClosed = 2;
var refusalTimeoutMs = 1e4;
async function refusal(req, signal) {
  const ctl = new AbortController();
  const stop = () => ctl.abort();
  signal.addEventListener("abort", stop, { once: true });
  const timer = setTimeout(stop, refusalTimeoutMs);
  let stream = false;
  try {
    const f = req.fetch;
    const res = await f(req.url, { headers: { Accept: "text/event-stream" }, cache: "no-store", signal: ctl.signal });
    clearTimeout(timer);
    if (res.status === 200) {
      const type = res.headers.get("Content-Type") ?? "";
      if (type.startsWith("text/event-stream")) {
        if (!res.body) return void 0;
        stream = true;
        return res;
      }
      ctl.abort();
      return {
        status: 200,
        cause: new Error(`the server answered 200 with ${type ? `content type ${type}` : "no content type"}, not an event stream (text/event-stream)`)
      };
    }
    const body = await res.json().catch(() => void 0);
    return { status: res.status, problem: isProblem(body) ? body : void 0, retryAfterMs: retryAfterMs(res.headers.get("Retry-After")) };
  } catch {
    return void 0;
  } finally {
    clearTimeout(timer);
    if (!stream) signal.removeEventListener("abort", stop);
  }
}
async function readEvents(res, types, signal, event) {
  const reader = res.body.getReader();
  const stop = () => void reader.cancel().catch(() => void 0);
  signal.addEventListener("abort", stop, { once: true });
  if (signal.aborted) stop();
  const text = new TextDecoder();
  let line = "";
  let cr = false;
  let id = "";
  let type = "";
  let data = [];
  const field = (ln) => {
    if (ln === "") {
      const t = type || "message";
      if (data.length > 0 && types.includes(t)) event(t, data.join("\n"), id);
      type = "";
      data = [];
      return;
    }
    const colon = ln.indexOf(":");
    if (colon === 0) return;
    const name = colon < 0 ? ln : ln.slice(0, colon);
    let v = colon < 0 ? "" : ln.slice(colon + 1);
    if (v.startsWith(" ")) v = v.slice(1);
    if (name === "event") type = v;
    else if (name === "data") data.push(v);
    else if (name === "id" && !v.includes("\0")) id = v;
  };
  const ends = /[\r\n]/g;
  try {
    for (; ; ) {
      const { value, done } = await reader.read();
      if (done) return new Error("the stream ended");
      const s = text.decode(value, { stream: true });
      if (s === "") continue;
      let i = cr && s[0] === "\n" ? 1 : 0;
      cr = false;
      for (; ; ) {
        ends.lastIndex = i;
        const m = ends.exec(s);
        if (!m) {
          line += s.slice(i);
          break;
        }
        const j = m.index;
        const l = line + s.slice(i, j);
        line = "";
        i = j + 1;
        if (s[j] === "\r") {
          if (i === s.length) cr = true;
          else if (s[i] === "\n") i++;
        }
        field(l);
      }
    }
  } catch (err) {
    return err;
  } finally {
    signal.removeEventListener("abort", stop);
    stop();
  }
}
var browserTransport = {
  auth: "url",
  connect(req, on) {
    const ES = globalThis.EventSource;
    if (!ES) {
      throw new Error("no global EventSource: in Node import @realsync/sdk (not /browser), or pass a transport");
    }
    return eventSourceTransport((url) => new ES(url)).connect(req, on);
  }
};

// src/live.ts
var Emitter = class {
  constructor() {
    __publicField(this, "listeners", /* @__PURE__ */ new Map());
  }
  /** on calls fn for every event of type; returns a function that stops it. */
  on(type, fn) {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, set = /* @__PURE__ */ new Set());
    set.add(fn);
    return () => set.delete(fn);
  }
  /** emit calls every listener of type; one that throws, or whose promise
   * (an async listener's) rejects, is reported to thrown. */
  emit(type, e) {
    for (const fn of [...this.listeners.get(type) ?? []]) {
      try {
        const r = fn(e);
        if (r instanceof Promise) r.catch((err) => this.thrown(type, err));
      } catch (err) {
        this.thrown(type, err);
      }
    }
  }
  /** listening tells whether type has a listener. */
  listening(type) {
    return (this.listeners.get(type)?.size ?? 0) > 0;
  }
  /** thrown is told of the exception err a listener of type threw. */
  thrown(type, err) {
    console.error(`realsync: a "${String(type)}" listener threw:`, err);
  }
};
var LiveStream = class extends Emitter {
  constructor(client, path, types, opts, fetchStreamToken, query = {}) {
    super();
    __publicField(this, "client", client);
    __publicField(this, "path", path);
    __publicField(this, "types", types);
    __publicField(this, "opts", opts);
    __publicField(this, "fetchStreamToken", fetchStreamToken);
    __publicField(this, "query", query);
    /** The id of the last event received. */
    __publicField(this, "lastEventId", "");
    /**
     * The least delay before the next attempt: the `retry:` field a
     * connection ended with (the last line of a stream whose server shuts
     * down, the whole answer of one that cannot reach its store), kept for
     * the attempts after it until a connection brings a retry: or an event.
     * A stream's first retry: (2–5 s, for EventSource's own reconnects) is
     * superseded by the events after it: a dropped stream comes back at the
     * backoff's pace. It counts up to the backoff's maxMs (see fail). Only
     * transports that read the field report it (Node's, not EventSource).
     */
    __publicField(this, "retryFloor", 0);
    /** True once the stream ended (see closed). */
    __publicField(this, "closed", false);
    /** Resolves when the first snapshot (room) or list (lobby) was applied; rejects
     * with the RealSyncError if the stream ends before that. */
    __publicField(this, "ready");
    __publicField(this, "resolveReady");
    __publicField(this, "rejectReady");
    __publicField(this, "isReady", false);
    __publicField(this, "conn");
    __publicField(this, "timer");
    __publicField(this, "gen", 0);
    // counts connections: the handlers of an older one are ignored
    __publicField(this, "attempt", 0);
    // connection attempts since the stream was last open
    __publicField(this, "failures", 0);
    // transient failures in a row (the backoff's exponent)
    __publicField(this, "openedAt", 0);
    // when the current connection opened (ms), 0 while not open
    /** True once a connection opened. */
    __publicField(this, "everOpen", false);
    __publicField(this, "resuming", false);
    // the next event is the first after a reconnect
    __publicField(this, "renewedFor401", false);
    __publicField(this, "newStreamTokenFor401", false);
    __publicField(this, "lastExpiring", "");
    /** The last event was a player_left (left or kicked) of a player the stream
     * could not tell from the caller's: a refusal to reconnect (403
     * NOT_A_MEMBER, 404) means it was the caller's own. */
    __publicField(this, "leftUnknown", false);
    /** unwatch removes the page's listeners of watchNetwork (at the end). */
    __publicField(this, "unwatch");
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => void 0);
  }
  /** thrown reports a listener's exception as an error event (see LiveStream). */
  thrown(type, err) {
    if (type === "error" || !this.listening("error")) {
      super.thrown(type, err);
      return;
    }
    this.signal("error", new RealSyncError(0, void 0, err, {
      code: "LISTENER",
      message: `a "${String(type)}" listener threw: ${err instanceof Error ? err.message : String(err)}`
    }));
  }
  /** signal emits a connection event (StreamEvents). */
  signal(type, e) {
    this.emit(type, e);
  }
  get transport() {
    if (this.opts.transport) return this.opts.transport;
    if (this.opts.eventSource) return eventSourceTransport(this.opts.eventSource);
    return this.client.transport;
  }
  /** open starts the first connection (subclasses call it once constructed),
   * after the caller's synchronous code: listeners added right after
   * live()/lobby() see the first connecting. */
  open() {
    this.watchNetwork();
    queueMicrotask(() => !this.closed && this.gen === 0 && void this.connect());
  }
  /**
   * watchNetwork reconnects when the page says the network may have changed
   * under it (LiveOptions.networkEvents): `online`, and `visibilitychange`
   * to visible after being hidden idleTimeoutMs or longer. EventSource
   * cannot see heartbeats, so this is all a browser page can watch.
   */
  watchNetwork() {
    const g = globalThis;
    if (this.opts.networkEvents === false || typeof g.addEventListener !== "function" || !("ononline" in g)) return;
    const scope = g;
    const online = () => this.reconnect();
    scope.addEventListener("online", online);
    const doc = g.document;
    let hiddenAt = doc?.visibilityState === "hidden" ? Date.now() : 0;
    const visibility = () => {
      if (doc?.visibilityState === "hidden") {
        hiddenAt = Date.now();
      } else if (hiddenAt) {
        const hidden = Date.now() - hiddenAt;
        hiddenAt = 0;
        if (this.idleTimeoutMs > 0 && hidden >= this.idleTimeoutMs) this.reconnect();
      }
    };
    doc?.addEventListener("visibilitychange", visibility);
    this.unwatch = () => {
      scope.removeEventListener("online", online);
      doc?.removeEventListener("visibilitychange", visibility);
    };
  }
  async connect() {
    const gen = ++this.gen;
    this.conn?.close();
    this.conn = void 0;
    this.openedAt = 0;
    this.signal("connecting", { attempt: ++this.attempt });
    const transport = this.transport;
    let req;
    try {
      req = await this.request(transport);
    } catch (e) {
      if (gen === this.gen && !this.closed) this.fail(asError(e));
      return;
    }
    if (gen !== this.gen || this.closed) return;
    const live = () => gen === this.gen && !this.closed;
    try {
      this.conn = transport.connect(req, {
        open: () => live() && this.opened(),
        event: (type, data, id) => live() && this.event(type, data, id),
        retry: (ms) => {
          if (live()) this.retryFloor = ms;
        },
        error: (f) => {
          if (!live()) return;
          this.conn = void 0;
          const dropped = f.status === 0 && !f.problem && !(f.cause instanceof Error);
          const err = new RealSyncError(
            f.status,
            f.problem,
            f.cause,
            { retryAfterMs: f.retryAfterMs, message: dropped ? "the event stream dropped" : void 0 }
          );
          if (transport.auth === "url" && f.status === 401 && !this.newStreamTokenFor401) {
            this.newStreamTokenFor401 = true;
            this.signal("error", err);
            if (live()) this.retry(err, 0);
            return;
          }
          this.fail(err);
        }
      });
    } catch (e) {
      this.end("error", asError(e));
    }
  }
  /** request authenticates one connection. */
  async request(transport) {
    const types = [...this.types, "token_expiring"];
    const lastEventId = this.resumable ? this.lastEventId || void 0 : void 0;
    const idleTimeoutMs = this.idleTimeoutMs;
    if (transport.auth === "header") {
      const token2 = await this.client.identityToken();
      const headers = {};
      if (token2) headers.Authorization = `Bearer ${token2}`;
      if (lastEventId) headers["Last-Event-ID"] = lastEventId;
      return { url: this.client.streamUrl(this.path, void 0, this.query), headers, types, fetch: this.client.fetchImpl, idleTimeoutMs };
    }
    const token = this.opts.streamToken ? await this.opts.streamToken() : (await this.fetchStreamToken()).token;
    return {
      url: this.client.streamUrl(this.path, token, { ...this.query, lastEventId }),
      headers: {},
      types,
      fetch: this.client.fetchImpl,
      idleTimeoutMs
    };
  }
  /** idleTimeoutMs is the watchdog's limit (LiveOptions.idleTimeoutMs; 0: off). */
  get idleTimeoutMs() {
    return this.opts.idleTimeoutMs ?? 45e3;
  }
  opened() {
    this.openedAt = Date.now();
    this.attempt = 0;
    this.renewedFor401 = false;
    this.newStreamTokenFor401 = false;
    this.resuming = this.everOpen;
    this.everOpen = true;
    this.signal("open", {});
  }
  event(type, data, id) {
    let e;
    try {
      e = JSON.parse(data);
    } catch (err) {
      this.signal("error", new RealSyncError(0, void 0, err, { message: `a ${type} event that is not JSON` }));
      return;
    }
    if (type === "token_expiring") {
      void this.tokenExpiring(e);
      return;
    }
    if (type === "resumed") {
      if (!this.isReady && this.everOpen) this.markReady();
      if (this.resuming) {
        this.resuming = false;
        this.signal("resumed", { snapshot: false });
      }
      return;
    }
    if (id) this.lastEventId = id;
    if (this.resuming && (e.type === "snapshot" || e.type === "rooms")) {
      this.resuming = false;
      this.signal("resumed", { snapshot: true });
    }
    this.leftUnknown = false;
    this.receive(type, e);
  }
  /** tokenExpiring renews the identity token and resumes, or ends the stream
   * when the token cannot be renewed. While the token has expiringFloorMs
   * left, a renewal that failed transiently (network, 408, 429, 5xx) is
   * retried as a dropped connection is (fail: after a backoff), and a token
   * provider (getToken) that still returns the expiring token is asked again
   * on a reconnection at once (the server keeps a stream opened with under a
   * minute left for half of it): each such stream resumes without a gap. */
  async tokenExpiring(data) {
    const gen = ++this.gen;
    this.conn?.close();
    this.conn = void 0;
    this.signal("token_expiring", data);
    const expiresAt = Date.parse(data.expiresAt);
    const again = data.expiresAt === this.lastExpiring;
    this.lastExpiring = data.expiresAt;
    const provider = this.opts.streamToken === void 0 && this.client.hasTokenProvider();
    let cause;
    let renewed = false;
    if (!again || provider) {
      try {
        const token = await this.client.identityToken(expiresAt);
        const exp = tokenExpiry(token);
        renewed = exp === void 0 ? this.opts.streamToken !== void 0 : exp > expiresAt;
      } catch (e) {
        cause = e;
      }
    }
    if (gen !== this.gen || this.closed) return;
    if (!renewed) {
      const left = expiresAt - (Date.now() + this.client.clockSkew());
      if (left >= expiringFloorMs && cause instanceof RealSyncError && transient(cause)) {
        this.lastExpiring = "";
        this.fail(asError(cause));
        return;
      }
      if (left >= expiringFloorMs && cause === void 0 && provider) {
        void this.connect();
        return;
      }
      if (cause instanceof RealSyncError) this.signal("error", cause);
      const detail = cause !== void 0 && !(cause instanceof RealSyncError) ? `the identity token expires at ${data.expiresAt} and its renewal failed: ${cause instanceof Error ? cause.message : String(cause)}` : provider ? `the identity token expires at ${data.expiresAt} and getToken still returns it: return a new token at least a minute before the old one expires` : `the identity token expires at ${data.expiresAt} and could not be renewed: pass getToken or refreshToken`;
      this.end("error", new RealSyncError(401, {
        type: "about:blank",
        title: "Unauthenticated",
        status: 401,
        code: "UNAUTHENTICATED",
        detail
      }, cause));
      return;
    }
    void this.connect();
  }
  /** fail handles the failure of the current connection (or of its authentication). */
  fail(err) {
    if (this.leftUnknown && (err.code === "NOT_A_MEMBER" || err.status === 404)) {
      this.end("left");
      return;
    }
    const gen = this.gen;
    this.signal("error", err);
    if (gen !== this.gen || this.closed) return;
    const removed = this.everOpen ? this.removed(err) : void 0;
    if (removed) {
      this.end(removed, err);
      return;
    }
    const openFor = this.openedAt ? Date.now() - this.openedAt : -1;
    this.openedAt = 0;
    if (err.status === 401 && !this.renewedFor401) {
      this.renewedFor401 = true;
      this.client.renewToken().then(
        () => gen === this.gen && !this.closed && this.retry(err, 0),
        (e) => {
          if (gen !== this.gen || this.closed) return;
          this.signal("error", asError(e));
          this.end("error", err);
        }
      );
      return;
    }
    if (!transient(err) && !this.waits(err)) {
      this.end("error", err);
      return;
    }
    if (openFor >= 0 && openFor >= (this.opts.backoff?.stableMs ?? 3e4)) this.failures = 0;
    this.failures++;
    const cap = backoffMaxMs(this.opts.backoff);
    const floor = Math.max(Math.min(err.retryAfterMs ?? 0, cap), Math.min(this.retryFloor, cap));
    const jitter = backoffDelay(this.failures, this.opts.backoff);
    this.retry(err, floor > 0 ? Math.min(floor + jitter, Math.max(floor, cap)) : jitter);
  }
  retry(err, delayMs) {
    delayMs = Math.min(delayMs, maxTimeoutMs);
    const gen = this.gen;
    this.signal("reconnecting", { attempt: this.attempt + 1, delayMs, error: err });
    if (gen !== this.gen || this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => gen === this.gen && !this.closed && void this.connect(), delayMs);
  }
  /** markReady resolves ready (subclasses: once the first snapshot or list is applied). */
  markReady() {
    if (this.isReady) return;
    this.isReady = true;
    this.resolveReady();
  }
  /**
   * reconnect drops the connection and resumes at once after the last
   * event received. Call it when the app learns the network changed (a
   * phone moved from Wi-Fi to cellular, came back from the background): the
   * old connection may be dead without anyone noticing until the heartbeat
   * watchdog does (idleTimeoutMs), or, in browsers, never.
   */
  reconnect() {
    if (this.closed) return;
    clearTimeout(this.timer);
    void this.connect();
  }
  /** close ends the stream for good (closed, reason "closed"). */
  close() {
    this.end("closed");
  }
  end(reason, error) {
    if (this.closed) return;
    this.closed = true;
    this.unwatch?.();
    this.unwatch = void 0;
    this.gen++;
    clearTimeout(this.timer);
    this.conn?.close();
    this.conn = void 0;
    if (!this.isReady) {
      this.rejectReady(error ?? new RealSyncError(
        0,
        void 0,
        void 0,
        { code: "CLOSED", message: `the stream ended (${reason}) before it was ready` }
      ));
    }
    this.signal("closed", error ? { reason, error } : { reason });
  }
  /** waits tells a refusal that passes with time, retried as a transient error (the personal stream's SESSION_EXISTS). */
  waits(_err) {
    return false;
  }
  /** removed tells a refusal, after the stream was open, that means the caller is no longer in its
   * room (room streams): the reason the stream ends with, or undefined. */
  removed(_err) {
    return void 0;
  }
};
var maxTimeoutMs = 2 ** 31 - 1;
var expiringFloorMs = 5e3;
function transient(e) {
  return e.status === 0 || e.status === 408 || e.status === 429 || e.status >= 500;
}
function asError(e) {
  return e instanceof RealSyncError ? e : new RealSyncError(0, void 0, e);
}
var LiveRoom = class extends LiveStream {
  constructor(client, roomId, opts = {}) {
    super(
      client,
      `/v1/rooms/${encodeURIComponent(roomId)}/events`,
      [
        "snapshot",
        "state",
        "player_joined",
        "player_left",
        "player_connected",
        "player_disconnected",
        "room_updated",
        "message",
        "room_closed",
        "seats_reserved",
        "reservation_expired",
        "resumed"
      ],
      opts,
      () => client.roomStreamToken(roomId)
    );
    __publicField(this, "roomId", roomId);
    __publicField(this, "resumable", true);
    __publicField(this, "room");
    __publicField(this, "state", {});
    __publicField(this, "stateVersion", 0);
    /** The room version of the last event applied. */
    __publicField(this, "version", 0);
    this.open();
  }
  /**
   * removed: a reconnection refused after the stream was open with 403
   * NOT_A_MEMBER (a public room: the player was removed while away,
   * REALSYNC_DISCONNECT_GRACE ran out or kicked) ends the stream with
   * "left"; with 404 ROOM_NOT_FOUND, "room_closed" for a public room (it
   * answers non-members 403: the room is gone) and "left" for a private
   * one (it answers non-members 404 too: removed, or gone), both with that
   * error rather than "error".
   */
  removed(err) {
    if (err.status === 403 && err.code === "NOT_A_MEMBER") return "left";
    if (err.status === 404 && err.code === "ROOM_NOT_FOUND") return this.room?.visibility === "public" ? "room_closed" : "left";
    return void 0;
  }
  /** playerId is the caller's player in the room, when known (LiveOptions.playerId). */
  get playerId() {
    return this.opts.playerId ?? this.client.playerIdIn(this.roomId);
  }
  receive(type, data) {
    const e = data;
    if (e.type !== "snapshot" && e.version <= this.version) return;
    this.apply(e);
    this.version = e.version;
    if (this.room && e.type !== "snapshot") {
      this.room.version = e.version;
      this.room.updatedAt = e.ts;
    }
    if (e.type === "snapshot") this.markReady();
    const me = this.playerId;
    this.emit(e.type, e);
    this.emit("change", e);
    if (e.type === "room_closed") this.end("room_closed");
    else if (e.type === "player_left" && me !== void 0 && e.playerId === me) this.end("left");
    else if (e.type === "player_left" && me === void 0 && e.reason !== "disconnected") this.leftUnknown = true;
  }
  apply(e) {
    if (e.type === "snapshot") {
      this.room = e.room;
      this.state = { ...e.state };
      this.stateVersion = e.stateVersion;
      return;
    }
    const room = this.room;
    if (!room) return;
    const players = room.players ?? (room.players = []);
    switch (e.type) {
      case "state":
        for (const k of e.del) delete this.state[k];
        for (const [k, v] of Object.entries(e.set)) {
          Object.defineProperty(this.state, k, { value: v, enumerable: true, writable: true, configurable: true });
        }
        this.stateVersion = e.stateVersion;
        break;
      case "player_joined":
        if (!players.some((p) => p.playerId === e.player.playerId)) {
          players.push(e.player);
          room.playerCount = players.length;
        }
        if (e.reservedSeats !== void 0) room.reservedSeats = e.reservedSeats;
        break;
      case "seats_reserved":
      case "reservation_expired":
        room.reservedSeats = e.reservedSeats;
        break;
      case "player_left":
        room.players = players.filter((p) => p.playerId !== e.playerId);
        room.playerCount = room.players.length;
        break;
      case "player_connected":
      case "player_disconnected":
        for (const p of players) if (p.playerId === e.playerId) p.connected = e.type === "player_connected";
        break;
      case "room_updated":
        for (const [k, v] of Object.entries(e.changes)) {
          if (v === null) delete room[k];
          else room[k] = v;
        }
        break;
    }
  }
};
var LiveLobby = class extends LiveStream {
  constructor(client, filter, opts = {}) {
    super(
      client,
      "/v1/lobby/events",
      ["rooms", "room_added", "room_updated", "room_removed"],
      opts,
      () => client.lobbyStreamToken(),
      filter
    );
    __publicField(this, "resumable", false);
    /** The joinable rooms by id. */
    __publicField(this, "rooms", /* @__PURE__ */ new Map());
    this.open();
  }
  /** list returns the rooms fullest first, then oldest (the fill order). */
  list() {
    return [...this.rooms.values()].sort((a, b) => b.playerCount - a.playerCount || a.createdAt.localeCompare(b.createdAt));
  }
  receive(type, data) {
    const e = data;
    if (e.type === "rooms") {
      this.rooms.clear();
      for (const r of e.rooms) this.rooms.set(r.id, r);
    } else {
      const known = this.rooms.get(e.room.id);
      if (known && known.version >= e.version) return;
      if (e.type === "room_removed") this.rooms.delete(e.room.id);
      else this.rooms.set(e.room.id, { ...e.room, version: e.version });
    }
    if (e.type === "rooms") this.markReady();
    this.emit(e.type, e);
    this.emit("change", e);
  }
};
var LiveMe = class extends LiveStream {
  constructor(client, platform, opts = {}) {
    super(
      client,
      "/v1/me/events",
      [
        "snapshot",
        "presence",
        "session_replaced",
        "match_found",
        "message",
        "invite",
        "kicked",
        "banned",
        "room_closed",
        "resumed"
      ],
      opts,
      () => client.meStreamToken(),
      { platform }
    );
    __publicField(this, "platform", platform);
    __publicField(this, "resumable", true);
    /** The session of the last snapshot. */
    __publicField(this, "session");
    /** The followed users' status, by user id. */
    __publicField(this, "presence", /* @__PURE__ */ new Map());
    this.lastEventId = opts.lastEventId ?? "";
    this.open();
  }
  /**
   * waits: 409 SESSION_EXISTS (REALSYNC_SESSION_POLICY reject-new) is
   * retried with the backoff, at least its Retry-After: the other session
   * ends, or its lease lapses when its client vanished (within
   * REALSYNC_PRESENCE_TTL, 15 s by default). Each attempt is reported as
   * reconnecting; close() gives up.
   */
  waits(err) {
    return err.status === 409 && err.code === "SESSION_EXISTS";
  }
  receive(type, data) {
    const e = data;
    if (e.type === "presence") {
      const known = this.presence.get(e.userId);
      if (known && known.version > e.version) return;
      this.presence.set(e.userId, e);
    } else if (e.type === "snapshot") {
      this.session = e.session;
      this.markReady();
    }
    this.emit(e.type, e);
    this.emit("change", e);
    if (e.type === "session_replaced") this.end("left");
  }
};

// src/client.ts
var RealSyncError = class extends Error {
  constructor(status, problem, cause, opts = {}) {
    super(
      opts.message ?? problem?.detail ?? problem?.title ?? (cause instanceof Error ? cause.message : `HTTP ${status}`),
      { cause }
    );
    __publicField(this, "status");
    __publicField(this, "code");
    __publicField(this, "errors");
    __publicField(this, "problem");
    /** How long the server asked to wait (its Retry-After, in ms), when it said. */
    __publicField(this, "retryAfterMs");
    this.name = "RealSyncError";
    this.status = status;
    this.code = problem?.code ?? opts.code ?? (status === 0 ? "NETWORK" : "INTERNAL");
    this.errors = problem?.errors ?? [];
    this.problem = problem;
    this.retryAfterMs = opts.retryAfterMs;
  }
};
function retryAfterMs(header) {
  if (!header) return void 0;
  const secs = Number(header);
  if (Number.isFinite(secs) && header.trim() !== "") return Math.max(0, secs * 1e3);
  const at = Date.parse(header);
  return Number.isNaN(at) ? void 0 : Math.max(0, at - Date.now());
}
var RealSync = class {
  // the caller's playerId by room, from the answers that say
  constructor(opts) {
    __publicField(this, "baseUrl");
    __publicField(this, "token");
    /** The generated client, for anything the helpers below do not cover. */
    __publicField(this, "api");
    __publicField(this, "opts");
    __publicField(this, "renewing");
    __publicField(this, "unrenewable");
    // a token the server refused to refresh (REFRESH_NOT_ALLOWED)
    __publicField(this, "clockSkewMs", 0);
    // the token issuer's clock minus this device's (see learnClock)
    __publicField(this, "players", /* @__PURE__ */ new Map());
    __publicField(this, "refused");
    __publicField(this, "renewDelayMs", 0);
    // the backoff after the last failed renewal (freshToken)
    __publicField(this, "renewRetryAt", 0);
    this.opts = opts;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.token = opts.token;
    const timeoutMs = opts.requestTimeoutMs ?? 3e4;
    const base = opts.fetch;
    this.api = createClient({
      baseUrl: this.baseUrl,
      fetch: timeoutMs > 0 ? (req, init) => limited(base ?? globalThis.fetch, req, init, timeoutMs) : base
    });
    const copies = /* @__PURE__ */ new WeakMap();
    const auth = {
      onRequest: async ({ request, schemaPath }) => {
        const renewable = !schemaPath.startsWith("/v1/auth/");
        if (renewable) await this.identityToken().catch(() => void 0);
        if (this.token && !request.headers.has("Authorization")) {
          request.headers.set("Authorization", `Bearer ${this.token}`);
          if (renewable) copies.set(request, request.clone());
        }
        return request;
      },
      // A 401 to the client's token (its key removed from the server, an
      // early expiry) renews the token once through getToken or
      // refreshToken and sends the request again: nothing was done
      // (authentication comes first). Not POST /v1/auth/refresh: it
      // authenticates with the token refused. A token whose renewal
      // failed, or brought the same token, is not renewed again for a
      // 401: the 401 stands.
      onResponse: async ({ request, response, options }) => {
        const copy = copies.get(request);
        if (response.status !== 401 || !copy) return void 0;
        const sent = copy.headers.get("Authorization") ?? "";
        if (!await this.renewedAfter401(sent)) return void 0;
        copy.headers.set("Authorization", `Bearer ${this.token}`);
        const send = options.fetch;
        return send(copy);
      }
    };
    this.api.use(auth);
  }
  // a token refused 401 whose renewal failed or brought no other (see renewedAfter401)
  /**
   * renewedAfter401 renews the token through getToken or refreshToken
   * after a request sent with the Authorization `sent` was refused 401,
   * unless it was renewed meanwhile (another request, a stream), and tells
   * whether there is another token to send. One try per refused token.
   */
  async renewedAfter401(sent) {
    if (this.token && sent !== `Bearer ${this.token}`) return true;
    const old = this.token;
    if (!old || old === this.refused || !(this.opts.getToken || this.opts.refreshToken)) return false;
    try {
      await this.renewToken();
    } catch {
    }
    if (this.token && this.token !== old) return true;
    this.refused = old;
    return false;
  }
  /** tokenExpiresAt is when the current token expires (ms since the epoch), if it says. */
  tokenExpiresAt() {
    return tokenExpiry(this.token);
  }
  /**
   * freshToken renews the token when it expires within refreshMarginMs, or
   * at or before `before` (ms since the epoch: a stream said its token is
   * expiring). One renewal at a time; a failed renewal throws. "Within"
   * is by the clock of the token's issuer when a token told it (see
   * learnClock): a device clock set wrong by more than the margin would
   * otherwise renew before every request (ahead), or not until the token
   * is refused (behind).
   */
  async freshToken(before) {
    const exp = this.tokenExpiresAt();
    if (exp === void 0) return;
    const now = Date.now() + this.clockSkewMs;
    const due = exp - now < (this.opts.refreshMarginMs ?? 12e4) || before !== void 0 && exp <= before;
    if (!due || this.token === this.unrenewable && !this.opts.refreshToken) return;
    if (before === void 0 && exp > now && Date.now() < this.renewRetryAt) return;
    this.renewing ?? (this.renewing = this.renew().then(() => {
      this.renewDelayMs = 0;
      this.renewRetryAt = 0;
    }, (e) => {
      this.renewDelayMs = Math.min(Math.max(1e3, this.renewDelayMs * 2), 3e4);
      this.renewRetryAt = Date.now() + this.renewDelayMs;
      throw e;
    }).finally(() => this.renewing = void 0));
    await this.renewing;
  }
  // no renewal within the margin before then (ms since the epoch)
  /** hasTokenProvider says whether the identity token comes from getToken. */
  hasTokenProvider() {
    return this.opts.getToken !== void 0;
  }
  /** clockSkew is the token issuer's clock minus this device's, in ms (learnClock). */
  clockSkew() {
    return this.clockSkewMs;
  }
  /**
   * identityToken returns the identity token to send now: the token
   * provider's (getToken) when there is one, else the current token, renewed
   * first when due (see freshToken). A failed renewal throws.
   */
  async identityToken(before) {
    if (this.opts.getToken) {
      const t = await this.opts.getToken();
      if (t !== void 0 && t !== this.token) this.setToken(t);
      return this.token;
    }
    await this.freshToken(before);
    return this.token;
  }
  /**
   * renewToken gets a new identity token whether or not the current one is
   * due (after a 401): from getToken, the refreshToken callback, or
   * POST /v1/auth/refresh. Throws when none can.
   */
  async renewToken() {
    if (this.opts.getToken) {
      await this.identityToken();
      return;
    }
    this.renewing ?? (this.renewing = this.renew().finally(() => this.renewing = void 0));
    await this.renewing;
  }
  /** transport is how this client's live streams connect. */
  get transport() {
    return this.opts.transport ?? browserTransport;
  }
  async renew() {
    if (this.opts.refreshToken) {
      this.setToken(await this.opts.refreshToken());
      return;
    }
    try {
      await this.refresh();
    } catch (e) {
      if (e instanceof RealSyncError && e.code === "REFRESH_NOT_ALLOWED") this.unrenewable = this.token;
      throw e;
    }
  }
  setToken(token) {
    this.token = token;
    this.opts.onToken?.(token);
  }
  /**
   * learnClock takes the server's clock, which decides when a token is
   * refused, from a token the server issued just now (a guest, refresh or
   * stream token answer): its `iat`, to within the round trip and a second.
   * Tokens of unknown age (the `token` option, getToken's, refreshToken's:
   * a login may hand back a cached one) teach nothing.
   */
  learnClock(token) {
    const iat = tokenClaims(token)?.iat;
    if (typeof iat === "number" && Number.isFinite(iat)) this.clockSkewMs = iat * 1e3 - Date.now();
  }
  /** issued is a token answer of the server, its clock learned (learnClock). */
  issued(answer) {
    this.learnClock(answer.token);
    return answer;
  }
  /** refresh renews the token with POST /v1/auth/refresh (same user) and uses the new one. */
  async refresh() {
    const g = this.issued(await this.call(this.api.POST("/v1/auth/refresh", {})));
    this.setToken(g.token);
    return g;
  }
  /** roomStreamToken gets a token that opens the room's event stream for 60 s (members). */
  roomStreamToken(roomId) {
    return this.call(this.api.POST("/v1/rooms/{roomId}/stream-token", { params: { path: { roomId } } })).then((t) => this.issued(t));
  }
  /** lobbyStreamToken gets a token that opens the lobby stream for 60 s. */
  lobbyStreamToken() {
    return this.call(this.api.POST("/v1/lobby/stream-token", {})).then((t) => this.issued(t));
  }
  /** meStreamToken gets a token that opens the caller's personal stream for 60 s (players only). */
  meStreamToken() {
    return this.call(this.api.POST("/v1/me/stream-token", {})).then((t) => this.issued(t));
  }
  /** getPresence returns the online status of each of userIds (1..100), in the order given. */
  async getPresence(userIds) {
    const r = await this.call(this.api.GET("/v1/presence", { params: { query: { userIds } } }));
    return r.users;
  }
  /** setFollowing replaces the users whose status changes reach the personal stream (0..500); returns them sorted. */
  async setFollowing(userIds) {
    const r = await this.call(this.api.PUT("/v1/me/following", { body: { userIds } }));
    return r.userIds;
  }
  /** joinParty puts the caller in leaderUserId's party, replacing any other, for 24 hours (joining
   * again renews it): where the server asks a party's consent (REALSYNC_PARTY_CONSENT party,
   * production's default), only that leader's tickets may name the caller. Tells nobody: the
   * game's own invite (a direct message) asks. */
  joinParty(leaderUserId) {
    return this.call(this.api.PUT("/v1/me/party", { body: { leaderUserId } }));
  }
  /** getParty is the caller's party: 404 PARTY_NOT_FOUND when in none. */
  getParty() {
    return this.call(this.api.GET("/v1/me/party"));
  }
  /** listPartyMembers is the users in the caller's party (who joined it naming the caller, and
   * have neither left, joined another, nor let it expire): the most recently joined first, at
   * most 100. */
  async listPartyMembers() {
    const r = await this.call(this.api.GET("/v1/me/party/members"));
    return r.members;
  }
  /** leaveParty takes the caller out of their party (in none: done as well). */
  async leaveParty() {
    await this.call(this.api.DELETE("/v1/me/party"));
  }
  /** sendDirectMessage sends userId a `message` event on their personal stream (LiveMe): at once
   * to their open sessions, later to each platform without one (offline delivery). idempotencyKey
   * makes a retry safe, after a 503 STORE_UNAVAILABLE too: the same key and message get the first
   * send's answer, and nothing is sent again (the inbox remembers its keys for 10 minutes). */
  sendDirectMessage(userId, body, idempotencyKey) {
    const header = idempotencyKey === void 0 ? {} : { "Idempotency-Key": idempotencyKey };
    return this.call(this.api.POST("/v1/users/{userId}/messages", { params: { path: { userId }, header }, body }));
  }
  /** invite sends userId an `invite` event to a room the caller is in: its id, name, mode and
   * region, and a private room's invite code (acceptInvite joins with it). idempotencyKey makes a
   * retry safe, as sendDirectMessage's: the same key and invite get the first send's answer, and
   * nothing is sent again; without one, an invite retried after a lost answer arrives twice. */
  invite(roomId, userId, idempotencyKey) {
    const header = idempotencyKey === void 0 ? {} : { "Idempotency-Key": idempotencyKey };
    return this.call(this.api.POST("/v1/rooms/{roomId}/invites", { params: { path: { roomId }, header }, body: { userId } }));
  }
  /** acceptInvite joins the room of an invite: by its code for a private room, else by id. */
  acceptInvite(invite) {
    return invite.inviteCode ? this.joinByCode(invite.inviteCode) : this.joinRoom(invite.roomId);
  }
  async call(p) {
    let r;
    try {
      r = await p;
    } catch (e) {
      const timedOut = e instanceof Error && e.name === "TimeoutError";
      throw new RealSyncError(
        0,
        void 0,
        e,
        { message: timedOut ? `no answer within ${this.opts.requestTimeoutMs ?? 3e4} ms (requestTimeoutMs)` : void 0 }
      );
    }
    if (!r.response.ok) {
      throw new RealSyncError(
        r.response.status,
        isProblem(r.error) ? r.error : void 0,
        void 0,
        { retryAfterMs: retryAfterMs(r.response.headers.get("Retry-After")) }
      );
    }
    return r.data;
  }
  /** guest gets a guest token and uses it from now on. */
  async guest(name) {
    const g = this.issued(await this.call(this.api.POST("/v1/auth/guest", { body: name === void 0 ? {} : { name } })));
    this.setToken(g.token);
    return g;
  }
  /**
   * playerIdIn is the caller's playerId in a room, as this client last
   * learned it (createRoom, joinRoom, joinByCode, quickJoin, myRooms): live
   * streams use it to tell the caller's own player_left.
   */
  playerIdIn(roomId) {
    return this.players.get(roomId);
  }
  /** joined remembers the caller's playerId in a room. */
  joined(r) {
    this.players.set(r.room.id, r.playerId);
    return r;
  }
  /** createRoom makes a room, the caller its owner, player 1. idempotencyKey makes a retry
   * safe: the same key and body get the first answer again, not a second room (after a 503
   * STORE_UNAVAILABLE the room may exist: myRooms tells). */
  async createRoom(body, idempotencyKey) {
    const header = idempotencyKey === void 0 ? {} : { "Idempotency-Key": idempotencyKey };
    return this.joined(await this.call(this.api.POST("/v1/rooms", { params: { header }, body })));
  }
  getRoom(roomId) {
    return this.call(this.api.GET("/v1/rooms/{roomId}", { params: { path: { roomId } } }));
  }
  updateRoom(roomId, body) {
    return this.call(this.api.PATCH("/v1/rooms/{roomId}", { params: { path: { roomId } }, body }));
  }
  async deleteRoom(roomId) {
    await this.call(this.api.DELETE("/v1/rooms/{roomId}", { params: { path: { roomId } } }));
  }
  async joinRoom(roomId) {
    return this.joined(await this.call(this.api.POST("/v1/rooms/{roomId}/join", { params: { path: { roomId } } })));
  }
  async joinByCode(inviteCode) {
    return this.joined(await this.call(this.api.POST("/v1/rooms/join-by-code", { body: { inviteCode } })));
  }
  async leaveRoom(roomId) {
    await this.call(this.api.POST("/v1/rooms/{roomId}/leave", { params: { path: { roomId } } }));
  }
  async kick(roomId, playerId) {
    await this.call(this.api.DELETE("/v1/rooms/{roomId}/players/{playerId}", {
      params: { path: { roomId, playerId: String(playerId) } }
    }));
  }
  /** reserveSeats holds a seat of a waiting room for each user until they join or ttlSeconds
   * pass (default 15, at most 300): the owner, or an API key with rooms:write (a matchmaker).
   * Refused (no seat held): 409 ROOM_NOT_JOINABLE unless waiting, 409 USER_BANNED when the room
   * banned any of userIds (servers before it: 403 BANNED), 409 ROOM_FULL. */
  reserveSeats(roomId, userIds, ttlSeconds) {
    return this.call(this.api.POST("/v1/rooms/{roomId}/reservations", {
      params: { path: { roomId } },
      body: { userIds, ttlSeconds }
    }));
  }
  /** createTicket queues the caller for a match of a mode (with partyUserIds, as their party's
   * leader): one active ticket per user. Each party member must have joined the caller's party
   * (joinParty) where the server asks a party's consent (REALSYNC_PARTY_CONSENT party,
   * production's default; with follow, follow the caller: setFollowing): else 403
   * PARTY_CONSENT_REQUIRED. The match arrives as `match_found` on the personal
   * stream (LiveMe) and on the ticket (getTicket). idempotencyKey makes a retry safe: the same
   * key and body get the same ticket, as it is now; once it ended and is gone, 404
   * TICKET_NOT_FOUND (queue again under a new key). */
  async createTicket(body, idempotencyKey) {
    const header = idempotencyKey === void 0 ? {} : { "Idempotency-Key": idempotencyKey };
    return (await this.call(this.api.POST("/v1/matchmaking/tickets", { params: { header }, body }))).ticket;
  }
  /** getTicket is a ticket of the caller: searching (its window, time waited), matched (roomId), expired or cancelled. */
  async getTicket(ticketId) {
    return (await this.call(this.api.GET("/v1/matchmaking/tickets/{ticketId}", { params: { path: { ticketId } } }))).ticket;
  }
  /** cancelTicket stops a search; a ticket already cancelled or expired is left as it is, a
   * matched one rejects with TICKET_MATCHED (409): its seat is held, join or leave the room. */
  async cancelTicket(ticketId) {
    await this.call(this.api.DELETE("/v1/matchmaking/tickets/{ticketId}", { params: { path: { ticketId } } }));
  }
  getState(roomId) {
    return this.call(this.api.GET("/v1/rooms/{roomId}/state", { params: { path: { roomId } } }));
  }
  /** patchState merge-patches the state (null deletes a key); ifMatch guards against lost updates. */
  patchState(roomId, patch, ifMatch) {
    return this.call(this.api.PATCH("/v1/rooms/{roomId}/state", {
      params: { path: { roomId }, header: ifMatch === void 0 ? {} : { "If-Match": `"${ifMatch}"` } },
      body: patch
    }));
  }
  /** sendMessage sends a message to the room. idempotencyKey makes a retry safe, after a 503
   * STORE_UNAVAILABLE too: the same key and message get the first message's version, and
   * nothing is sent again (the room remembers its keys for 10 minutes). */
  sendMessage(roomId, body, idempotencyKey) {
    const header = idempotencyKey === void 0 ? {} : { "Idempotency-Key": idempotencyKey };
    return this.call(this.api.POST("/v1/rooms/{roomId}/messages", { params: { path: { roomId }, header }, body }));
  }
  async messages(roomId, query = {}) {
    const q = {};
    if (query.limit !== void 0) q.limit = String(query.limit);
    if (query.before !== void 0) q.before = String(query.before);
    const r = await this.call(this.api.GET("/v1/rooms/{roomId}/messages", { params: { path: { roomId }, query: q } }));
    return r.messages;
  }
  listRooms(query = {}) {
    const { attributes, ...rest } = query;
    return this.call(this.api.GET("/v1/rooms", {
      params: { query: rest },
      querySerializer: () => listQuery(rest, attributes)
    }));
  }
  /** quickJoin joins the best joinable room of a mode, or makes one (body.create).
   * idempotencyKey makes a retry safe: the same key and body get the first answer again. */
  async quickJoin(body, idempotencyKey) {
    const header = idempotencyKey === void 0 ? {} : { "Idempotency-Key": idempotencyKey };
    return this.joined(await this.call(this.api.POST("/v1/matchmaking/quick-join", { params: { header }, body })));
  }
  /** myRooms returns every room the caller is in, newest first: it follows
   * the server's pages (100 rooms each) to the last. myRoomsPage reads one. */
  async myRooms() {
    const all = [];
    let cursor;
    do {
      const page = await this.myRoomsPage({ limit: 100, cursor });
      all.push(...page.rooms);
      cursor = page.nextCursor ?? void 0;
    } while (cursor);
    return all;
  }
  /** myRoomsPage reads one page of the caller's rooms (limit 1..100, default 20). */
  async myRoomsPage(query = {}) {
    const r = await this.call(this.api.GET("/v1/me/rooms", { params: { query } }));
    for (const room of r.rooms) this.players.set(room.id, room.playerId);
    return { rooms: r.rooms, nextCursor: r.nextCursor };
  }
  lobbyStats() {
    return this.call(this.api.GET("/v1/lobby/stats", {}));
  }
  /** live opens a room's event stream and keeps a local copy of the room and its state. */
  live(roomId, opts = {}) {
    return new LiveRoom(this, roomId, opts);
  }
  /** lobby opens the live list of joinable rooms of a mode and region (any when absent). */
  /** me opens the caller's personal stream, a session on platform: its own
   * status, the followed users' presence, session_replaced (ends it, reason "left"). */
  me(platform, opts = {}) {
    return new LiveMe(this, platform, opts);
  }
  lobby(filter = {}, opts = {}) {
    return new LiveLobby(this, filter, opts);
  }
  /**
   * streamUrl is an event stream's URL with its query, and a stream token as
   * token when given (the browser's EventSource cannot set headers; the
   * server refuses identity tokens in URLs).
   */
  streamUrl(path, streamToken, query = {}) {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query)) if (v) u.searchParams.set(k, v);
    if (streamToken) u.searchParams.set("token", streamToken);
    return u.toString();
  }
  /** fetchImpl is the fetch this client calls (RealSyncOptions.fetch, else the global one). */
  get fetchImpl() {
    return this.opts.fetch ?? globalThis.fetch;
  }
};
function tokenClaims(token) {
  const payload = token?.split(".")[1];
  if (!payload) return void 0;
  try {
    const b64 = payload.replace(/-/g, "+").replace(/_/g, "/");
    const c = JSON.parse(atob(b64 + "=".repeat((4 - b64.length % 4) % 4)));
    return typeof c === "object" && c !== null ? c : void 0;
  } catch {
    return void 0;
  }
}
function tokenExpiry(token) {
  const exp = tokenClaims(token)?.exp;
  return typeof exp === "number" ? exp * 1e3 : void 0;
}
async function limited(f, req, init, ms) {
  const ctl = new AbortController();
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const e = new DOMException(`no answer within ${ms} ms`, "TimeoutError");
      ctl.abort(e);
      reject(e);
    }, Math.min(ms, 2 ** 31 - 1));
  });
  const forward = () => ctl.abort(req.signal.reason);
  if (req.signal.aborted) forward();
  else req.signal.addEventListener("abort", forward, { once: true });
  const answer = (async () => {
    const res = await f(req, { ...init, signal: ctl.signal });
    const body = await res.arrayBuffer();
    const empty = [101, 204, 205, 304].includes(res.status);
    return new Response(empty ? null : body, { status: res.status, statusText: res.statusText, headers: res.headers });
  })();
  answer.catch(() => void 0);
  try {
    return await Promise.race([answer, deadline]);
  } finally {
    clearTimeout(timer);
    req.signal.removeEventListener("abort", forward);
  }
}
function isProblem(e) {
  return typeof e === "object" && e !== null && "code" in e && "status" in e;
}
function listQuery(q, attrs) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== void 0) s.set(k, String(v));
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (typeof v === "object") {
      for (const [op, n] of Object.entries(v)) if (n !== void 0) s.set(`attr.${k}.${op}`, String(n));
    } else {
      s.set(`attr.${k}`, String(v));
    }
  }
  return s.toString();
}
export {
  LiveLobby,
  LiveMe,
  LiveRoom,
  LiveStream,
  RealSync,
  RealSyncError,
  backoffDelay,
  backoffMaxMs,
  browserTransport,
  eventSourceTransport,
  isProblem,
  retryAfterMs,
  tokenClaims,
  tokenExpiry
};
