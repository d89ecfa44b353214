/* Prints, as one JSON object, sizeof and the offset of every field of the
 * public structs that python/uqjit/_lib.py mirrors with ctypes, so that
 * test_layouts.py can compare the two. Uses only the header. */
#include <stddef.h>
#include <stdio.h>

#include "uqjit.h"

static int first_struct = 1, first_field = 1;

static void begin(const char *name, size_t size) {
  printf("%s\n  \"%s\": {\"sizeof\": %zu, \"fields\": {", first_struct ? "{" : ",",
         name, size);
  first_struct = 0;
  first_field = 1;
}

static void field(const char *name, size_t offset) {
  printf("%s\"%s\": %zu", first_field ? "" : ", ", name, offset);
  first_field = 0;
}

static void end(void) { printf("}}"); }

#define BEGIN(T) begin(#T, sizeof(T))
#define F(T, f) field(#f, offsetof(T, f))

int main(void) {
  BEGIN(uq_slot_layout);
  F(uq_slot_layout, head_dim); F(uq_slot_layout, k_codes);
  F(uq_slot_layout, k_scales); F(uq_slot_layout, v_codes);
  F(uq_slot_layout, v_scales); F(uq_slot_layout, size);
  end();
  BEGIN(uq_shape);
  F(uq_shape, batch); F(uq_shape, num_q_heads); F(uq_shape, num_kv_heads);
  F(uq_shape, head_dim); F(uq_shape, block_size);
  F(uq_shape, max_blocks_per_seq); F(uq_shape, padded_slot);
  F(uq_shape, max_num_kv_splits); F(uq_shape, scale); F(uq_shape, has_sinks);
  F(uq_shape, sliding_window); F(uq_shape, q_dtype);
  F(uq_shape, q_stride_seq); F(uq_shape, q_stride_head);
  F(uq_shape, q_stride_dim);
  end();
  BEGIN(uq_key);
  F(uq_key, kind); F(uq_key, dtype); F(uq_key, head_dim);
  F(uq_key, num_kv_heads); F(uq_key, num_partitions);
  F(uq_key, max_blocks_per_seq); F(uq_key, query_group_size);
  F(uq_key, kv_block_size); F(uq_key, padded_slot); F(uq_key, fuse_qrot);
  F(uq_key, tile_groups_per_partition); F(uq_key, variant);
  F(uq_key, scale_e8); F(uq_key, stride_q_seq); F(uq_key, stride_q_head);
  F(uq_key, target); F(uq_key, stride_q_dim);
  end();
  BEGIN(uq_plan);
  F(uq_plan, eligible); F(uq_plan, reason); F(uq_plan, num_partitions);
  F(uq_plan, tile_groups_per_partition); F(uq_plan, query_group_size);
  F(uq_plan, fuse_qrot); F(uq_plan, padded_slot); F(uq_plan, scale);
  F(uq_plan, decode_grid); F(uq_plan, reduce_grid);
  F(uq_plan, prologue_grid); F(uq_plan, block_threads);
  F(uq_plan, ws_segm_out); F(uq_plan, ws_segm_max); F(uq_plan, ws_segm_sum);
  F(uq_plan, ws_q_rot); F(uq_plan, workspace_bytes); F(uq_plan, num_kernels);
  F(uq_plan, kernels);
  end();
  BEGIN(uq_decode_args);
  F(uq_decode_args, query); F(uq_decode_args, kv_cache);
  F(uq_decode_args, num_blocks); F(uq_decode_args, block_table);
  F(uq_decode_args, seq_lens); F(uq_decode_args, out);
  end();
  BEGIN(uq_store_args);
  F(uq_store_args, k); F(uq_store_args, v);
  F(uq_store_args, k_stride_token); F(uq_store_args, k_stride_head);
  F(uq_store_args, v_stride_token); F(uq_store_args, v_stride_head);
  F(uq_store_args, slot_mapping); F(uq_store_args, num_tokens);
  F(uq_store_args, kv_cache); F(uq_store_args, num_blocks);
  F(uq_store_args, block_size); F(uq_store_args, num_kv_heads);
  F(uq_store_args, head_dim); F(uq_store_args, padded_slot);
  F(uq_store_args, dtype);
  end();
  BEGIN(uq_context_options);
  F(uq_context_options, target); F(uq_context_options, device);
  F(uq_context_options, cache_dir); F(uq_context_options, use_disk_cache);
  F(uq_context_options, variant);
  end();
  BEGIN(uq_compile_summary);
  F(uq_compile_summary, keys); F(uq_compile_summary, compiled);
  F(uq_compile_summary, hits); F(uq_compile_summary, failed);
  F(uq_compile_summary, seconds);
  end();
  BEGIN(uq_stats);
  F(uq_stats, hits); F(uq_stats, misses); F(uq_stats, disk_hits);
  F(uq_stats, compiles); F(uq_stats, compile_seconds);
  end();
  printf("\n}\n");
  return 0;
}
