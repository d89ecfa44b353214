/* uqjit plan: what uq_plan_make_variant decides for a shape, as text or
 * JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "uqjit.h"

#define CMD "plan"
/* Longer than any key name uqjit makes. */
#define NAME_MAX_LEN 512

static void plan_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit plan --batch B --q-heads HQ --kv-heads HK "
          "--head-dim D\n"
          "                  --block-size BS --max-blocks-per-seq N "
          "[options]\n\n"
          "Shows the launcher policy's decision for a decode shape: "
          "eligibility,\n"
          "KV partitions, tile groups per partition, grids, the workspace "
          "layout\n"
          "and the kernel keys. An ineligible shape is reported (eligible: "
          "no)\n"
          "with exit status 0.\n\n"
          "shape options:\n");
  cli_shape_help(out);
  fprintf(out, "\nother options:\n"
               "  --cache-dir D              the writable cache directory "
               "whose layers are\n"
               "                             searched for each kernel "
               "(default: UQJIT_CACHE_DIR,\n"
               "                             ...; then UQJIT_CACHE_PATH and "
               "the system layer)\n"
               "  --json                     one JSON object on stdout\n"
               "  -h, --help                 this help\n\n"
               "Each kernel is marked cached (with the layer that holds its "
               "entry, as a\n"
               "process with UQJIT_DISABLE_JIT=1 would find it) or not "
               "cached.\n");
}

/* Shape facts the output needs beyond the plan. */
typedef struct view {
  const cli_shape *in;
  const uq_plan *plan;
  /* Per kernel: the layer holding its entry, "" when not cached. */
  char layer[UQ_PLAN_MAX_KERNELS][4096];
  const char *target; /* canonical when the plan has kernels */
  int64_t hk, hq, d;
} view;

static void print_scale(FILE *out, const uq_plan *plan) {
  /* Eligible plans carry the exact value the kernels bake in. */
  if (plan->num_kernels > 0) {
    int64_t e8 = plan->kernels[0].scale_e8;
    fprintf(out, "%" PRId64 ".%08" PRId64, e8 / 100000000, e8 % 100000000);
  } else {
    fprintf(out, "%.9g", (double)plan->scale);
  }
}

static int kernel_name(const uq_key *key, char *buf) {
  int len = uq_key_name(key, buf, NAME_MAX_LEN);
  if (len < 0)
    return len;
  return len < NAME_MAX_LEN ? 0 : UQ_EOVERFLOW;
}

/* The workspace's total and each buffer's offset, type and dimensions. */
static void print_text_workspace(const view *v) {
  const uq_plan *p = v->plan;
  int64_t parts = p->num_partitions;
  int64_t b = v->in->shape.batch, qg = p->query_group_size;
  printf("workspace:         %zu bytes\n", p->workspace_bytes);
  printf("  segm_out  @ %-10zu bf16 [%" PRId64 ", %" PRId64 ", %" PRId64
         ", %" PRId64 ", %" PRId64 "]\n",
         p->ws_segm_out, b, v->hk, parts, qg, v->d);
  printf("  segm_max  @ %-10zu fp32 [%" PRId64 ", %" PRId64 ", %" PRId64
         ", %" PRId64 "]\n",
         p->ws_segm_max, b, v->hk, parts, qg);
  printf("  segm_sum  @ %-10zu fp32 [%" PRId64 ", %" PRId64 ", %" PRId64
         ", %" PRId64 "]\n",
         p->ws_segm_sum, b, v->hk, parts, qg);
  if (!p->fuse_qrot)
    printf("  q_rot     @ %-10zu fp32 [%" PRId64 ", %" PRId64 ", %" PRId64
           "]\n",
           p->ws_q_rot, b, v->hq, v->d);
}

