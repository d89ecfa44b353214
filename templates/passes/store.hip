/* The store: grid (num_tokens, Hk, 1), UQ_BLOCK_THREADS = UQ_HEAD_DIM
 * threads, one per element. Encodes token t's K row (rotated first) and V
 * row of kv head h into slot slot_mapping[t] (FORMAT.md sections 1-4, the
 * same bits as uq_reference_store). A negative or out-of-range slot is
 * skipped; the slot's padding bytes are never written. */

static_assert(UQ_BLOCK_THREADS == UQ_HEAD_DIM, "one thread per element");

UQ_KERNEL UQ_LAUNCH_BOUNDS(UQ_BLOCK_THREADS) void UQ_KERNEL_NAME(uq_store_params p) {
  UQ_SHARED float x[UQ_HEAD_DIM];
  const int d = uq_tid();
  const uq_i64 t = uq_bid_x();
  const int h = uq_bid_y();
  if (t >= p.num_tokens || h >= UQ_NUM_KV_HEADS)
    return;
  const long long slot_index = p.slot_mapping[t];
  if (slot_index < 0 || slot_index >= p.num_slots)
    return; /* uniform across the block */
  uq_u8 *slot = p.kv_cache + (slot_index * UQ_NUM_KV_HEADS + h) * (uq_i64)UQ_PADDED_SLOT;

  x[d] = uq_load_elem(p.k, UQ_DTYPE, t * p.k_stride_token + (uq_i64)h * p.k_stride_head + d);
  uq_fwht_shared(x, 1, UQ_HEAD_DIM, UQ_HEAD_DIM, UQ_HEAD_DIM, 0, UQ_FWHT_NORM, d,
                 UQ_BLOCK_THREADS);
  const float vx = uq_load_elem(p.v, UQ_DTYPE, t * p.v_stride_token + (uq_i64)h * p.v_stride_head + d);

  /* Lanes 32g .. 32g+31 hold group g; the even lane of each pair packs the
   * byte (even element in the low nibble). */
  for (int part = 0; part < 2; ++part) {
    const float val = part == 0 ? x[d] : vx;
    uq_u32 scale_byte = 0u;
    const uq_u32 code = uq_encode_lane(val, &scale_byte);
    const uq_u32 odd = uq_lane_xor_u32(code, 1);
    uq_u8 *codes = slot + (part == 0 ? 0 : UQ_HEAD_DIM / 2 + UQ_HEAD_DIM / 32);
    uq_u8 *scales = codes + UQ_HEAD_DIM / 2;
    if ((d & 1) == 0)
      codes[d / 2] = (uq_u8)(code | (odd << 4));
    if ((d & 31) == 0)
      scales[d / 32] = (uq_u8)scale_byte;
  }
}
