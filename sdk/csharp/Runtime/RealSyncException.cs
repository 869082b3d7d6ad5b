using System;
using System.Collections.Generic;

namespace RealSync
{
    /// <summary>
    /// RealSyncException is every error of the SDK: a problem+json answer
    /// (Status, Code, Title, Detail, Errors as the server sent them), or a
    /// failure to reach the server (Status 0, Code "NETWORK"). Code is the
    /// stable, machine-readable field (openapi.yaml, Problem.code).
    /// </summary>
    public class RealSyncException : Exception
    {
        /// <summary>The HTTP status; 0 when no answer arrived.</summary>
        public int Status { get; }
        /// <summary>The problem code, e.g. "ROOM_FULL"; "NETWORK" when no answer arrived; "INTERNAL" for an answer without one; "TOKEN_REFRESH_FAILED" when RealSyncOptions.RefreshToken threw something else than a RealSyncException.</summary>
        public string Code { get; }
        /// <summary>The problem's title, or null.</summary>
        public string Title { get; }
        /// <summary>The problem's detail, or null.</summary>
        public string Detail { get; }
        /// <summary>The problem's type URI, or null.</summary>
        public string Type { get; }
        /// <summary>The fields that break a constraint (VALIDATION_FAILED), else empty.</summary>
        public IReadOnlyList<FieldError> Errors { get; }
        /// <summary>The Retry-After of a 429 or 503 answer, when it had one.</summary>
        public TimeSpan? RetryAfter { get; }

        /// <summary>A new error; code defaults to NETWORK for status 0, else INTERNAL.</summary>
        public RealSyncException(int status, string code, string title = null, string detail = null,
            IReadOnlyList<FieldError> errors = null, string type = null, TimeSpan? retryAfter = null, Exception inner = null)
            : base(detail ?? title ?? (inner != null ? inner.Message : "HTTP " + status), inner)
        {
            Status = status;
            Code = code ?? (status == 0 ? "NETWORK" : "INTERNAL");
            Title = title;
            Detail = detail;
            Type = type;
            Errors = errors ?? new FieldError[0];
            RetryAfter = retryAfter;
        }

        /// <summary>FromProblem reads a problem+json body (null or not JSON: a bare error of that status).</summary>
        public static RealSyncException FromProblem(int status, string body, TimeSpan? retryAfter = null)
        {
            JsonObject o = null;
            if (!string.IsNullOrEmpty(body))
            {
                try { o = Json.Parse(body) as JsonObject; } catch (FormatException) { }
            }
            if (o == null) return new RealSyncException(status, null, null, status == 0 ? null : "HTTP " + status, retryAfter: retryAfter);
            var errors = new List<FieldError>();
            var list = o.Array("errors");
            if (list != null)
                foreach (var e in list)
                {
                    var f = e as JsonObject;
                    if (f != null) errors.Add(new FieldError { Field = f.String("field"), Message = f.String("message") });
                }
            return new RealSyncException(status, o.String("code"), o.String("title"), o.String("detail"), errors, o.String("type"), retryAfter);
        }

        /// <summary>Transient tells whether retrying later may succeed: no answer, 408, 429 or a 5xx.</summary>
        public bool Transient
        {
            get { return Status == 0 || Status == 408 || Status == 429 || Status >= 500; }
        }

        /// <inheritdoc/>
        public override string ToString()
        {
            return "RealSyncException " + Status + " " + Code + ": " + Message;
        }
    }
}
