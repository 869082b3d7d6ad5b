// A tiny test runner and the realsyncd process the tests talk to.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Threading.Tasks;
using RealSync;

/// <summary>Check holds the assertions; a failed one throws CheckFailed.</summary>
static class Check
{
    public sealed class CheckFailed : Exception { public CheckFailed(string m) : base(m) { } }

    public static void True(bool cond, string what)
    {
        if (!cond) throw new CheckFailed(what);
    }

    public static void Eq<T>(T want, T got, string what)
    {
        if (!EqualityComparer<T>.Default.Equals(want, got)) throw new CheckFailed(what + ": want <" + want + ">, got <" + got + ">");
    }

    /// <summary>Fails unless the call throws a RealSyncException with this status and code; returns it.</summary>
    public static async Task<RealSyncException> Throws(int status, string code, Func<Task> call, string what)
    {
        try
        {
            await call();
        }
        catch (RealSyncException e)
        {
            if (e.Status != status || e.Code != code)
                throw new CheckFailed(what + ": want " + status + " " + code + ", got " + e.Status + " " + e.Code + " (" + e.Message + ")");
            return e;
        }
        throw new CheckFailed(what + ": want " + status + " " + code + ", got success");
    }

    /// <summary>Pumping is true on the thread running DispatchPending inside WaitFor.</summary>
    [ThreadStatic] public static bool Pumping;

    /// <summary>WaitFor pumps the live objects (DispatchPending) until cond holds, at most 15 s.</summary>
    public static async Task WaitFor(Func<bool> cond, string what, params LiveStream[] pump)
    {
        var sw = Stopwatch.StartNew();
        while (true)
        {
            Pumping = true;
            try { foreach (var l in pump) l.DispatchPending(); }
            finally { Pumping = false; }
            if (cond()) return;
            if (sw.Elapsed > TimeSpan.FromSeconds(15)) throw new CheckFailed("timed out waiting for " + what);
            await Task.Delay(10);
        }
    }
}

/// <summary>Server runs realsyncd on a free loopback port, against the Redis of REDIS_URL.</summary>
sealed class Server : IDisposable
{
    public readonly string BaseUrl;
    public const string AdminToken = "csharp-sdk-tests-admin-token-0123456789";
    readonly string bin, redisUrl, log, pidFile;
    readonly int port;
    Process proc;

    public Server(string bin, string redisUrl, string log, string pidFile)
    {
        this.bin = bin;
        this.redisUrl = redisUrl;
        this.log = log;
        this.pidFile = pidFile;
        port = FreePort();
        BaseUrl = "http://127.0.0.1:" + port;
    }

    static readonly Random ports = new Random();

    /// <summary>FreePort is a loopback port nothing listens on, below the
    /// kernel's ephemeral range (32768 and up by default), where every
    /// port 0 bind and outgoing connection takes its port: one from there
    /// could be taken before realsyncd binds it, or again before a restart
    /// binds it once more (Live_ResumeAfterServerRestart).</summary>
    static int FreePort()
    {
        for (int i = 0; i < 50; i++)
        {
            int p;
            lock (ports) p = 20000 + ports.Next(12000);
            var l = new TcpListener(IPAddress.Loopback, p);
            try { l.Start(); }
            catch (SocketException) { continue; }
            l.Stop();
            return p;
        }
        throw new Exception("no free loopback port");
    }

    /// <summary>Start starts the process and waits (at most 20 s) until /readyz answers 200.</summary>
    public async Task Start()
    {
        var psi = new ProcessStartInfo("/bin/sh", "-c 'exec \"$REALSYNC_BIN\" >>\"$REALSYNC_LOG\" 2>&1'") { UseShellExecute = false };
        psi.EnvironmentVariables["REALSYNC_BIN"] = bin;
        psi.EnvironmentVariables["REALSYNC_LOG"] = log;
        psi.EnvironmentVariables["REALSYNC_ADDR"] = "127.0.0.1:" + port;
        psi.EnvironmentVariables["REALSYNC_REDIS_URL"] = redisUrl;
        // Fixed, so that tokens stay valid across a restart.
        psi.EnvironmentVariables["REALSYNC_JWT_SECRET"] = "csharp-sdk-tests-secret-0123456789abcdef";
        psi.EnvironmentVariables["REALSYNC_ADMIN_TOKEN"] = AdminToken;
        psi.EnvironmentVariables["REALSYNC_RATE_LIMITS"] = "off";
        proc = Process.Start(psi);
        if (pidFile != null) File.AppendAllText(pidFile, proc.Id + "\n");
        using (var c = new RealSyncClient(BaseUrl))
        {
            var sw = Stopwatch.StartNew();
            while (true)
            {
                try { if (await c.ReadyzAsync()) return; }
                catch (RealSyncException) { }
                if (proc.HasExited) throw new Exception("realsyncd exited (" + proc.ExitCode + "); see " + log);
                if (sw.Elapsed > TimeSpan.FromSeconds(20)) throw new Exception("realsyncd not ready within 20 s; see " + log);
                await Task.Delay(50);
            }
        }
    }

