"""Checks a LINNET_CUDA_PROFILE file written by a run of `linnet generate`
on the fake libcuda (tests/CMakeLists.txt, cuda_fake_profile):

  check_cuda_profile.py PROFILE LOG PREFILLS DECODES

every entry call counted; the kernels' time added up under their
manifest families (the fake's kernels do nothing, so only the counts are
checked, not the times); as many kernel launches as the fake ran (LOG holds
its FAKE_CUDA_REPORT line); the library products under "cublaslt".
"""
import json
import re
import sys

profile_path, log_path, prefills, decodes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
profile = json.load(open(profile_path))
log = open(log_path).read()
problems = []

if profile["entries"] != {"decode": decodes, "prefill": prefills}:
    problems.append(f"entries {profile['entries']}, expected decode {decodes} and prefill {prefills}")
families = {(f["entry"], f["family"]): f for f in profile["families"]}
for entry, family in [("prefill", "cublaslt"), ("prefill", "row_reduction"), ("prefill", "elementwise"),
                      ("decode", "row_reduction"), ("decode", "attention"), ("decode", "elementwise")]:
    if (entry, family) not in families:
        problems.append(f"no {family} time in {entry}")
for f in profile["families"]:
    if f["family"] == "unknown":
        problems.append(f"kernels of no family in {f['entry']}: {f['calls']} calls")
    if f["ms"] < 0:
        problems.append(f"negative time for {f}")
launches = sum(o["calls"] for o in profile["operations"] if o["family"] not in ("cublaslt", "copy", "fill"))
ran = re.search(r"fake libcuda: (\d+) kernels run", log)
if not ran:
    problems.append("no fake libcuda report in the log")
elif int(ran.group(1)) != launches:
    problems.append(f"{launches} launches profiled, the fake ran {ran.group(1)}")
products = re.search(r"fake cuBLASLt: (\d+) products", log)
profiled = sum(o["calls"] for o in profile["operations"] if o["family"] == "cublaslt")
if products and int(products.group(1)) != profiled:
    problems.append(f"{profiled} library products profiled, the stand-in ran {products.group(1)}")

for p in problems:
    print("FAIL " + p)
print(f"profile: {len(profile['operations'])} operations, {launches} launches, {profiled} library products, "
      f"{len(problems)} problems")
sys.exit(1 if problems else 0)