static int print_text(const view *v) {
  const uq_plan *p = v->plan;
  const uq_shape *s = &v->in->shape;
  printf("eligible:          %s\n", p->eligible ? "yes" : "no");
  if (!p->eligible)
    printf("reason:            %s\n", p->reason);
  printf("target:            %s\n", v->target);
  printf("shape:             batch %d, q heads %d, kv heads %d, head_dim %d, "
         "block_size %d, max_blocks_per_seq %d\n",
         (int)s->batch, (int)s->num_q_heads, (int)s->num_kv_heads,
         (int)s->head_dim, (int)s->block_size, (int)s->max_blocks_per_seq);
  printf("query group size:  %d\n", (int)p->query_group_size);
  printf("padded slot:       %d bytes\n", (int)p->padded_slot);
  printf("scale:             ");
  print_scale(stdout, p);
  printf("\nblock threads:     %u\n", (unsigned)p->block_threads);
  if (!p->eligible)
    return 0;
  int64_t parts = p->num_partitions;
  printf("partitions (P):    %d\n", (int)parts);
  printf("tile groups / P:   %d (of 256 tokens; P x TGPP covers %" PRId64
         " tokens)\n",
         (int)p->tile_groups_per_partition,
         parts * p->tile_groups_per_partition * 256);
  printf("fuse_qrot:         %s\n",
         p->fuse_qrot ? "yes (query rotated inside the decode kernel)"
                      : "no (prologue kernel rotates the query)");
  printf("decode grid:       (%u, %u, %u)\n", (unsigned)p->decode_grid[0],
         (unsigned)p->decode_grid[1], (unsigned)p->decode_grid[2]);
  printf("reduce grid:       (%u, %u, %u)\n", (unsigned)p->reduce_grid[0],
         (unsigned)p->reduce_grid[1], (unsigned)p->reduce_grid[2]);
  if (!p->fuse_qrot)
    printf("prologue grid:     (%u, %u, %u)\n", (unsigned)p->prologue_grid[0],
           (unsigned)p->prologue_grid[1], (unsigned)p->prologue_grid[2]);
  print_text_workspace(v);
  printf("kernels:\n");
  for (int k = 0; k < p->num_kernels; k++) {
    char name[NAME_MAX_LEN];
    int rc = kernel_name(&p->kernels[k], name);
    if (rc != 0)
      return rc;
    printf("  %-9s %s\n            %s%s\n",
           cli_kind_name(p->kernels[k].kind), name,
           v->layer[k][0] ? "cached in " : "not cached", v->layer[k]);
  }
  return 0;
}

static void print_grid(const char *key, const uint32_t g[3]) {
  printf(",\n  \"%s\": [%u, %u, %u]", key, (unsigned)g[0], (unsigned)g[1],
         (unsigned)g[2]);
}

static int print_json(const view *v) {
  const uq_plan *p = v->plan;
  const uq_shape *s = &v->in->shape;
  printf("{\n  \"eligible\": %s,\n  \"reason\": ",
         p->eligible ? "true" : "false");
  cli_json_string(stdout, p->reason);
  printf(",\n  \"target\": ");
  cli_json_string(stdout, v->target);
  printf(",\n  \"dtype\": \"%s\"", cli_dtype_name(s->q_dtype));
  printf(",\n  \"batch\": %d,\n  \"num_q_heads\": %d,\n  \"num_kv_heads\": "
         "%d,\n  \"head_dim\": %d,\n  \"block_size\": %d,\n  "
         "\"max_blocks_per_seq\": %d",
         (int)s->batch, (int)s->num_q_heads, (int)s->num_kv_heads,
         (int)s->head_dim, (int)s->block_size, (int)s->max_blocks_per_seq);
  printf(",\n  \"query_group_size\": %d,\n  \"padded_slot\": %d,\n  "
         "\"scale\": ",
         (int)p->query_group_size, (int)p->padded_slot);
  print_scale(stdout, p);
  printf(",\n  \"block_threads\": %u", (unsigned)p->block_threads);
  printf(",\n  \"num_partitions\": %d,\n  \"tile_groups_per_partition\": %d,"
         "\n  \"fuse_qrot\": %s",
         (int)p->num_partitions, (int)p->tile_groups_per_partition,
         p->fuse_qrot ? "true" : "false");
  print_grid("decode_grid", p->decode_grid);
  print_grid("reduce_grid", p->reduce_grid);
  print_grid("prologue_grid", p->prologue_grid);
  printf(",\n  \"workspace_bytes\": %zu", p->workspace_bytes);
  printf(",\n  \"workspace\": {\"segm_out\": %zu, \"segm_max\": %zu, "
         "\"segm_sum\": %zu, \"q_rot\": %s",
         p->ws_segm_out, p->ws_segm_max, p->ws_segm_sum,
         p->eligible && !p->fuse_qrot ? "" : "null");
  if (p->eligible && !p->fuse_qrot)
    printf("%zu", p->ws_q_rot);
  printf("}");
  printf(",\n  \"kernels\": [");
  for (int k = 0; k < p->num_kernels; k++) {
    char name[NAME_MAX_LEN];
    int rc = kernel_name(&p->kernels[k], name);
    if (rc != 0)
      return rc;
    printf("%s\n    {\"kind\": \"%s\", \"name\": ", k ? "," : "",
           cli_kind_name(p->kernels[k].kind));
    cli_json_string(stdout, name);
    printf(", \"cached\": %s, \"layer\": ", v->layer[k][0] ? "true" : "false");
    if (v->layer[k][0])
      cli_json_string(stdout, v->layer[k]);
    else
      printf("null");
    printf("}");
  }
  printf("%s]\n}\n", p->num_kernels ? "\n  " : "");
  return 0;
}

