using System;
using System.Net.Http;
using System.Net.Http.Headers;
using System.Threading;
using System.Threading.Tasks;

namespace RealSync
{
    /// <summary>LiveOptions configure a live room or lobby.</summary>
    public class LiveOptions
    {
        /// <summary>
        /// The caller's playerId in the room: its own player_left ends the stream (reason "left").
        /// Default: the playerId the client got in the room (RealSyncClient.PlayerIdIn).
        /// </summary>
        public int? PlayerId;
        /// <summary>
        /// Open the stream with a stream token in the URL (POST .../stream-token before
        /// each connection) instead of the identity token in the Authorization header.
        /// </summary>
        public bool UseStreamToken;
        /// <summary>Where events are applied and raised (default Auto: the creating thread's SynchronizationContext, else Immediate).</summary>
        public LiveDispatch Dispatch = LiveDispatch.Auto;
        /// <summary>The context of LiveDispatch.Context.</summary>
        public SynchronizationContext Context;
        /// <summary>The reconnect delays.</summary>
        public Backoff Backoff = new Backoff();
        /// <summary>
        /// The heartbeat watchdog: a connection that delivers no byte (no answer, event or heartbeat) this long
        /// is taken for dead (a half-open connection after a network change) and resumed after the last event,
        /// as any drop (Reconnecting, code NETWORK); checked every third of it, so noticed within 4/3 of it.
        /// Default 45 s: three of the server's 15 s heartbeats.
        /// </summary>
        public TimeSpan IdleTimeout = TimeSpan.FromSeconds(45);
        /// <summary>
        /// The personal stream (Me) only: resume after this id, the LastEventId of an earlier stream the app
        /// kept (e.g. across restarts): the events after it come again, also those a connection that died
        /// unnoticed took but never handed over; Ready completes once the replay is over. Without it a new
        /// stream starts after what the server last wrote to this platform. (A room stream needs none: a new
        /// one starts with a snapshot of the whole room and state.)
        /// </summary>
        public string LastEventId;
        /// <summary>Called with an exception thrown by an event handler in LiveDispatch.Immediate (the stream goes on).</summary>
        public Action<Exception> HandlerError;
    }

    /// <summary>ConnectingEvent: a connection attempt starts (Attempt 1 after an open stream, then 2, 3, ... while failing).</summary>
    public struct ConnectingEvent
    {
        /// <summary>The attempt number.</summary>
        public int Attempt;
    }

    /// <summary>OpenEvent: the server accepted the stream.</summary>
    public struct OpenEvent { }

    /// <summary>ReconnectingEvent: a transient failure; the next attempt starts after DelayMs.</summary>
    public struct ReconnectingEvent
    {
        /// <summary>The next attempt's number.</summary>
        public int Attempt;
        /// <summary>The wait before it (ms).</summary>
        public int DelayMs;
        /// <summary>What failed.</summary>
        public RealSyncException Error;
    }

    /// <summary>
    /// ResumedEvent: the stream caught up after a reconnection. Snapshot false:
    /// the server replayed the missed events from Last-Event-ID (zero or more,
    /// applied before this) and said so with its resumed event; Snapshot true:
    /// it sent a snapshot (room) or a fresh list (lobby) instead, applied after this.
    /// </summary>
    public struct ResumedEvent
    {
        /// <summary>True when the server sent a snapshot (room) or a fresh list (lobby) instead of replaying the missed events.</summary>
        public bool Snapshot;
    }

    /// <summary>Why a live stream ended.</summary>
    public enum CloseReason
    {
        /// <summary>"closed": by the caller (Close or Dispose).</summary>
        Closed,
        /// <summary>"room_closed": the room was closed.</summary>
        RoomClosed,
        /// <summary>"left": the caller's own player left or was kicked.</summary>
        Left,
        /// <summary>"error": a permanent error (ClosedEvent.Error).</summary>
        Error,
    }

    /// <summary>ClosedEvent: the stream ended for good.</summary>
    public struct ClosedEvent
    {
        /// <summary>Why.</summary>
        public CloseReason Reason;
        /// <summary>
        /// The permanent error (Reason Error); or, Reason Left, the refusal that ended a room stream whose
        /// player was removed while it was away (403 NOT_A_MEMBER, or a private room's 404 ROOM_NOT_FOUND,
        /// on a reconnection); or, Reason RoomClosed, a public room's 404 ROOM_NOT_FOUND on a reconnection
        /// (deleted meanwhile); else null.
        /// </summary>
        public RealSyncException Error;

