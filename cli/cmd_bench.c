/* uqjit bench: decode time, bytes moved and effective bandwidth over a
 * sweep of shapes on the GPU, against the device-to-device copy bandwidth
 * measured in the same run; plus the launch path's host overhead and the
 * first call on a warm disk cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "cli/cmd_util.h"
#include "cli/commands.h"
#include "uqjit_tools.h"

#define CMD "bench"
#define MAX_LIST 32
/* "Small" shapes, where launch overhead matters: graphs by default. */
#define GRAPH_AUTO_KV_BYTES (64ull << 20)

static void bench_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit bench [--batch LIST] [--seq LIST] [--heads LIST] "
          "[options]\n\n"
          "Times decode (+ prologue when used) + reduce on GPU 0 for each "
          "shape of a\n"
          "sweep (head_dim 256, bf16): median of --iters calls after "
          "warm-up, timed\n"
          "with events, rotating over enough separate KV caches and block "
          "tables\n"
          "that more than --rotate-mb is touched between reuses (so the L2 "
          "holds\n"
          "nothing useful). Reports microseconds, KV bytes needed (sum of "
          "seq_len x\n"
          "Hk x 272), query + output bytes, workspace traffic, effective "
          "GB/s and\n"
          "its percentage of the device-to-device copy bandwidth (read + "
          "write)\n"
          "measured in the same run, and the relative L2 error of the first "
          "--check-seqs\n"
          "sequences against the double-precision reference. Then the host "
          "time of\n"
          "one uq_decode call on a table hit, and the first call of a fresh "
          "context\n"
          "on a warm disk cache. Needs a GPU (exit status 1 without one).\n\n"
          "options:\n"
          "  --batch LIST               batch sizes (default 1,4,16,64)\n"
          "  --seq LIST                 sequence lengths, K = 1024 (default "
          "1k,4k,16k,64k,128k)\n"
          "  --heads LIST               HK:QG pairs (default 1:16,2:8,4:6)\n"
          "  --block-size N             tokens per block (default 64)\n"
          "  --iters N                  timed calls per shape (default 50)\n"
          "  --warmup N                 untimed calls first (default 10)\n"
          "  --graph, --no-graph        also time CUDA/HIP graph replay "
          "(default: for\n"
          "                             shapes whose KV is at most 64 MiB): "
          "graph_us\n"
          "                             replays one graph per step\n"
          "  --chain N                  with graphs, also time graphs of N "
          "consecutive\n"
          "                             steps (chain_us: per step, the cost "
          "inside a\n"
          "                             model's decode graph; default 16, 0: "
          "off)\n"
          "  --max-mem-gb X             device memory cap per shape "
          "(default 16)\n"
          "  --rotate-mb N              bytes touched between reuses of a "
          "cache\n"
          "                             (default 200)\n"
          "  --check-seqs N             sequences checked against the "
          "reference\n"
          "                             (default 2; 0: no check)\n"
          "  --no-overhead              skip the host overhead / disk hit "
          "section\n"
          "  --cache-dir D              code-object cache directory\n"
          "  --variant V                decode layer: auto, portable, matrix,\n"
          "                             warpgroup or gfx950-emu (default:\n"
          "                             UQJIT_VARIANT, else auto)\n"
          "  --seed N                   random seed (default 1)\n"
          "  --fill served|pool         how the KV cache is written (default "
          "served:\n"
          "                             every token its own data, encoded by "
          "uq_store\n"
          "                             into blocks scattered over a larger "
          "pool, K with\n"
          "                             outlier channels, V rows scaled by 2^-3 "
          "..\n"
          "                             2^3, stale bytes elsewhere; pool: "
          "copies of a\n"
          "                             few host-encoded blocks of unit "
          "normals)\n"
          "  --json                     one JSON object: device, copy_gbps, "
          "rows, overhead\n"
          "  -h, --help                 this help\n");
}

typedef struct row {
  int32_t batch, seq, hk, qg, partitions, rotations;
  int fuse_qrot;
  cli_bench_result r;
} row;

