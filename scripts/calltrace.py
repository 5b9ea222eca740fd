#!/usr/bin/env python3
"""Static call trace of the C sources: every function reachable from START
through direct calls (a name followed by '(' that a non-test .c file
defines; a static function resolves to its own file's), each counted once.
Prints how many functions and files the walk reaches, and the files.
Calls through a pointer (the phase table, w->shed_close) are not followed:
that is the point of handing them down.

usage: scripts/calltrace.py DIR FUNCTION   (e.g. . request_body)"""
import os, re, subprocess, sys
root, start = sys.argv[1], sys.argv[2]
files = [f for f in subprocess.check_output(['git', '-C', root, 'ls-files', '*.c', '*.h'], text=True).split()
         if not f.startswith(('tests/', 'bench/'))]
defs = {}
local = {}
for f in files:
    s = open(os.path.join(root, f), errors='replace').read()
    s = re.sub(r'/\*.*?\*/', ' ', s, flags=re.S)
    s = re.sub(r'"(\\.|[^"\\\n])*"', '""', s)
    for m in re.finditer(r'^([A-Za-z_]\w*)\(([^)]*)\)\s*\n\{(.*?)\n\}', s, re.M | re.S):
        before = s[max(0, s.rfind('\n', 0, m.start() - 1)):m.start()]
        if 'static' in before:
            local[(f, m.group(1))] = (f, m.group(3))
        else:
            defs.setdefault(m.group(1), (f, m.group(3)))
call = re.compile(r'(?<![.>\w])([A-Za-z_]\w*)\s*\(')
def resolve(name, fromfile):
    return local.get((fromfile, name)) or defs.get(name)
seen, stack = set(), [resolve(start, None) and (resolve(start, None)[0], start)]
while stack:
    key = stack.pop()
    if key is None or key in seen:
        continue
    d = local.get(key) or defs.get(key[1])
    if d is None:
        continue
    seen.add(key)
    for m in call.finditer(d[1]):
        r = resolve(m.group(1), key[0])
        if r is not None and (r[0], m.group(1)) not in seen:
            stack.append((r[0], m.group(1)))
fs = sorted({k[0] for k in seen})
print(len(seen), 'functions in', len(fs), 'files:', ' '.join(fs))