        /// <summary>ReasonName is the reason as the TypeScript SDK names it: closed, room_closed, left, error.</summary>
        public string ReasonName
        {
            get
            {
                switch (Reason)
                {
                    case CloseReason.RoomClosed: return "room_closed";
                    case CloseReason.Left: return "left";
                    case CloseReason.Error: return "error";
                    default: return "closed";
                }
            }
        }
    }

    /// <summary>TokenExpiringEvent: the stream ends because the identity token expires soon; the SDK renews it and resumes.</summary>
    public struct TokenExpiringEvent
    {
        /// <summary>When the token expires.</summary>
        public DateTime ExpiresAt;
    }

    /// <summary>
    /// LiveStream is an event stream that resumes. Each connection is a GET
    /// with the identity token in the Authorization header (or a fresh stream
    /// token in the URL) and the last event id in Last-Event-ID. Transient
    /// failures (no answer, a dropped connection, 408, 429, 5xx) reconnect
    /// after Backoff, at least Retry-After, and at least a retry: field the
    /// connection ended with, no event after it (the last line of a stream
    /// whose server shuts down: 0.5–2 s; the whole answer of a server that
    /// cannot reach its store: 5 s), which also paces the attempts after it
    /// until a connection brings a retry: or an event (a stream's first
    /// retry:, superseded by its events, does not slow the reconnection of
    /// a dropped stream); Retry-After and retry: count up to Backoff.MaxMs
    /// however long they ask; a 401 renews the token once and
    /// retries; any other refusal (403, 404, 410, ...) ends the stream with
    /// the problem (but a room stream refused 403 NOT_A_MEMBER or 404 after it
    /// was open ends as Left or RoomClosed, and a personal stream's 409 SESSION_EXISTS is
    /// retried: see LiveRoom and LiveMe). A connection silent for
    /// LiveOptions.IdleTimeout is dropped and resumed; Reconnect() does it at
    /// once (call it on a network change). A token_expiring event renews the
    /// token and resumes at once. All C# events are raised where
    /// LiveOptions.Dispatch says, in order.
    /// </summary>
    public abstract class LiveStream : IDisposable
    {
        /// <summary>A connection attempt starts.</summary>
        public event Action<ConnectingEvent> Connecting;
        /// <summary>The server accepted the stream.</summary>
        public event Action<OpenEvent> Open;
        /// <summary>A transient failure: the stream reconnects after a delay.</summary>
        public event Action<ReconnectingEvent> Reconnecting;
        /// <summary>The stream caught up after a reconnection (see ResumedEvent).</summary>
        public event Action<ResumedEvent> Resumed;
        /// <summary>The stream ended for good.</summary>
        public event Action<ClosedEvent> Closed;
        /// <summary>Every error, transient or not.</summary>
        public event Action<RealSyncException> Error;
        /// <summary>The identity token expires soon: the SDK renews it and resumes.</summary>
        public event Action<TokenExpiringEvent> TokenExpiring;

        /// <summary>The client the stream authenticates with.</summary>
        protected readonly RealSyncClient Client;
        /// <summary>The options.</summary>
        protected readonly LiveOptions Options;
        readonly Dispatcher dispatcher;
        readonly string path;
        readonly CancellationTokenSource stop = new CancellationTokenSource();
        readonly TaskCompletionSource<bool> ready = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        int started;
        Task running = Task.CompletedTask; // the connection loop, once started
        int ended; // 1 once the end was decided (by the loop or Close)
        volatile bool silenced; // set by Close, and once Closed was raised: posted work is skipped
        volatile string lastEventId = "";
        volatile bool maybeLeft; // the last event was a player_left that may be the caller's own
        CancellationTokenSource kick = new CancellationTokenSource(); // cancelled by Reconnect, then replaced


        internal LiveStream(RealSyncClient client, string path, LiveOptions options)
        {
            Client = client;
            this.path = path;
            Options = options;
            dispatcher = new Dispatcher(options.Dispatch, options.Context, options.HandlerError);
            client.Track(this);
        }