static int parse_seq_list(const char *text, int64_t *out, size_t *n) {
  /* Accept "4k" as 4096: rewrite into plain numbers first. */
  char buf[512];
  size_t j = 0;
  for (const char *p = text; *p; p++) {
    if (j + 8 >= sizeof buf)
      return cli_usage_error(CMD, "--seq: list too long"), -1;
    if (*p == 'k' || *p == 'K') {
      buf[j++] = '\x01'; /* marker, expanded below */
      continue;
    }
    buf[j++] = *p;
  }
  buf[j] = '\0';
  /* Split by hand so the marker can multiply. */
  *n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    size_t len = strlen(t);
    int64_t mult = 1;
    if (len > 0 && t[len - 1] == '\x01') {
      t[len - 1] = '\0';
      mult = 1024;
    }
    int64_t v;
    if (*n == MAX_LIST ||
        cli_parse_i64(CMD, "--seq", t, 1, (1 << 24), &v) != 0)
      return -1;
    out[(*n)++] = v * mult;
  }
  if (*n == 0) {
    cli_usage_error(CMD, "--seq: empty list");
    return -1;
  }
  return 0;
}

static int parse_heads(const char *text, int32_t *hk, int32_t *qg,
                       size_t *n) {
  char buf[512];
  if (strlen(text) >= sizeof buf) {
    cli_usage_error(CMD, "--heads: list too long");
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", text);
  *n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(t, ':');
    if (colon == NULL || *n == MAX_LIST) {
      cli_usage_error(CMD, "--heads: '%s' is not HK:QG", t);
      return -1;
    }
    *colon = '\0';
    if (cli_parse_i32(CMD, "--heads", t, 1, 1024, &hk[*n]) != 0 ||
        cli_parse_i32(CMD, "--heads", colon + 1, 1, 1024, &qg[*n]) != 0)
      return -1;
    (*n)++;
  }
  if (*n == 0) {
    cli_usage_error(CMD, "--heads: empty list");
    return -1;
  }
  return 0;
}

/* Read + write bandwidth of one large device-to-device copy, best of 5. */
static int copy_bandwidth(uq_context *ctx, uint64_t bytes, double *gbps) {
  void *a = NULL, *b = NULL;
  uq_event *e0 = NULL, *e1 = NULL;
  int rc;
  if ((rc = uq_device_alloc(ctx, bytes, &a)) != 0 ||
      (rc = uq_device_alloc(ctx, bytes, &b)) != 0 ||
      (rc = uq_memset_d8(ctx, a, 1, bytes)) != 0 ||
      (rc = uq_event_create(ctx, &e0)) != 0 ||
      (rc = uq_event_create(ctx, &e1)) != 0)
    goto done;
  double best = INFINITY;
  for (int i = 0; i < 6; i++) {
    float ms;
    if ((rc = uq_synchronize(ctx)) != 0 ||
        (rc = uq_event_record(e0, NULL)) != 0 ||
        (rc = uq_memcpy_d2d_async(ctx, b, a, bytes, NULL)) != 0 ||
        (rc = uq_event_record(e1, NULL)) != 0 ||
        (rc = uq_event_elapsed_ms(e0, e1, &ms)) != 0)
      goto done;
    if (i > 0 && ms > 0 && ms < best) /* the first one warms up */
      best = ms;
  }
  *gbps = 2.0 * (double)bytes / (best * 1e-3) / 1e9;
done:
  uq_event_destroy(e0);
  uq_event_destroy(e1);
  if (a != NULL)
    uq_device_free(ctx, a);
  if (b != NULL)
    uq_device_free(ctx, b);
  return rc;
}

static void make_shape(uq_shape *s, int32_t batch, int32_t seq, int32_t hk,
                       int32_t qg, int32_t bs) {
  uq_shape_init(s);
  s->batch = batch;
  s->num_kv_heads = hk;
  s->num_q_heads = hk * qg;
  s->head_dim = 256;
  s->block_size = bs;
  s->max_blocks_per_seq = (seq + bs - 1) / bs;
}

