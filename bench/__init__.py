"""The benchmark of pytest-gotchas: how fast it is against the spec's own method, and what its options cost.
Run it from the repository's root:

    python -m bench.run          # naive / cold / warm and the rest below; prints the markdown of RESULTS.md
    python -m bench.run --cost-only   # only cold, warm and naive, interleaved: the cost against the naive script
    python -m bench.features     # the opt-in readings against a plain warm run
    python -m bench.onepass      # the one-pass readings against the separate full passes they replace, bit for bit
    python -m bench.patching     # --gotchas-patch over the whole library against a plain run; 2B and 7B by FLOPs
    python -m bench.firstrun     # cold against warm, plain and with variants; bfloat16 against float32 per pass
    python -m bench.backends     # the vLLM backend against transformers (run it in the vLLM venv)
    bash bench/device.sh         # on a GPU: what bench/device.py measures there, in under 8 minutes

Speed is measured here, never asserted in a test: as ratios against a reference run measured side by side
(interleaved) in the same process run. Absolute seconds on a shared machine are noisy; the ratios are the result.

Every figure comes from whole processes started here, timed from start to exit, with their peak resident memory
(ru_maxrss from wait4), on the spec's chapters (cases/0-4) copied into a temporary directory:

- naive: bench/naive.py, which loads the converted default model folder once with AutoModelForCausalLM /
  AutoTokenizer and runs one plain full forward pass per prompt (no logits_to_keep, no cache of cuts), as the
  spec's scripts did. The prompts are every prompt of a plugin run, read from its JSON report.
- cold: `pytest --gotchas cases` in a fresh copy (empty .pytest_cache: every snippet executed, every cut
  tokenized); the model is already converted (once per machine, as for any user after the first run).
- warm: the same command again in that copy (transcripts and cuts cached).

Runs are interleaved (cold, warm and naive in a rotating order) and repeated; medians are reported, and the ratio
warm / naive both as a median of the per-repetition ratios and as the ratio of the medians. The phase split comes
from the plugin's own timings (`run.timings` of the JSON report; `run.workers` under xdist).

Also measured: peak memory against the weights plus the interpreter's baseline; warm collection; growth with the
number of cases (the chapters repeated under new chapter names and case ids); the cold ground truth's executions
(every interpreter wrapped by a script that logs each execution) serially and under `-n 2`; whether every
probability with --gotchas-batch-size 4 and 8 is bit-identical to batch size 1; -n 2 with shared and with all
cores.

The modules, in the order a run goes through them:

    child.py       one whole process, measured (wall, peak RSS, its typed JSON report) into a Child
    naive.py       the naive reference script (run as a process, never imported)
    scenarios.py   the case sets, every Scenario (one command line) and the Groups of each plan
    measure.py     runs a plan's groups, interleaved and repeated; computes the figures from the runs
    executions.py  the logged cold runs (serial and -n 2) of the ground truth's executions
    figures.py     the typed figures: Stat (medians), Ratio, RunFigures, Comparison, BenchFigures ...
    render.py      the markdown of RESULTS.md from the figures
    run.py, features.py   the entry points
    onepass.py     one process: every reading of a run's prompts by one pass per prompt and by separate passes
    patching.py    --gotchas-patch's cost per pair direction and by method, and a FLOP projection to larger models
    firstrun.py    a user's first run against the warm one, phase by phase, and bfloat16 against float32
    backends.py    each embedded model through vLLM and through transformers: what differs, and each one's time
    device.py      the steps a lent GPU runs (device.sh), each within a time budget or saying why it did not run

To add a scenario, add one Scenario to scenarios.py; measure and render need no change:

- a whole run to compare with the naive script (and with cold and warm): append it to `scenarios.EXTRA`, e.g.
  `Scenario("warm, variants", ("--gotchas-variants",))`, or a cold one with `cache=COLD`. It is interleaved with
  naive, cold and warm in every repetition and gets a row (wall, peak memory and seconds per forward pass, each x
  naive) in "More whole runs against the naive script";
- an opt-in reading's cost: append it to `scenarios.FEATURES` (a row of the features table, x plain);
- another command than the plugin: give it `script=lambda paths: [...]` (python's arguments; `paths.model` is the
  model folder, `paths.prompts()` the prompts file), and `cache=NONE` when it reads no case.

A scenario whose figures are not one row (a new section) also needs its figures in figures.py, computed in
measure.bench_figures and written by a function of render.py.
"""
