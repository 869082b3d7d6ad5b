// The C# SDK's tests: unit tables for the JSON reader, the SSE parser and
// the backoff, then the REST client and the live room/lobby against a real
// realsyncd (with Redis, so that the resume test can kill and restart it).
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using RealSync;

static class Tests
{
    static readonly Random rnd = new Random();

    /// <summary>Unique names a run of the tests uses (modes, regions).</summary>
    static string Unique(string prefix)
    {
        const string letters = "abcdefghijklmnopqrstuvwxyz0123456789";
        var sb = new StringBuilder(prefix);
        lock (rnd) for (var i = 0; i < 8; i++) sb.Append(letters[rnd.Next(letters.Length)]);
        return sb.ToString();
    }

    public static IEnumerable<KeyValuePair<string, Func<Task>>> All(Server s)
    {
        var list = new List<KeyValuePair<string, Func<Task>>>
        {
            T("Json_ParseAndWrite", JsonParseAndWrite),
            T("Json_RejectsBadInput", JsonRejectsBadInput),
            T("Sse_ParserTable", SseParserTable),
            T("Sse_ParserSplitsAnywhere", SseParserSplitsAnywhere),
            T("Sse_ParserAllocatesLittle", SseParserAllocatesLittle),
            T("Backoff_Caps", BackoffCaps),
            T("Fake_SkipsAppliedVersionsAndResumesFromLastId", FakeSkipsApplied),
            T("Fake_TokenExpiringRenewsAndResumes", FakeTokenExpiring),
            T("Fake_TokenExpiringRenewalFailedOnTheWayIsRetried", FakeTokenExpiringRenewalRetried),
            T("Fake_TokenExpiringSameTokenAskedAgain", FakeTokenExpiringSameToken),
            T("Fake_TokenExpiringWithoutRenewalEnds", FakeTokenNotRenewed),
            T("Fake_TransientThenRetryAfter", FakeTransient),
            T("Fake_RetryFieldAConnectionEndedWith", FakeRetryField),
            T("Fake_ServerDelaysCappedAtBackoffMax", FakeServerDelaysCapped),
            T("Fake_PermanentStatuses", FakePermanent),
            T("Fake_NothingRaisedAfterClosed", FakeNothingAfterClosed),
            T("Fake_ResumedEventAndSnapshot", FakeResumed),
            T("Fake_PlayerLeftThenRefusedEndsLeft", FakePlayerLeftThenRefused),
            T("Fake_LobbySendsNoLastEventId", FakeLobbyNoLastEventId),
            T("Fake_MeSessionReplacedWithoutIdKeepsTheLastIdAndEnds", FakeMeSessionReplacedWithoutId),
            T("Fake_RemovedWhileAwayEndsLeft", FakeRemovedWhileAway),
            T("Fake_MeSessionExistsIsRetried", FakeMeSessionExists),
            T("Fake_MeResumesAfterAKeptLastEventId", FakeMeLastEventId),
            T("Fake_MeLastEventIdIsTheHandledEvents", FakeMeLastEventIdHandled),
            T("Fake_ReconnectAtOnce", FakeReconnect),
            T("Fake_ReconnectDuringAFailure", FakeReconnectDuringAFailure),
            T("Fake_ReconnectDuringAStreamTokenRequest", FakeReconnectDuringStreamToken),
            T("Fake_RestRequestTimeout", FakeRestRequestTimeout),
            T("Fake_RestBadArgumentsSendNothing", FakeRestBadArguments),
            T("Fake_RestDisposedDuringACall", FakeRestDisposedDuringACall),
            T("Rest_GuestAuthAndRefresh", () => GuestAuthAndRefresh(s)),
            T("Rest_CreateJoinLeaveListUpdateDelete", () => RoomsFlow(s)),
            T("Rest_JoinByCodeAndQuickJoin", () => JoinByCodeAndQuickJoin(s)),
            T("Rest_StateIfMatchAndMessages", () => StateAndMessages(s)),
            T("Rest_ValidationErrors", () => ValidationErrors(s)),
            T("Rest_Operations", () => Operations(s)),
            T("Live_JoinThenStateInOrder", () => LiveJoinThenState(s)),
            T("Live_SynchronizationContext", () => LiveSynchronizationContext(s)),
            T("Live_ImmediateDispatch", () => LiveImmediate(s)),
            T("Live_StreamTokenAndMessages", () => LiveStreamToken(s)),
            T("Live_Permanent403And404End", () => LivePermanent(s)),
            T("Live_401AfterRefreshEnds", () => LiveUnauthenticated(s)),
            T("Live_RefreshCallbackThrowsEnds", () => LiveRefreshThrows(s)),
            T("Live_SharedRenewalOutlivesTheStreamThatStartedIt", () => LiveSharedRenewal(s)),
            T("Live_OwnLeaveWithoutPlayerIdEndsLeft", () => LiveOwnLeaveWithoutPlayerId(s)),
            T("Live_QuietRoomResumesAtOnce", () => LiveQuietResume(s)),
            T("Live_KickedEndsLeftAndDeleteEndsRoomClosed", () => LiveEnds(s)),
            T("Live_Lobby", () => LiveLobbyTest(s)),
            T("Live_MeOfflineMessageAndInvite", () => LiveMeOffline(s)),
            T("Live_MeMatchFound", () => LiveMeMatchFound(s)),
            T("Party", () => Party(s)),
            T("Live_ClientDisposeClosesItsStreams", () => LiveClientDispose(s)),
            T("Live_CloseAsyncLetsTheConnectionGo", () => LiveCloseAsync(s)),
            T("Live_ClientDisposeAsyncLetsItsConnectionsGo", () => LiveClientDisposeAsync(s)),
            T("Guide_TicTacToe", () => GuideTest.Play(s)),
            T("Live_ResumeAfterServerRestart", () => LiveResume(s)), // last: restarts the server
        };
        return list;
    }

    static KeyValuePair<string, Func<Task>> T(string name, Func<Task> f) { return new KeyValuePair<string, Func<Task>>(name, f); }
    static KeyValuePair<string, Func<Task>> T(string name, Action f) { return new KeyValuePair<string, Func<Task>>(name, () => { f(); return Task.CompletedTask; }); }

    // ---- unit tables ----

    static void JsonParseAndWrite()
    {
        var cases = new[]
        {
            new[] { "{\"a\":1,\"b\":[true,false,null],\"c\":\"x\"}", "{\"a\":1,\"b\":[true,false,null],\"c\":\"x\"}" },
            new[] { " { \"n\" : -12.5e1 , \"big\":12345678901234567890 } ", "{\"n\":-125,\"big\":1.2345678901234567E+19}" },
            new[] { "\"\\u00e9\\ud83d\\ude00\\n\\\"\\\\\\/\"", "\"\u00e9\ud83d\ude00\\n\\\"\\\\/\"" },
            new[] { "[]", "[]" },
            new[] { "{}", "{}" },
            new[] { "\"\\u0001\u2028\"", "\"\\u0001\\u2028\"" },
            new[] { "9223372036854775807", "9223372036854775807" },
            new[] { "0.1", "0.1" },
        };
        foreach (var c in cases) Check.Eq(c[1], Json.Write(Json.Parse(c[0])), "round trip of " + c[0]);
        // a number past a double's range (the server refuses it since 2026-12-01,
        // an older one stored it) reads as infinity on every runtime, not an
        // OverflowException on Mono that failed a stream at every reconnect
        var huge = Json.ParseObject("{\"hp\":1e400,\"lo\":-1E+999,\"n\":" + new string('9', 400) + ",\"tiny\":1e-400}");
        Check.Eq(double.PositiveInfinity, huge.Get("hp"), "1e400");
        Check.Eq(double.NegativeInfinity, huge.Get("lo"), "-1E+999");
        Check.Eq(double.PositiveInfinity, huge.Get("n"), "400 digits");
        Check.Eq(0.0, huge.Get("tiny"), "1e-400");
        var o = Json.ParseObject("{\"i\":3,\"d\":2.5,\"s\":\"t\",\"o\":{\"k\":[1]}}");
        Check.Eq(3L, o.Get("i"), "integer as long");
        Check.Eq(2.5, o.Get("d"), "fraction as double");
        Check.Eq(1L, o.Object("o").Array("k")[0], "nested");
        var req = new CreateRoomRequest { Name = "n", Mode = "m", Region = "r", MaxPlayers = 4, State = new Dictionary<string, object> { { "x", null } } };
        Check.Eq("{\"name\":\"n\",\"mode\":\"m\",\"region\":\"r\",\"maxPlayers\":4,\"state\":{\"x\":null}}", Json.Write(req), "request model, nulls left out but null values kept");
        Check.Eq("{\"type\":\"chat\",\"data\":null}", Json.Write(new MessageRequest { Type = "chat" }), "message data is always sent");
        IDictionary<string, object> expando = new System.Dynamic.ExpandoObject();
        expando["hp"] = 3;
        Check.Eq("{\"list\":[1,2.5,\"x\"],\"e\":{\"hp\":3},\"d\":{\"k\":7}}", Json.Write(new Dictionary<string, object>
        {
            { "list", new object[] { 1, 2.5f, 'x' } }, { "e", (object)expando }, { "d", new SortedDictionary<string, int> { { "k", 7 } } },
        }), "arrays, ExpandoObject, generic dictionaries");
        // Unity's numbers are floats (positions, rotations): each written as the float it is, not widened to a double
        Check.Eq("[0.1,1.1,-3.3,1E+20,1.5E-07,16777216]",
            Json.Write(new[] { 0.1f, 1.1f, -3.3f, 1e20f, 1.5e-7f, 16777216f }), "floats, shortest");
        var pos = Json.ParseObject(Json.Write(new Dictionary<string, object> { { "x", 3f }, { "y", 0.5f } }));
        Check.Eq(3L, pos.Get("x"), "a whole float reads back as a long");
        Check.Eq(3.0, pos.Double("x"), "Double reads it");
        Check.Eq(0.5, pos.Double("y"), "and a fraction");
        Check.Eq(-1.0, pos.Double("z", -1), "absent: the default");
        foreach (var f in new[] { 0.1f, 1.1f, -3.3f, 1e20f, 1.5e-7f, float.MaxValue, float.Epsilon, 123456.79f })
            Check.Eq(f, (float)(double)Json.Parse(Json.Write(f)), "float round trip of " + f.ToString("R", System.Globalization.CultureInfo.InvariantCulture));
        // JSON has no NaN or infinity: the caller's mistake, before anything is sent
        foreach (var bad in new object[] { float.NaN, double.PositiveInfinity, float.NegativeInfinity, new[] { 1f, float.NaN } })
        {
            try
            {
                Json.Write(bad);
                throw new Check.CheckFailed("wrote " + bad);
            }
            catch (ArgumentException e) { Check.Eq("JSON: numbers must be finite", e.Message, "the message"); }
        }
        // Mono's (and .NET Framework's) "R" gives 15 digits for these, another double: written, each reads back as itself
        foreach (var d in new[] { 0.84551240822557006, 96.105835259010007, -1.0254143839013001E-146, 0.1, 1e300, double.Epsilon })
            Check.Eq(d, (double)Json.Parse(Json.Write(d)), "double round trip of " + d.ToString("G17", System.Globalization.CultureInfo.InvariantCulture));
        // and in a culture with a decimal comma
        var culture = System.Threading.Thread.CurrentThread.CurrentCulture;
        System.Threading.Thread.CurrentThread.CurrentCulture = new System.Globalization.CultureInfo("de-DE");
        try
        {
            Check.Eq("[1.5,-2.25,0.1,1.5E-07]", Json.Write(new object[] { 1.5f, -2.25, 0.1, 1.5e-7f }), "numbers under de-DE");
            Check.Eq(-1500.0, Json.ParseObject("{\"a\":-1.5e3}").Double("a"), "read under de-DE");
        }
        finally { System.Threading.Thread.CurrentThread.CurrentCulture = culture; }
    }

    static void JsonRejectsBadInput()
    {
        foreach (var bad in new[] { "", "{", "[1,]", "{\"a\":}", "01", "1.", "-", "\"abc", "\"\\x\"", "tru", "{\"a\" 1}", "1 2", "\"a\u0001\"", "{'a':1}", "[1 2]", "1e" })
        {
            try
            {
                Json.Parse(bad);
                throw new Check.CheckFailed("parsed bad JSON: " + bad);
            }
            catch (FormatException) { }
        }
    }

    sealed class SseCase
    {
        public string Name;
        public string[] Chunks;
        public string[] Want; // type|data|id
        public int? Retry;
    }

    static List<string> Parse(IEnumerable<byte[]> chunks, out SseParser p)
    {
        var got = new List<string>();
        p = new SseParser();
        p.OnEvent = e => got.Add(e.Type + "|" + e.Data + "|" + e.LastEventId);
        foreach (var c in chunks) p.Feed(c, 0, c.Length);
        return got;
    }