typedef struct overhead {
  int measured;
  double host_us_median, host_us_p90;
  double disk_first_ms;
  uq_stats disk_stats;
  char note[200];
} overhead;

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int measure_overhead(uq_context *ctx, void *stream,
                            const cli_bench_opts *o, const char *cache_dir,
                            overhead *ov) {
  uq_shape s;
  make_shape(&s, 4, 4096, 2, 8, 64);
  uq_plan plan;
  cli_bench_shape b;
  memset(&b, 0, sizeof b);
  uq_context *ctx2 = NULL;
  enum { N = 400, WARM = 20 };
  double host[N];
  int rc = uq_context_plan(ctx, &s, &plan);
  if (rc == 0 && !plan.eligible) {
    snprintf(ov->note, sizeof ov->note, "not eligible: %s", plan.reason);
    return 0;
  }
  if (rc != 0 ||
      (rc = cli_bench_setup(ctx, &b, &s, &plan, 4096, 1, o->seed, o->fill)) != 0 ||
      (rc = cli_bench_check(ctx, &b, 0, NULL, NULL)) != 0)
    goto done;
  uq_decode_args a;
  cli_bench_args(&b, 0, &a);
  for (int i = 0; i < WARM + N; i++) {
    double t0 = cli_now();
    rc = uq_decode(ctx, &s, &a, b.workspace, plan.workspace_bytes, stream);
    double t1 = cli_now();
    if (rc != 0)
      goto done;
    if (i >= WARM)
      host[i - WARM] = 1e6 * (t1 - t0);
    /* Keep the queue short so that launches never block on a full one. */
    if (i % 100 == 99 && (rc = uq_stream_synchronize(ctx, stream)) != 0)
      goto done;
  }
  if ((rc = uq_stream_synchronize(ctx, stream)) != 0)
    goto done;
  qsort(host, N, sizeof *host, cmp_d);
  ov->host_us_median = 0.5 * (host[N / 2 - 1] + host[N / 2]);
  ov->host_us_p90 = host[(N * 9) / 10];

  /* A fresh context finds the kernels only on disk. Device buffers are
   * shared: contexts of one process use the device's primary context. */
  uq_context_options opts;
  uq_context_options_init(&opts);
  opts.device = 0;
  opts.cache_dir = cache_dir;
  opts.variant = o->variant;
  if ((rc = uq_context_create(&opts, &ctx2)) != 0)
    goto done;
  double t0 = cli_now();
  rc = uq_decode(ctx2, &s, &a, b.workspace, plan.workspace_bytes, NULL);
  if (rc == 0)
    rc = uq_synchronize(ctx2);
  ov->disk_first_ms = 1e3 * (cli_now() - t0);
  if (rc != 0)
    goto done;
  uq_get_stats(ctx2, &ov->disk_stats);
  ov->measured = 1;
done:
  if (rc != 0)
    snprintf(ov->note, sizeof ov->note, "%s: %s", uq_strerror(rc),
             uq_last_error());
  uq_context_destroy(ctx2);
  cli_bench_teardown(ctx, &b);
  return rc;
}

/* What the command line asks for. */
typedef struct bench_args {
  int64_t batches[MAX_LIST], seqs[MAX_LIST];
  size_t nb, ns, nh;
  int32_t hks[MAX_LIST], qgs[MAX_LIST];
  int32_t block_size;
  int json, do_overhead;
  const char *cache_dir;
  const char *variant; /* --variant, or NULL (UQJIT_VARIANT) */
  cli_bench_opts o;
} bench_args;