        /// <summary>
        /// The id of the last event received (sent as Last-Event-ID on reconnection). With LiveDispatch.Queue or
        /// Context the stream reads ahead of the handlers: in a handler, the personal stream's position to keep
        /// is the event's own (UserEvent.LastEventId).
        /// </summary>
        public string LastEventId { get { return lastEventId; } }

        /// <summary>True once the stream ended (the Closed event is raised where events are).</summary>
        public bool IsClosed { get { return Volatile.Read(ref ended) == 1; } }

        /// <summary>
        /// Ready completes once the first snapshot (room) or rooms list (lobby)
        /// has been applied, and fails with the RealSyncException when the
        /// stream ends permanently before that (cancelled by Close).
        /// With LiveDispatch.Queue it completes within DispatchPending().
        /// </summary>
        public Task Ready { get { return ready.Task; } }

        /// <summary>Start opens the stream (once; later calls do nothing). Subscribe to the events first.</summary>
        public void Start()
        {
            if (Interlocked.Exchange(ref started, 1) == 1) return;
            // published before it starts, so that a CloseAsync meanwhile waits for it
            var loop = new Task<Task>(Run);
            Volatile.Write(ref running, loop.Unwrap());
            loop.Start(TaskScheduler.Default);
        }

        /// <summary>DispatchPending applies the queued events and raises their C# events on the caller's thread (LiveDispatch.Queue); returns how many.</summary>
        public int DispatchPending() { return dispatcher.DispatchPending(); }

        /// <summary>
        /// Close ends the stream: Closed (reason Closed) is the last C# event it
        /// raises; events received but not yet raised are dropped, and the
        /// model (room, state, version, rooms) no longer changes.
        /// </summary>
        public void Close()
        {
            if (Interlocked.Exchange(ref ended, 1) == 1) return;
            silenced = true;
            stop.Cancel();
            Client.Untrack(this);
            dispatcher.Post(() => { ready.TrySetCanceled(); Raise(Closed, new ClosedEvent { Reason = CloseReason.Closed }); });
        }

        /// <summary>
        /// Reconnect drops the current connection (or ends the wait before the next attempt) and
        /// connects again at once, resuming after the last event received. Call it when the app learns
        /// the network changed (Wi-Fi to cellular, back from the background): the old connection may be
        /// dead with nobody noticing until the watchdog does (LiveOptions.IdleTimeout). No Reconnecting
        /// event is raised for it; Connecting, Open and Resumed are. Does nothing once the stream ended.
        /// </summary>
        public void Reconnect()
        {
            if (IsClosed) return;
            Interlocked.Exchange(ref kick, new CancellationTokenSource()).Cancel();
        }

        /// <summary>Dispose closes the stream.</summary>
        public void Dispose() { Close(); }

        /// <summary>
        /// CloseAsync closes the stream (Close) and completes once its connection is let go: the
        /// request ended, its timers disposed. A program that exits right after closing a stream
        /// awaits it: Mono aborts its timer thread at exit, and a connection still winding down then
        /// could crash the exit (an aborted sort of the timers rethrown). Never fails. Await it,
        /// never block on it from an event handler: with Immediate dispatch the loop it waits
        /// for is the one running that handler.
        /// </summary>
        public Task CloseAsync()
        {
            Close();
            return Volatile.Read(ref running);
        }

        /// <summary>
        /// Post runs work where events are raised, after everything posted
        /// before; work that would run after Close() or after Closed is skipped.
        /// </summary>
        protected void Post(Action work) { dispatcher.Post(() => { if (!silenced) work(); }); }

        /// <summary>Raise calls an event's handlers.</summary>
        protected static void Raise<T>(Action<T> handlers, T e) { if (handlers != null) handlers(e); }

        /// <summary>MarkReady completes Ready (call where events are raised).</summary>
        protected void MarkReady() { ready.TrySetResult(true); }

        /// <summary>Query is the stream URL's query (without the token), e.g. "?mode=x"; "" for none.</summary>
        protected virtual string Query() { return ""; }

        /// <summary>StreamToken fetches a stream token for this stream.</summary>
        protected abstract Task<StreamToken> StreamToken(CancellationToken ct);

        /// <summary>
        /// Receive handles one event of the stream on the stream's thread: it
        /// posts the work that applies it. It returns the reason the stream
        /// ends with after this event (room_closed, own player_left), or null.
        /// </summary>
        protected abstract CloseReason? Receive(string type, JsonObject data);

