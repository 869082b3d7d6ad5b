// A small JSON reader and writer, so the SDK depends on nothing beyond
// .NET Standard 2.1 (System.Text.Json is not part of it, and Unity projects
// often pin their own Newtonsoft.Json).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace RealSync
{
    /// <summary>
    /// Json parses and writes JSON. Parsed values are: <c>null</c>, <c>bool</c>,
    /// <c>string</c>, <c>long</c> (integers that fit), <c>double</c> (other
    /// numbers), <see cref="JsonObject"/> and <c>List&lt;object&gt;</c>.
    /// Write accepts those, any other integral or floating type, any
    /// <c>IDictionary</c> with string keys, any <c>IEnumerable</c>, and
    /// <see cref="IJsonWritable"/>.
    /// </summary>
    public static class Json
    {
        /// <summary>Parse reads one JSON value; anything but whitespace after it is an error.</summary>
        /// <exception cref="FormatException">The text is not valid JSON.</exception>
        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException(nameof(text));
            var r = new Reader(text);
            r.SkipWhitespace();
            var v = r.ReadValue(0);
            r.SkipWhitespace();
            if (r.Pos != text.Length) throw r.Error("unexpected text after the value");
            return v;
        }

        /// <summary>ParseObject reads a JSON object.</summary>
        /// <exception cref="FormatException">The text is not a JSON object.</exception>
        public static JsonObject ParseObject(string text)
        {
            var o = Parse(text) as JsonObject;
            if (o == null) throw new FormatException("JSON: expected an object");
            return o;
        }

        /// <summary>Write returns the compact JSON text of a value.</summary>
        public static string Write(object value)
        {
            var sb = new StringBuilder();
            WriteValue(sb, value, 0);
            return sb.ToString();
        }

        const int MaxDepth = 256;

        internal static void WriteValue(StringBuilder sb, object v, int depth)
        {
            if (depth > MaxDepth) throw new ArgumentException("JSON: value nested too deep (or a cycle)");
            if (v == null) { sb.Append("null"); return; }
            var s = v as string;
            if (s != null) { WriteString(sb, s); return; }
            if (v is bool) { sb.Append((bool)v ? "true" : "false"); return; }
            var w = v as IJsonWritable;
            if (w != null) { w.WriteJson(sb); return; }
            if (v is double) { WriteDouble(sb, (double)v); return; }
            if (v is float) { WriteFloat(sb, (float)v); return; }
            if (v is decimal) { sb.Append(((decimal)v).ToString(CultureInfo.InvariantCulture)); return; }
            if (v is int || v is long || v is short || v is sbyte || v is byte || v is ushort || v is uint || v is ulong)
            {
                sb.Append(Convert.ToString(v, CultureInfo.InvariantCulture));
                return;
            }
            if (v is char) { WriteString(sb, v.ToString()); return; }
            if (v is Enum) { WriteString(sb, v.ToString()); return; }
            if (v is DateTime)
            {
                WriteString(sb, ((DateTime)v).ToUniversalTime().ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture));
                return;
            }
            var dict = v as IDictionary;
            if (dict != null)
            {
                sb.Append('{');
                var first = true;
                foreach (DictionaryEntry kv in dict)
                {
                    var key = kv.Key as string;
                    if (key == null) throw new ArgumentException("JSON: object keys must be strings");
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, key);
                    sb.Append(':');
                    WriteValue(sb, kv.Value, depth + 1);
                }
                sb.Append('}');
                return;
            }
            var pairs = v as IEnumerable<KeyValuePair<string, object>>; // IDictionary<string, object> without IDictionary, e.g. ExpandoObject
            if (pairs != null)
            {
                sb.Append('{');
                var first = true;
                foreach (var kv in pairs)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, kv.Key);
                    sb.Append(':');
                    WriteValue(sb, kv.Value, depth + 1);
                }
                sb.Append('}');
                return;
            }
            var list = v as IEnumerable;
            if (list != null)
            {
                sb.Append('[');
                var first = true;
                foreach (var item in list)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteValue(sb, item, depth + 1);
                }
                sb.Append(']');
                return;
            }
            throw new ArgumentException("JSON: cannot write a value of type " + v.GetType().FullName);
        }

        /// <summary>WriteDouble writes a double as text that reads back as the same double: "R", checked,
        /// else 17 digits (Mono's and .NET Framework's "R" gives 15 digits for a few doubles in a million,
        /// another double: 0.84551240822557006 as 0.84551240822557).</summary>
        static void WriteDouble(StringBuilder sb, double d)
        {
            if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON: numbers must be finite");
            var text = d.ToString("R", CultureInfo.InvariantCulture);
            double back;
            if (!double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out back) || back != d)
                text = d.ToString("G17", CultureInfo.InvariantCulture); // seventeen digits always round-trip
            sb.Append(text);
        }

        /// <summary>WriteFloat writes a float as text that reads back as the same float, in at most 9
        /// digits (0.1f as 0.1; not always the fewest: 123456.79f as 123456.789): widened to a double
        /// first it would be 0.10000000149011612, a Unity position's every coordinate so.</summary>
        static void WriteFloat(StringBuilder sb, float f)
        {
            if (float.IsNaN(f) || float.IsInfinity(f)) throw new ArgumentException("JSON: numbers must be finite");
            var text = f.ToString("R", CultureInfo.InvariantCulture);
            float back;
            if (!float.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out back) || back != f)
                text = f.ToString("G9", CultureInfo.InvariantCulture); // nine digits always round-trip
            sb.Append(text);
        }

        /// <summary>WriteString appends a JSON string literal.</summary>
        internal static void WriteString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (var c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        if (c < 0x20 || c == '\u2028' || c == '\u2029')
                            sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }

        sealed class Reader
        {
            readonly string s;
            public int Pos;

            public Reader(string text) { s = text; }

            public FormatException Error(string what)
            {
                return new FormatException("JSON: " + what + " at offset " + Pos);
            }

            public void SkipWhitespace()
            {
                while (Pos < s.Length && (s[Pos] == ' ' || s[Pos] == '\t' || s[Pos] == '\n' || s[Pos] == '\r')) Pos++;
            }

            public object ReadValue(int depth)
            {
                if (depth > MaxDepth) throw Error("nested too deep");
                if (Pos >= s.Length) throw Error("unexpected end");
                var c = s[Pos];
                switch (c)
                {
                    case '{': return ReadObject(depth);
                    case '[': return ReadArray(depth);
                    case '"': return ReadString();
                    case 't': Expect("true"); return true;
                    case 'f': Expect("false"); return false;
                    case 'n': Expect("null"); return null;
                    default:
                        if (c == '-' || (c >= '0' && c <= '9')) return ReadNumber();
                        throw Error("unexpected character '" + c + "'");
                }
            }

            void Expect(string word)
            {
                if (string.CompareOrdinal(s, Pos, word, 0, word.Length) != 0) throw Error("expected " + word);
                Pos += word.Length;
            }

            JsonObject ReadObject(int depth)
            {
                var o = new JsonObject();
                Pos++; // {
                SkipWhitespace();
                if (Pos < s.Length && s[Pos] == '}') { Pos++; return o; }
                while (true)
                {
                    SkipWhitespace();
                    if (Pos >= s.Length || s[Pos] != '"') throw Error("expected a member name");
                    var key = ReadString();
                    SkipWhitespace();
                    if (Pos >= s.Length || s[Pos] != ':') throw Error("expected ':'");
                    Pos++;
                    SkipWhitespace();
                    o[key] = ReadValue(depth + 1);
                    SkipWhitespace();
                    if (Pos >= s.Length) throw Error("unexpected end in an object");
                    if (s[Pos] == ',') { Pos++; continue; }
                    if (s[Pos] == '}') { Pos++; return o; }
                    throw Error("expected ',' or '}'");
                }
            }

            List<object> ReadArray(int depth)
            {
                var a = new List<object>();
                Pos++; // [
                SkipWhitespace();
                if (Pos < s.Length && s[Pos] == ']') { Pos++; return a; }
                while (true)
                {
                    SkipWhitespace();
                    a.Add(ReadValue(depth + 1));
                    SkipWhitespace();
                    if (Pos >= s.Length) throw Error("unexpected end in an array");
                    if (s[Pos] == ',') { Pos++; continue; }
                    if (s[Pos] == ']') { Pos++; return a; }
                    throw Error("expected ',' or ']'");
                }
            }

            string ReadString()
            {
                Pos++; // "
                StringBuilder sb = null;
                var start = Pos;
                while (true)
                {
                    if (Pos >= s.Length) throw Error("unterminated string");
                    var c = s[Pos];
                    if (c == '"')
                    {
                        string result;
                        if (sb == null) result = s.Substring(start, Pos - start);
                        else result = sb.Append(s, start, Pos - start).ToString();
                        Pos++;
                        return result;
                    }
                    if (c < 0x20) throw Error("control character in a string");
                    if (c != '\\') { Pos++; continue; }
                    if (sb == null) sb = new StringBuilder();
                    sb.Append(s, start, Pos - start);
                    Pos++;
                    if (Pos >= s.Length) throw Error("unterminated escape");
                    var e = s[Pos++];
                    switch (e)
                    {
                        case '"': sb.Append('"'); break;
                        case '\\': sb.Append('\\'); break;
                        case '/': sb.Append('/'); break;
                        case 'b': sb.Append('\b'); break;
                        case 'f': sb.Append('\f'); break;
                        case 'n': sb.Append('\n'); break;
                        case 'r': sb.Append('\r'); break;
                        case 't': sb.Append('\t'); break;
                        case 'u':
                            if (Pos + 4 > s.Length) throw Error("short \\u escape");
                            int code;
                            if (!int.TryParse(s.Substring(Pos, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code))
                                throw Error("bad \\u escape");
                            sb.Append((char)code);
                            Pos += 4;
                            break;
                        default: throw Error("bad escape '\\" + e + "'");
                    }
                    start = Pos;
                }
            }

            object ReadNumber()
            {
                var start = Pos;
                if (s[Pos] == '-') Pos++;
                if (Pos >= s.Length) throw Error("bad number");
                if (s[Pos] == '0') Pos++;
                else if (s[Pos] >= '1' && s[Pos] <= '9') { while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++; }
                else throw Error("bad number");
                var integral = true;
                if (Pos < s.Length && s[Pos] == '.')
                {
                    integral = false;
                    Pos++;
                    var digits = Pos;
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                    if (Pos == digits) throw Error("bad fraction");
                }
                if (Pos < s.Length && (s[Pos] == 'e' || s[Pos] == 'E'))
                {
                    integral = false;
                    Pos++;
                    if (Pos < s.Length && (s[Pos] == '+' || s[Pos] == '-')) Pos++;
                    var digits = Pos;
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                    if (Pos == digits) throw Error("bad exponent");
                }
                var text = s.Substring(start, Pos - start);
                long l;
                if (integral && long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out l)) return l;
                double d;
                if (double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out d)) return d;
                // valid JSON past a double's range (1e400): infinity, as .NET Core
                // and JavaScript read it, where Mono and .NET Framework throw
                // (an OverflowException that failed the stream at every reconnect)
                return text[0] == '-' ? double.NegativeInfinity : double.PositiveInfinity;
            }
        }
    }

    /// <summary>IJsonWritable is a value that writes its own JSON (the request models).</summary>
    public interface IJsonWritable
    {
        /// <summary>WriteJson appends the value's JSON text.</summary>
        void WriteJson(StringBuilder sb);
    }

    /// <summary>
    /// JsonObject is a parsed JSON object: member names in document order map
    /// to parsed values. Typed getters read members leniently (missing or
    /// null gives the default).
    /// </summary>
    public class JsonObject : Dictionary<string, object>
    {
        /// <summary>An empty object.</summary>
        public JsonObject() : base(StringComparer.Ordinal) { }

        /// <summary>A copy of another map.</summary>
        public JsonObject(IDictionary<string, object> from) : base(from, StringComparer.Ordinal) { }

        /// <summary>Get returns the member's value, or null when absent.</summary>
        public object Get(string name)
        {
            object v;
            return TryGetValue(name, out v) ? v : null;
        }

        /// <summary>String returns a string member, or null.</summary>
        public string String(string name) { return Get(name) as string; }

        /// <summary>Long returns a number member as a long, or def.</summary>
        public long Long(string name, long def = 0)
        {
            var v = Get(name);
            if (v is long l) return l;
            if (v is double d) return (long)d;
            return def;
        }

        /// <summary>Double returns a number member as a double, or def: a whole number (3, and so a float
        /// 3f someone wrote) is read as a long, which a cast to double would refuse (InvalidCastException).</summary>
        public double Double(string name, double def = 0)
        {
            var v = Get(name);
            if (v is double d) return d;
            if (v is long l) return l;
            return def;
        }

        /// <summary>Int returns a number member as an int, or def.</summary>
        public int Int(string name, int def = 0) { return (int)Long(name, def); }

        /// <summary>Bool returns a boolean member, or def.</summary>
        public bool Bool(string name, bool def = false)
        {
            var v = Get(name);
            return v is bool b ? b : def;
        }

        /// <summary>Object returns an object member, or null.</summary>
        public JsonObject Object(string name) { return Get(name) as JsonObject; }

        /// <summary>Array returns an array member, or null.</summary>
        public List<object> Array(string name) { return Get(name) as List<object>; }

        /// <summary>Time returns a date-time member (RFC 3339) as UTC, or default.</summary>
        public DateTime Time(string name)
        {
            var s = String(name);
            DateTime t;
            if (s != null && DateTime.TryParse(s, CultureInfo.InvariantCulture,
                DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out t)) return t;
            return default(DateTime);
        }

        /// <summary>ToString is the object's compact JSON.</summary>
        public override string ToString() { return Json.Write(this); }
    }
}