    /// <summary>Kill kills the process at once (SIGKILL), as a crash would.</summary>
    public void Kill()
    {
        if (proc == null) return;
        try { if (!proc.HasExited) { proc.Kill(); proc.WaitForExit(10000); } }
        catch (InvalidOperationException) { }
        proc.Dispose();
        proc = null;
    }

    public void Dispose() { Kill(); }
}

static class Runner
{
    // Main ends with Environment.Exit, not a return: see the README's
    // "Use from a console program" (Mono's exit can wait up to a minute).
    static void Main(string[] args) { Environment.Exit(Run(args)); }

    static int Run(string[] args)
    {
        var bin = Environment.GetEnvironmentVariable("REALSYNC_BIN");
        var redis = Environment.GetEnvironmentVariable("REDIS_URL");
        if (string.IsNullOrEmpty(bin) || string.IsNullOrEmpty(redis))
        {
            Console.Error.WriteLine("set REALSYNC_BIN (a realsyncd binary) and REDIS_URL (a Redis the tests may use)");
            return 2;
        }
        var log = Environment.GetEnvironmentVariable("REALSYNC_LOG") ?? Path.Combine(Path.GetTempPath(), "realsyncd-csharp-tests.log");
        var filter = args.Length > 0 ? args[0] : null;
        using (var server = new Server(bin, redis, log, Environment.GetEnvironmentVariable("REALSYNC_PIDFILE")))
        {
            server.Start().GetAwaiter().GetResult();
            var passed = 0;
            var failed = 0;
            foreach (var t in Tests.All(server))
            {
                if (filter != null && !t.Key.Contains(filter)) continue;
                var sw = Stopwatch.StartNew();
                try
                {
                    t.Value().GetAwaiter().GetResult();
                    passed++;
                    Console.WriteLine("ok   " + t.Key + " (" + sw.ElapsedMilliseconds + " ms)");
                }
                catch (Exception e)
                {
                    failed++;
                    Console.WriteLine("FAIL " + t.Key + " (" + sw.ElapsedMilliseconds + " ms): " + e);
                }
            }
            Console.WriteLine(passed + " passed, " + failed + " failed");
            return failed == 0 && passed > 0 ? 0 : 1;
        }
    }
}

/// <summary>FakeHandler answers requests from a script of responses, and records them (for cases a real server cannot be made to produce on cue).</summary>
sealed class FakeHandler : System.Net.Http.HttpMessageHandler
{
    readonly Queue<Func<System.Net.Http.HttpRequestMessage, System.Net.Http.HttpResponseMessage>> script =
        new Queue<Func<System.Net.Http.HttpRequestMessage, System.Net.Http.HttpResponseMessage>>();
    readonly List<string> seen = new List<string>();

    /// <summary>Then adds the next response.</summary>
    public FakeHandler Then(Func<System.Net.Http.HttpRequestMessage, System.Net.Http.HttpResponseMessage> f)
    {
        lock (script) script.Enqueue(f);
        return this;
    }

    public FakeHandler Then(System.Net.Http.HttpResponseMessage r) { return Then(_ => r); }

    /// <summary>Requests lists "METHOD /path?query auth=... last=..." per request.</summary>
    public List<string> Requests { get { lock (seen) return new List<string>(seen); } }

    protected override Task<System.Net.Http.HttpResponseMessage> SendAsync(System.Net.Http.HttpRequestMessage req, System.Threading.CancellationToken ct)
    {
        IEnumerable<string> last;
        var l = req.Headers.TryGetValues("Last-Event-ID", out last) ? string.Join(",", last) : "";
        var auth = req.Headers.Authorization == null ? "" : req.Headers.Authorization.Parameter;
        lock (seen) seen.Add(req.Method + " " + req.RequestUri.PathAndQuery + " auth=" + auth + " last=" + l);
        Func<System.Net.Http.HttpRequestMessage, System.Net.Http.HttpResponseMessage> f = null;
        lock (script) if (script.Count > 0) f = script.Dequeue();
        return Task.FromResult(f != null ? f(req) : Problem(404, "ROOM_NOT_FOUND"));
    }

