"""The naive reference, as the spec's scripts did it: load the model folder once with AutoModelForCausalLM /
AutoTokenizer and run one plain full forward pass per prompt (no logits_to_keep, no cache of cuts).

    python bench/naive.py MODEL_FOLDER PROMPTS_JSON [DEVICE]

PROMPTS_JSON: a list of {"prompt", "correct", "wrong"}. Prints one JSON line: seconds per phase, passes, tokens
and [P(correct), P(wrong)] of each prompt's first candidate tokens. Run as a plain script (never imported by the
bench), so that it imports no more than such a script would.
"""

import json
import sys
import time

t0 = time.perf_counter()
import torch  # noqa: E402  (the imports are timed: they are part of what the naive script pays)
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

t1 = time.perf_counter()
folder, prompts_file = sys.argv[1], sys.argv[2]
device = sys.argv[3] if len(sys.argv) > 3 else "cpu"  # bench/floor.py on a GPU (bench/device.sh)
tokenizer = AutoTokenizer.from_pretrained(folder)
t2 = time.perf_counter()
model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16,
                                             device_map=None if device == "cpu" else {"": device}).eval()
t3 = time.perf_counter()
with open(prompts_file) as f:
    prompts = json.load(f)
out, tokens = [], 0
for p in prompts:
    ids = tokenizer(p["prompt"], return_tensors="pt")["input_ids"].to(device)
    tokens += ids.shape[1]
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=ids).logits[0, -1], dim=-1)
    c = tokenizer(p["correct"], add_special_tokens=False)["input_ids"][0]
    w = tokenizer(p["wrong"], add_special_tokens=False)["input_ids"][0]
    out.append([probs[c].item(), probs[w].item()])
t4 = time.perf_counter()
print(json.dumps({"seconds": {"imports": t1 - t0, "tokenizer_load": t2 - t1, "weights": t3 - t2, "forward": t4 - t3},
                  "passes": len(prompts), "tokens": tokens, "probs": out}))