/* CLI_NEXT when the bench should run, else the exit status. */
static int parse_bench(bench_args *a, int argc, char **argv) {
  static const int64_t batches[] = {1, 4, 16, 64};
  static const int64_t seqs[] = {1024, 4096, 16384, 65536, 131072};
  memset(a, 0, sizeof *a);
  memcpy(a->batches, batches, sizeof batches);
  memcpy(a->seqs, seqs, sizeof seqs);
  a->nb = 4;
  a->ns = 5;
  a->nh = 3;
  a->hks[0] = 1, a->hks[1] = 2, a->hks[2] = 4;
  a->qgs[0] = 16, a->qgs[1] = 8, a->qgs[2] = 6;
  a->block_size = 64;
  a->do_overhead = 1;
  int32_t iters = 50, warmup = 10, check = 2, chain = 16, rotate_mb = 200;
  float max_mem_gb = 16.0f;
  int graph = -1;
  int64_t seed = 1;
  cli_bench_fill fill = CLI_FILL_SERVED;
  const cli_flag flags[] = {
      {"--graph", &graph, 1},
      {"--no-graph", &graph, 0},
      {"--json", &a->json, 1},
      {"--no-overhead", &a->do_overhead, 0},
      {NULL, NULL, 0},
  };
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
#define OPT(name) ((r = cli_option(CMD, argc, argv, &i, name, &v)) != 0)
    if (OPT("--batch")) {
      if (r < 0 || cli_parse_list(CMD, "--batch", v, 1, 1 << 20, a->batches,
                                  MAX_LIST, &a->nb) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--seq")) {
      if (r < 0 || parse_seq_list(v, a->seqs, &a->ns) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--heads")) {
      if (r < 0 || parse_heads(v, a->hks, a->qgs, &a->nh) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--block-size")) {
      if (r < 0 ||
          cli_parse_i32(CMD, "--block-size", v, 1, 4096, &a->block_size) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--iters")) {
      if (r < 0 || cli_parse_i32(CMD, "--iters", v, 1, 100000, &iters) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--warmup")) {
      if (r < 0 || cli_parse_i32(CMD, "--warmup", v, 0, 100000, &warmup) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--chain")) {
      if (r < 0 || cli_parse_i32(CMD, "--chain", v, 0, 4096, &chain) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--check-seqs")) {
      if (r < 0 || cli_parse_i32(CMD, "--check-seqs", v, 0, 1 << 20, &check) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--rotate-mb")) {
      if (r < 0 ||
          cli_parse_i32(CMD, "--rotate-mb", v, 0, 1 << 20, &rotate_mb) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--max-mem-gb")) {
      if (r < 0 || cli_parse_float(CMD, "--max-mem-gb", v, 0.0, 1e6,
                                   &max_mem_gb) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--seed")) {
      if (r < 0 || cli_parse_i64(CMD, "--seed", v, 0, INT64_MAX, &seed) != 0)
        return CLI_EXIT_USAGE;
    } else if (OPT("--fill")) {
      if (r < 0)
        return CLI_EXIT_USAGE;
      if (strcmp(v, "served") == 0)
        fill = CLI_FILL_SERVED;
      else if (strcmp(v, "pool") == 0)
        fill = CLI_FILL_POOL;
      else
        return cli_usage_error(CMD, "--fill: '%s' is not served or pool", v), CLI_EXIT_USAGE;
    } else if (OPT("--cache-dir")) {
      if (r < 0)
        return CLI_EXIT_USAGE;
      a->cache_dir = v;
    } else if (OPT("--variant")) {
      if (r < 0)
        return CLI_EXIT_USAGE;
      a->variant = v;
    } else if ((r = cli_other_arg(CMD, argv[i], flags, bench_usage)) !=
               CLI_NEXT) {
      return r;
    }
#undef OPT
  }
  cli_bench_opts o = {
      .iters = iters,
      .warmup = warmup,
      .graph = graph,
      .chain = chain,
      .rotate_bytes = (uint64_t)rotate_mb << 20,
      .max_mem = (uint64_t)((double)max_mem_gb * (double)(1ull << 30)),
      .check_seqs = check,
      .seed = (uint64_t)seed,
      .variant = a->variant,
      .fill = fill,
  };
  a->o = o;
  return CLI_NEXT;
}

/* The run's device side and what every table line compares with. */
typedef struct bench_run {
  const bench_args *a;
  uq_context *ctx;
  void *stream;
  char dev_name[128];
  const char *target;
  uint64_t copy_bytes;
  double copy_gbps;
  row *rows;
  size_t nrows;
  uq_key *keys;
} bench_run;

/* Context and stream on device 0, and the copy bandwidth; CLI_NEXT, or
 * the exit status after saying why. */
static int bench_open(bench_run *br) {
  const bench_args *a = br->a;
  int devices = 0;
  int rc = uq_device_count(&devices);
  if (rc != 0 || devices == 0) {
    fprintf(stderr, "uqjit bench: needs a GPU, and none was found%s%s\n",
            uq_last_error()[0] ? ": " : "", uq_last_error());
    return CLI_EXIT_FAILURE;
  }
  uq_context_options copts;
  uq_context_options_init(&copts);
  copts.device = 0;
  copts.cache_dir = a->cache_dir;
  copts.variant = a->variant;
  if ((rc = uq_context_create(&copts, &br->ctx)) != 0)
    return cli_fail(CMD, rc, "cannot create a context on device 0");
  if ((rc = uq_stream_create(br->ctx, &br->stream)) != 0)
    return cli_fail(CMD, rc, "cannot create a stream");
  snprintf(br->dev_name, sizeof br->dev_name, "?");
  if (uq_device_name(br->ctx, br->dev_name, sizeof br->dev_name) != 0)
    snprintf(br->dev_name, sizeof br->dev_name, "?");
  br->target = uq_context_target(br->ctx);
  br->copy_bytes = 2ull << 30;
  if (br->copy_bytes > a->o.max_mem / 2)
    br->copy_bytes = a->o.max_mem / 2;
  if ((rc = copy_bandwidth(br->ctx, br->copy_bytes, &br->copy_gbps)) != 0)
    return cli_fail(CMD, rc, "copy bandwidth measurement failed");
  if (!a->json) {
    printf("device:   %s (%s)\n", br->dev_name, br->target);
    printf("copy:     %.1f GB/s device-to-device (read + write of %.2f GiB)\n",
           br->copy_gbps, (double)br->copy_bytes / (double)(1ull << 30));
    printf("fill:     %s\n", br->a->o.fill == CLI_FILL_SERVED
                                  ? "served (own data per token through uq_store, scattered blocks)"
                                  : "pool (copies of a few unit-normal blocks)");
    fflush(stdout);
  }
  return CLI_NEXT;
}

/* Row k's shape and plan; skipped (with a note) when it cannot be planned
 * or does not fit --max-mem-gb. Its kernels are appended to keys. */
static void plan_row(bench_run *br, row *w, size_t *nkeys) {
  uq_shape s;
  make_shape(&s, w->batch, w->seq, w->hk, w->qg, br->a->block_size);
  uq_plan plan;
  int rc = uq_context_plan(br->ctx, &s, &plan);
  if (rc != 0 || !plan.eligible) {
    w->r.skipped = 1;
    snprintf(w->r.note, sizeof w->r.note, "%s",
             rc ? uq_last_error() : plan.reason);
    return;
  }
  w->partitions = plan.num_partitions;
  w->fuse_qrot = plan.fuse_qrot;
  uint64_t one = cli_bench_bytes(&s, &plan, 1, br->a->o.fill);
  if (one > br->a->o.max_mem) {
    w->r.skipped = 1;
    snprintf(w->r.note, sizeof w->r.note, "needs %.1f GiB > --max-mem-gb",
             (double)one / (double)(1ull << 30));
    return;
  }
  for (int j = 0; j < plan.num_kernels; j++)
    br->keys[(*nkeys)++] = plan.kernels[j];
}

/* Plans every shape and compiles everything up front, in parallel; prints
 * the table's header. CLI_NEXT, or the exit status after saying why. */
static int plan_rows(bench_run *br) {
  const bench_args *a = br->a;
  br->nrows = a->nb * a->ns * a->nh;
  br->rows = calloc(br->nrows, sizeof *br->rows);
  br->keys = calloc(br->nrows * UQ_PLAN_MAX_KERNELS, sizeof *br->keys);
  if (br->rows == NULL || br->keys == NULL)
    return cli_fail(CMD, UQ_ENOMEM, "out of memory");
  size_t nkeys = 0, k = 0;
  for (size_t ib = 0; ib < a->nb; ib++)
    for (size_t is = 0; is < a->ns; is++)
      for (size_t ih = 0; ih < a->nh; ih++, k++) {
        row *w = &br->rows[k];
        w->batch = (int32_t)a->batches[ib];
        w->seq = (int32_t)a->seqs[is];
        w->hk = a->hks[ih];
        w->qg = a->qgs[ih];
        w->r.eager_us = w->r.graph_us = w->r.chain_us = w->r.rel_l2 = -1;
        plan_row(br, w, &nkeys);
      }
  uq_compile_summary sum;
  int rc = uq_compile_keys(br->ctx, br->keys, nkeys, 0, NULL, NULL, &sum);
  if (rc != 0)
    return cli_fail(CMD, rc, "kernel compilation failed");
  if (!a->json) {
    printf("kernels:  %llu (%llu compiled, %llu from cache) in %.1f s\n\n",
           (unsigned long long)sum.keys, (unsigned long long)sum.compiled,
           (unsigned long long)sum.hits, sum.seconds);
    printf("%5s %7s %3s %3s %4s %4s %10s %10s %10s %10s %9s %6s %10s  %s\n",
           "B", "seq", "Hk", "QG", "P", "rot", "eager_us", "graph_us",
           "chain_us", "KV_MiB", "GB/s", "%copy", "rel_l2", "note");
    fflush(stdout);
  }
  return CLI_NEXT;
}

/* Sizes row w: KV copies to rotate over, bytes moved, device bytes. Says
 * whether graphs are timed. */
static int size_row(const bench_args *a, row *w, const uq_shape *s,
                    const uq_plan *plan) {
  const cli_bench_opts *o = &a->o;
  uint64_t per_copy = cli_bench_bytes(s, plan, 2, o->fill) - cli_bench_bytes(s, plan, 1, o->fill);
  uint64_t fixed = cli_bench_bytes(s, plan, 1, o->fill) - per_copy;
  uint64_t kv_copy = (uint64_t)w->batch * s->max_blocks_per_seq *
                     a->block_size * w->hk * plan->padded_slot;
  uint64_t want = kv_copy ? (o->rotate_bytes + kv_copy - 1) / kv_copy : 1;
  uint64_t cap = (o->max_mem - fixed) / per_copy;
  w->r.kv_bytes = (uint64_t)w->batch * (uint64_t)w->seq * w->hk *
                  uq_slot_size(256);
  int use_graph = o->graph == 1 ||
                  (o->graph < 0 && w->r.kv_bytes <= GRAPH_AUTO_KV_BYTES);
  int chained = use_graph && o->chain > 1;
  /* More copies than steps timed would never be used (a chained graph
   * times --chain steps a call). */
  uint64_t lim = (uint64_t)(o->warmup + o->iters) *
                 (uint64_t)(chained ? o->chain : 1);
  if (want > cap)
    want = cap;
  if (want > lim)
    want = lim;
  if (want < 1)
    want = 1;
  w->rotations = (int32_t)want;
  w->r.io_bytes = 2ull * 2ull * w->batch * s->num_q_heads * 256;
  uint64_t partial = (uint64_t)w->batch * w->hk * plan->num_partitions *
                     plan->query_group_size;
  /* segm_out (bf16) + max + sum (fp32), written then read. */
  w->r.ws_bytes = 2ull * (partial * 256 * 2 + partial * 8);
  if (!plan->fuse_qrot)
    w->r.ws_bytes += 2ull * w->batch * s->num_q_heads * 256 * 4;
  w->r.device_bytes = cli_bench_bytes(s, plan, w->rotations, o->fill);
  return use_graph;
}

/* Checks and times row w; 0 when it failed or missed the error bar. */
static int run_row(bench_run *br, row *w) {
  const bench_args *a = br->a;
  const cli_bench_opts *o = &a->o;
  uq_shape s;
  make_shape(&s, w->batch, w->seq, w->hk, w->qg, a->block_size);
  uq_plan plan;
  uq_context_plan(br->ctx, &s, &plan);
  int use_graph = size_row(a, w, &s, &plan);
  int ok = 1;
  cli_bench_shape b;
  double rel = -1;
  size_t bad = 0;
  int rc = cli_bench_setup(br->ctx, &b, &s, &plan, w->seq, w->rotations, o->seed,
                           o->fill);
  if (rc == 0)
    rc = cli_bench_check(br->ctx, &b, o->check_seqs, &rel, &bad);
  if (rc == 0) {
    w->r.rel_l2 = o->check_seqs > 0 ? rel : -1;
    w->r.nonfinite = bad;
    if (o->check_seqs > 0 && (!(rel < 1e-2) || bad > 0))
      ok = 0;
    rc = cli_bench_time(br->ctx, br->stream, &b, o, 0, &w->r.eager_us);
  }
  if (rc == 0 && use_graph)
    rc = cli_bench_time(br->ctx, br->stream, &b, o, 1, &w->r.graph_us);
  if (rc == 0 && use_graph && o->chain > 0)
    rc = cli_bench_time(br->ctx, br->stream, &b, o, o->chain, &w->r.chain_us);
  if (rc != 0) {
    snprintf(w->r.note, sizeof w->r.note, "%s: %s", uq_strerror(rc),
             uq_last_error());
    ok = 0;
  }
  cli_bench_teardown(br->ctx, &b);
  /* A failed shape may leave the stream in error; later ones still run
   * on a clean queue. */
  uq_stream_synchronize(br->ctx, br->stream);
  return ok;
}

/* The time a row reports (graph replay when measured) and its bandwidth. */
static double row_gbps(const row *w, double *us) {
  *us = w->r.graph_us > 0 ? w->r.graph_us : w->r.eager_us;
  return *us > 0 ? (double)(w->r.kv_bytes + w->r.io_bytes) / (*us * 1e-6) /
                       1e9
                 : 0;
}

static void print_row_text(const bench_run *br, const row *w) {
  double us;
  double gbps = row_gbps(w, &us);
  char eg[16] = "-", gr[16] = "-", ch[16] = "-", rl[16] = "-";
  if (w->r.eager_us > 0)
    snprintf(eg, sizeof eg, "%.2f", w->r.eager_us);
  if (w->r.graph_us > 0)
    snprintf(gr, sizeof gr, "%.2f", w->r.graph_us);
  if (w->r.chain_us > 0)
    snprintf(ch, sizeof ch, "%.2f", w->r.chain_us);
  if (w->r.rel_l2 >= 0)
    snprintf(rl, sizeof rl, "%.2e", w->r.rel_l2);
  printf("%5d %7d %3d %3d %4d %4d %10s %10s %10s %10.1f %9.1f %6.1f %10s  "
         "%s\n",
         w->batch, w->seq, w->hk, w->qg, w->partitions, w->rotations, eg, gr,
         ch, (double)w->r.kv_bytes / (double)(1 << 20), gbps,
         us > 0 ? 100.0 * gbps / br->copy_gbps : 0.0, rl,
         w->r.skipped ? w->r.note : w->r.note[0] ? w->r.note : "");
  fflush(stdout);
}

static void print_row_json(const bench_run *br, const row *w, int first) {
  double us;
  double gbps = row_gbps(w, &us);
  printf("%s\n  {\"batch\": %d, \"seq\": %d, \"hk\": %d, \"qg\": %d, "
         "\"skipped\": %s",
         first ? "" : ",", w->batch, w->seq, w->hk, w->qg,
         w->r.skipped ? "true" : "false");
  if (!w->r.skipped) {
    printf(", \"partitions\": %d, \"fuse_qrot\": %s, \"rotations\": %d, "
           "\"kv_bytes\": %llu, \"io_bytes\": %llu, "
           "\"workspace_bytes\": %llu, \"device_bytes\": %llu",
           w->partitions, w->fuse_qrot ? "true" : "false", w->rotations,
           (unsigned long long)w->r.kv_bytes,
           (unsigned long long)w->r.io_bytes,
           (unsigned long long)w->r.ws_bytes,
           (unsigned long long)w->r.device_bytes);
    if (w->r.eager_us > 0)
      printf(", \"eager_us\": %.3f", w->r.eager_us);
    else
      printf(", \"eager_us\": null");
    if (w->r.graph_us > 0)
      printf(", \"graph_us\": %.3f", w->r.graph_us);
    else
      printf(", \"graph_us\": null");
    if (w->r.chain_us > 0)
      printf(", \"chain_us\": %.3f, \"chain_steps\": %d", w->r.chain_us,
             br->a->o.chain);
    else
      printf(", \"chain_us\": null");
    if (us > 0)
      printf(", \"us\": %.3f, \"gbps\": %.2f, \"pct_copy\": %.2f", us, gbps,
             100.0 * gbps / br->copy_gbps);
    if (w->r.rel_l2 >= 0)
      printf(", \"rel_l2\": %.4e, \"nonfinite\": %zu", w->r.rel_l2,
             w->r.nonfinite);
    else
      printf(", \"rel_l2\": null");
  }
  printf(", \"note\": ");
  cli_json_string(stdout, w->r.note);
  printf("}");
}

static void print_json(const bench_run *br, const overhead *ov) {
  printf("{\"device\": ");
  cli_json_string(stdout, br->dev_name);
  printf(", \"target\": ");
  cli_json_string(stdout, br->target);
  printf(", \"copy_gbps\": %.2f, \"copy_bytes\": %llu, \"iters\": %d, "
         "\"fill\": \"%s\", \"rows\": [",
         br->copy_gbps, (unsigned long long)br->copy_bytes, br->a->o.iters,
         br->a->o.fill == CLI_FILL_SERVED ? "served" : "pool");
  for (size_t k = 0; k < br->nrows; k++)
    print_row_json(br, &br->rows[k], k == 0);
  printf("\n]");
  if (br->a->do_overhead) {
    printf(", \"overhead\": {\"measured\": %s",
           ov->measured ? "true" : "false");
    if (ov->measured)
      printf(", \"host_us_median\": %.3f, \"host_us_p90\": %.3f, "
             "\"disk_hit_first_call_ms\": %.3f, \"disk_hits\": %llu, "
             "\"compiles\": %llu",
             ov->host_us_median, ov->host_us_p90, ov->disk_first_ms,
             (unsigned long long)ov->disk_stats.disk_hits,
             (unsigned long long)ov->disk_stats.compiles);
    printf(", \"note\": ");
    cli_json_string(stdout, ov->note);
    printf("}");
  }
  printf("}\n");
}

static void print_overhead_text(const overhead *ov) {
  printf("\noverhead (B=4, seq 4096, Hk 2, QG 8):\n");
  if (ov->measured) {
    printf("  host time of one uq_decode on a table hit: median %.2f us, "
           "p90 %.2f us (target <= 3 us)\n",
           ov->host_us_median, ov->host_us_p90);
    printf("  first uq_decode of a fresh context on a warm disk cache: "
           "%.2f ms (%llu disk hits, %llu compiles)\n",
           ov->disk_first_ms, (unsigned long long)ov->disk_stats.disk_hits,
           (unsigned long long)ov->disk_stats.compiles);
  } else {
    printf("  not measured: %s\n", ov->note);
  }
}

/* Times every row, then the overhead section; the exit status. */
static int bench_rows(bench_run *br) {
  const bench_args *a = br->a;
  int all_ok = 1;
  for (size_t k = 0; k < br->nrows; k++) {
    row *w = &br->rows[k];
    if (!w->r.skipped && !run_row(br, w))
      all_ok = 0;
    if (!a->json)
      print_row_text(br, w);
  }
  overhead ov;
  memset(&ov, 0, sizeof ov);
  if (a->do_overhead)
    measure_overhead(br->ctx, br->stream, &a->o, a->cache_dir, &ov);
  if (a->json)
    print_json(br, &ov);
  else if (a->do_overhead)
    print_overhead_text(&ov);
  if (!all_ok)
    fprintf(stderr, "uqjit bench: some shapes failed or missed the 1e-2 "
                    "relative L2 bar (see the table)\n");
  return all_ok ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

int cli_cmd_bench(int argc, char **argv) {
  static bench_args a;
  int code = parse_bench(&a, argc, argv);
  if (code != CLI_NEXT)
    return code;
  bench_run br;
  memset(&br, 0, sizeof br);
  br.a = &a;
  code = bench_open(&br);
  if (code == CLI_NEXT)
    code = plan_rows(&br);
  if (code == CLI_NEXT)
    code = bench_rows(&br);
  if (br.stream != NULL)
    uq_stream_destroy(br.ctx, br.stream);
  free(br.rows);
  free(br.keys);
  uq_context_destroy(br.ctx);
  return code;
}
