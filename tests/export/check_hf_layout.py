"""Checks an exported Hugging Face folder's tensors against the model transformers builds from its
config.json, without loading any weights (the model on the meta device): every name transformers
expects is written once, with its shape, in the config's dtype. For folders too large to load
(the 8B card's --random-weights export, docs/export.md):
    .cache/hf-venv/bin/python tests/export/check_hf_layout.py DIR
"""
import json
import sys
from pathlib import Path

import torch
from safetensors import safe_open
from transformers import AutoConfig, AutoModelForCausalLM

d = Path(sys.argv[1])
config = AutoConfig.from_pretrained(d, local_files_only=True)
with torch.device("meta"):
    model = AutoModelForCausalLM.from_config(config)
want = {k: tuple(v.shape) for k, v in model.state_dict().items()}
index = d / "model.safetensors.index.json"
shards = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() else ["model.safetensors"]
have, dtypes = {}, set()
for shard in shards:
    with safe_open(d / shard, "pt") as f:
        for k in f.keys():
            have[k] = tuple(f.get_slice(k).get_shape())
            dtypes.add(f.get_slice(k).get_dtype())
if config.tie_word_embeddings:
    want.pop("lm_head.weight", None)
report = {"architecture": type(model).__name__, "expected": len(want), "written": len(have),
          "missing": sorted(set(want) - set(have)), "extra": sorted(set(have) - set(want)),
          "shape_mismatch": sorted(k for k in have if k in want and have[k] != want[k]), "dtypes": sorted(dtypes),
          "parameters": sum(v.numel() for v in model.parameters())}
print(json.dumps(report))
sys.exit(0 if not (report["missing"] or report["extra"] or report["shape_mismatch"]) else 1)
