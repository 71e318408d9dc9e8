"""Which text a workload's prompts are, and why that changes the per-token cost of a hop.

Every HTTP hop tokenises the whole prompt (the history is sent as text) in the proxy's target API server.
The measured benchmarks' synthetic prompts are not chat text: ``generate_prompt`` in vllm-ppd's
``comprehensive_benchmark.py`` builds 0.75 words per nominal token, 18 % of them random lowercase strings of
3-10 letters; ``turn_scaling_benchmark.py`` (the runs that pin the per-token slope) makes half of its words
such strings (3-8 letters). Two things follow, both physical, both absent from natural chat text:

* a random string is not a word of the BPE vocabulary, so the tokenizer runs its merge loop over it instead of
  one vocabulary lookup (Llama-3's tokenizer.json sets ``ignore_merges``: a pre-tokenised word found in the
  vocabulary is emitted at once), and it splits into 2-3 tokens;
* so a nominal token of those prompts is more than one real token: with ~2.5 tokens per random string and a
  full stop every ~11.5 words, 0.75 x (0.82 + 0.18 x 2.5 + 1/11.5) = 1.02 real tokens per nominal one in the
  sweep and 0.75 x (0.5 + 0.5 x 2.5 + 1/11.5) = 1.38 in turn scaling. The cost per *nominal* token that the
  calibration measures is therefore higher than for text whose nominal count is its real count
  (ShareGPT / WildChat lengths are counted as ``len(text) // 4``, close to Llama-3's ~4 characters per
  English token).

``api_us_per_token`` (fitted on the synthetic cells and turn scaling) and ``api_us_per_token_natural``
(fitted on the ShareGPT runs, ``calibration.stages.NATURAL``) are the two costs; ``is_natural_text`` says which
one a workload's hops pay. Imported traces carry real prompts, so they count as natural text.
"""
from __future__ import annotations

from ..config.workload_catalog import SYNTHETIC


def is_natural_text(workload: str) -> bool:
    """True for chat text (the dataset models and imported traces), False for the synthetic cells."""
    return workload not in SYNTHETIC