    /// <summary>Sse answers an event stream with body; with hang, the stream then stays open until the client drops it.</summary>
    public static System.Net.Http.HttpResponseMessage Sse(string body, bool hang = false)
    {
        var bytes = System.Text.Encoding.UTF8.GetBytes(body);
        System.Net.Http.HttpContent content = hang
            ? (System.Net.Http.HttpContent)new System.Net.Http.StreamContent(new HangingStream(bytes))
            : new System.Net.Http.ByteArrayContent(bytes);
        var r = new System.Net.Http.HttpResponseMessage(HttpStatusCode.OK) { Content = content };
        r.Content.Headers.ContentType = new System.Net.Http.Headers.MediaTypeHeaderValue("text/event-stream");
        return r;
    }

    public static System.Net.Http.HttpResponseMessage Answer(int status, string json)
    {
        var r = new System.Net.Http.HttpResponseMessage((HttpStatusCode)status) { Content = new System.Net.Http.StringContent(json) };
        r.Content.Headers.ContentType = new System.Net.Http.Headers.MediaTypeHeaderValue("application/json");
        return r;
    }

    public static System.Net.Http.HttpResponseMessage Problem(int status, string code, int? retryAfter = null)
    {
        var r = new System.Net.Http.HttpResponseMessage((HttpStatusCode)status)
        {
            Content = new System.Net.Http.StringContent("{\"type\":\"about:blank\",\"title\":\"t\",\"status\":" + status + ",\"detail\":\"d\",\"code\":\"" + code + "\"}"),
        };
        r.Content.Headers.ContentType = new System.Net.Http.Headers.MediaTypeHeaderValue("application/problem+json");
        if (retryAfter.HasValue) r.Headers.RetryAfter = new System.Net.Http.Headers.RetryConditionHeaderValue(TimeSpan.FromSeconds(retryAfter.Value));
        return r;
    }

    /// <summary>Jwt makes an unsigned token whose payload has this exp (the SDK reads exp, the server checks).</summary>
    public static string Jwt(DateTime exp)
    {
        var secs = (long)(exp - new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc)).TotalSeconds;
        var payload = Convert.ToBase64String(System.Text.Encoding.UTF8.GetBytes("{\"sub\":\"u1\",\"exp\":" + secs + "}")).TrimEnd('=').Replace('+', '-').Replace('/', '_');
        return "eyJhbGciOiJIUzI1NiJ9." + payload + ".sig";
    }
}

/// <summary>HangingStream reads its bytes, then blocks until cancelled or disposed (an open event stream).</summary>
sealed class HangingStream : Stream
{
    readonly byte[] data;
    int pos;
    readonly TaskCompletionSource<int> disposed = new TaskCompletionSource<int>();

    public HangingStream(byte[] data) { this.data = data; }

    public override async Task<int> ReadAsync(byte[] buffer, int offset, int count, System.Threading.CancellationToken ct)
    {
        if (pos < data.Length)
        {
            var n = Math.Min(count, data.Length - pos);
            Array.Copy(data, pos, buffer, offset, n);
            pos += n;
            return n;
        }
        using (ct.Register(() => disposed.TrySetCanceled()))
            return await disposed.Task;
    }

    public override int Read(byte[] buffer, int offset, int count) { return ReadAsync(buffer, offset, count, System.Threading.CancellationToken.None).GetAwaiter().GetResult(); }
    protected override void Dispose(bool disposing) { disposed.TrySetException(new ObjectDisposedException("stream")); base.Dispose(disposing); }
    public override bool CanRead { get { return true; } }
    public override bool CanSeek { get { return false; } }
    public override bool CanWrite { get { return false; } }
    public override long Length { get { throw new NotSupportedException(); } }
    public override long Position { get { throw new NotSupportedException(); } set { throw new NotSupportedException(); } }
    public override void Flush() { }
    public override long Seek(long offset, SeekOrigin origin) { throw new NotSupportedException(); }
    public override void SetLength(long value) { throw new NotSupportedException(); }
    public override void Write(byte[] buffer, int offset, int count) { throw new NotSupportedException(); }
}