        /// <summary>EndWith ends the stream for a reason other than Close (once).</summary>
        void EndWith(CloseReason reason, RealSyncException error)
        {
            if (Interlocked.Exchange(ref ended, 1) == 1) return;
            stop.Cancel();
            Client.Untrack(this);
            dispatcher.Post(() =>
            {
                silenced = true; // nothing after Closed
                if (error != null) ready.TrySetException(error);
                else ready.TrySetCanceled();
                Raise(Closed, new ClosedEvent { Reason = reason, Error = error });
            });
        }

        void Fail(RealSyncException e) { Post(() => Raise(Error, e)); }

        /// <summary>
        /// ResumesFromLastEventId tells whether a reconnection sends Last-Event-ID
        /// (a room's log replays from it; the lobby always starts over from its list).
        /// </summary>
        protected virtual bool ResumesFromLastEventId { get { return true; } }

        /// <summary>
        /// MaybeLeft marks the event being received as a player_left that may be
        /// the caller's own (its playerId is not known): if the next connection is
        /// refused with 403 NOT_A_MEMBER or 404, the stream ends with reason Left.
        /// Any later event clears the mark.
        /// </summary>
        protected void MaybeLeft() { maybeLeft = true; }

        /// <summary>ResumeAfter makes the first connection resume after id (LiveOptions.LastEventId); call it before Start.</summary>
        protected void ResumeAfter(string id) { lastEventId = id ?? ""; }

        /// <summary>Waits tells a refusal that passes with time, retried as a transient failure (the personal stream's SESSION_EXISTS).</summary>
        protected virtual bool Waits(RealSyncException e) { return false; }

        /// <summary>Removed tells a refusal that, after the stream was open, means the caller is no longer in its room (room streams): the reason the stream ends with, else null.</summary>
        protected virtual CloseReason? Removed(RealSyncException e) { return null; }

        /// <summary>
        /// ExpiringFloor: while the token of a token_expiring has this long left,
        /// a renewal that failed on the way (RefreshFailure(...).Transient: no
        /// answer, 408, 429, 5xx, or a RefreshToken that threw something else
        /// than a RealSyncException) is handled as a dropped connection (Error,
        /// Reconnecting after a backoff, with the token that is still valid), and
        /// a RefreshToken still returning the expiring token makes the stream
        /// reconnect with it at once; the server keeps such a stream for half of
        /// what is left and sends token_expiring again, which asks again. Below
        /// it, the stream ends with 401 UNAUTHENTICATED (after an Error with the
        /// renewal's failure, if it failed). The TypeScript SDK's 5 s.
        /// </summary>
        static readonly TimeSpan ExpiringFloor = TimeSpan.FromSeconds(5);

        /// <summary>RefreshFailure is the error a failed token renewal is reported with.</summary>
        static RealSyncException RefreshFailure(Exception e)
        {
            return e as RealSyncException ?? new RealSyncException(0, "TOKEN_REFRESH_FAILED",
                detail: "renewing the identity token failed: " + e.Message, inner: e);
        }

        /// <summary>Run runs the stream to its end: whatever fails, the stream ends with Closed.</summary>
        async Task Run()
        {
            try
            {
                await Loop().ConfigureAwait(false);
            }
            catch (Exception e)
            {
                if (Volatile.Read(ref ended) == 1) return;
                var err = e as RealSyncException ?? new RealSyncException(0, "INTERNAL", detail: "the live stream failed: " + e.Message, inner: e);
                Fail(err);
                EndWith(CloseReason.Error, err);
            }
        }

