#!/usr/bin/env python3
"""The device scratch an entry's host code holds at once, counted from its
`linnetc build --target cuda --emit gpu` output: the gpu.alloc and
gpu.dealloc in program order, each call of a function expanded (the layers'
loop calls its layer function LAYERS times), sizes from the static memref
types rounded to the arena's 256 bytes. Of a key prefix's switch only the
default case counts (all keys, the largest; the cases are alternatives), and
the buffer it yields is the switch's result. It does not count the arena's
fragmentation (first fit can need more) or its chunk doubling.

  build/bin/linnetc build nest/llama-3.1-8b-instruct --target cuda --entry prefill --generic S=512 --emit gpu > p.mlir
  python3 scripts/cuda-scratch-peak.py p.mlir linnet_prefill 32
"""
import re
import sys
text = open(sys.argv[1]).read()
funcs = {}
cur = None
for line in text.splitlines():
    m = re.match(r'\s*func\.func (?:private )?@(\w+)\(', line)
    if m: cur = m.group(1); funcs[cur] = []; continue
    if line.strip().startswith('gpu.module'): cur = None
    if cur: funcs[cur].append(line)
def size(t):
    m = re.search(r'memref<((?:[0-9]+x)*)(bf16|f32|f16|i32|i64|i1|i8|index)', t)
    dims = [int(d) for d in m.group(1).split('x') if d]
    n = 1
    for d in dims: n *= d
    b = {'index':8,'bf16':2,'f16':2,'f32':4,'i32':4,'i64':8,'i1':1,'i8':1}[m.group(2)]
    return (n*b + 255)//256*256
def run(fn, live, state, layers):
    names = {}
    switch = None  # [result name, its depth, whether in its default case, names live before it]
    for line in funcs[fn]:
        depth = len(line) - len(line.lstrip())
        m = re.match(r'\s*(%\w+) = scf\.index_switch ', line)
        if m:
            switch = [m.group(1), depth, False, set(names)]
            continue
        if switch:
            # Only the default case (all keys, the largest) counts: the cases are alternatives.
            if depth == switch[1] and line.strip().startswith(('case ', 'default')):
                switch[2] = line.strip().startswith('default')
                continue
            if depth == switch[1] and line.strip() == '}':
                if switch[2]:
                    # The buffer the default case yields is the switch's result.
                    made = [n for n in names if n not in switch[3]]
                    if len(made) == 1: names[switch[0]] = names.pop(made[0])
                    switch = None
                continue
            if not switch[2]: continue
        m = re.search(r'(%\w+), %\w+ = gpu\.alloc async \[[^\]]*\] \(\) : (memref<[^>]+>)', line)
        if m:
            names[m.group(1)] = size(m.group(2)); state['used'] += names[m.group(1)]; state['peak'] = max(state['peak'], state['used']); continue
        m = re.search(r'gpu\.dealloc async \[[^\]]*\] (%\w+) :', line)
        if m and m.group(1) in names:
            state['used'] -= names.pop(m.group(1)); continue
        m = re.search(r'func\.call @(\w+)\(', line)
        if m:
            for _ in range(layers): run(m.group(1), live, state, 1)
run(sys.argv[2], None, st := {'used':0,'peak':0}, int(sys.argv[3]))
print(f"peak {st['peak']/2**30:.2f} GiB, held at return {st['used']/2**30:.2f} GiB")
