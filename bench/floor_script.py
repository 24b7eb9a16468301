"""The floor of a warm run: what no implementation of the method can skip. Interpreter start and imports (torch,
transformers), reading the weights, and one pass per prompt that computes only the cut's row (logits_to_keep=1, no
cache) and reads its two probabilities. No tokenizer: the prompts come as token ids (a warm run reads its cuts from
its cache and never loads one).

    python -c "$(cat bench/floor_script.py)" MODEL_FOLDER IDS_JSON [DEVICE]   # as -c: bench/ holds a kernels.py

IDS_JSON: a list of {"ids", "correct", "wrong"} (token ids). Prints one JSON line: seconds per phase, passes,
tokens. Run as a plain script, so that it imports no more than such a script would.
"""

import json
import sys
import time

t0 = time.perf_counter()
import torch  # noqa: E402  (the imports are timed: they are part of the floor)
from transformers import AutoModelForCausalLM  # noqa: E402

t1 = time.perf_counter()
folder, ids_file = sys.argv[1], sys.argv[2]
device = sys.argv[3] if len(sys.argv) > 3 else "cpu"
model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16,
                                             device_map=None if device == "cpu" else {"": device}).eval()
t2 = time.perf_counter()
with open(ids_file) as f:
    prompts = json.load(f)
tokens = 0
with torch.inference_mode():
    for p in prompts:
        ids = torch.tensor([p["ids"]], device=device)
        tokens += ids.shape[1]
        probs = torch.softmax(model(input_ids=ids, logits_to_keep=1, use_cache=False).logits[0, -1], dim=-1)
        probs[[p["correct"], p["wrong"]]].tolist()
t3 = time.perf_counter()
print(json.dumps({"seconds": {"imports": t1 - t0, "weights": t2 - t1, "forward": t3 - t2}, "passes": len(prompts),
                  "tokens": tokens}))