    static void SseParserTable()
    {
        var cases = new[]
        {
            new SseCase { Name = "one event", Chunks = new[] { "id: 7-k2\nevent: state\ndata: {\"a\":1}\n\n" }, Want = new[] { "state|{\"a\":1}|7-k2" } },
            new SseCase { Name = "multi-line data", Chunks = new[] { "data: a\ndata: b\ndata\n\n" }, Want = new[] { "message|a\nb\n|" } },
            new SseCase { Name = "CRLF and CR", Chunks = new[] { "data: x\r\n\r\ndata: y\r\rdata: z\r\n\n" }, Want = new[] { "message|x|", "message|y|", "message|z|" } },
            new SseCase { Name = "comments and retry", Chunks = new[] { "retry: 3000\n: ping\n\n: ok\nevent: e\ndata:1\n\n" }, Want = new[] { "e|1|" }, Retry = 3000 },
            new SseCase { Name = "bad retry ignored", Chunks = new[] { "retry: 3s\ndata: q\n\n" }, Want = new[] { "message|q|" }, Retry = null },
            new SseCase { Name = "retry with leading zeros", Chunks = new[] { "retry: 0000000003000\ndata: q\n\n" }, Want = new[] { "message|q|" }, Retry = 3000 },
            new SseCase { Name = "retry beyond an int: the largest", Chunks = new[] { "retry: 3000\nretry: 99999999999\n\n" }, Want = new string[0], Retry = int.MaxValue },
            new SseCase { Name = "empty or signed retry ignored", Chunks = new[] { "retry: 3000\nretry:\nretry: -5\nretry: +5\n\n" }, Want = new string[0], Retry = 3000 },
            new SseCase { Name = "id persists, NUL id ignored", Chunks = new[] { "id: 1\ndata: a\n\nid: 2\u0000\ndata: b\n\ndata: c\n\n" }, Want = new[] { "message|a|1", "message|b|1", "message|c|1" } },
            new SseCase { Name = "no data: no event, type reset", Chunks = new[] { "event: x\n\ndata: d\n\n" }, Want = new[] { "message|d|" } },
            new SseCase { Name = "BOM and unknown fields", Chunks = new[] { "\uFEFFfoo: bar\ndata:  two spaces\n\n" }, Want = new[] { "message| two spaces|" } },
            new SseCase { Name = "unfinished event not dispatched", Chunks = new[] { "data: a\n\ndata: b\n" }, Want = new[] { "message|a|" } },
            new SseCase { Name = "empty id resets", Chunks = new[] { "id: 5\ndata: a\n\nid\ndata: b\n\n" }, Want = new[] { "message|a|5", "message|b|" } },
        };
        foreach (var c in cases)
        {
            SseParser p;
            var got = Parse(c.Chunks.Select(x => Encoding.UTF8.GetBytes(x)), out p);
            Check.Eq(string.Join(" ; ", c.Want), string.Join(" ; ", got), c.Name);
            Check.Eq(c.Retry, p.Retry, c.Name + ": retry");
        }
    }

    static void SseParserSplitsAnywhere()
    {
        // Every split of the bytes (inside CRLF, inside a UTF-8 sequence) gives the same events.
        var text = "id: 3-t\r\nevent: message\r\ndata: {\"t\":\"h\u00e9llo \ud83d\ude00\"}\r\n\r\n: ping\r\n\r\ndata: 2\r\n\r\n";
        var bytes = Encoding.UTF8.GetBytes(text);
        SseParser p;
        var want = string.Join(" ; ", Parse(new[] { bytes }, out p));
        Check.Eq("message|{\"t\":\"h\u00e9llo \ud83d\ude00\"}|3-t ; message|2|3-t", want, "whole");
        for (var i = 1; i < bytes.Length; i++)
        {
            var a = bytes.Take(i).ToArray();
            var b = bytes.Skip(i).ToArray();
            Check.Eq(want, string.Join(" ; ", Parse(new[] { a, b }, out p)), "split at " + i);
        }
        Check.Eq(want, string.Join(" ; ", Parse(bytes.Select(x => new[] { x }), out p)), "byte by byte");
    }

