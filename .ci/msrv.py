#!/usr/bin/env python3
"""Checks that Cargo.toml's rust-version is what the locked dependencies need:
the highest rust-version among the packages the mcppol crate builds with
(normal and build dependencies, and its own dev-dependencies)."""
import json,sys,subprocess
m=json.loads(subprocess.check_output(["cargo","metadata","--format-version","1","--locked"]))
pk={p["id"]:p for p in m["packages"]}
nodes={n["id"]:n for n in m["resolve"]["nodes"]}
root=[i for i in m["workspace_members"] if pk[i]["name"]=="mcppol"][0]
def ver(v): return tuple(int(x) for x in (v or "0").split("."))+(0,)*(3-len((v or "0").split(".")))
seen=set(); stack=[(root,True)]
while stack:
    i,isroot=stack.pop()
    for d in nodes[i]["deps"]:
        kinds={k["kind"] for k in d["dep_kinds"]}
        ok = kinds & {None,"build"} or (isroot and "dev" in kinds)
        if ok and d["pkg"] not in seen:
            seen.add(d["pkg"]); stack.append((d["pkg"],False))
need=max(seen,key=lambda i:ver(pk[i].get("rust_version")))
declared = pk[root].get("rust_version")
needed = pk[need].get("rust_version")
if ver(declared) < ver(needed):
    print(f"rust-version is {declared} in Cargo.toml, but {pk[need]['name']} needs {needed}: raise it")
    sys.exit(1)
print(f"rust-version {declared} covers the locked dependencies (highest: {pk[need]['name']} {needed})")
