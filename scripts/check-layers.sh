#!/usr/bin/env bash
# check-layers.sh — refuse includes that break tide's walls (docs/layers.txt says which).
#
# Reads every C/CUDA file of src/ and every public header of include/tide/, resolves each
# #include "..." the way the compiler does (the file's own folder, then include/, then src/),
# and lists each include of a higher layer's header, of another module's internal header, or
# (from a public header) of anything under src/, as file:line. Exit 0 when none, 1 otherwise,
# 2 when the table itself is wrong (a folder or public header it does not name). Registered
# as the test `check_layers`. Usage: scripts/check-layers.sh [repository root]
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
exec /usr/bin/python3 - "$root" <<'PY'
import os, re, sys

root = sys.argv[1]
src, inc = os.path.join(root, "src"), os.path.join(root, "include")
table = os.path.join(root, "docs", "layers.txt")
modules, public, shared, allow = {}, {}, set(), set()
bad_table = []
for n, line in enumerate(open(table), 1):
    words = line.split("--")[0].split("#")[0].split()
    if not words:
        continue
    kind, args = words[0], words[1:]
    if kind == "module" and len(args) == 2:
        modules[args[0]] = int(args[1])
    elif kind == "public" and len(args) == 2:
        public[args[0]] = args[1]
    elif kind == "shared" and len(args) == 1:
        shared.add(args[0])
    elif kind == "allow" and len(args) == 2:
        allow.add((args[0], args[1]))
    else:
        bad_table.append(f"docs/layers.txt:{n}: cannot read: {line.strip()}")

def module_of(rel):  # rel: path under src/ -> the deepest module folder holding it
    d = os.path.dirname(rel)
    while d and d not in modules:
        d = os.path.dirname(d)
    return d or None

# Every folder of src/ and every public header must be in the table.
for d, subdirs, _ in os.walk(src):
    rel = os.path.relpath(d, src)
    if rel != "." and rel not in modules:
        bad_table.append(f"docs/layers.txt: src/{rel} is no module of the table")
for h in sorted(os.listdir(os.path.join(inc, "tide"))):
    if h.endswith(".h") and f"tide/{h}" not in public:
        bad_table.append(f"docs/layers.txt: include/tide/{h} has no owning module in the table")
for h, m in public.items():
    if m not in modules:
        bad_table.append(f"docs/layers.txt: public {h}: no module {m}")
for h in shared | {a[1] for a in allow}:
    if not os.path.isfile(os.path.join(src, h)):
        bad_table.append(f"docs/layers.txt: src/{h} does not exist")
for m, _ in allow:
    if m not in modules:
        bad_table.append(f"docs/layers.txt: allow: no module {m}")
if bad_table:
    print("\n".join(bad_table))
    sys.exit(2)

include_re = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
violations = []

def resolve(path, name):
    for base in (os.path.dirname(path), inc, src):
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(cand):
            return cand
    return None

def check_file(path, mod):  # mod: the module folder, or None for a public header
    rel = os.path.relpath(path, root)
    layer = modules[mod] if mod is not None else modules[public[os.path.relpath(path, inc)]]
    for n, line in enumerate(open(path, errors="replace"), 1):
        m = include_re.match(line)
        if not m:
            continue
        where = f"{rel}:{n}: #include \"{m.group(1)}\""
        target = resolve(path, m.group(1))
        if target is None:
            violations.append(f"{where}: no such header in the file's folder, include/ or src/")
            continue
        if target.startswith(inc + os.sep):
            h = os.path.relpath(target, inc)
            owner = public.get(h)
            if owner is None:
                violations.append(f"{where}: include/{h} is not in docs/layers.txt")
            elif modules[owner] > layer:
                violations.append(f"{where}: {h} belongs to {owner} (layer {modules[owner]}),"
                                  f" above layer {layer}")
            continue
        h = os.path.relpath(target, src)
        if mod is None:
            violations.append(f"{where}: a public header includes src/{h}")
            continue
        owner = module_of(h)
        if owner == mod or (mod, h) in allow:
            continue
        if modules[owner] > layer:
            violations.append(f"{where}: src/{h} belongs to {owner} (layer {modules[owner]}),"
                              f" above {mod} (layer {layer})")
        elif h not in shared:
            violations.append(f"{where}: src/{h} is internal to {owner}, not {mod}"
                              " (docs/layers.txt: shared/allow)")

for d, _, files in sorted(os.walk(src)):
    for f in sorted(files):
        if f.endswith((".c", ".h", ".cu", ".cuh")):
            p = os.path.join(d, f)
            check_file(p, module_of(os.path.relpath(p, src)))
for f in sorted(os.listdir(os.path.join(inc, "tide"))):
    if f.endswith(".h"):
        check_file(os.path.join(inc, "tide", f), None)

if violations:
    print("\n".join(violations))
    print(f"check-layers: {len(violations)} include(s) break the walls of docs/layers.txt")
    sys.exit(1)
print("check-layers: every include keeps to docs/layers.txt")
PY
