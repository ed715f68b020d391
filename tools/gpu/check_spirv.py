#!/usr/bin/env python3
"""Build check of the GPU tier's shaders (docs/gpu.md, "Bit-identity by construction").

For each SPIR-V file: every OpFAdd / OpFSub / OpFMul result must be decorated NoContraction (so no
driver may fuse or reassociate it), and no OpFDiv or GLSL.std.450 Fma / Exp / Exp2 / Pow may appear
(Vulkan does not promise IEEE results for them). Prints one line per file; exits 1 on a violation.
Usage: check_spirv.py [--stamp FILE] file.spv...
"""
import re
import subprocess
import sys


def check(path):
    dis = subprocess.run(["spirv-dis", "--raw-id", path], check=True, capture_output=True,
                         text=True).stdout
    nocontraction = set(re.findall(r"OpDecorate (%\w+) NoContraction", dis))
    ops = re.findall(r"(%\w+) = (OpF(?:Add|Sub|Mul|Div)) ", dis)
    missing = [i for i, op in ops if op != "OpFDiv" and i not in nocontraction]
    divs = sum(1 for _, op in ops if op == "OpFDiv")
    native = re.findall(r"OpExtInst %\w+ %\w+ (Fma|Exp|Exp2|Pow)\b", dis)
    ok = not missing and divs == 0 and not native
    print(f"{path}: {len(ops)} float add/sub/mul, {len(missing)} without NoContraction, "
          f"{divs} OpFDiv, native {sorted(set(native))} -> {'OK' if ok else 'FAIL'}")
    return ok


args = sys.argv[1:]
stamp = None
if args[:1] == ["--stamp"]:
    stamp, args = args[1], args[2:]
results = [check(f) for f in args]
if not all(results):
    sys.exit(1)
if stamp:
    open(stamp, "w").write("ok\n")
