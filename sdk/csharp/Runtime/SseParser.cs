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
    /// (digits only; beyond int.MaxValue ms, int.MaxValue), an event dispatched at a blank line when it has data.
    /// </summary>
    public sealed class SseParser
    {
        readonly Decoder decoder = new UTF8Encoding(false, false).GetDecoder();
        // The line being read, in a buffer of its own: a field is read from it in place (a game
        // reads events every frame: a line, its field and its value as strings were three copies
        // of every event's data, and a heartbeat's line one allocation).
        char[] line = new char[256];
        int lineLength;
        readonly StringBuilder data = new StringBuilder();
        string eventType = "";
        string lastType = ""; // the last event field's value, reused while events repeat it
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
                if (lineLength == line.Length) Array.Resize(ref line, 2 * line.Length);
                line[lineLength++] = c;
            }
        }

        void EndLine()
        {
            var n = lineLength;
            lineLength = 0;
            if (n == 0) { Dispatch(); return; }
            if (line[0] == ':') { if (OnComment != null) OnComment(new string(line, 1, n - 1)); return; }
            var colon = Array.IndexOf(line, ':', 0, n);
            var fieldLength = colon < 0 ? n : colon;
            var start = colon < 0 ? n : colon + 1;
            if (start < n && line[start] == ' ') start++;
            var valueLength = n - start;
            if (Is("data", fieldLength)) data.Append(line, start, valueLength).Append('\n');
            else if (Is("event", fieldLength))
            {
                if (!Same(lastType, start, valueLength)) lastType = new string(line, start, valueLength);
                eventType = lastType;
            }
            else if (Is("id", fieldLength))
            {
                if (Array.IndexOf(line, '\0', start, valueLength) < 0) LastEventId = new string(line, start, valueLength);
            }
            else if (Is("retry", fieldLength))
            {
                if (valueLength > 0 && IsDigits(start, valueLength))
                {
                    // any number of digits (leading zeros too, as the standard says); beyond an int, the largest
                    long ms = 0;
                    for (var i = start; i < start + valueLength; i++) ms = Math.Min(ms * 10 + (line[i] - '0'), int.MaxValue);
                    Retry = (int)ms;
                    if (OnRetry != null) OnRetry(Retry.Value);
                }
            }
        }

        /// <summary>Is tells whether the line's first length characters are name.</summary>
        bool Is(string name, int length) { return Same(name, 0, length); }

        /// <summary>Same tells whether the line's characters [start, start+length) are s.</summary>
        bool Same(string s, int start, int length)
        {
            if (s.Length != length) return false;
            for (var i = 0; i < length; i++) if (line[start + i] != s[i]) return false;
            return true;
        }

        bool IsDigits(int start, int length)
        {
            for (var i = start; i < start + length; i++) if (line[i] < '0' || line[i] > '9') return false;
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
