#!/usr/bin/env python3
"""Refreshes the Go vulnerability database snapshot that scripts/vulncheck.sh
uses when vuln.go.dev cannot be reached (CI machines that reach only the Go
module proxy, Debian and npm).

Usage: scripts/vulndb/refresh.py <golang/vulndb checkout>

It copies from the checkout's data/osv every entry that affects the standard
library, the toolchain, or a module of this repository's build graph
(`go list -m all`), and records the checkout's commit and date (SNAPSHOT),
the modules covered (modules.txt) and every module any entry affects
(affected-modules.txt). scripts/vulncheck.sh refuses a snapshot that leaves
out a module of the build graph with entries in the database, or that is too
old.
"""
import json, os, shutil, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(here))
src = sys.argv[1]

def git(*args):
    return subprocess.check_output(["git", "-C", src] + list(args), text=True).strip()

modules = sorted(set(subprocess.check_output(["go", "list", "-m", "-f", "{{.Path}}", "all"], cwd=repo, text=True).split()))
wanted = set(modules) | {"stdlib", "toolchain"}
commit, date = git("log", "-1", "--format=%H"), git("log", "-1", "--format=%cI")
names = git("ls-tree", "--name-only", "HEAD", "data/osv/").split()
out = os.path.join(here, "osv")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
kept = 0
affected = set()
for name in names:
    entry = json.loads(git("show", "HEAD:" + name))
    affected |= {a["package"]["name"] for a in entry.get("affected", [])}
    if any(a["package"]["name"] in wanted for a in entry.get("affected", [])):
        with open(os.path.join(out, entry["id"] + ".json"), "w") as f:
            json.dump(entry, f, indent=1, sort_keys=True)
            f.write("\n")
        kept += 1
with open(os.path.join(here, "modules.txt"), "w") as f:
    f.write("\n".join(modules) + "\n")
with open(os.path.join(here, "affected-modules.txt"), "w") as f:
    f.write("\n".join(sorted(affected)) + "\n")
with open(os.path.join(here, "SNAPSHOT"), "w") as f:
    f.write(f"commit {commit}\ndate {date}\nentries {kept} of {len(names)}\n")
print(f"{kept} of {len(names)} entries, {len(modules)} modules, golang/vulndb {commit[:12]} of {date}")
