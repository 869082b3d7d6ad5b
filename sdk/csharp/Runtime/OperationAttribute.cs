using System;

namespace RealSync
{
    /// <summary>
    /// OperationAttribute marks the SDK member that covers an operation of
    /// openapi.yaml (method, path template, operationId). A test compares
    /// these marks with openapi.yaml, so a route the SDK lacks fails CI.
    /// </summary>
    [AttributeUsage(AttributeTargets.Method | AttributeTargets.Constructor, AllowMultiple = true, Inherited = false)]
    public sealed class OperationAttribute : Attribute
    {
        /// <summary>The HTTP method, upper case.</summary>
        public string Method { get; }
        /// <summary>The path template, e.g. "/v1/rooms/{roomId}".</summary>
        public string Path { get; }
        /// <summary>The operationId.</summary>
        public string OperationId { get; }

        /// <summary>Marks a member as covering one operation.</summary>
        public OperationAttribute(string method, string path, string operationId)
        {
            Method = method;
            Path = path;
            OperationId = operationId;
        }
    }
}