    static void SseParserAllocatesLittle()
    {
        // A game reads events every frame: the parser copies an event's data once (the string it hands over),
        // not once per line, field and value; a heartbeat costs nothing.
        var data = "{\"type\":\"state\",\"roomId\":\"0bdEwaN80PjZzlxV\",\"version\":12,\"ts\":\"2026-11-23T10:00:00.000Z\",\"by\":2," +
            "\"set\":{\"player_2_x\":1.5,\"player_2_y\":-3.25,\"player_2_hp\":97},\"del\":[],\"stateVersion\":9}";
        var ev = Encoding.UTF8.GetBytes("id: 12-abc\nevent: state\ndata: " + data + "\n\n");
        var ping = Encoding.UTF8.GetBytes(": ping\n\n");
        var p = new SseParser();
        var n = 0;
        p.OnEvent = e => n++;
        for (var i = 0; i < 100; i++) { p.Feed(ev, 0, ev.Length); p.Feed(ping, 0, ping.Length); } // buffers grown
        const int rounds = 1000;
        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < rounds; i++) p.Feed(ping, 0, ping.Length);
        Check.Eq(0L, (GC.GetAllocatedBytesForCurrentThread() - before) / rounds, "bytes allocated per heartbeat");
        before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < rounds; i++) p.Feed(ev, 0, ev.Length);
        var perEvent = (GC.GetAllocatedBytesForCurrentThread() - before) / rounds;
        // the data string (2 bytes a character), the id string and the event object: about 2 x data + 150
        Check.True(perEvent <= 2 * data.Length + 300, "bytes allocated per event: " + perEvent + " for " + data.Length + " characters of data");
        Check.Eq(100 + rounds, n, "every event");
    }

    static void BackoffCaps()
    {
        var b = new Backoff();
        var caps = Enumerable.Range(1, 9).Select(b.Cap).ToArray();
        Check.Eq("500,1000,2000,4000,8000,10000,10000,10000,10000", string.Join(",", caps), "caps");
        Check.Eq(10000, b.Cap(1000), "no overflow");
        b.Random = () => 0.0;
        Check.Eq(0, b.Delay(5), "full jitter reaches 0");
        b.Random = () => 0.999999;
        Check.Eq(8000, b.Delay(5), "and the cap");
        b.Random = null;
        for (var i = 1; i < 50; i++)
        {
            var d = b.Delay(3);
            Check.True(d >= 0 && d <= 2000, "delay within [0, cap]: " + d);
        }
    }

    // ---- scripted answers ----

    const string Ts = "2026-11-23T10:00:00.000Z";

    static string Snapshot(long version, string tag)
    {
        return "id: " + version + "-" + tag + "\nevent: snapshot\ndata: {\"type\":\"snapshot\",\"roomId\":\"r1\",\"version\":" + version + ",\"ts\":\"" + Ts +
            "\",\"room\":{\"id\":\"r1\",\"name\":\"n\",\"playerCount\":1,\"maxPlayers\":4,\"version\":" + version +
            ",\"players\":[{\"playerId\":1,\"name\":\"alice\",\"joinedAt\":\"" + Ts + "\",\"connected\":true}]},\"state\":{\"a\":1},\"stateVersion\":2}\n\n";
    }

    static string StateEvent(long version, string tag, string set, string del, long stateVersion)
    {
        return "id: " + version + "-" + tag + "\nevent: state\ndata: {\"type\":\"state\",\"roomId\":\"r1\",\"version\":" + version + ",\"ts\":\"" + Ts +
            "\",\"by\":1,\"set\":" + set + ",\"del\":" + del + ",\"stateVersion\":" + stateVersion + "}\n\n";
    }

    static RealSyncClient FakeClient(FakeHandler h, string token)
    {
        return new RealSyncClient(new RealSyncOptions { BaseUrl = "http://fake.invalid", Token = token, Handler = h });
    }

    static LiveOptions Fast()
    {
        var o = Queue(1);
        o.Backoff = new Backoff { InitialMs = 10, MaxMs = 20 };
        return o;
    }

    static async Task FakeSkipsApplied()
    {
        var token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1));
        var h = new FakeHandler()
            .Then(FakeHandler.Sse("retry: 1000\n: hello\n\n" + Snapshot(5, "t") +
                StateEvent(6, "t", "{\"b\":2}", "[]", 3) +
                StateEvent(6, "t", "{\"b\":99}", "[]", 3) + // a duplicate
                "id: 4-t\nevent: player_joined\ndata: {\"type\":\"player_joined\",\"roomId\":\"r1\",\"version\":4,\"ts\":\"" + Ts +
                "\",\"player\":{\"playerId\":2,\"name\":\"old\",\"joinedAt\":\"" + Ts + "\",\"connected\":false}}\n\n" + // older
                StateEvent(7, "t", "{}", "[\"a\"]", 4)));
        var live = FakeClient(h, token).Live("r1", Fast());
        var rec = new Recorder();
        rec.Watch(live);
        var states = 0;
        live.StateChanged += e => states++;
        live.Start();
        // (the room is gone after the stream was open: it ends as left, see Fake_RemovedWhileAwayEndsLeft)
        await Check.WaitFor(() => live.IsClosed && rec.Has("closed left ROOM_NOT_FOUND"), "the scripted stream, then a 404", live);
        Check.Eq("{\"b\":2}", Json.Write(live.State), "state: duplicate and older events skipped");
        Check.Eq(7L, live.Version, "version");
        Check.Eq(4L, live.StateVersion, "stateVersion");
        Check.Eq(2, states, "two state events applied");
        Check.Eq(1, live.Players.Count, "the older player_joined skipped");
        Check.Eq(7L, live.Room.Version, "room version follows events");
        var reqs = h.Requests;
        Check.Eq("GET /v1/rooms/r1/events auth=" + token + " last=", reqs[0], "first request: bearer token, no Last-Event-ID");
        Check.Eq("GET /v1/rooms/r1/events auth=" + token + " last=7-t", reqs[1], "resume with the last id");
        Check.True(rec.Has("reconnecting NETWORK"), "the end of the stream is transient");
    }

    static async Task FakeTokenExpiring()
    {
        var exp = DateTime.UtcNow.AddMinutes(1);
        var t1 = FakeHandler.Jwt(exp);
        var t2 = FakeHandler.Jwt(DateTime.UtcNow.AddHours(24));
        var expiresAt = exp.ToString("yyyy-MM-dd'T'HH:mm:ss'Z'");
        var h = new FakeHandler()
            .Then(FakeHandler.Sse(Snapshot(1, "t") + "event: token_expiring\ndata: {\"type\":\"token_expiring\",\"expiresAt\":\"" + expiresAt + "\"}\n\n" +
                StateEvent(9, "t", "{\"never\":1}", "[]", 9))) // after token_expiring: not read
            .Then(FakeHandler.Answer(201, "{\"token\":\"" + t2 + "\",\"userId\":\"u1\",\"name\":\"a\",\"expiresAt\":\"" + Ts + "\"}"))
            .Then(FakeHandler.Sse(StateEvent(2, "t", "{\"x\":1}", "[]", 3) + ResumedEvent(2), hang: true)); // the replay, as the server ends it
        // RefreshMargin 0: only the stream's token_expiring renews the token.
        var client = new RealSyncClient(new RealSyncOptions { BaseUrl = "http://fake.invalid", Token = t1, Handler = h, RefreshMargin = TimeSpan.Zero });
        var live = client.Live("r1", Fast());
        var rec = new Recorder();
        rec.Watch(live);
        var expiring = 0;
        live.TokenExpiring += e => expiring++;
        live.Start();
        await Check.WaitFor(() => live.State.ContainsKey("x"), "the event after the renewal", live);
        var reqs = h.Requests;
        Check.Eq("POST /v1/auth/refresh auth=" + t1 + " last=", reqs[1], "the token renewed with the old one");
        Check.Eq("GET /v1/rooms/r1/events auth=" + t2 + " last=1-t", reqs[2], "resumed with the new token and the last id");
        Check.Eq(t2, client.Token, "the client keeps the new token");
        Check.Eq(1, expiring, "TokenExpiring raised");
        Check.True(!live.State.ContainsKey("never"), "nothing read after token_expiring");
        Check.True(rec.Has("resumed snapshot=False"), "resumed without a snapshot");
        Check.Eq(0, rec.Count(x => x.StartsWith("reconnecting") || x.StartsWith("error")), "no error, no backoff");
        live.Close();
    }

    static string TokenExpiringEvent(DateTime exp)
    {
        return "event: token_expiring\ndata: {\"type\":\"token_expiring\",\"expiresAt\":\"" + exp.ToString("yyyy-MM-dd'T'HH:mm:ss'Z'") + "\"}\n\n";
    }

    /// <summary>
    /// A token renewal at token_expiring that fails on the way (a 5xx of POST
    /// /v1/auth/refresh, a RefreshToken that threw something else than a
    /// RealSyncException) while the token has 5 s left is handled as a dropped
    /// connection: Error, Reconnecting after a backoff, the reconnection with
    /// the token that is still valid, and the server's next token_expiring
    /// (same expiry) renews it; the stream resumes after its last event.
    /// </summary>
    static async Task FakeTokenExpiringRenewalRetried()
    {
        var cases = new[] { "POST /v1/auth/refresh answers 503", "RefreshToken fails on the network" };
        foreach (var name in cases)
        {
            var exp = DateTime.UtcNow.AddMinutes(1);
            var t1 = FakeHandler.Jwt(exp);
            var t2 = FakeHandler.Jwt(DateTime.UtcNow.AddHours(24));
            var callback = name.StartsWith("RefreshToken");
            var refreshes = 0;
            var h = new FakeHandler().Then(FakeHandler.Sse(Snapshot(1, "t") + TokenExpiringEvent(exp)));
            if (!callback) h.Then(FakeHandler.Problem(503, "STORE_UNAVAILABLE"));
            h.Then(FakeHandler.Sse(TokenExpiringEvent(exp))); // the server ends the reconnection at half of what is left
            if (!callback) h.Then(FakeHandler.Answer(201, "{\"token\":\"" + t2 + "\",\"userId\":\"u1\",\"name\":\"a\",\"expiresAt\":\"" + Ts + "\"}"));
            h.Then(FakeHandler.Sse(StateEvent(2, "t", "{\"x\":1}", "[]", 3) + ResumedEvent(2), hang: true));
            var o = new RealSyncOptions { BaseUrl = "http://fake.invalid", Token = t1, Handler = h, RefreshMargin = TimeSpan.Zero };
            if (callback)
                o.RefreshToken = ct => Interlocked.Increment(ref refreshes) == 1
                    ? Task.FromException<string>(new System.Net.Http.HttpRequestException("connection refused"))
                    : Task.FromResult(t2);
            var client = new RealSyncClient(o);
            var live = client.Live("r1", Fast());
            var rec = new Recorder();
            rec.Watch(live);
            live.Start();
            await Check.WaitFor(() => live.State.ContainsKey("x") || live.IsClosed, name + ": the event after the renewal", live);
            var items = string.Join(",", rec.Items);
            Check.True(!live.IsClosed, name + ": the stream ended: " + items);
            var code = callback ? "TOKEN_REFRESH_FAILED" : "STORE_UNAVAILABLE";
            Check.True(rec.Has("error " + code) && rec.Has("reconnecting " + code), name + ": Error and Reconnecting: " + items);
            var gets = h.Requests.Where(r => r.StartsWith("GET")).ToList();
            Check.Eq(3, gets.Count, name + ": connections: " + string.Join(",", gets));
            Check.Eq("GET /v1/rooms/r1/events auth=" + t1 + " last=1-t", gets[1], name + ": reconnected with the old token, still valid");
            Check.Eq("GET /v1/rooms/r1/events auth=" + t2 + " last=1-t", gets[2], name + ": resumed with the renewed token");
            Check.Eq(callback ? 0 : 2, h.Requests.Count(r => r.StartsWith("POST /v1/auth/refresh")), name + ": refreshes");
            if (callback) Check.Eq(2, refreshes, name + ": RefreshToken asked at each token_expiring");
            live.Close();
        }
    }

    /// <summary>
    /// A RefreshToken still returning the expiring token at token_expiring (its
    /// cached one) while that token has 5 s left makes the stream reconnect
    /// with it at once (no Error, no backoff), and the next token_expiring asks
    /// it again: the new token it gives then resumes the stream after its last event.
    /// </summary>
    static async Task FakeTokenExpiringSameToken()
    {
        var exp = DateTime.UtcNow.AddMinutes(1);
        var t1 = FakeHandler.Jwt(exp);
        var t2 = FakeHandler.Jwt(DateTime.UtcNow.AddHours(24));
        var h = new FakeHandler()
            .Then(FakeHandler.Sse(Snapshot(1, "t") + TokenExpiringEvent(exp)))
            .Then(FakeHandler.Sse(TokenExpiringEvent(exp)))
            .Then(FakeHandler.Sse(StateEvent(2, "t", "{\"x\":1}", "[]", 3) + ResumedEvent(2), hang: true));
        var asks = 0;
        var client = new RealSyncClient(new RealSyncOptions
        {
            BaseUrl = "http://fake.invalid", Token = t1, Handler = h, RefreshMargin = TimeSpan.Zero,
            RefreshToken = ct => Task.FromResult(Interlocked.Increment(ref asks) == 1 ? t1 : t2),
        });
        var live = client.Live("r1", Fast());
        var rec = new Recorder();
        rec.Watch(live);
        live.Start();
        await Check.WaitFor(() => live.State.ContainsKey("x") || live.IsClosed, "the event after the renewal", live);
        Check.True(!live.IsClosed, "the stream ended: " + string.Join(",", rec.Items));
        Check.Eq(0, rec.Count(x => x.StartsWith("reconnecting") || x.StartsWith("error")), "no error, no backoff: " + string.Join(",", rec.Items));
        var reqs = h.Requests;
        Check.Eq(3, reqs.Count, "requests: " + string.Join(",", reqs));
        Check.Eq("GET /v1/rooms/r1/events auth=" + t1 + " last=1-t", reqs[1], "reconnected with the same token");
        Check.Eq("GET /v1/rooms/r1/events auth=" + t2 + " last=1-t", reqs[2], "resumed with the new token");
        Check.Eq(2, asks, "RefreshToken asked at each token_expiring");
        live.Close();
    }

    /// <summary>
    /// A token that cannot be renewed at token_expiring ends the stream (no
    /// reconnection) with 401 UNAUTHENTICATED, after an Error with the
    /// renewal's own failure when it failed: a refusal (a studio's token,
    /// REFRESH_NOT_ALLOWED), a failure on the way or a RefreshToken still
    /// returning the expiring token with under 5 s left.
    /// </summary>
    static async Task FakeTokenNotRenewed()
    {
        var cases = new[]
        {
            new { Name = "refresh refused", Left = 60, Refresh = (int?)403, Same = false, Error = "REFRESH_NOT_ALLOWED" },
            new { Name = "refresh 503 with under 5 s left", Left = 3, Refresh = (int?)503, Same = false, Error = "STORE_UNAVAILABLE" },
            new { Name = "RefreshToken gives the same token with under 5 s left", Left = 3, Refresh = (int?)null, Same = true, Error = "UNAUTHENTICATED" },
        };
        foreach (var c in cases)
        {
            var exp = DateTime.UtcNow.AddSeconds(c.Left);
            var t1 = FakeHandler.Jwt(exp);
            var h = new FakeHandler().Then(FakeHandler.Sse(Snapshot(1, "t") + TokenExpiringEvent(exp)));
            if (c.Refresh.HasValue) h.Then(FakeHandler.Problem(c.Refresh.Value, c.Error));
            h.Then(FakeHandler.Sse(Snapshot(1, "t"), hang: true)); // a reconnection would open
            var o = new RealSyncOptions { BaseUrl = "http://fake.invalid", Token = t1, Handler = h, RefreshMargin = TimeSpan.Zero };
            if (c.Same) o.RefreshToken = ct => Task.FromResult(t1);
            var live = new RealSyncClient(o).Live("r1", Fast());
            var rec = new Recorder();
            rec.Watch(live);
            ClosedEvent? closed = null;
            live.Closed += e => closed = e;
            live.Start();
            await Check.WaitFor(() => live.IsClosed && closed.HasValue, c.Name + ": the end", live);
            var items = string.Join(",", rec.Items);
            Check.True(rec.Has("error " + c.Error), c.Name + ": the renewal's failure raised: " + items);
            Check.True(rec.Has("closed error UNAUTHENTICATED") && closed.Value.Error.Status == 401, c.Name + ": ends 401 UNAUTHENTICATED: " + items);
            Check.Eq(0, rec.Count(x => x.StartsWith("reconnecting")), c.Name + ": no reconnection: " + items);
            Check.Eq(c.Refresh.HasValue ? 2 : 1, h.Requests.Count, c.Name + ": requests");
        }
    }

    static async Task FakeTransient()
    {
        var h = new FakeHandler()
            .Then(FakeHandler.Problem(503, "STORE_UNAVAILABLE"))
            .Then(FakeHandler.Problem(429, "STREAM_OPENS_LIMITED", retryAfter: 1))
            .Then(FakeHandler.Sse(Snapshot(3, "t"), hang: true));
        var o = Fast();
        o.Backoff.MaxMs = 5000; // Retry-After counts up to MaxMs
        var live = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Live("r1", o);
        var delays = new List<ReconnectingEvent>();
        live.Reconnecting += e => delays.Add(e);
        live.Start();
        await Check.WaitFor(() => live.Ready.IsCompleted, "ready after two transient refusals", live);
        Check.True(live.Ready.Status == TaskStatus.RanToCompletion, "ready");
        Check.Eq("STORE_UNAVAILABLE,STREAM_OPENS_LIMITED", string.Join(",", delays.Select(d => d.Error.Code)), "both retried");
        Check.Eq("2,3", string.Join(",", delays.Select(d => d.Attempt)), "attempt numbers");
        Check.True(delays[0].DelayMs <= 10, "backoff: first cap: " + delays[0].DelayMs);
        Check.True(delays[1].DelayMs >= 1000, "Retry-After honoured: " + delays[1].DelayMs);
        live.Close();
    }

    static async Task FakeRetryField()
    {
        var h = new FakeHandler()
            .Then(FakeHandler.Sse("retry: 1234\n: store unavailable, retry later\n\n")) // the whole answer
            .Then(_ => FakeHandler.Sse("retry: 3000\n\n" + Snapshot(3, "t") + "retry: 700\n\n")) // a shutdown's last line
            .Then(_ => FakeHandler.Sse("retry: 3000\n\n" + Snapshot(3, "t"))) // superseded by the snapshot
            .Then(_ => FakeHandler.Sse(Snapshot(3, "t"), hang: true));
        var o = Fast();
        o.Backoff.MaxMs = 5000; // a retry: counts up to MaxMs
        var live = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Live("r1", o);
        var delays = new List<ReconnectingEvent>();
        live.Reconnecting += e => delays.Add(e);
        live.Start();
        await Check.WaitFor(() => delays.Count == 3 && h.Requests.Count == 4, "three reconnections", live);
        Check.Eq(1234, delays[0].DelayMs, "the retry: of an answer with nothing else");
        Check.Eq(700, delays[1].DelayMs, "the retry: a stream ended with");
        Check.True(delays[2].DelayMs <= 40, "a stream's first retry:, followed by events, does not count (the backoff's third cap): " + delays[2].DelayMs);
        live.Close();
    }

    static async Task FakeServerDelaysCapped()
    {
        var h = new FakeHandler()
            .Then(FakeHandler.Sse("retry: 999999999\n: store unavailable, retry later\n\n")) // 11.6 days
            .Then(FakeHandler.Problem(503, "STORE_UNAVAILABLE", retryAfter: 999999999)) // 31 years
            .Then(FakeHandler.Sse(Snapshot(3, "t"), hang: true));
        var live = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Live("r1", Fast()); // MaxMs 20
        var delays = new List<ReconnectingEvent>();
        live.Reconnecting += e => delays.Add(e);
        live.Start();
        await Check.WaitFor(() => live.Ready.IsCompleted, "ready after two refusals asking for days", live);
        Check.True(live.Ready.Status == TaskStatus.RanToCompletion, "ready");
        Check.Eq("20,20", string.Join(",", delays.Select(d => d.DelayMs)), "retry:, then Retry-After, capped at MaxMs");
        live.Close();
    }

    static async Task FakePermanent()
    {
        foreach (var c in new[] { new { Status = 410, Code = "NOT_FOUND" }, new { Status = 400, Code = "MALFORMED_REQUEST" }, new { Status = 422, Code = "VALIDATION_FAILED" }, new { Status = 403, Code = "BANNED" } })
        {
            var h = new FakeHandler().Then(FakeHandler.Problem(c.Status, c.Code));
            var live = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Live("r1", Fast());
            var rec = new Recorder();
            rec.Watch(live);
            live.Start();
            await Check.WaitFor(() => live.IsClosed && rec.Count(x => x.StartsWith("closed")) == 1, c.Status + " ends the stream", live);
            Check.Eq("connecting 1,error " + c.Code + ",closed error " + c.Code, string.Join(",", rec.Items), c.Status + ": no retry");
            Check.Eq(1, h.Requests.Count, c.Status + ": one request");
            var e = live.Ready.Exception.InnerException as RealSyncException;
            Check.Eq(c.Status, e.Status, "status");
        }
    }

    static string Event(long version, string tag, string type, string fields)
    {
        return "id: " + version + "-" + tag + "\nevent: " + type + "\ndata: {\"type\":\"" + type + "\",\"roomId\":\"r1\",\"version\":" + version +
            ",\"ts\":\"" + Ts + "\"" + fields + "}\n\n";
    }

    static string ResumedEvent(long version)
    {
        // as the server writes it: no id line
        return "event: resumed\ndata: {\"type\":\"resumed\",\"roomId\":\"r1\",\"version\":" + version + ",\"ts\":\"" + Ts + "\"}\n\n";
    }

    static async Task FakeNothingAfterClosed()
    {
        // Review finding 5: Close() from a handler, with more events in the same read.
        var events = new StringBuilder(Snapshot(1, "t"));
        for (var v = 2; v <= 21; v++) events.Append(StateEvent(v, "t", "{\"n\":" + v + "}", "[]", v));
        // Or the client's Dispose() from a handler (a game that quits on an event): it closes the stream.
        foreach (var byClient in new[] { false, true })
        foreach (var dispatch in new[] { LiveDispatch.Immediate, LiveDispatch.Queue })
        {
            var what = (byClient ? "client.Dispose() in a handler, " : "Close() in a handler, ") + dispatch;
            var h = new FakeHandler().Then(FakeHandler.Sse(events.ToString(), hang: true));
            var opts = Fast();
            opts.Dispatch = dispatch;
            var client = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1)));
            var live = client.Live("r1", opts);
            var rec = new Recorder();
            rec.Watch(live);
            live.StateChanged += e =>
            {
                rec.Add("state v" + e.Version);
                if (e.Version != 2) return;
                if (byClient) client.Dispose();
                else live.Close();
            };
            live.Change += e => rec.Add("change " + e.Type + " v" + e.Version); // raised after StateChanged, for the same event
            live.Start();
            await Check.WaitFor(() => rec.Has("closed closed"), what + ": closed", live);
            await Task.Delay(100); // anything the stream would still raise
            for (var i = 0; i < 3; i++) live.DispatchPending();
            var items = rec.Items;
            Check.Eq("closed closed", items.Last(), what + ": Closed is the last event: " + string.Join(",", items));
            Check.Eq(1, items.Count(x => x.StartsWith("state")), what + ": one state event");
            Check.Eq(2L, live.Version, what + ": the version stays that of the last event raised");
            Check.Eq(2L, live.State.Get("n"), what + ": the state stays that of the last event raised");
        }

        // Close() by the game while events wait in the queue: only Closed is raised.
        var h2 = new FakeHandler().Then(FakeHandler.Sse(events.ToString(), hang: true));
        var queued = FakeClient(h2, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Live("r1", Fast());
        var rec2 = new Recorder();
        rec2.Watch(queued);
        queued.Change += e => rec2.Add("change " + e.Type);
        queued.Start();
        var sw = System.Diagnostics.Stopwatch.StartNew();
        while (queued.LastEventId != "21-t" && sw.Elapsed < TimeSpan.FromSeconds(15)) await Task.Delay(10); // received, not yet dispatched
        Check.Eq("21-t", queued.LastEventId, "all events received");
        queued.Close();
        queued.DispatchPending();
        Check.Eq("closed closed", string.Join(",", rec2.Items), "queued work dropped by Close()");
        Check.True(queued.Room == null && queued.Version == 0, "the model did not change after Close()");
        Check.True(queued.Ready.IsCanceled, "ready cancelled");
    }

    static async Task FakeResumed()
    {
        // Review finding 8: the server's resumed event (no id) after a replay;
        // a snapshot instead of a replay.
        var token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1));
        var h = new FakeHandler()
            .Then(FakeHandler.Sse(Snapshot(5, "t") + StateEvent(6, "t", "{\"b\":1}", "[]", 3)))
            .Then(FakeHandler.Sse(ResumedEvent(6))) // nothing was missed
            .Then(FakeHandler.Sse(StateEvent(7, "t", "{\"b\":2}", "[]", 4) + StateEvent(8, "t", "{\"b\":3}", "[]", 5) + ResumedEvent(8)))
            .Then(FakeHandler.Sse(Snapshot(20, "u"), hang: true)); // too far behind: a snapshot, no resumed event
        var live = FakeClient(h, token).Live("r1", Fast());
        var rec = new Recorder();
        rec.Watch(live);
        live.Change += e => rec.Add("change " + e.Type + " v" + e.Version);
        live.Resumed += e => rec.Add("at v" + live.Version);
        live.Start();
        await Check.WaitFor(() => live.Version == 20, "the snapshot after the third reconnection", live);
        var got = string.Join(",", rec.Items.Where(x => !x.StartsWith("connecting") && !x.StartsWith("error") && !x.StartsWith("reconnecting")));
        Check.Eq("open,change snapshot v5,change state v6," +
            "open,resumed snapshot=False,at v6," +
            "open,change state v7,change state v8,resumed snapshot=False,at v8," +
            "open,resumed snapshot=True,at v8,change snapshot v20", got, "events");
        var reqs = h.Requests;
        Check.Eq("GET /v1/rooms/r1/events auth=" + token + " last=6-t", reqs[2], "the resumed event left Last-Event-ID alone");
        Check.Eq("GET /v1/rooms/r1/events auth=" + token + " last=8-t", reqs[3], "resume from the last room event");
        live.Close();
    }

    static async Task FakePlayerLeftThenRefused()
    {
        // Review finding 6: without a known playerId, a player_left followed by a
        // refused reconnection was the caller's own leave; anything else is an error.
        var left = Event(2, "t", "player_left", ",\"playerId\":2,\"reason\":\"kicked\"");
        var disconnected = Event(2, "t", "player_left", ",\"playerId\":2,\"reason\":\"disconnected\"");
        var cases = new[]
        {
            new { Name = "kicked, then 403 NOT_A_MEMBER", Body = left, Status = 403, Code = "NOT_A_MEMBER", StreamToken = false, Want = "closed left" },
            new { Name = "kicked, then 404", Body = left, Status = 404, Code = "ROOM_NOT_FOUND", StreamToken = false, Want = "closed left" },
            new { Name = "kicked, then the stream-token POST 403", Body = left, Status = 403, Code = "NOT_A_MEMBER", StreamToken = true, Want = "closed left" },
            // Not known to be its own player_left, but refused after it was open: removed while away (Fake_RemovedWhileAwayEndsLeft).
            new { Name = "disconnected, then 403", Body = disconnected, Status = 403, Code = "NOT_A_MEMBER", StreamToken = false, Want = "closed left NOT_A_MEMBER" },
            new { Name = "kicked, another event, then 403", Body = left + StateEvent(3, "t", "{}", "[]", 3), Status = 403, Code = "NOT_A_MEMBER", StreamToken = false, Want = "closed left NOT_A_MEMBER" },
            new { Name = "kicked, then 403 BANNED", Body = left, Status = 403, Code = "BANNED", StreamToken = false, Want = "closed error BANNED" },
        };
        foreach (var c in cases)
        {
            var h = new FakeHandler();
            if (c.StreamToken) h.Then(FakeHandler.Answer(201, "{\"token\":\"st1\",\"expiresAt\":\"" + Ts + "\"}"));
            h.Then(FakeHandler.Sse(Snapshot(1, "t") + c.Body)).Then(FakeHandler.Problem(c.Status, c.Code));
            var opts = Fast();
            opts.PlayerId = null;
            opts.UseStreamToken = c.StreamToken;
            var live = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Live("r1", opts);
            var rec = new Recorder();
            rec.Watch(live);
            live.Start();
            await Check.WaitFor(() => live.IsClosed && rec.Count(x => x.StartsWith("closed")) == 1, c.Name + ": the end", live);
            Check.True(rec.Has(c.Want), c.Name + ": want " + c.Want + ", got " + string.Join(",", rec.Items));
        }
    }

    static async Task FakeLobbyNoLastEventId()
    {
        var token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1));
        var rooms = "id: 9-l\nevent: rooms\ndata: {\"type\":\"rooms\",\"rooms\":[]}\n\n";
        var h = new FakeHandler().Then(FakeHandler.Sse(rooms)).Then(FakeHandler.Sse(rooms, hang: true));
        var lobby = FakeClient(h, token).Lobby("m", null, Fast());
        var rec = new Recorder();
        rec.Watch(lobby);
        lobby.Start();
        await Check.WaitFor(() => rec.Has("resumed snapshot=True"), "the list again after the reconnection", lobby);
        var reqs = h.Requests;
        Check.Eq("GET /v1/lobby/events?mode=m auth=" + token + " last=", reqs[1], "a lobby reconnection sends no Last-Event-ID");
        lobby.Close();
    }

    static async Task FakeMeSessionReplacedWithoutId()
    {
        // session_replaced is not logged: no id, its seq the log's position. The stream
        // keeps the last logged event's id (its resume position), and ends Left without
        // a reconnection, which would replace the new session.
        var token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1));
        var h = new FakeHandler().Then(FakeHandler.Sse(
            "id: 4-t\nevent: snapshot\ndata: {\"type\":\"snapshot\",\"userId\":\"u1\",\"seq\":4,\"ts\":\"" + Ts +
            "\",\"platform\":\"pc\",\"session\":\"a.1\",\"resync\":false,\"pending\":0}\n\n" +
            "id: 5-t\nevent: message\ndata: {\"type\":\"message\",\"userId\":\"u1\",\"seq\":5,\"ts\":\"" + Ts +
            "\",\"from\":{\"userId\":\"u2\"},\"message\":{\"type\":\"chat\",\"data\":1}}\n\n" +
            "event: session_replaced\ndata: {\"type\":\"session_replaced\",\"userId\":\"u1\",\"seq\":5,\"ts\":\"" + Ts +
            "\",\"platform\":\"pc\",\"session\":\"a.1\",\"by\":\"b.1\"}\n\n", hang: true));
        var me = FakeClient(h, token).Me("pc", Fast());
        var rec = new Recorder();
        rec.Watch(me);
        UserEvent replaced = null;
        me.SessionReplaced += e => replaced = e;
        me.Start();
        await Check.WaitFor(() => me.IsClosed && rec.Count(x => x.StartsWith("closed")) == 1, "the end after session_replaced", me);
        Check.True(rec.Has("closed left"), "ends Left: " + string.Join(",", rec.Items));
        Check.True(replaced != null && replaced.Session == "a.1" && replaced.By == "b.1", "SessionReplaced raised");
        Check.Eq("5-t", me.LastEventId, "session_replaced without an id keeps the last logged event's id");
        Check.Eq(1, h.Requests.Count, "no reconnection after session_replaced");
    }

    static async Task FakeRemovedWhileAway()
    {
        // A phone call longer than the disconnect grace: the player was removed (its own player_left
        // never reached it) and the reconnection is refused. Refused so on the first connection, the
        // caller never was a member: an error.
        var cases = new[]
        {
            new { Name = "403 NOT_A_MEMBER after open", Open = true, Status = 403, Code = "NOT_A_MEMBER", Want = "closed left NOT_A_MEMBER" },
            new { Name = "404 ROOM_NOT_FOUND after open", Open = true, Status = 404, Code = "ROOM_NOT_FOUND", Want = "closed left ROOM_NOT_FOUND" },
            new { Name = "403 BANNED after open", Open = true, Status = 403, Code = "BANNED", Want = "closed error BANNED" },
            new { Name = "403 NOT_A_MEMBER, never open", Open = false, Status = 403, Code = "NOT_A_MEMBER", Want = "closed error NOT_A_MEMBER" },
        };
        foreach (var c in cases)
        {
            var h = new FakeHandler();
            if (c.Open) h.Then(FakeHandler.Sse(Snapshot(1, "t"))); // then the connection drops
            h.Then(FakeHandler.Problem(c.Status, c.Code));
            var live = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Live("r1", Fast());
            var rec = new Recorder();
            rec.Watch(live);
            live.Start();
            await Check.WaitFor(() => live.IsClosed && rec.Count(x => x.StartsWith("closed")) == 1, c.Name + ": the end", live);
            Check.True(rec.Has(c.Want), c.Name + ": want " + c.Want + ", got " + string.Join(",", rec.Items));
        }
        // A public room answers non-members 403: its 404 says the room was deleted meanwhile (RoomClosed);
        // a private room's 404 cannot tell removed from gone (Left). The room's visibility as the stream last said.
        var publicSnapshot = Snapshot(1, "t").Replace("\"room\":{\"id\":\"r1\",", "\"room\":{\"id\":\"r1\",\"visibility\":\"public\",");
        var madePrivate = "id: 2-t\nevent: room_updated\ndata: {\"type\":\"room_updated\",\"roomId\":\"r1\",\"version\":2,\"ts\":\"" + Ts +
            "\",\"changes\":{\"visibility\":\"private\"}}\n\n";
        var rooms = new[]
        {
            new { Name = "public room, 404 after open", Body = publicSnapshot, Want = "closed room_closed ROOM_NOT_FOUND" },
            new { Name = "public room made private, 404 after open", Body = publicSnapshot + madePrivate, Want = "closed left ROOM_NOT_FOUND" },
        };
        foreach (var c in rooms)
        {
            var h = new FakeHandler().Then(FakeHandler.Sse(c.Body)).Then(FakeHandler.Problem(404, "ROOM_NOT_FOUND"));
            var live = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Live("r1", Fast());
            var rec = new Recorder();
            rec.Watch(live);
            live.Start();
            await Check.WaitFor(() => live.IsClosed && rec.Count(x => x.StartsWith("closed")) == 1, c.Name + ": the end", live);
            Check.True(rec.Has(c.Want), c.Name + ": want " + c.Want + ", got " + string.Join(",", rec.Items));
        }
    }

    static string MeSnapshot(string id)
    {
        return "id: " + id + "\nevent: snapshot\ndata: {\"type\":\"snapshot\",\"userId\":\"u1\",\"platform\":\"pc\",\"session\":\"s1\",\"pending\":0}\n\n";
    }

    static async Task FakeMeSessionExists()
    {
        // REALSYNC_SESSION_POLICY=reject-new: another session holds the platform until it ends or its lease lapses.
        var h = new FakeHandler()
            .Then(FakeHandler.Problem(409, "SESSION_EXISTS"))
            .Then(FakeHandler.Problem(409, "SESSION_EXISTS", retryAfter: 1))
            .Then(FakeHandler.Sse(MeSnapshot("5-u"), hang: true));
        var o = Fast();
        o.Backoff.MaxMs = 5000; // Retry-After counts up to MaxMs
        var me = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Me("pc", o);
        var delays = new List<ReconnectingEvent>();
        me.Reconnecting += e => delays.Add(e);
        var rec = new Recorder();
        rec.Watch(me);
        me.Start();
        await Check.WaitFor(() => me.Ready.IsCompleted, "ready once the other session is gone", me);
        Check.True(me.Ready.Status == TaskStatus.RanToCompletion, "ready: " + string.Join(",", rec.Items));
        Check.Eq("SESSION_EXISTS,SESSION_EXISTS", string.Join(",", delays.Select(d => d.Error.Code)), "both refusals retried");
        Check.True(delays[1].DelayMs >= 1000, "Retry-After honoured: " + delays[1].DelayMs);
        Check.True(!me.IsClosed, "still open");
        me.Close();
    }

    static async Task FakeMeLastEventIdHandled()
    {
        // The README's recipe: save e.LastEventId in Change. With a dispatch that runs handlers later
        // (Queue, Unity's Context), the stream has read further by then (me.LastEventId is 7-u for all
        // three): each Change must see its own event's id, or an app killed before handling the later
        // events skips them on restart.
        var message = new Func<string, string>(id => "id: " + id + "\nevent: message\ndata: {\"type\":\"message\",\"userId\":\"u1\",\"message\":{\"type\":\"chat\",\"data\":1}}\n\n");
        var h = new FakeHandler().Then(FakeHandler.Sse(MeSnapshot("5-u") + message("6-u") + message("7-u"), hang: true));
        var me = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1))).Me("pc", Fast());
        var saved = new List<string>();
        me.Change += e => saved.Add(e.LastEventId);
        me.Start();
        await Check.WaitFor(() => h.Requests.Count == 1, "the stream's request"); // nothing pumped
        // the connection's three events read by the stream (its LastEventId), their handlers not run
        await Check.WaitFor(() => me.LastEventId == "7-u", "the three events read"); // no pump
        Check.Eq("", string.Join(",", saved), "nothing handled before DispatchPending");
        me.DispatchPending();
        Check.Eq("5-u,6-u,7-u", string.Join(",", saved), "each Change sees its own event's id");
        me.Close();
    }

    static async Task FakeMeLastEventId()
    {
        // An app restarted with the id it kept: the stream resumes after it (the replay, then resumed, no snapshot).
        var message = "id: 7-u\nevent: message\ndata: {\"type\":\"message\",\"userId\":\"u1\",\"message\":{\"type\":\"chat\",\"data\":1}}\n\n";
        var token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1));
        var h = new FakeHandler().Then(FakeHandler.Sse(message + "event: resumed\ndata: {\"type\":\"resumed\"}\n\n", hang: true));
        var o = Fast();
        o.LastEventId = "6-u";
        var me = FakeClient(h, token).Me("pc", o);
        var got = new List<string>();
        me.MessageReceived += e => got.Add(e.Type);
        me.Start();
        await Check.WaitFor(() => me.Ready.IsCompleted, "ready after the replay", me);
        Check.True(me.Ready.Status == TaskStatus.RanToCompletion, "ready");
        Check.Eq("message", string.Join(",", got), "the event after the kept id");
        Check.Eq("GET /v1/me/events?platform=pc auth=" + token + " last=6-u", h.Requests[0], "the kept id as Last-Event-ID");
        Check.Eq("7-u", me.LastEventId, "the id to keep next");
        me.Close();
    }

    /// <summary>SilentHandler never answers (a dead keep-alive connection, a silent server) until cancelled.</summary>
    sealed class SilentHandler : System.Net.Http.HttpMessageHandler
    {
        /// <summary>Completes once a request arrived.</summary>
        public readonly TaskCompletionSource<bool> Asked = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);

        protected override async Task<System.Net.Http.HttpResponseMessage> SendAsync(System.Net.Http.HttpRequestMessage req, CancellationToken ct)
        {
            Asked.TrySetResult(true);
            await Task.Delay(Timeout.Infinite, ct);
            throw new InvalidOperationException("unreachable");
        }
    }

    static async Task FakeRestRequestTimeout()
    {
        var client = new RealSyncClient(new RealSyncOptions
        {
            BaseUrl = "http://fake.invalid", Token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1)), Handler = new SilentHandler(),
            RequestTimeout = TimeSpan.FromMilliseconds(200),
        });
        var e = await Check.Throws(0, "NETWORK", () => client.GetRoomAsync("r1"), "a request nobody answers");
        Check.True(e.Message.Contains("within 0.2 s (RealSyncOptions.RequestTimeout)"), "the message names the limit: " + e.Message);
    }

    static async Task FakeRestDisposedDuringACall()
    {
        // The client's Dispose() (a scene's OnDestroy) ends the calls it is waiting for: that is no network
        // failure (it was NETWORK "no answer within 30 s (RealSyncOptions.RequestTimeout)", Transient: resend
        // it), but the disposed client, as for a call made after.
        var h = new SilentHandler();
        var client = new RealSyncClient(new RealSyncOptions { BaseUrl = "http://fake.invalid", Token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1)), Handler = h });
        var call = client.GetRoomAsync("r1");
        await h.Asked.Task;
        client.Dispose();
        foreach (var c in new[] { call, client.GetRoomAsync("r1") })
        {
            try
            {
                await c;
                throw new Check.CheckFailed("a call on a disposed client succeeded");
            }
            catch (ObjectDisposedException e) { Check.True(e.Message.Contains("RealSyncClient"), "the message names the client: " + e.Message); }
            catch (RealSyncException e) { throw new Check.CheckFailed("want ObjectDisposedException, got " + e); }
        }
    }

    static async Task FakeRestBadArguments()
    {
        // A base URL without its scheme fails where it is made, naming it (not at every call, as HttpClient's
        // "Only 'http' and 'https' schemes are allowed. Parameter name: requestUri").
        foreach (var bad in new[] { "localhost:8080", "ws://localhost:8080", "/v1" })
        {
            try
            {
                new RealSyncClient(bad).Dispose();
                throw new Check.CheckFailed("a client of " + bad);
            }
            catch (ArgumentException e)
            {
                Check.True(e.Message.Contains("BaseUrl") && e.Message.Contains(bad), "the message names the base URL: " + e.Message);
            }
        }
        // A missing body is the caller's mistake, not a 415 about a Content-Type it never chose; so is an empty id.
        var h = new FakeHandler();
        var client = FakeClient(h, FakeHandler.Jwt(DateTime.UtcNow.AddHours(1)));
        var calls = new Dictionary<string, Func<Task>>
        {
            { "CreateRoomAsync(null)", () => client.CreateRoomAsync(null) },
            { "UpdateRoomAsync(null)", () => client.UpdateRoomAsync("r1", null) },
            { "PatchStateAsync(null)", () => client.PatchStateAsync("r1", null) },
            { "SendMessageAsync(null)", () => client.SendMessageAsync("r1", null) },
            { "QuickJoinAsync(null)", () => client.QuickJoinAsync(null) },
            { "CreateTicketAsync(null)", () => client.CreateTicketAsync((CreateTicketRequest)null) },
            // an empty id would name another route (GET /v1/rooms/: 404 NOT_FOUND "No such route")
            { "GetRoomAsync(\"\")", () => client.GetRoomAsync("") },
            { "GetTicketAsync(\"\")", () => client.GetTicketAsync("") },
            { "SendDirectMessageAsync(\"\")", () => client.SendDirectMessageAsync("", "chat", 1) },
            { "Live(\"\")", () => { client.Live(""); return Task.CompletedTask; } },
            // JSON has no NaN (a Unity vector normalized from zero)
            { "PatchStateAsync(NaN)", () => client.PatchStateAsync("r1", new Dictionary<string, object> { { "x", float.NaN } }) },
        };
        foreach (var c in calls)
        {
            try
            {
                await c.Value();
                throw new Check.CheckFailed(c.Key + " succeeded");
            }
            catch (ArgumentException) { } // ArgumentNullException included
            catch (RealSyncException e)
            {
                throw new Check.CheckFailed(c.Key + ": want ArgumentException, got " + e);
            }
        }
        Check.Eq(0, h.Requests.Count, "nothing sent");
    }

    static async Task FakeReconnectDuringAFailure()
    {
        // Reconnect() called while the loop handles a failed attempt (here from its Error handler, run
        // inline by LiveDispatch.Immediate; in an app, a network callback on another thread at that moment)
        // ends the wait that follows: it is not lost to the wait taking the next Reconnect()'s token.
        var token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1));
        var h = new FakeHandler()
            .Then(FakeHandler.Problem(503, "STORE_UNAVAILABLE"))
            .Then(FakeHandler.Sse(Snapshot(3, "t"), hang: true));
        var o = new LiveOptions { Dispatch = LiveDispatch.Immediate, PlayerId = 1 };
        o.Backoff = new Backoff { InitialMs = 3600000, MaxMs = 3600000 }; // an hour: only Reconnect() ends the wait
        var live = FakeClient(h, token).Live("r1", o);
        var reconnects = 0;
        live.Error += e => { if (reconnects++ == 0) live.Reconnect(); };
        live.Start();
        await Check.WaitFor(() => live.Ready.IsCompleted, "ready after the Reconnect() made during the failure", live);
        Check.Eq(2, h.Requests.Count, "requests");
        live.Close();
    }

    /// <summary>HangFirst never answers the first request (a POST over a dead keep-alive connection) until cancelled; the rest go to its inner handler.</summary>
    sealed class HangFirst : System.Net.Http.DelegatingHandler
    {
        int n;
        public HangFirst(System.Net.Http.HttpMessageHandler inner) : base(inner) { }
        protected override async Task<System.Net.Http.HttpResponseMessage> SendAsync(System.Net.Http.HttpRequestMessage req, CancellationToken ct)
        {
            if (Interlocked.Increment(ref n) == 1) await Task.Delay(Timeout.Infinite, ct);
            return await base.SendAsync(req, ct);
        }
    }

    static async Task FakeReconnectDuringStreamToken()
    {
        // A stream-token stream (WebGL) whose token request hangs on a dead connection after a network change:
        // Reconnect() ends that request too and starts over at once, not after RequestTimeout.
        var h = new FakeHandler()
            .Then(FakeHandler.Answer(201, "{\"token\":\"st1\",\"expiresAt\":\"" + Ts + "\"}"))
            .Then(FakeHandler.Sse(Snapshot(3, "t"), hang: true));
        var client = new RealSyncClient(new RealSyncOptions
        {
            BaseUrl = "http://fake.invalid", Token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1)), Handler = new HangFirst(h),
            RequestTimeout = TimeSpan.FromHours(1),
        });
        var o = Fast();
        o.UseStreamToken = true;
        var live = client.Live("r1", o);
        var rec = new Recorder();
        rec.Watch(live);
        live.Start();
        await Check.WaitFor(() => rec.Has("connecting 1"), "the first attempt", live);
        await Task.Delay(100); // its token request sent, hanging
        live.Reconnect();
        await Check.WaitFor(() => live.Ready.IsCompleted, "ready after Reconnect() ended the hanging token request", live);
        Check.Eq("POST /v1/rooms/r1/stream-token", h.Requests[0].Substring(0, 30), "the second token request");
        live.Close();
    }

    static async Task FakeReconnect()
    {
        // Reconnect(): an open connection is dropped and resumed at once; a long wait before the next attempt ends at once.
        var token = FakeHandler.Jwt(DateTime.UtcNow.AddHours(1));
        var h = new FakeHandler()
            .Then(FakeHandler.Sse(Snapshot(3, "t"), hang: true))
            .Then(FakeHandler.Problem(503, "STORE_UNAVAILABLE", retryAfter: 3600))
            .Then(FakeHandler.Sse(ResumedEvent(3), hang: true));
        var o = Queue(1);
        o.Backoff = new Backoff { InitialMs = 3600000, MaxMs = 3600000 }; // an hour: only Reconnect() ends the wait
        var live = FakeClient(h, token).Live("r1", o);
        var rec = new Recorder();
        rec.Watch(live);
        live.Start();
        await Check.WaitFor(() => live.Ready.IsCompleted, "ready", live);
        live.Reconnect(); // the open connection: dropped, asked again at once (refused 503, an hour's wait)
        await Check.WaitFor(() => rec.Has("reconnecting STORE_UNAVAILABLE"), "the refusal after Reconnect()", live);
        live.Reconnect(); // the hour's wait: over
        await Check.WaitFor(() => rec.Has("resumed snapshot=False"), "resumed after the second Reconnect()", live);
        Check.Eq("connecting 1,open,connecting 1,error STORE_UNAVAILABLE,reconnecting STORE_UNAVAILABLE,connecting 2,open,resumed snapshot=False",
            string.Join(",", rec.Items), "events: no reconnecting for a Reconnect()");
        Check.Eq("GET /v1/rooms/r1/events auth=" + token + " last=3-t", h.Requests[2], "resumed after the last event");
        live.Close();
    }

    // ---- REST ----

    static async Task<RealSyncClient> Guest(Server s, string name)
    {
        var c = new RealSyncClient(s.BaseUrl);
        await c.GuestAsync(name);
        return c;
    }

    static CreateRoomRequest NewRoom(string mode, string visibility = null, string policy = null)
    {
        return new CreateRoomRequest { Name = "Room " + mode, Mode = mode, Region = "eu", MaxPlayers = 4, Visibility = visibility, StatePolicy = policy };
    }

    static async Task GuestAuthAndRefresh(Server s)
    {
        var c = new RealSyncClient(s.BaseUrl);
        string seen = null;
        var g = await c.GuestAsync("alice");
        Check.Eq("alice", g.Name, "name");
        Check.True(!string.IsNullOrEmpty(g.UserId), "userId");
        Check.Eq(g.Token, c.Token, "the client uses the token");
        var exp = c.TokenExpiresAt;
        Check.True(exp.HasValue && exp.Value > DateTime.UtcNow.AddHours(23) && exp.Value < DateTime.UtcNow.AddHours(25), "exp read from the JWT: " + exp);
        Check.True(Math.Abs((g.ExpiresAt - exp.Value).TotalSeconds) < 2, "expiresAt matches exp");
        var c2 = new RealSyncClient(new RealSyncOptions { BaseUrl = s.BaseUrl, Token = g.Token, OnToken = t => seen = t });
        var r = await c2.RefreshAsync();
        Check.Eq(g.UserId, r.UserId, "same user after refresh");
        Check.Eq(r.Token, c2.Token, "refreshed token in use");
        Check.Eq(r.Token, seen, "OnToken called");
        var anon = new RealSyncClient(s.BaseUrl);
        await Check.Throws(401, "UNAUTHENTICATED", () => anon.LobbyStatsAsync(), "no token");
        var badName = await Check.Throws(422, "VALIDATION_FAILED", () => anon.GuestAsync(new string('x', 33)), "name too long");
        Check.True(badName.Errors.Any(e => e.Field == "name"), "errors name the field");
    }

    static async Task RoomsFlow(Server s)
    {
        var mode = Unique("m");
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        var created = await alice.CreateRoomAsync(NewRoom(mode));
        var id = created.Room.Id;
        Check.Eq(1, created.PlayerId, "owner is player 1");
        Check.Eq(mode, created.Room.Mode, "mode");
        Check.Eq(4, created.Room.MaxPlayers, "maxPlayers");
        Check.Eq("waiting", created.Room.Status, "status");
        Check.True(created.Room.CreatedAt > DateTime.UtcNow.AddMinutes(-5), "createdAt parsed");

        var list = await bob.ListRoomsAsync(new ListRoomsQuery { Mode = mode, Joinable = true, Sort = "fill" });
        Check.Eq(1, list.Items.Count, "listed");
        Check.Eq(id, list.Items[0].Id, "listed id");
        Check.True(list.Items[0].Players == null, "no players in list items");

        var joined = await bob.JoinRoomAsync(id);
        Check.Eq(2, joined.PlayerId, "bob is player 2");
        var again = await bob.JoinRoomAsync(id);
        Check.Eq(2, again.PlayerId, "join is idempotent");
        var room = await alice.GetRoomAsync(id);
        Check.Eq("alice,bob", string.Join(",", room.Players.Select(p => p.Name)), "players in join order");
        var mine = await bob.MyRoomsAsync();
        Check.True(mine.Any(r => r.Id == id && r.PlayerId == 2), "my rooms");
        var stats = await bob.LobbyStatsAsync();
        Check.True(stats.Modes.ContainsKey(mode) && stats.Modes[mode].Waiting == 1, "lobby stats count the room");

        await Check.Throws(403, "NOT_OWNER", () => bob.UpdateRoomAsync(id, new UpdateRoomRequest { Name = "mine" }), "a member's update");
        await Check.Throws(403, "NOT_OWNER", () => bob.DeleteRoomAsync(id), "a member's delete");
        await bob.LeaveRoomAsync(id);
        await Check.Throws(403, "NOT_A_MEMBER", () => bob.LeaveRoomAsync(id), "leave twice");
        Check.Eq(1, (await alice.GetRoomAsync(id)).PlayerCount, "one player left");

        var updated = await alice.UpdateRoomAsync(id, new UpdateRoomRequest { Status = "playing", Locked = true });
        Check.Eq("playing", updated.Status, "status updated");
        Check.True(updated.Locked, "locked");
        await Check.Throws(409, "ROOM_NOT_JOINABLE", () => bob.JoinRoomAsync(id), "join a playing room");
        await alice.UpdateRoomAsync(id, new UpdateRoomRequest { Status = "finished" });
        await Check.Throws(409, "INVALID_TRANSITION", () => alice.UpdateRoomAsync(id, new UpdateRoomRequest { Status = "waiting" }), "finished is terminal");
        await alice.DeleteRoomAsync(id);
        await Check.Throws(404, "ROOM_NOT_FOUND", () => alice.GetRoomAsync(id), "gone after delete");
    }

    static async Task JoinByCodeAndQuickJoin(Server s)
    {
        var mode = Unique("q");
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        var priv = await alice.CreateRoomAsync(NewRoom(mode, "private"));
        Check.True(!string.IsNullOrEmpty(priv.Room.InviteCode), "invite code shown to the owner");
        await Check.Throws(404, "ROOM_NOT_FOUND", () => bob.GetRoomAsync(priv.Room.Id), "private room hidden");
        var byCode = await bob.JoinByCodeAsync(priv.Room.InviteCode.ToLowerInvariant());
        Check.Eq(priv.Room.Id, byCode.Room.Id, "joined by code");
        Check.Eq(2, byCode.PlayerId, "player 2");
        await Check.Throws(404, "ROOM_NOT_FOUND", () => bob.JoinByCodeAsync("0000-0000-0000"), "wrong code");

        var qmode = Unique("qj");
        var carol = await Guest(s, "carol");
        var dave = await Guest(s, "dave");
        await Check.Throws(404, "NO_MATCH", () => carol.QuickJoinAsync(new QuickJoinRequest { Mode = qmode }), "nothing to join");
        var q1 = await carol.QuickJoinAsync(new QuickJoinRequest { Mode = qmode, Regions = new[] { "eu" }, Create = new QuickJoinCreate { Name = "Quick", MaxPlayers = 2 } });
        Check.True(q1.Created, "created");
        var q2 = await dave.QuickJoinAsync(new QuickJoinRequest { Mode = qmode, Regions = new[] { "eu" }, Create = new QuickJoinCreate { Name = "Quick" } });
        Check.True(!q2.Created, "joined, not created");
        Check.Eq(q1.Room.Id, q2.Room.Id, "the same room");
        Check.Eq(2, q2.PlayerId, "second player");
    }

    static async Task StateAndMessages(Server s)
    {
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("s")))).Room.Id;
        await bob.JoinRoomAsync(id);
        var v0 = await alice.GetStateAsync(id);
        var v1 = await alice.PatchStateAsync(id, new Dictionary<string, object> { { "score", 10 }, { "map", new Dictionary<string, object> { { "w", 3 } } } }, v0.StateVersion);
        Check.Eq(v0.StateVersion + 1, v1.StateVersion, "stateVersion bumped");
        var stale = await Check.Throws(412, "VERSION_MISMATCH", () => alice.PatchStateAsync(id, new Dictionary<string, object> { { "score", 11 } }, v0.StateVersion), "stale If-Match");
        Check.True(!string.IsNullOrEmpty(stale.Title), "problem title");
        await Check.Throws(403, "STATE_KEY_FORBIDDEN", () => bob.PatchStateAsync(id, new Dictionary<string, object> { { "score", 1 } }), "owner policy");
        await bob.PatchStateAsync(id, new Dictionary<string, object> { { "player_2_ready", true } });
        await alice.PatchStateAsync(id, new Dictionary<string, object> { { "map", null } });
        var st = await bob.GetStateAsync(id);
        Check.Eq(10L, st.State.Get("score"), "score");
        Check.Eq(true, st.State.Get("player_2_ready"), "bob's key");
        Check.True(!st.State.ContainsKey("map"), "null deleted the key");

        var m1 = await alice.SendMessageAsync(id, new MessageRequest { Type = "chat", Data = new Dictionary<string, object> { { "text", "gg" } } });
        var m2 = await bob.SendMessageAsync(id, new MessageRequest { Type = "whisper", Data = "psst", To = new[] { 1 } });
        Check.True(m2 > m1, "message versions increase");
        var msgs = await alice.MessagesAsync(id, limit: 10);
        Check.Eq("whisper,chat", string.Join(",", msgs.Select(m => m.Type)), "newest first");
        Check.Eq("gg", ((JsonObject)msgs[1].Data).String("text"), "data");
        Check.Eq(1, msgs[0].To.Single(), "to");
        Check.Eq(2, msgs[0].From, "from");
        var older = await alice.MessagesAsync(id, before: m2);
        Check.Eq("chat", string.Join(",", older.Select(m => m.Type)), "before");
        await Check.Throws(422, "VALIDATION_FAILED", () => alice.SendMessageAsync(id, new MessageRequest { Type = "chat", Data = 1, To = new[] { 9 } }), "to a non-member");

        // an Idempotency-Key: sent once, another message under it refused
        var k1 = await alice.SendMessageAsync(id, new MessageRequest { Type = "chat", Data = "once" }, "msg-k1");
        Check.Eq(k1, await alice.SendMessageAsync(id, new MessageRequest { Type = "chat", Data = "once" }, "msg-k1"), "the same key, the first version");
        await Check.Throws(422, "IDEMPOTENCY_KEY_REUSED", () => alice.SendMessageAsync(id, new MessageRequest { Type = "chat", Data = "twice" }, "msg-k1"), "the key, another message");
        var sent = await alice.MessagesAsync(id, limit: 10);
        Check.Eq(3, sent.Count, "sent once");
        Check.True(sent[0].MessageId != null && sent[0].MessageId.Length == 32 && sent[1].MessageId == null, "a keyed message's MessageId, none without a key");
        var keyed = NewRoom(Unique("k"));
        var r1 = await alice.CreateRoomAsync(keyed, "create-k1");
        Check.Eq(r1.Room.Id, (await alice.CreateRoomAsync(keyed, "create-k1")).Room.Id, "a create sent again: the first room");
    }

    static async Task ValidationErrors(Server s)
    {
        var alice = await Guest(s, "alice");
        var e = await Check.Throws(422, "VALIDATION_FAILED", () => alice.CreateRoomAsync(new CreateRoomRequest { Name = "", Mode = "Bad Mode", Region = "eu", MaxPlayers = 500 }), "bad room");
        var fields = string.Join(",", e.Errors.Select(f => f.Field).OrderBy(f => f));
        Check.Eq("maxPlayers,mode,name", fields, "each bad field named");
        Check.True(e.Errors.All(f => !string.IsNullOrEmpty(f.Message)), "messages");
        await Check.Throws(404, "ROOM_NOT_FOUND", () => alice.GetRoomAsync("no-such-room"), "unknown room");
        await Check.Throws(422, "VALIDATION_FAILED", () => alice.ListRoomsAsync(new ListRoomsQuery { Limit = 0 }), "limit 0");
        var down = new RealSyncClient("http://127.0.0.1:1");
        var n = await Check.Throws(0, "NETWORK", () => down.HealthzAsync(), "no server");
        Check.True(n.Transient, "network errors are transient");
    }

    static async Task Operations(Server s)
    {
        var c = await Guest(s, "ops");
        Check.True(await c.HealthzAsync(), "GET /healthz");
        Check.True(await c.HealthzAsync(head: true), "HEAD /healthz");
        Check.True(await c.ReadyzAsync(), "GET /readyz");
        Check.True(await c.ReadyzAsync(head: true), "HEAD /readyz");
        Check.True((await c.SpecAsync()).Contains("operationId: streamRoomEvents"), "openapi.yaml");
        Check.True((await c.MetricsAsync()).Contains("realsync_http_requests_total"), "metrics");
        var inst = await c.ListInstancesAsync(Server.AdminToken);
        Check.True(inst.Count >= 1 && !string.IsNullOrEmpty(inst[0].Id), "instances");
        await Check.Throws(403, "ADMIN_REQUIRED", () => c.ListInstancesAsync(c.Token), "player token on an admin route");
        // webhooks off on the test server: no dead letter, a replay is told so
        var dead = await c.WebhookDeadLettersPageAsync(Server.AdminToken, limit: 5);
        Check.True(dead.Items.Count == 0 && dead.NextCursor == null, "dead letters: an empty last page");
        await Check.Throws(404, "DEAD_LETTER_NOT_FOUND", () => c.ReplayWebhookDeadLetterAsync(Server.AdminToken, "0.1-0"), "replay of an unknown dead letter");
        await Check.Throws(403, "ADMIN_REQUIRED", () => c.WebhookDeadLettersPageAsync(c.Token), "player token on the dead letters");
    }

    // ---- live ----

    /// <summary>Recorder keeps what a live stream raised, in order, as text.</summary>
    sealed class Recorder
    {
        readonly List<string> items = new List<string>();
        public List<string> Items { get { lock (items) return items.ToList(); } }
        public void Add(string s) { lock (items) items.Add(s); }
        public bool Has(string s) { lock (items) return items.Contains(s); }
        public int Count(Func<string, bool> f) { lock (items) return items.Count(f); }

        public void Watch(LiveStream l)
        {
            l.Connecting += e => Add("connecting " + e.Attempt);
            l.Open += e => Add("open");
            l.Reconnecting += e => Add("reconnecting " + e.Error.Code);
            l.Resumed += e => Add("resumed snapshot=" + e.Snapshot);
            l.Closed += e => Add("closed " + e.ReasonName + (e.Error != null ? " " + e.Error.Code : ""));
            l.Error += e => Add("error " + e.Code);
        }
    }

    static LiveOptions Queue(int? playerId = null)
    {
        return new LiveOptions { Dispatch = LiveDispatch.Queue, PlayerId = playerId };
    }

    static async Task LiveJoinThenState(Server s)
    {
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("l")))).Room.Id;
        using (var live = alice.Live(id, Queue(1)))
        {
            var rec = new Recorder();
            rec.Watch(live);
            var offThread = 0;
            live.Change += e =>
            {
                rec.Add(e.Type + " v" + e.Version);
                if (!Check.Pumping) offThread++; // not inside DispatchPending on this thread
            };
            live.Start();
            await Task.Delay(300);
            Check.True(live.Room == null && !live.Ready.IsCompleted, "nothing applied before DispatchPending (Queue)");
            await Check.WaitFor(() => live.Ready.IsCompleted, "ready", live);
            Check.Eq(id, live.Room.Id, "snapshot applied");
            var v0 = live.Version;
            await bob.JoinRoomAsync(id);
            var patched = await alice.PatchStateAsync(id, new Dictionary<string, object> { { "score", 10 } });
            await Check.WaitFor(() => live.StateVersion == patched.StateVersion, "the state event", live);
            var changes = rec.Items.Where(x => x.Contains(" v")).ToList();
            var joinedAt = changes.FindIndex(x => x.StartsWith("player_joined"));
            var stateAt = changes.FindIndex(x => x.StartsWith("state"));
            Check.True(joinedAt > 0 && stateAt > joinedAt, "snapshot, then player_joined, then state: " + string.Join("; ", changes));
            Check.Eq("alice,bob", string.Join(",", live.Players.Select(p => p.Name)), "bob in the live room");
            Check.Eq(2, live.Room.PlayerCount, "player count");
            Check.Eq(10L, live.State.Get("score"), "state applied");
            Check.Eq(patched.Version, live.Version, "room version");
            Check.True(live.Version > v0, "version moved");
            Check.Eq(0, offThread, "events raised on the thread that called DispatchPending");
            Check.Eq("connecting 1,open", string.Join(",", rec.Items.Take(2)), "connecting, then open");
        }
    }

    /// <summary>PumpContext is a SynchronizationContext like Unity's: posts run on one thread, in order.</summary>
    sealed class PumpContext : SynchronizationContext
    {
        readonly System.Collections.Concurrent.BlockingCollection<Action> work = new System.Collections.Concurrent.BlockingCollection<Action>();
        public readonly Thread Thread;
        public PumpContext()
        {
            Thread = new Thread(() => { foreach (var w in work.GetConsumingEnumerable()) w(); }) { IsBackground = true };
            Thread.Start();
        }
        public override void Post(SendOrPostCallback d, object state) { work.Add(() => d(state)); }
        public void Stop() { work.CompleteAdding(); }
    }

    static async Task LiveSynchronizationContext(Server s)
    {
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("c")))).Room.Id;
        var ctx = new PumpContext();
        var previous = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(ctx);
        LiveRoom live;
        try { live = alice.Live(id); } // Auto: captures the current context, as in a MonoBehaviour
        finally { SynchronizationContext.SetSynchronizationContext(previous); }
        var wrongThread = 0;
        var states = 0;
        live.Change += e => { if (Thread.CurrentThread != ctx.Thread) Interlocked.Increment(ref wrongThread); };
        live.StateChanged += e => Interlocked.Increment(ref states);
        live.Start();
        await live.Ready;
        await alice.PatchStateAsync(id, new Dictionary<string, object> { { "k", 1 } });
        await Check.WaitFor(() => Volatile.Read(ref states) == 1, "state event on the context");
        live.Close();
        ctx.Stop();
        Check.Eq(0, Volatile.Read(ref wrongThread), "every event raised on the context's thread");
    }

    static async Task LiveImmediate(Server s)
    {
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("i")))).Room.Id;
        var seen = new System.Collections.Concurrent.ConcurrentQueue<string>();
        using (var live = alice.Live(id, new LiveOptions { Dispatch = LiveDispatch.Immediate, PlayerId = 1 }))
        {
            live.StateChanged += e => seen.Enqueue(e.Set.Keys.Single() + "=" + live.State.Get("n") + "@" + (Check.Pumping ? "pump" : "stream"));
            live.Start();
            await live.Ready; // completes on the stream's thread, no pumping needed
            for (var i = 1; i <= 3; i++) await alice.PatchStateAsync(id, new Dictionary<string, object> { { "n", i } });
            await Check.WaitFor(() => seen.Count == 3, "three state events, raised by the stream itself");
            Check.Eq("n=1@stream,n=2@stream,n=3@stream", string.Join(",", seen), "in order, model updated before each event");
        }
    }

    static async Task LiveMeOffline(Server s)
    {
        var alice = new RealSyncClient(s.BaseUrl);
        var aliceId = (await alice.GuestAsync("alice")).UserId;
        var bob = new RealSyncClient(s.BaseUrl);
        var bobId = (await bob.GuestAsync("bob")).UserId;
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("d"), "private"))).Room.Id;
        await alice.SendDirectMessageAsync(bobId, "chat", new Dictionary<string, object> { { "text", "hi" } }, "dm-1");
        await alice.InviteAsync(id, bobId);
        var seen = new System.Collections.Concurrent.ConcurrentQueue<UserEvent>();
        using (var me = bob.Me("mobile", new LiveOptions { Dispatch = LiveDispatch.Immediate }))
        {
            long pending = -1;
            me.Change += e => { if (e.Type == "snapshot") pending = e.Pending; };
            me.MessageReceived += seen.Enqueue;
            me.Invited += seen.Enqueue;
            me.Start();
            await Check.WaitFor(() => seen.Count == 2, "the message and the invite sent while bob was away", me);
            Check.Eq(2L, pending, "the snapshot announces them");
            var evs = seen.ToArray();
            Check.Eq("message", evs[0].Type, "the message first");
            Check.Eq(aliceId, evs[0].FromUserId, "from alice");
            Check.Eq("chat", evs[0].Message.Type, "its type");
            Check.Eq("hi", ((JsonObject)evs[0].Message.Data).String("text"), "its data");
            Check.Eq("alice", evs[0].FromName, "the sender's name");
            Check.True(evs[0].Seq > 0 && evs[0].Ts > DateTime.UtcNow.AddMinutes(-5), "its seq and time");
            Check.True(System.Text.RegularExpressions.Regex.IsMatch(evs[0].MessageId ?? "", "^[0-9a-f]{32}$"), "a keyed message's MessageId");
            Check.Eq(null, evs[1].MessageId, "an invite sent without a key has none");
            Check.Eq(id, evs[1].RoomId, "the invite's room");
            Check.Eq("Room " + evs[1].Mode, evs[1].Name, "the invite's room name and mode");
            Check.Eq("eu", evs[1].Region, "the invite's region");
            Check.True(evs[1].InviteCode != null, "a private room's invite code");
            Check.Eq(id, (await bob.JoinByCodeAsync(evs[1].InviteCode)).Room.Id, "joined by the invite");
        }
    }

    static async Task Party(Server s)
    {
        // The caller's party: joined (one leader at a time, 24 hours), read, listed by its
        // leader, left.
        var alice = new RealSyncClient(s.BaseUrl);
        var aliceId = (await alice.GuestAsync("alice")).UserId;
        var leader = new RealSyncClient(s.BaseUrl);
        var leaderId = (await leader.GuestAsync("leader")).UserId;
        await Check.Throws(404, "PARTY_NOT_FOUND", () => alice.GetPartyAsync(), "in no party");
        Check.Eq(0, (await leader.ListPartyMembersAsync()).Count, "nobody in the leader's party yet");
        var p = await alice.JoinPartyAsync(leaderId);
        Check.Eq(leaderId, p.LeaderUserId, "the leader");
        Check.True(p.ExpiresAt > DateTime.UtcNow.AddHours(23) && p.ExpiresAt <= DateTime.UtcNow.AddHours(24), "kept 24 hours: " + p.ExpiresAt.ToString("o"));
        var members = await leader.ListPartyMembersAsync();
        Check.Eq(1, members.Count, "the leader's party members");
        Check.Eq(aliceId, members[0].UserId, "the member listed");
        Check.Eq(p.ExpiresAt, members[0].ExpiresAt, "the member's expiry listed");
        Check.Eq("u-other", (await alice.JoinPartyAsync("u-other")).LeaderUserId, "one party at a time");
        Check.Eq("u-other", (await alice.GetPartyAsync()).LeaderUserId, "read back");
        Check.Eq(0, (await leader.ListPartyMembersAsync()).Count, "no longer the first leader's");
        await Check.Throws(422, "VALIDATION_FAILED", () => alice.JoinPartyAsync("a b"), "not a user id");
        await alice.LeavePartyAsync();
        await Check.Throws(404, "PARTY_NOT_FOUND", () => alice.GetPartyAsync(), "left");
        await alice.LeavePartyAsync();
    }

    static async Task LiveMeMatchFound(Server s)
    {
        // A mode the server has no rules for: matches of exactly 2 players.
        var mode = Unique("mm");
        var alice = new RealSyncClient(s.BaseUrl);
        var aliceId = (await alice.GuestAsync("alice")).UserId;
        var bob = new RealSyncClient(s.BaseUrl);
        var bobId = (await bob.GuestAsync("bob")).UserId;
        var found = new System.Collections.Concurrent.ConcurrentDictionary<string, UserEvent>();
        using (var am = alice.Me("pc", new LiveOptions { Dispatch = LiveDispatch.Immediate }))
        using (var bm = bob.Me("pc", new LiveOptions { Dispatch = LiveDispatch.Immediate }))
        {
            am.MatchFound += e => found[aliceId] = e;
            bm.MatchFound += e => found[bobId] = e;
            am.Start();
            bm.Start();
            await Task.WhenAll(am.Ready, bm.Ready);
            // a create sent again with its key (an answer lost to a timeout): the first ticket, not 409 TICKET_ACTIVE
            var req = new CreateTicketRequest { Mode = mode, Regions = new[] { "eu" }, Rating = 1000, Attributes = new Dictionary<string, object> { { "platform", "pc" } } };
            var ta = await alice.CreateTicketAsync(req, "ticket-" + mode);
            Check.Eq("searching", ta.Status, "alice searches");
            Check.Eq("pc", ta.Attributes.String("platform"), "the ticket's attributes");
            Check.Eq(DateTime.MinValue, ta.MatchedAt, "not matched yet");
            Check.Eq(ta.TicketId, (await alice.CreateTicketAsync(req, "ticket-" + mode)).TicketId, "the same key: the first ticket");
            await Check.Throws(409, "TICKET_ACTIVE", () => alice.CreateTicketAsync(req), "without a key: refused by the first");
            var tb = await bob.CreateTicketAsync(mode, new[] { "eu" }, 1010);
            await Check.WaitFor(() => found.Count == 2, "match_found on both personal streams");
            var fa = found[aliceId];
            var fb = found[bobId];
            Check.Eq(ta.TicketId, fa.TicketId, "alice's ticket");
            Check.Eq(tb.TicketId, fb.TicketId, "bob's ticket");
            Check.True(fa.MatchId != null && fa.MatchId == fb.MatchId, "one match");
            Check.Eq(fa.RoomId, fb.RoomId, "one room");
            Check.Eq(mode, fa.Mode, "the mode");
            Check.Eq("eu", fb.Region, "the region");
            Check.Eq(0, fa.Team + fb.Team, "one team (a mode without rules: one of 2 players)");
            // the default hold, 15 s from the match's room, which ts follows (the same clock)
            var held = fb.SeatHeldUntil - fb.Ts;
            Check.True(held > TimeSpan.Zero && held <= TimeSpan.FromSeconds(15), "seatHeldUntil 15 s after the room: " + fb.SeatHeldUntil.ToString("o") + " against ts " + fb.Ts.ToString("o"));
            Check.Eq(fa.RoomId, (await bob.JoinRoomAsync(fb.RoomId)).Room.Id, "bob takes his held seat");
            var read = await bob.GetTicketAsync(tb.TicketId);
            Check.Eq("matched", read.Status, "matched");
            Check.Eq(fb.RoomId, read.RoomId, "the ticket names the room");
            Check.Eq(fb.SeatHeldUntil, read.SeatHeldUntil, "the ticket says until when the seats are held, as match_found does");
            Check.True(read.MatchedAt > DateTime.UtcNow.AddMinutes(-5), "matchedAt: " + read.MatchedAt.ToString("o"));
            await Check.Throws(409, "TICKET_MATCHED", () => bob.CancelTicketAsync(tb.TicketId), "a matched ticket is not cancelled");
        }
    }

    static async Task LiveCloseAsync(Server s)
    {
        // CloseAsync completes once the connection loop ended (a program may exit then); a stream
        // never started, or closed already, completes at once.
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("x")))).Room.Id;
        Check.True(alice.Live(id).CloseAsync().IsCompleted, "a stream never started");
        var live = alice.Live(id);
        live.Start();
        await live.Ready;
        var closing = live.CloseAsync();
        Check.True(await Task.WhenAny(closing, Task.Delay(10000)) == closing, "CloseAsync completed within 10 s");
        Check.True(live.IsClosed, "closed");
        Check.True(live.CloseAsync().IsCompleted, "closed already");
    }

    static async Task LiveClientDisposeAsync(Server s)
    {
        // DisposeAsync completes once every stream it closed let its connection go (what a console
        // program awaits before it exits); a client disposed already completes at once.
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("x")))).Room.Id;
        var live = alice.Live(id);
        var me = alice.Me("pc");
        live.Start();
        me.Start();
        await Check.WaitFor(() => live.Ready.IsCompleted && me.Ready.IsCompleted, "both streams ready", live, me);
        var disposing = alice.DisposeAsync().AsTask();
        var again = alice.DisposeAsync().AsTask(); // completes with the first
        Check.True(await Task.WhenAny(disposing, Task.Delay(10000)) == disposing, "DisposeAsync completed within 10 s");
        Check.True(await Task.WhenAny(again, Task.Delay(10000)) == again, "a second DisposeAsync completed with it");
        Check.True(live.CloseAsync().IsCompleted && me.CloseAsync().IsCompleted, "both connections let go when it completed");
        Check.True(alice.DisposeAsync().IsCompleted, "disposed already");
        try
        {
            await alice.GetRoomAsync(id);
            throw new Check.CheckFailed("a disposed client sent a call");
        }
        catch (ObjectDisposedException) { }
    }

    static async Task LiveClientDispose(Server s)
    {
        // A scene's OnDestroy disposes the client, one of its streams forgotten: the streams end
        // (Closed, reason Closed), not stay connected and retry forever on the disposed client.
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("x")))).Room.Id;
        var live = alice.Live(id, Queue(1));
        var me = alice.Me("pc", Queue(1));
        var closed = new List<string>();
        var reconnecting = 0;
        live.Closed += e => closed.Add("room:" + e.ReasonName);
        me.Closed += e => closed.Add("me:" + e.ReasonName);
        live.Reconnecting += e => reconnecting++;
        me.Reconnecting += e => reconnecting++;
        live.Start();
        me.Start();
        await Check.WaitFor(() => live.Ready.IsCompleted && me.Ready.IsCompleted, "both streams ready", live, me);
        alice.Dispose();
        await Check.WaitFor(() => closed.Count == 2, "both streams closed by the client's Dispose", live, me);
        Check.Eq("me:closed,room:closed", string.Join(",", closed.OrderBy(c => c)), "closed by the caller");
        Check.Eq(0, reconnecting, "no reconnection on the disposed client");
        Check.True(live.IsClosed && me.IsClosed, "ended");
        try
        {
            alice.Live(id);
            throw new Check.CheckFailed("a disposed client made a live room");
        }
        catch (ObjectDisposedException) { }
    }

    static async Task LiveStreamToken(Server s)
    {
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("t")))).Room.Id;
        await bob.JoinRoomAsync(id);
        var opts = Queue(1);
        opts.UseStreamToken = true;
        using (var live = alice.Live(id, opts))
        {
            var got = new List<Message>();
            live.MessageReceived += e => got.Add(e.Message);
            live.Start();
            await Check.WaitFor(() => live.Ready.IsCompleted, "ready with a stream token", live);
            Check.True(live.Ready.Status == TaskStatus.RanToCompletion, "ready succeeded");
            await bob.SendMessageAsync(id, new MessageRequest { Type = "chat", Data = new Dictionary<string, object> { { "text", "hi" } } });
            await Check.WaitFor(() => got.Count == 1, "the message", live);
            Check.Eq(2, got[0].From, "from bob");
            Check.Eq("hi", ((JsonObject)got[0].Data).String("text"), "data");
            Check.True(got[0].Version > 0, "version");
        }
    }

    static async Task LivePermanent(Server s)
    {
        var alice = await Guest(s, "alice");
        var carol = await Guest(s, "carol");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("p")))).Room.Id;
        var cases = new[] { new { Room = id, Status = 403, Code = "NOT_A_MEMBER" }, new { Room = "no-such-room", Status = 404, Code = "ROOM_NOT_FOUND" } };
        foreach (var c in cases)
        {
            foreach (var streamToken in new[] { false, true })
            {
                var opts = Queue();
                opts.UseStreamToken = streamToken;
                var live = carol.Live(c.Room, opts);
                var rec = new Recorder();
                rec.Watch(live);
                live.Start();
                await Check.WaitFor(() => live.Ready.IsCompleted && rec.Count(x => x.StartsWith("closed")) > 0, c.Code + " ends the stream", live);
                var name = c.Code + (streamToken ? " (stream token)" : "");
                Check.True(live.Ready.IsFaulted, name + ": ready fails");
                var err = live.Ready.Exception.InnerException as RealSyncException;
                Check.True(err != null && err.Code == c.Code && err.Status == c.Status, name + ": ready fails with the problem: " + live.Ready.Exception.InnerException);
                Check.Eq("connecting 1,error " + c.Code + ",closed error " + c.Code, string.Join(",", rec.Items), name + ": one attempt, no retry");
                Check.True(live.IsClosed, name + ": closed");
            }
        }
    }

    static async Task LiveUnauthenticated(Server s)
    {
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("u")))).Room.Id;
        var bad = new RealSyncClient(s.BaseUrl, "not.a.token");
        var live = bad.Live(id, Queue());
        var rec = new Recorder();
        rec.Watch(live);
        live.Start();
        await Check.WaitFor(() => live.IsClosed && rec.Count(x => x.StartsWith("closed")) > 0, "the end", live);
        // 401, a refresh tried (401 too), then the end: never a loop.
        Check.Eq("connecting 1,error UNAUTHENTICATED,error UNAUTHENTICATED,closed error UNAUTHENTICATED", string.Join(",", rec.Items), "401 after a refresh was tried is permanent");
    }

    static async Task LiveRefreshThrows(Server s)
    {
        // Review finding 1 (C1): the game's RefreshToken callback throws after a 401.
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("x")))).Room.Id;
        var client = new RealSyncClient(new RealSyncOptions
        {
            BaseUrl = s.BaseUrl, Token = "not.a.token",
            RefreshToken = ct => { throw new InvalidOperationException("login server offline"); },
        });
        foreach (var dispatch in new[] { LiveDispatch.Queue, LiveDispatch.Immediate })
        {
            var opts = Queue();
            opts.Dispatch = dispatch;
            var live = client.Live(id, opts);
            var rec = new Recorder();
            rec.Watch(live);
            live.Start();
            await Check.WaitFor(() => live.IsClosed && live.Ready.IsCompleted && rec.Count(x => x.StartsWith("closed")) == 1, dispatch + ": the end", live);
            Check.Eq("connecting 1,error UNAUTHENTICATED,error TOKEN_REFRESH_FAILED,closed error UNAUTHENTICATED", string.Join(",", rec.Items), dispatch + ": events");
            Check.True(live.Ready.IsFaulted && ((RealSyncException)live.Ready.Exception.InnerException).Code == "UNAUTHENTICATED", dispatch + ": ready fails with the 401");
        }
    }

    static async Task LiveSharedRenewal(Server s)
    {
        // Review finding 1 (C3): two streams wait for one renewal; closing the
        // stream that started it must not end the other.
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("w")))).Room.Id;
        var entered = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        var release = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        var calls = 0;
        var client = new RealSyncClient(new RealSyncOptions
        {
            BaseUrl = s.BaseUrl, Token = "not.a.token",
            RefreshToken = async ct =>
            {
                Interlocked.Increment(ref calls);
                entered.TrySetResult(true);
                var cancelled = new TaskCompletionSource<bool>();
                using (ct.Register(() => cancelled.TrySetResult(true)))
                    await Task.WhenAny(release.Task, cancelled.Task);
                ct.ThrowIfCancellationRequested();
                return alice.Token; // the login answers: a valid token of a member
            },
        });
        var a = client.Live(id, Queue());
        var b = client.Live(id, Queue());
        var recB = new Recorder();
        recB.Watch(b);
        a.Start();
        await entered.Task; // a started the renewal
        b.Start();
        await Check.WaitFor(() => recB.Has("error UNAUTHENTICATED"), "b refused too", b);
        // b now waits for the renewal a started (nothing outside the client
        // shows it: a second, where b takes a few ms, so that a stalled
        // machine does not make b start a renewal of its own after a's end)
        await Task.Delay(1000);
        a.Close();
        await Task.Delay(100);
        release.TrySetResult(true);
        await Check.WaitFor(() => b.Ready.IsCompleted, "b ready or ended", a, b);
        Check.True(b.Ready.Status == TaskStatus.RanToCompletion, "b opened with the renewed token: " + string.Join(",", recB.Items));
        Check.True(!b.IsClosed, "b still live");
        Check.Eq(1, Volatile.Read(ref calls), "one renewal for both");
        b.Close();
    }

    static async Task LiveOwnLeaveWithoutPlayerId(Server s)
    {
        // Review finding 6: no LiveOptions.PlayerId. Bob's client knows his
        // playerId from the join; a client that never joined learns it was its
        // own player_left when the reconnection is refused.
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        foreach (var how in new[] { "joined by this client", "unknown playerId", "unknown playerId, stream token" })
        {
            var id = (await alice.CreateRoomAsync(NewRoom(Unique("k")))).Room.Id;
            var joined = await bob.JoinRoomAsync(id);
            Check.Eq((int?)joined.PlayerId, bob.PlayerIdIn(id), "the client remembers its playerId");
            var client = how == "joined by this client" ? bob : new RealSyncClient(s.BaseUrl, bob.Token);
            var opts = Fast();
            opts.PlayerId = null;
            opts.UseStreamToken = how.EndsWith("stream token");
            var live = client.Live(id, opts);
            var rec = new Recorder();
            rec.Watch(live);
            live.Start();
            await Check.WaitFor(() => live.Ready.IsCompleted, how + ": ready", live);
            await alice.KickAsync(id, joined.PlayerId);
            await Check.WaitFor(() => live.IsClosed && rec.Count(x => x.StartsWith("closed")) == 1, how + ": the end", live);
            Check.True(rec.Has("closed left"), how + ": ends left: " + string.Join(",", rec.Items));
            if (how == "joined by this client") Check.Eq(0, rec.Count(x => x.StartsWith("reconnecting")), how + ": no reconnection");
        }
    }

    static async Task LiveQuietResume(Server s)
    {
        // Review finding 8: a reconnection to a quiet room resumes at once (the
        // server's resumed event), without changing the room's version or id.
        var alice = await Guest(s, "alice");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("q")))).Room.Id;
        await alice.PatchStateAsync(id, new Dictionary<string, object> { { "hp", 3 } });
        var opts = Queue(1);
        opts.IdleTimeout = TimeSpan.FromMilliseconds(700); // drops the quiet connection (heartbeats come every 15 s)
        opts.Backoff = new Backoff { InitialMs = 10, MaxMs = 20 };
        using (var live = alice.Live(id, opts))
        {
            var rec = new Recorder();
            rec.Watch(live);
            var changes = new List<string>();
            live.Change += e => changes.Add(e.Type);
            // Raised in order: the version when the connection dropped, and when it resumed.
            long atDrop = -1, atResume = -1;
            string idAtResume = null;
            live.Reconnecting += e => { if (atResume < 0) atDrop = live.Version; };
            live.Resumed += e => { if (atResume < 0) { atResume = live.Version; idAtResume = live.LastEventId; } };
            live.Start();
            await Check.WaitFor(() => live.Ready.IsCompleted, "ready", live);
            await Check.WaitFor(() => rec.Has("resumed snapshot=False"), "resumed after a dropped connection, nothing happening", live);
            live.Close();
            Check.True(rec.Has("reconnecting NETWORK"), "the quiet connection was dropped");
            Check.True(atDrop > 0, "dropped after the snapshot");
            Check.Eq(atDrop, atResume, "resumed with nothing replayed: the version did not change");
            Check.Eq(atResume + "-", idAtResume.Substring(0, idAtResume.IndexOf('-') + 1), "Last-Event-ID is still that of the last room event: " + idAtResume);
            Check.True(!changes.Contains("resumed"), "the resumed event is no room event: " + string.Join(",", changes));
        }
    }

    static async Task LiveEnds(Server s)
    {
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("e")))).Room.Id;
        await bob.JoinRoomAsync(id);
        var bobLive = bob.Live(id, Queue(2));
        var aliceLive = alice.Live(id, Queue(1));
        var bobRec = new Recorder();
        var aliceRec = new Recorder();
        bobRec.Watch(bobLive);
        aliceRec.Watch(aliceLive);
        string closedReason = null;
        aliceLive.RoomClosed += e => closedReason = e.Reason;
        bobLive.Start();
        aliceLive.Start();
        await Check.WaitFor(() => bobLive.Ready.IsCompleted && aliceLive.Ready.IsCompleted, "both ready", bobLive, aliceLive);
        await alice.KickAsync(id, 2);
        await Check.WaitFor(() => bobLive.IsClosed && bobRec.Has("closed left"), "bob's stream ends (left)", bobLive);
        await Check.WaitFor(() => aliceLive.Players.Count == 1, "alice sees bob gone", aliceLive);
        await alice.DeleteRoomAsync(id);
        await Check.WaitFor(() => aliceRec.Has("closed room_closed"), "alice's stream ends (room_closed)", aliceLive);
        Check.Eq("closed", closedReason, "room_closed reason");
        Check.Eq(0, aliceRec.Count(x => x.StartsWith("reconnecting")) + bobRec.Count(x => x.StartsWith("reconnecting")), "no reconnection");
        Check.Eq(0, aliceRec.Count(x => x.StartsWith("error")), "no error");
    }

    static async Task LiveLobbyTest(Server s)
    {
        var mode = Unique("lb");
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        var carol = await Guest(s, "carol");
        var first = (await alice.CreateRoomAsync(NewRoom(mode))).Room.Id;
        using (var lobby = carol.Lobby(mode, null, Queue()))
        {
            var types = new List<string>();
            lobby.Change += e => types.Add(e.Type);
            lobby.Start();
            await Check.WaitFor(() => lobby.Ready.IsCompleted, "the rooms list", lobby);
            Check.Eq(first, lobby.List().Single().Id, "the first room listed");
            var second = (await bob.CreateRoomAsync(NewRoom(mode))).Room.Id;
            await Check.WaitFor(() => lobby.Rooms.ContainsKey(second), "room_added", lobby);
            await carol.JoinRoomAsync(second);
            await Check.WaitFor(() => lobby.Rooms[second].PlayerCount == 2, "room_updated", lobby);
            Check.Eq(second + "," + first, string.Join(",", lobby.List().Select(r => r.Id)), "fullest first");
            await alice.UpdateRoomAsync(first, new UpdateRoomRequest { Status = "playing" });
            await Check.WaitFor(() => !lobby.Rooms.ContainsKey(first), "room_removed", lobby);
            Check.True(types.Contains("room_added") && types.Contains("room_updated") && types.Contains("room_removed"), "events: " + string.Join(",", types));
        }
    }

    static async Task LiveResume(Server s)
    {
        var alice = await Guest(s, "alice");
        var bob = await Guest(s, "bob");
        var id = (await alice.CreateRoomAsync(NewRoom(Unique("r")))).Room.Id;
        await bob.JoinRoomAsync(id);
        var opts = Queue(1);
        opts.Backoff = new Backoff { InitialMs = 200, MaxMs = 1000 };
        using (var live = alice.Live(id, opts))
        {
            var rec = new Recorder();
            rec.Watch(live);
            var snapshots = 0;
            var stateEvents = new List<long>();
            live.Snapshot += e => snapshots++;
            live.StateChanged += e => { stateEvents.Add(e.Version); rec.Add("state v" + e.Version); };
            live.Start();
            await Check.WaitFor(() => live.Ready.IsCompleted, "ready", live);
            var before = await bob.PatchStateAsync(id, new Dictionary<string, object> { { "player_2_hp", 100 } });
            await Check.WaitFor(() => live.StateVersion == before.StateVersion, "the first patch", live);

            s.Kill();
            await Check.WaitFor(() => rec.Has("reconnecting NETWORK"), "a reconnection after the crash", live);
            // While this instance is down, another instance (same Redis) takes
            // the patch: alice's stream misses it for sure, and gets it replayed.
            StateVersions after;
            using (var other = new Server(Environment.GetEnvironmentVariable("REALSYNC_BIN"), Environment.GetEnvironmentVariable("REDIS_URL"),
                Environment.GetEnvironmentVariable("REALSYNC_LOG") ?? System.IO.Path.Combine(System.IO.Path.GetTempPath(), "realsyncd-csharp-tests.log"),
                Environment.GetEnvironmentVariable("REALSYNC_PIDFILE")))
            {
                await other.Start();
                var bobElsewhere = new RealSyncClient(other.BaseUrl, bob.Token);
                after = await bobElsewhere.PatchStateAsync(id, new Dictionary<string, object> { { "player_2_hp", 90 } });
            }
            await s.Start();
            await Check.WaitFor(() => live.StateVersion == after.StateVersion, "the patch made while the instance was down", live);
            await Check.WaitFor(() => rec.Has("resumed snapshot=False"), "resumed without a snapshot", live);
            var items = rec.Items;
            Check.True(items.IndexOf("state v" + after.Version) < items.IndexOf("resumed snapshot=False"),
                "Resumed comes after the replayed events (the server's resumed event): " + string.Join(",", items));

            Check.Eq(90L, live.State.Get("player_2_hp"), "state after resume");
            Check.Eq(1, snapshots, "one snapshot only: the missed events were replayed with Last-Event-ID");
            Check.Eq(stateEvents.Distinct().Count(), stateEvents.Count, "no event applied twice");
            Check.Eq(2, stateEvents.Count, "both patches applied");
            Check.True(rec.Count(x => x == "open") >= 2, "opened again");
            Check.True(!live.IsClosed, "still live");
            Check.True(live.LastEventId.StartsWith(after.Version + "-"), "Last-Event-ID is the last event's id: " + live.LastEventId);
        }
    }
}
