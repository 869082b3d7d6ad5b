using System;

namespace RealSync
{
    /// <summary>
    /// Backoff is the reconnect delay of live streams: exponential from
    /// InitialMs doubling to MaxMs, with full jitter (a uniformly random
    /// delay in [0, cap], so clients dropped together do not come back
    /// together). A stream that stayed open StableMs starts over.
    /// </summary>
    public sealed class Backoff
    {
        /// <summary>The cap of the first delay (default 500 ms).</summary>
        public int InitialMs = 500;
        /// <summary>The largest cap (default 10 s), and the most a server's Retry-After or retry: field makes a stream wait.
        /// 10 s is well below the server's disconnect grace (REALSYNC_DISCONNECT_GRACE, 30 s): a stream dropped by an
        /// outage of up to about 20 s comes back before its player is removed. Keep it under a third of the grace.</summary>
        public int MaxMs = 10000;
        /// <summary>A stream open this long counts its next failure as the first (default 30 s).</summary>
        public int StableMs = 30000;
        /// <summary>The jitter's random source, returning [0, 1); default a shared System.Random.</summary>
        public Func<double> Random;

        static readonly Random shared = new Random();

        /// <summary>Cap is the largest delay after failures (≥ 1) failures in a row.</summary>
        public int Cap(int failures)
        {
            double cap = InitialMs;
            for (var i = 1; i < failures && cap < MaxMs; i++) cap *= 2;
            return (int)Math.Min(cap, MaxMs);
        }

        /// <summary>Delay is the wait (ms) before the next attempt after failures (≥ 1) failures in a row.</summary>
        public int Delay(int failures)
        {
            double r;
            if (Random != null) r = Random();
            else lock (shared) r = shared.NextDouble();
            return (int)Math.Round(r * Cap(failures));
        }
    }
}