        async Task Loop()
        {
            var attempt = 0;
            var failures = 0;
            var everOpen = false;
            var renewedFor401 = false;
            var retryFloor = 0; // the retry: a connection ended with (see the summary)
            var ct = stop.Token;
            while (!ct.IsCancellationRequested)
            {
                attempt++;
                var a = attempt;
                var kicked = Volatile.Read(ref kick).Token; // Reconnect() ends this attempt
                Post(() => Raise(Connecting, new ConnectingEvent { Attempt = a }));
                RealSyncException err = null;
                var openedAt = DateTime.MinValue;
                var outcome = new Outcome();
                try
                {
                    await Connect(ct, kicked, () =>
                    {
                        openedAt = DateTime.UtcNow;
                        attempt = 0;
                        renewedFor401 = false;
                        outcome.Resuming = everOpen;
                        everOpen = true;
                        Post(() => Raise(Open, new OpenEvent()));
                    }, outcome).ConfigureAwait(false);
                    if (outcome.End.HasValue) { EndWith(outcome.End.Value, null); return; }
                    if (outcome.Expiring.HasValue)
                    {
                        var exp = outcome.Expiring.Value;
                        Post(() => Raise(TokenExpiring, new TokenExpiringEvent { ExpiresAt = exp }));
                        Exception cause = null;
                        try
                        {
                            await Client.FreshTokenAsync(exp, ct).ConfigureAwait(false);
                        }
                        catch (OperationCanceledException) when (ct.IsCancellationRequested)
                        {
                            return;
                        }
                        catch (Exception x)
                        {
                            cause = x;
                        }
                        // See ExpiringFloor: while the token has that long left, a renewal is tried again.
                        var enough = exp - DateTime.UtcNow >= ExpiringFloor;
                        if (cause != null)
                        {
                            var e = RefreshFailure(cause);
                            if (!e.Transient || !enough)
                            {
                                Fail(e);
                                EndWith(CloseReason.Error, new RealSyncException(401, "UNAUTHENTICATED", "Unauthenticated",
                                    "the identity token expires at " + exp.ToString("o") + " and renewing it failed: " +
                                    (cause is RealSyncException ? e.Status + " " + e.Code + " " + e.Message : cause.Message), inner: cause));
                                return;
                            }
                            err = e; // as a dropped connection: after a backoff, with the token that is still valid
                        }
                        else
                        {
                            var renewed = RealSyncClient.TokenExpiry(Client.Token);
                            if (renewed.HasValue && renewed.Value > exp) continue; // resume at once with the renewed token
                            var refresher = Client.HasRefreshToken;
                            if (refresher && enough) continue; // with the same token: RefreshToken may have a new one by the next token_expiring
                            // Resuming with the same token would end the same way ever sooner.
                            var e = new RealSyncException(401, "UNAUTHENTICATED", "Unauthenticated", "the identity token expires at " + exp.ToString("o") +
                                (refresher
                                    ? " and RealSyncOptions.RefreshToken still returns it: return a new token at least a minute before the old one expires"
                                    : " and was not renewed: set RealSyncOptions.RefreshToken for tokens your login signs"));
                            Fail(e);
                            EndWith(CloseReason.Error, e);
                            return;
                        }
                    }
                    if (err == null) err = new RealSyncException(0, "NETWORK", detail: "the event stream ended");
                }
                catch (OperationCanceledException) when (ct.IsCancellationRequested)
                {
                    return;
                }
                catch (RealSyncException e)
                {
                    err = e;
                }
                catch (Exception e)
                {
                    if (ct.IsCancellationRequested) return;
                    err = new RealSyncException(0, "NETWORK", detail: "event stream: " + e.Message, inner: e);
                }
                if (ct.IsCancellationRequested) return;
                if (outcome.RetryFloor.HasValue) retryFloor = outcome.RetryFloor.Value;
                if (kicked.IsCancellationRequested) continue; // Reconnect(): at once
                if (maybeLeft && (err.Code == "NOT_A_MEMBER" || err.Status == 404))
                {
                    // the player_left just received was the caller's own
                    EndWith(CloseReason.Left, null);
                    return;
                }
                Fail(err);
                var removed = everOpen ? Removed(err) : null;
                if (removed.HasValue)
                {
                    EndWith(removed.Value, err); // removed while away, or the room is gone
                    return;
                }
                if (err.Status == 401 && !renewedFor401)
                {
                    renewedFor401 = true;
                    try
                    {
                        await Client.RenewTokenAsync(ct).ConfigureAwait(false);
                    }
                    catch (OperationCanceledException) when (ct.IsCancellationRequested)
                    {
                        return;
                    }
                    catch (Exception x)
                    {
                        Fail(RefreshFailure(x));
                        EndWith(CloseReason.Error, err);
                        return;
                    }
                    var next = attempt + 1;
                    Post(() => Raise(Reconnecting, new ReconnectingEvent { Attempt = next, DelayMs = 0, Error = err }));
                    continue;
                }
                if (!err.Transient && !Waits(err))
                {
                    EndWith(CloseReason.Error, err);
                    return;
                }
                if (openedAt != DateTime.MinValue && (DateTime.UtcNow - openedAt).TotalMilliseconds >= Options.Backoff.StableMs) failures = 0;
                failures++;
                var delay = Options.Backoff.Delay(failures);
                // The server's asks count up to Backoff.MaxMs: a mistaken or hostile
                // Retry-After or retry: must not stall the stream for days.
                var cap = Options.Backoff.MaxMs;
                if (err.RetryAfter.HasValue) delay = Math.Max(delay, (int)Math.Min(err.RetryAfter.Value.TotalMilliseconds, cap));
                delay = Math.Max(delay, Math.Min(retryFloor, cap));
                var nextAttempt = attempt + 1;
                var d = delay;
                var e2 = err;
                Post(() => Raise(Reconnecting, new ReconnectingEvent { Attempt = nextAttempt, DelayMs = d, Error = e2 }));
                // The attempt's own token: a Reconnect() since it began (the network callback of another
                // thread, an Error handler run inline) ends the wait, as one during it does.
                using (var wait = CancellationTokenSource.CreateLinkedTokenSource(ct, kicked))
                {
                    try { await Task.Delay(delay, wait.Token).ConfigureAwait(false); }
                    catch (OperationCanceledException) { if (ct.IsCancellationRequested) return; } // else Reconnect()
                }
            }
        }

