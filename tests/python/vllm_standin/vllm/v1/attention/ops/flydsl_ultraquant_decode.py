"""Stand-in for vLLM's vllm.v1.attention.ops.flydsl_ultraquant_decode: the
names the UltraQuant backend imports, with vLLM's signatures. Like vLLM on
a machine without gfx950 and FlyDSL, the probe is false; the launcher
records its calls (CALLS) instead of launching."""

CALLS = []


def is_flydsl_available():
    return False


is_ultraquant_flydsl_available = is_flydsl_available


def ultraquant_flydsl_decode_eligible(*, head_size, num_kv_groups,
                                      has_sinks, sliding_window,
                                      flydsl_loaded):
    return (flydsl_loaded and head_size == 256
            and num_kv_groups in (6, 8, 16) and not has_sinks
            and not (sliding_window and sliding_window > 0))


def flydsl_ultraquant_decode_attention(query, kv_cache, block_table,
                                       seq_lens, scale, PiT=None,
                                       max_seq_len=0, output_buf=None,
                                       buf_holder=None, max_num_kv_splits=32,
                                       sinks=None):
    CALLS.append(("vllm", query, sinks))
    return "vllm-output"
