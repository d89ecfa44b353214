/* What every decode layer needs, on every compile route (NVRTC, hipRTC,
 * offline clang): the sequence length a block walks, the strided
 * tile-group schedule, where a partition's outputs and a token's slot
 * live, and the empty partition's output. Emitted after the
 * specialization constants and before the layer's own templates, for the
 * decode kernel only. */

/* The sequence length block (b, ., .) walks: seq_lens[b] clamped to [0,
 * the block table's window]. seq_lens live in device memory, so the host
 * cannot check them against max_blocks_per_seq * block_size: clamping
 * keeps a bad value from reading past the block table. Token indices then
 * fit 32 bits: the host refuses windows past INT32_MAX. */
UQ_DEV uq_u32 uq_seq_len(const uq_decode_params &p, int b) {
  const long long window = (long long)UQ_MAX_BLOCKS * UQ_BLOCK_SIZE;
  long long len = p.seq_lens[b];
  return (uq_u32)(len < 0 ? 0 : (len > window ? window : len));
}

/* Tile groups of 256 tokens that partition `part` walks in the strided
 * schedule (FORMAT.md section 6): part, part + P, part + 2P, ..., at most
 * TGPP of them; 0 for a partition with no tokens. */
UQ_DEV uq_u32 uq_tile_group_trips(int part, uq_u32 seq_len) {
  const uq_u32 total = (seq_len + 255u) / 256u;
  if (total <= (uq_u32)part)
    return 0u;
  const uq_u32 trips = (total - (uq_u32)part + UQ_NUM_PARTITIONS - 1) / UQ_NUM_PARTITIONS;
  return trips < (uq_u32)UQ_TGPP ? trips : (uq_u32)UQ_TGPP;
}

/* The first of partition (b, kh, part)'s UQ_QG rows in the workspace:
 * segm_out [B, Hk, P, QG, D], segm_max and segm_sum [B, Hk, P, QG]. */
UQ_DEV uq_i64 uq_partition_row0(int b, int kh, int part) {
  return (((uq_i64)b * UQ_NUM_KV_HEADS + kh) * UQ_NUM_PARTITIONS + part) * UQ_QG;
}

/* Byte offset of kv head kh's slot in cache row `row` (physical block
 * times block_size plus the token's place in it), in 64 bits: caches
 * exceed 4 GiB. */
UQ_DEV uq_i64 uq_slot_offset(uq_i64 row, int kh) {
  return (row * UQ_NUM_KV_HEADS + kh) * (uq_i64)UQ_PADDED_SLOT;
}

/* An empty partition's output: max -inf, sum 0, zeros (the reduce skips
 * it). Every thread of the block calls it. */
UQ_DEV void uq_write_empty_partition(const uq_decode_params &p, uq_i64 row0, int tid) {
  uq_u32 *o = (uq_u32 *)((uq_u16 *)p.segm_out + row0 * UQ_HEAD_DIM);
  for (int k = tid; k < UQ_QG * UQ_HEAD_DIM / 2; k += UQ_BLOCK_THREADS)
    o[k] = 0u;
  if (tid < UQ_QG) {
    p.segm_max[row0 + tid] = uq_neg_inf();
    p.segm_sum[row0 + tid] = 0.0f;
  }
}