        /// <summary>Cancels a connection that brings nothing (no answer, no byte) for a whole idle
        /// timeout: Touch() on the answer and on every read; one timer checks every third of the
        /// timeout, so a connection is given up between one and four thirds of it. One timer per
        /// connection, not one change per read: Mono's timer thread sorts its timers on every
        /// change, and a program that ended while it sorted crashed at exit (an aborted sort is
        /// rethrown as InvalidOperationException).</summary>
        sealed class Watchdog : IDisposable
        {
            readonly CancellationTokenSource conn;
            readonly long limit; // Stopwatch ticks
            readonly Timer timer; // null: no timeout
            long last;

            public Watchdog(CancellationTokenSource conn, TimeSpan idle)
            {
                this.conn = conn;
                Touch();
                if (idle <= TimeSpan.Zero || idle == Timeout.InfiniteTimeSpan) return;
                limit = (long)(idle.TotalSeconds * System.Diagnostics.Stopwatch.Frequency);
                var period = TimeSpan.FromTicks(Math.Max(idle.Ticks / 3, TimeSpan.TicksPerMillisecond));
                timer = new Timer(_ => Check(), null, period, period);
            }

            public void Touch() { Interlocked.Exchange(ref last, System.Diagnostics.Stopwatch.GetTimestamp()); }

            void Check()
            {
                if (System.Diagnostics.Stopwatch.GetTimestamp() - Interlocked.Read(ref last) < limit) return;
                try { conn.Cancel(); }
                catch (ObjectDisposedException) { } // the connection ended meanwhile
            }

            public void Dispose() { if (timer != null) timer.Dispose(); }
        }

        sealed class Outcome
        {
            public bool Resuming;
            public CloseReason? End;
            public DateTime? Expiring;
            /// <summary>The connection's last retry: (ms), 0 once an event followed it; null when it brought none.</summary>
            public int? RetryFloor;
        }