/* ---- parse ---- */

typedef struct plan_options {
  cli_shape in;
  int json;
  const char *cache_dir; /* --cache-dir, or NULL */
} plan_options;

/* argv -> *o. CLI_NEXT when the command should run; otherwise the exit
 * status (help printed, or a usage error printed). */
static int plan_parse(int argc, char **argv, plan_options *o) {
  cli_shape_init(&o->in);
  o->json = 0;
  o->cache_dir = NULL;
  const cli_flag flags[] = {{"--json", &o->json, 1}, {NULL, NULL, 0}};
  const cli_text texts[] = {{"--cache-dir", &o->cache_dir}, {NULL, NULL}};
  for (int i = 1; i < argc; i++) {
    int r = cli_shape_command_arg(CMD, &o->in, texts, flags, plan_usage,
                                  argc, argv, &i);
    if (r != CLI_NEXT)
      return r;
  }
  if (cli_shape_finish(CMD, &o->in) != 0)
    return CLI_EXIT_USAGE;
  return CLI_NEXT;
}

/* ---- run ---- */

static int keep_layer(void *user, const uq_cache_entry *e) {
  snprintf(user, 4096, "%s", e->layer != NULL ? e->layer : "?");
  return 0;
}

/* The plan of o's shape, and the view the printers read (where each
 * kernel is cached). */
static int plan_run(const plan_options *o, uq_plan *plan, view *v) {
  int rc = uq_plan_make_variant(&o->in.shape, o->in.target, o->in.variant,
                                plan);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot plan this shape");
  *v = (view){
      .in = &o->in,
      .plan = plan,
      .target = plan->num_kernels > 0 ? plan->kernels[0].target
                : o->in.target          ? o->in.target
                                        : UQ_DEFAULT_TARGET,
      .hk = o->in.shape.num_kv_heads,
      .hq = o->in.shape.num_q_heads,
      .d = o->in.shape.head_dim,
  };
  for (int k = 0; k < plan->num_kernels; k++) {
    rc = uq_cache_find(o->cache_dir, &plan->kernels[k], keep_layer,
                       v->layer[k]);
    if (rc != 0 && rc != UQ_ENOENT)
      return cli_fail(CMD, rc, "cannot look the kernels up in the cache");
  }
  return CLI_EXIT_OK;
}

int cli_cmd_plan(int argc, char **argv) {
  plan_options o;
  int code = plan_parse(argc, argv, &o);
  if (code != CLI_NEXT)
    return code;
  uq_plan plan;
  static view v; /* large: the layer paths */
  memset(&v, 0, sizeof v);
  code = plan_run(&o, &plan, &v);
  if (code != CLI_EXIT_OK)
    return code;
  int rc = o.json ? print_json(&v) : print_text(&v);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot name a kernel");
  return CLI_EXIT_OK;
}
