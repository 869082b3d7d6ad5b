using System;
using System.Text;

namespace RealSync
{
    /// <summary>SseEvent is one dispatched Server-Sent Event.</summary>
    public struct SseEvent
    {
        /// <summary>The event type ("message" when the stream named none).</summary>
        public string Type;
        /// <summary>The data lines joined with "\n".</summary>
        public string Data;
        /// <summary>The last event id in force when it was dispatched ("" for none).</summary>
        public string LastEventId;
    }

    /// <summary>
    /// SseParser reads an event stream as the WHATWG HTML standard says
    /// ("Parsing an event stream"): UTF-8 text fed in chunks of any size
    /// (a chunk may end inside a line, inside a CRLF or inside a UTF-8
    /// sequence), lines ended by CRLF, LF or CR, a leading BOM skipped,
    /// comment lines (":") ignored, fields event, data (multi-line), id
    /// (ignored when it contains NUL; it persists across events) and retry
    /// (digits only), an event dispatched at a blank line when it has data.
    /// </summary>
    public sealed class SseParser
    {
        readonly Decoder decoder = new UTF8Encoding(false, false).GetDecoder();
        readonly StringBuilder line = new StringBuilder();
        readonly StringBuilder data = new StringBuilder();
        string eventType = "";
        bool afterCR;
        bool started;
        char[] chars = new char[0];

        /// <summary>The last event id buffer ("" until an id field).</summary>
        public string LastEventId { get; set; } = "";

        /// <summary>The reconnection time the stream asked for (ms), or null.</summary>
        public int? Retry { get; private set; }

        /// <summary>Called for every dispatched event, in order.</summary>
        public Action<SseEvent> OnEvent;

        /// <summary>Called for every valid retry field (ms), in order with the events.</summary>
        public Action<int> OnRetry;

        /// <summary>Called for every comment line (the text after ':'), e.g. heartbeats.</summary>
        public Action<string> OnComment;

        /// <summary>Feed parses bytes of the stream.</summary>
        public void Feed(byte[] buffer, int offset, int count)
        {
            var n = decoder.GetCharCount(buffer, offset, count, false);
            if (chars.Length < n) chars = new char[Math.Max(n, 2 * chars.Length)];
            n = decoder.GetChars(buffer, offset, count, chars, 0, false);
            Feed(chars, 0, n);
        }

        /// <summary>Feed parses decoded text of the stream.</summary>
        public void Feed(string text)
        {
            Feed(text.ToCharArray(), 0, text.Length);
        }

        void Feed(char[] cs, int offset, int count)
        {
            for (var i = offset; i < offset + count; i++)
            {
                var c = cs[i];
                if (!started)
                {
                    started = true;
                    if (c == '\uFEFF') continue;
                }
                if (afterCR)
                {
                    afterCR = false;
                    if (c == '\n') continue; // the LF of a CRLF
                }
                if (c == '\r') { afterCR = true; EndLine(); continue; }
                if (c == '\n') { EndLine(); continue; }
                line.Append(c);
            }
        }

        void EndLine()
        {
            var l = line.ToString();
            line.Length = 0;
            if (l.Length == 0) { Dispatch(); return; }
            if (l[0] == ':') { if (OnComment != null) OnComment(l.Substring(1)); return; }
            string field, value;
            var colon = l.IndexOf(':');
            if (colon < 0) { field = l; value = ""; }
            else
            {
                field = l.Substring(0, colon);
                var start = colon + 1;
                if (start < l.Length && l[start] == ' ') start++;
                value = l.Substring(start);
            }
            switch (field)
            {
                case "event": eventType = value; break;
                case "data": data.Append(value).Append('\n'); break;
                case "id": if (value.IndexOf('\0') < 0) LastEventId = value; break;
                case "retry":
                    if (value.Length > 0 && value.Length <= 9 && IsDigits(value))
                    {
                        Retry = int.Parse(value, System.Globalization.CultureInfo.InvariantCulture);
                        if (OnRetry != null) OnRetry(Retry.Value);
                    }
                    break;
            }
        }

        static bool IsDigits(string s)
        {
            foreach (var c in s) if (c < '0' || c > '9') return false;
            return true;
        }

        void Dispatch()
        {
            if (data.Length == 0) { eventType = ""; return; }
            data.Length--; // the last LF
            var e = new SseEvent { Type = eventType.Length == 0 ? "message" : eventType, Data = data.ToString(), LastEventId = LastEventId };
            data.Length = 0;
            eventType = "";
            if (OnEvent != null) OnEvent(e);
        }
    }
}