        /// <summary>Connect runs one connection until it ends; it throws RealSyncException for a refusal.</summary>
        async Task Connect(CancellationToken ct, CancellationToken kicked, Action opened, Outcome outcome)
        {
            var url = Client.BaseUrl + path + Query();
            string bearer = null;
            using (var conn = CancellationTokenSource.CreateLinkedTokenSource(ct, kicked))
            {
                // Reconnect() ends the token requests too (one over a dead connection waits RequestTimeout).
                if (Options.UseStreamToken)
                {
                    var st = await StreamToken(conn.Token).ConfigureAwait(false);
                    url += (url.IndexOf('?') < 0 ? "?" : "&") + "token=" + Uri.EscapeDataString(st.Token);
                }
                else
                {
                    try { await Client.FreshTokenAsync(null, conn.Token).ConfigureAwait(false); }
                    catch (Exception e) when (!conn.IsCancellationRequested) { Fail(RefreshFailure(e)); } // the token it has may still do
                    bearer = Client.Token;
                }
                using (var req = new HttpRequestMessage(HttpMethod.Get, url))
                {
                    req.Headers.Accept.ParseAdd("text/event-stream");
                    if (bearer != null) req.Headers.Authorization = new AuthenticationHeaderValue("Bearer", bearer);
                    var last = ResumesFromLastEventId ? lastEventId : "";
                    if (last.Length > 0) req.Headers.TryAddWithoutValidation("Last-Event-ID", last);
                    using (var watchdog = new Watchdog(conn, Options.IdleTimeout))
                    {
                        HttpResponseMessage resp;
                        try
                        {
                            resp = await Client.StreamHttp.SendAsync(req, HttpCompletionOption.ResponseHeadersRead, conn.Token).ConfigureAwait(false);
                        }
                        catch (OperationCanceledException) when (!ct.IsCancellationRequested)
                        {
                            throw new RealSyncException(0, "NETWORK", detail: "no answer within " + Options.IdleTimeout);
                        }
                        watchdog.Touch();
                        using (resp)
                        using (conn.Token.Register(() => resp.Dispose())) // unblocks a read that ignores the token
                        {
                            var status = (int)resp.StatusCode;
                            if (status != 200)
                            {
                                var body = resp.Content == null ? "" : await resp.Content.ReadAsStringAsync().ConfigureAwait(false);
                                throw RealSyncException.FromProblem(status, body, RealSyncClient.RetryAfterOf(resp));
                            }
                            var media = resp.Content.Headers.ContentType == null ? null : resp.Content.Headers.ContentType.MediaType;
                            if (media != "text/event-stream")
                                throw new RealSyncException(status, "INTERNAL", detail: "not an event stream: " + (media ?? "no Content-Type"));
                            opened();
                            var parser = new SseParser { LastEventId = last };
                            parser.OnRetry = ms => outcome.RetryFloor = ms;
                            parser.OnEvent = e =>
                            {
                                if (outcome.RetryFloor.HasValue) outcome.RetryFloor = 0; // the event supersedes it
                                OnEvent(e, outcome);
                            };
                            var stream = await resp.Content.ReadAsStreamAsync().ConfigureAwait(false);
                            var buf = new byte[8192];
                            while (true)
                            {
                                int n;
                                try
                                {
                                    n = await stream.ReadAsync(buf, 0, buf.Length, conn.Token).ConfigureAwait(false);
                                }
                                catch (Exception) when (conn.IsCancellationRequested && !ct.IsCancellationRequested)
                                {
                                    throw new RealSyncException(0, "NETWORK", detail: "no event or heartbeat within " + Options.IdleTimeout);
                                }
                                if (n == 0) return; // the server ended the stream
                                watchdog.Touch();
                                parser.Feed(buf, 0, n);
                                if (outcome.End.HasValue || outcome.Expiring.HasValue || ct.IsCancellationRequested) return;
                            }
                        }
                    }
                }
            }
        }

        void OnEvent(SseEvent e, Outcome outcome)
        {
            // After the end (Close, room_closed, own player_left, token_expiring)
            // the rest of the buffer is not read.
            if (outcome.End.HasValue || outcome.Expiring.HasValue || Volatile.Read(ref ended) == 1) return;
            JsonObject data;
            try { data = Json.ParseObject(e.Data); }
            catch (FormatException ex)
            {
                Fail(new RealSyncException(200, "INTERNAL", detail: "event " + e.Type + " is not a JSON object: " + ex.Message));
                return;
            }
            if (e.Type == "token_expiring")
            {
                outcome.Expiring = data.Time("expiresAt");
                return;
            }
            if (e.Type == "resumed" && ResumesFromLastEventId)
            {
                // The server replayed what was missed since Last-Event-ID (zero or
                // more events, received already). It has no id and is no room event.
                if (outcome.Resuming)
                {
                    outcome.Resuming = false;
                    Post(() => Raise(Resumed, new ResumedEvent { Snapshot = false }));
                }
                Post(MarkReady); // a personal stream opened with LiveOptions.LastEventId gets no snapshot
                return;
            }
            lastEventId = e.LastEventId;
            maybeLeft = false;
            if (outcome.Resuming && (e.Type == "snapshot" || e.Type == "rooms"))
            {
                // a snapshot (room) or a fresh list (lobby) replaces what was missed;
                // a replayed event leaves Resuming set: the resumed event follows the replay
                outcome.Resuming = false;
                Post(() => Raise(Resumed, new ResumedEvent { Snapshot = true }));
            }
            outcome.End = Receive(e.Type, data);
        }
    }
}
