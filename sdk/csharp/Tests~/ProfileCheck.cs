// ProfileCheck proves that a compiled assembly uses only types of .NET
// Standard 2.1: every type it references outside itself must be one that
// netstandard.dll (version 2.1.0.0) exports. Mono's mcs cannot compile
// against the netstandard facade alone (it does not follow the facade's
// type forwarders for the predefined types), so the SDK is compiled against
// Mono's implementation assemblies and checked here, with Mono.Cecil.
//
// usage: mono ProfileCheck.exe <netstandard.dll> <assembly.dll>
using System;
using System.Collections.Generic;
using System.Linq;
using Mono.Cecil;

static class ProfileCheck
{
    static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: ProfileCheck <netstandard.dll> <assembly.dll>");
            return 2;
        }
        var ns = AssemblyDefinition.ReadAssembly(args[0]);
        if (ns.Name.Name != "netstandard" || ns.Name.Version != new Version(2, 1, 0, 0))
        {
            Console.Error.WriteLine("profile: " + args[0] + " is " + ns.Name.FullName + ", not netstandard 2.1.0.0");
            return 2;
        }
        var allowed = new HashSet<string>(StringComparer.Ordinal);
        foreach (var m in ns.Modules)
        {
            foreach (var e in m.ExportedTypes) allowed.Add(e.FullName);
            foreach (var t in m.Types) AddTypes(allowed, t);
        }

        var asm = AssemblyDefinition.ReadAssembly(args[1]);
        var bad = new SortedSet<string>(StringComparer.Ordinal);
        var used = 0;
        foreach (var module in asm.Modules)
        {
            foreach (var tr in module.GetTypeReferences())
            {
                if (tr.Scope is ModuleDefinition) continue; // the assembly's own
                used++;
                var name = FullName(tr);
                if (!allowed.Contains(name)) bad.Add(name + " (from " + tr.Scope.Name + ")");
            }
        }
        if (bad.Count > 0)
        {
            Console.Error.WriteLine("profile: " + args[1] + " uses types outside .NET Standard 2.1:");
            foreach (var b in bad) Console.Error.WriteLine("  " + b);
            return 1;
        }
        Console.WriteLine("profile: " + asm.Name.Name + " references " + used + " external types, all in .NET Standard 2.1 (" + allowed.Count + " types)");
        return 0;
    }

    static void AddTypes(HashSet<string> set, TypeDefinition t)
    {
        if (!t.IsPublic && !t.IsNestedPublic) return;
        set.Add(t.FullName);
        foreach (var n in t.NestedTypes) AddTypes(set, n);
    }

    // FullName is Cecil's spelling of a type's name: Namespace.Outer/Inner.
    static string FullName(TypeReference t)
    {
        if (t.DeclaringType != null) return FullName(t.DeclaringType) + "/" + t.Name;
        return string.IsNullOrEmpty(t.Namespace) ? t.Name : t.Namespace + "." + t.Name;
    }
}
