"""Stand-in for vLLM's UltraQuant backend module: imports the ops names at
import time (so install() must rebind them here too) and routes a layer's
decode the way the backend does: the fast launcher when the probe and the
policy say so, else its Triton path (recorded in TRITON_CALLS)."""
from vllm.v1.attention.ops.flydsl_ultraquant_decode import (
    flydsl_ultraquant_decode_attention,
    is_ultraquant_flydsl_available,
    ultraquant_flydsl_decode_eligible,
)

TRITON_CALLS = []


def decode(query, kv_cache, block_table, seq_lens, scale, head_size,
           num_kv_groups, sinks=None, sliding_window=None):
    if ultraquant_flydsl_decode_eligible(
            head_size=head_size, num_kv_groups=num_kv_groups,
            has_sinks=sinks is not None, sliding_window=sliding_window,
            flydsl_loaded=is_ultraquant_flydsl_available()):
        return flydsl_ultraquant_decode_attention(
            query, kv_cache, block_table, seq_lens, scale, sinks=sinks)
    TRITON_CALLS.append(query)
    return "triton-output"
