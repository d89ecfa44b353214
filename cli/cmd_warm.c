/* uqjit warm: compile ahead of time, without a GPU, every kernel a
 * deployment will ask for, into a cache directory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cmd_util.h"
#include "cli/commands.h"
#include "cli/hf_config.h"
#include "cli/manifest.h"
#include "cli/progress.h"
#include "cli/warm_bytes.h"
#include "uqjit.h"

#define CMD "warm"
#define MAX_BATCHES 80
_Static_assert(MAX_BATCHES >= CLI_VLLM_SIZES_MAX,
               "vLLM's default capture sizes must fit --batch-sizes");
#define MAX_TARGETS 16
#define NAME_LEN 512

static void warm_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit warm --q-heads HQ --kv-heads HK --head-dim D "
          "--block-size BS\n"
          "                  --max-blocks-per-seq N (--batch B | "
          "--batch-sizes LIST)\n"
          "                  [--target T[,T...]] [--cache-dir D] [--jobs N] "
          "[--json]\n"
          "                  [--dry-run] [--manifest FILE] "
          "[--exact-target]\n"
          "   or: uqjit warm --hf-config config.json [--tp N] --block-size "
          "BS\n"
          "                  --max-model-len L --max-num-seqs S "
          "[--batch-sizes LIST] ...\n\n"
          "Compiles (or finds in the cache) every kernel that decodes of the "
          "shape\n"
          "will use: one plan per batch size and target (decode, reduce and, "
          "when\n"
          "the query is strided, prologue kernels) plus the store kernels "
          "for bf16\n"
          "rows (and --dtype rows). Needs no GPU. Keys are deduplicated.\n"
          "Target sm_90 also warms sm_90a, the target H100/H200 devices "
          "report.\n"
          "An AMD target without features (gfx950, gfx942, gfx90a, or a GPU "
          "name such\n"
          "as mi355x) serves the device in every sramecc/xnack mode it "
          "reports; one\n"
          "with features (gfx950:sramecc+:xnack-) serves that mode only.\n"
          "Exit status 1 when any kernel failed, 2 on misuse or a model the "
          "fast\n"
          "path cannot serve.\n\n"
          "shape options:\n");
  cli_shape_help(out);
  fprintf(out,
          "\nmodel options (instead of --q-heads, --kv-heads, --head-dim, "
          "--max-blocks-per-seq):\n"
          "  --hf-config FILE           a HuggingFace config.json: heads, "
          "head_dim (else\n"
          "                             hidden_size / num_attention_heads), "
          "torch_dtype,\n"
          "                             query_pre_attn_scalar (scale "
          "1/sqrt of it, else\n"
          "                             1/sqrt(head_dim)); text_config when "
          "the top level\n"
          "                             lacks them\n"
          "  --tp N                     tensor-parallel ranks (default 1): "
          "heads per rank\n"
          "  --max-model-len L          longest sequence: ceil(L / BS) "
          "blocks per sequence\n"
          "  --max-num-seqs S           batch sizes default to vLLM's CUDA "
          "graph capture\n"
          "                             sizes up to S (1,2,4,8,16,...,512), "
          "plus S\n"
          "\nother options:\n"
          "  --batch-sizes LIST         comma-separated batch sizes, e.g. "
          "1,2,4,8,16\n"
          "  --target T[,T...]          targets (repeatable; default "
          UQ_DEFAULT_TARGET ")\n"
          "  --exact-target             warm sm_90 alone, without sm_90a\n"
          "  --cache-dir D              cache directory to fill (default: "
          "UQJIT_CACHE_DIR,\n"
          "                             XDG_CACHE_HOME/uqjit, "
          "~/.cache/uqjit)\n"
          "  --jobs N                   compile threads (default: number of "
          "CPUs)\n"
          "  --dry-run                  list the kernel names, one a line, "
          "compile nothing\n"
          "  --manifest FILE            write the kernel names the "
          "deployment needs to FILE\n"
          "                             (sorted; '#' lines are comments; "
          "replaced through\n"
          "                             a private temporary file; must be "
          "a regular file\n"
          "                             or absent; - for standard output)\n"
          "  --image                    build a layer for an image: the "
          "cache directory\n"
          "                             (and missing parents) and its "
          "directories 0755,\n"
          "                             entries 0644, owned by you: "
          "readable by every\n"
          "                             user, writable by you alone. A "
          "reader trusts\n"
          "                             only its own or root's files: "
          "build as root for\n"
          "                             another serving user "
          "(docs/RELIABILITY.md)\n"
          "  --json                     one JSON object on stdout: keys, "
          "compiled, hits,\n"
          "                             failed, seconds, cache_dir, "
          "targets, batch_sizes,\n"
          "                             bytes_written, cache_bytes, "
          "added_targets, ...\n"
          "  -h, --help                 this help\n");
}

static int add_key(uq_key *keys, size_t *n, size_t cap, const uq_key *k) {
  for (size_t i = 0; i < *n; i++)
    if (memcmp(&keys[i], k, sizeof *k) == 0)
      return 0;
  if (*n == cap)
    return -1;
  keys[(*n)++] = *k;
  return 0;
}

/* ---- parse ---- */

typedef struct warm_options {
  cli_shape in;
  int64_t batches[MAX_BATCHES]; /* --batch-sizes, then --batch */
  size_t nbatches;
  int have_sizes;
  char target_buf[1024]; /* every --target, joined by commas */
  const char *targets[MAX_TARGETS]; /* canonical: target_canon or static */
  char target_canon[MAX_TARGETS][UQ_TARGET_MAX];
  size_t ntargets;
  int added_sm90a;       /* sm_90a was added for sm_90 */
  const char *cache_dir; /* NULL: the library's default */
  const char *manifest;  /* --manifest, or NULL */
  int json, dry_run, exact_target, image;
  int32_t jobs;
  /* --hf-config */
  const char *hf_config;
  int32_t tp, max_model_len, max_num_seqs;
  int dtype_given; /* --dtype overrides torch_dtype */
  cli_hf_model model;
} warm_options;

/* An option with an int32 value >= 1 into *out. */
static int own_i32(int argc, char **argv, int *i, const char *name,
                   int32_t *out) {
  const char *v;
  int r = cli_option(CMD, argc, argv, i, name, &v);
  if (r == 0)
    return 0;
  if (r < 0 || cli_parse_i32(CMD, name, v, 1, INT32_MAX, out) != 0)
    return CLI_EXIT_USAGE;
  return CLI_NEXT;
}

/* The options with values that are warm's own. CLI_NEXT when argv[*i] was
 * taken, 0 when it is not one of them, else the exit status (a usage
 * error: none of them ends the command with CLI_EXIT_OK, so 0 is free). */
static int warm_parse_own(warm_options *o, int argc, char **argv, int *i) {
  const char *v;
  int r;
  if ((r = cli_option(CMD, argc, argv, i, "--target", &v)) != 0) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    size_t used = strlen(o->target_buf);
    if (!v[0] || used + strlen(v) + 2 > sizeof o->target_buf)
      return cli_usage_error(CMD, "--target: '%s' is not a target list", v);
    snprintf(o->target_buf + used, sizeof o->target_buf - used, "%s%s",
             used ? "," : "", v);
    return CLI_NEXT;
  }
  if ((r = cli_option(CMD, argc, argv, i, "--batch-sizes", &v)) != 0) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    if (o->have_sizes)
      return cli_usage_error(CMD, "option '--batch-sizes' given twice");
    o->have_sizes = 1;
    if (cli_parse_list(CMD, "--batch-sizes", v, 1, INT32_MAX, o->batches,
                       MAX_BATCHES, &o->nbatches) != 0)
      return CLI_EXIT_USAGE;
    return CLI_NEXT;
  }
  const cli_text texts[] = {{"--cache-dir", &o->cache_dir},
                            {"--manifest", &o->manifest},
                            {"--hf-config", &o->hf_config},
                            {NULL, NULL}};
  if ((r = cli_text_option(CMD, argc, argv, i, texts)) != 0)
    return r < 0 ? CLI_EXIT_USAGE : CLI_NEXT;
  if ((r = cli_option(CMD, argc, argv, i, "--jobs", &v)) != 0) {
    if (r < 0 || cli_parse_i32(CMD, "--jobs", v, 0, 256, &o->jobs) != 0)
      return CLI_EXIT_USAGE;
    return CLI_NEXT;
  }
  if ((r = own_i32(argc, argv, i, "--tp", &o->tp)) != 0 ||
      (r = own_i32(argc, argv, i, "--max-model-len", &o->max_model_len)) !=
          0 ||
      (r = own_i32(argc, argv, i, "--max-num-seqs", &o->max_num_seqs)) != 0)
    return r;
  if (strcmp(argv[*i], "--dtype") == 0 || !strncmp(argv[*i], "--dtype=", 8))
    o->dtype_given = 1; /* and the shape flags parse it */
  return 0;
}

/* Splits the joined --target text (default UQ_DEFAULT_TARGET) into
 * o->targets, each canonical (a GPU name resolved: an unknown target is a
 * usage error), and adds sm_90a after a plain sm_90 unless --exact-target: a compute
 * capability 9.0 device (H100, H200) reports sm_90a and asks for its
 * warpgroup-layer keys, so an image warmed for sm_90 alone would miss. */
static int warm_split_targets(warm_options *o) {
  if (!o->target_buf[0])
    snprintf(o->target_buf, sizeof o->target_buf, "%s", UQ_DEFAULT_TARGET);
  int sm90 = 0, sm90a = 0;
  for (char *save = NULL, *t = strtok_r(o->target_buf, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    if (o->ntargets == MAX_TARGETS)
      return cli_usage_error(CMD, "at most %d targets", MAX_TARGETS);
    char *canon = o->target_canon[o->ntargets];
    if (uq_target_canonical(t, canon, UQ_TARGET_MAX) != 0)
      return cli_usage_error(CMD, "--target: %s", uq_last_error());
    o->targets[o->ntargets++] = canon;
    sm90 |= strcmp(canon, "sm_90") == 0;
    sm90a |= strcmp(canon, "sm_90a") == 0;
  }
  if (o->ntargets == 0)
    return cli_usage_error(CMD, "--target: no target given");
  if (sm90 && !sm90a && !o->exact_target) {
    if (o->ntargets == MAX_TARGETS)
      return cli_usage_error(CMD, "at most %d targets", MAX_TARGETS);
    o->targets[o->ntargets++] = "sm_90a";
    o->added_sm90a = 1;
  }
  return CLI_NEXT;
}

/* Which devices the kernels of canonical target `t` serve, in words. */
static void target_serves(const char *t, char *buf, size_t n) {
  const char *colon = strchr(t, ':');
  if (strncmp(t, "gfx", 3) == 0 && colon == NULL)
    snprintf(buf, n, "every %s device, in any sramecc and xnack mode", t);
  else if (strncmp(t, "gfx", 3) == 0)
    snprintf(buf, n, "only %.*s devices that report %s (warm %.*s for "
             "every mode)", (int)(colon - t), t, t, (int)(colon - t), t);
  else
    snprintf(buf, n, "devices that report %s", t);
}

/* The shape flags --hf-config replaces, found in the parsed shape (each
 * is >= 1 when given, 0 when not). */
static int hf_reject_shape_flags(const uq_shape *s) {
  const struct {
    int32_t value;
    const char *name;
  } derived[] = {{s->batch, "--batch (use --batch-sizes or --max-num-seqs)"},
                 {s->num_q_heads, "--q-heads"},
                 {s->num_kv_heads, "--kv-heads"},
                 {s->head_dim, "--head-dim"},
                 {s->max_blocks_per_seq,
                  "--max-blocks-per-seq (use --max-model-len)"}};
  for (size_t k = 0; k < sizeof derived / sizeof derived[0]; k++)
    if (derived[k].value != 0)
      return cli_usage_error(CMD, "%s: --hf-config gives the shape",
                             derived[k].name);
  return 0;
}

/* The --hf-config form: the shape from the model's config, per rank. */
static int warm_parse_hf(warm_options *o) {
  uq_shape *s = &o->in.shape;
  if (hf_reject_shape_flags(s) != 0)
    return CLI_EXIT_USAGE;
  if (s->block_size == 0 || o->max_model_len == 0 || o->max_num_seqs == 0)
    return cli_usage_error(CMD, "--hf-config needs --block-size, "
                                "--max-model-len and --max-num-seqs");
  if (o->tp == 0)
    o->tp = 1;
  int code = cli_hf_read(CMD, o->hf_config,
                         o->dtype_given ? (int)s->q_dtype : -1, &o->model);
  if (code == CLI_EXIT_OK)
    code = cli_hf_derive(CMD, &o->model, o->tp);
  if (code != CLI_EXIT_OK)
    return code;
  s->batch = 1; /* each batch size replaces it */
  s->num_q_heads = o->model.hq;
  s->num_kv_heads = o->model.hk;
  s->head_dim = o->model.head_dim;
  s->max_blocks_per_seq =
      (int32_t)(((int64_t)o->max_model_len + s->block_size - 1) /
                s->block_size);
  s->q_dtype = o->model.dtype;
  if (s->scale == 0.0f) /* --scale wins over the config */
    s->scale = o->model.scale;
  if (!o->have_sizes)
    o->nbatches = cli_vllm_capture_sizes(o->max_num_seqs, o->batches);
  return warm_split_targets(o);
}

/* argv -> *o. CLI_NEXT when the command should run; otherwise the exit
 * status (help printed, or a usage error printed). */
static int warm_parse(int argc, char **argv, warm_options *o) {
  memset(o, 0, sizeof *o);
  cli_shape_init(&o->in);
  const cli_flag flags[] = {{"--json", &o->json, 1},
                            {"--dry-run", &o->dry_run, 1},
                            {"--exact-target", &o->exact_target, 1},
                            {"--image", &o->image, 1},
                            {NULL, NULL, 0}};
  for (int i = 1; i < argc; i++) {
    int r = warm_parse_own(o, argc, argv, &i);
    if (r == 0)
      r = cli_shape_command_arg(CMD, &o->in, NULL, flags, warm_usage, argc,
                                argv, &i);
    if (r != CLI_NEXT)
      return r;
  }
  if (o->manifest != NULL && strcmp(o->manifest, "-") == 0 && o->json)
    return cli_usage_error(CMD, "--manifest - and --json both write "
                                "standard output");
  if (o->hf_config != NULL)
    return warm_parse_hf(o);
  if (o->tp || o->max_model_len || o->max_num_seqs)
    return cli_usage_error(CMD, "--tp, --max-model-len and --max-num-seqs "
                                "go with --hf-config");
  /* --batch-sizes stands in for the required --batch. */
  if (o->have_sizes && o->in.shape.batch == 0) {
    char fake_arg[] = "--batch=1";
    char *fake[] = {fake_arg, NULL};
    int j = 0;
    if (cli_shape_option(CMD, &o->in, 1, fake, &j) != 1)
      return CLI_EXIT_USAGE;
  } else if (o->in.shape.batch > 0 && o->nbatches < MAX_BATCHES) {
    o->batches[o->nbatches++] = o->in.shape.batch;
  }
  if (cli_shape_finish(CMD, &o->in) != 0)
    return CLI_EXIT_USAGE;
  return warm_split_targets(o);
}

/* ---- run ---- */

typedef struct warm_result {
  /* One context per target (none for --dry-run). */
  uq_context *ctxs[MAX_TARGETS];
  char canon[MAX_TARGETS][UQ_TARGET_MAX]; /* each target as plans spell it */
  uq_key *all; /* every target's keys, deduplicated per target */
  size_t nall;
  size_t key_start[MAX_TARGETS], key_count[MAX_TARGETS];
  char **names; /* sorted names of all (for --dry-run, --manifest) */
  size_t nnames;
  uq_compile_summary total;
  cli_cache_bytes bytes;
  int first_rc;           /* the first failed target's status, or 0 */
  char first_detail[2048]; /* and its uq_last_error() */
  char *dir_owned;        /* the default cache directory, when looked up */
  uint64_t image_changed; /* --image: modes changed */
  const char *dir_shown;  /* the cache directory, for the output */
} warm_result;

/* Appends to keys[*n] (at most cap) every kernel of target t: the plans of
 * each batch size, then the store kernels. canon gets the target as the
 * plans spell it. An exit status. */
static int collect_target_keys(const warm_options *o, size_t t, uq_key *keys,
                               size_t cap, size_t *n,
                               char canon[UQ_TARGET_MAX]) {
  int32_t padded = 0;
  snprintf(canon, UQ_TARGET_MAX, "%s", o->targets[t]);
  for (size_t bi = 0; bi < o->nbatches; bi++) {
    uq_shape s = o->in.shape;
    s.batch = (int32_t)o->batches[bi];
    uq_plan plan;
    int rc = uq_plan_make_variant(&s, o->targets[t], o->in.variant, &plan);
    if (rc != 0)
      return cli_fail(CMD, rc, "cannot plan this shape");
    if (!plan.eligible) {
      fprintf(stderr,
              "uqjit warm: batch %lld is not eligible for the fast path: "
              "%s\n",
              (long long)o->batches[bi], plan.reason);
      return o->hf_config ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
    }
    padded = plan.padded_slot;
    snprintf(canon, UQ_TARGET_MAX, "%s", plan.kernels[0].target);
    for (int k = 0; k < plan.num_kernels; k++)
      if (add_key(keys, n, cap, &plan.kernels[k]) != 0)
        return cli_usage_error(CMD, "too many kernels");
  }
  uq_dtype dts[2] = {UQ_DTYPE_BF16, o->in.shape.q_dtype};
  for (int d = 0; d < (dts[1] == UQ_DTYPE_BF16 ? 1 : 2); d++) {
    uq_key sk;
    int rc = uq_store_key(o->in.shape.head_dim, o->in.shape.num_kv_heads,
                          padded, dts[d], canon, &sk);
    if (rc != 0)
      return cli_fail(CMD, rc, "cannot make the store key");
    if (add_key(keys, n, cap, &sk) != 0)
      return cli_usage_error(CMD, "too many kernels");
  }
  return CLI_EXIT_OK;
}

/* Every target's keys into res->all and their sorted names into
 * res->names; a compile context per target unless --dry-run. */
static int warm_collect(const warm_options *o, warm_result *res) {
  size_t cap = MAX_BATCHES * UQ_PLAN_MAX_KERNELS + 2;
  uq_key *keys = calloc(cap, sizeof *keys);
  res->all = calloc(cap * o->ntargets, sizeof *res->all);
  int code = CLI_EXIT_OK;
  if (keys == NULL || res->all == NULL)
    code = cli_fail(CMD, UQ_ENOMEM, "out of memory");
  for (size_t t = 0; t < o->ntargets && code == CLI_EXIT_OK; t++) {
    size_t n = 0;
    code = collect_target_keys(o, t, keys, cap, &n, res->canon[t]);
    if (code != CLI_EXIT_OK)
      break;
    int rc = o->dry_run ? 0
                        : cli_compile_context(res->canon[t], o->cache_dir,
                                              &res->ctxs[t]);
    if (rc != 0) {
      code = cli_fail(CMD, rc, "cannot create a compile context");
      break;
    }
    res->key_start[t] = res->nall;
    res->key_count[t] = n;
    memcpy(res->all + res->nall, keys, n * sizeof *keys);
    res->nall += n;
  }
  free(keys);
  if (code == CLI_EXIT_OK) {
    int rc = cli_key_names(res->all, res->nall, &res->names, &res->nnames);
    if (rc != 0)
      code = cli_fail(CMD, rc, "cannot name the kernels");
  }
  return code;
}

static void on_progress(void *user, size_t done, size_t total,
                        const uq_key *key, int status, int from_cache) {
  cli_progress *p = user;
  (void)total;
  char name[NAME_LEN];
  if (uq_key_name(key, name, sizeof name) < 0)
    snprintf(name, sizeof name, "?");
  if (status != 0)
    cli_progress_error(p, name, uq_strerror(status));
  else
    cli_progress_draw(p, done, from_cache ? "cached  " : "compiled", name);
}

/* Compiles each target's keys, adding up the summaries; a failure is kept
 * in res->first_rc for the report and the other targets still compile. */
static void warm_compile(const warm_options *o, warm_result *res) {
  cli_progress p;
  cli_progress_init(&p, CMD, res->nall);
  double t0 = cli_now();
  for (size_t t = 0; t < o->ntargets; t++) {
    uq_compile_summary sum;
    int rc = uq_compile_keys(res->ctxs[t], res->all + res->key_start[t],
                             res->key_count[t], o->jobs, on_progress, &p,
                             &sum);
    if (rc != 0 && res->first_rc == 0) {
      res->first_rc = rc;
      snprintf(res->first_detail, sizeof res->first_detail, "%s",
               uq_last_error());
    }
    p.offset += res->key_count[t];
    res->total.keys += sum.keys;
    res->total.compiled += sum.compiled;
    res->total.hits += sum.hits;
    res->total.failed += sum.failed;
  }
  res->total.seconds = cli_now() - t0;
  cli_progress_end(&p);
}

/* The manifest's comment line: what the list was made for. */
static void manifest_header(const warm_options *o, const warm_result *res,
                            char *buf, size_t n) {
  size_t used = 0;
  const uq_shape *s = &o->in.shape;
#define PUT(...)                                                            \
  used += (size_t)snprintf(buf + used, used < n ? n - used : 0, __VA_ARGS__)
  if (o->hf_config)
    PUT("uqjit manifest: %s, tp %d, block %d, max-model-len %d, "
        "max-num-seqs %d",
        o->hf_config, o->tp, s->block_size, o->max_model_len,
        o->max_num_seqs);
  else
    PUT("uqjit manifest: shape hq %d hk %d d %d, block %d, "
        "max-blocks-per-seq %d",
        s->num_q_heads, s->num_kv_heads, s->head_dim, s->block_size,
        s->max_blocks_per_seq);
  PUT(", %s, targets", cli_dtype_name(s->q_dtype));
  for (size_t t = 0; t < o->ntargets; t++)
    PUT("%s%s", t ? "," : " ", res->canon[t]);
  PUT(", batch sizes");
  for (size_t b = 0; b < o->nbatches; b++)
    PUT("%s%lld", b ? "," : " ", (long long)o->batches[b]);
#undef PUT
}

/* --image: the cache directory and its missing parents made 0755 before
 * the library fills it (it would make them 0700). An exit status. */
static int image_prepare(const char *dir) {
  char path[4096];
  if (dir == NULL || snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return cli_usage_error(CMD, "--image needs --cache-dir DIR");
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char saved = *p;
    *p = '\0';
    /* chmod too: the umask must not take the bits away. */
    if (mkdir(path, 0755) == 0)
      chmod(path, 0755);
    else if (errno != EEXIST) {
      fprintf(stderr, "uqjit warm: --image: cannot create %s: %s\n", path,
              strerror(errno));
      return CLI_EXIT_FAILURE;
    }
    *p = saved;
    if (saved == '\0')
      return CLI_EXIT_OK;
  }
}

/* --image: every level readable by all (uq_cache_share), and a note for
 * each parent another user cannot pass through. An exit status. */
static int image_finish(const char *dir, warm_result *res) {
  int rc = uq_cache_share(dir, &res->image_changed);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot make the layer readable by all");
  char path[4096];
  snprintf(path, sizeof path, "%s", dir);
  for (char *slash = strrchr(path, '/'); slash != NULL && slash > path;
       slash = strrchr(path, '/')) {
    *slash = '\0';
    struct stat st;
    if (stat(path, &st) == 0 && !(st.st_mode & S_IXOTH))
      fprintf(stderr, "uqjit warm: --image: note: %s is not searchable by "
              "other users, who cannot reach the layer through it\n", path);
  }
  if (geteuid() != 0)
    fprintf(stderr, "uqjit warm: --image: the layer is owned by uid %u: a "
            "reader trusts only its own and root's files, so only uid %u "
            "(or root) can serve from it; build images as root\n",
            (unsigned)geteuid(), (unsigned)geteuid());
  return CLI_EXIT_OK;
}

/* *o -> *res (zeroed first; warm_result_free releases it in any case). An
 * exit status; kernels that failed to compile are CLI_EXIT_OK here and
 * reported by warm_print. */
static int warm_run(const warm_options *o, warm_result *res) {
  memset(res, 0, sizeof *res);
  int code = CLI_EXIT_OK;
  /* Before the contexts, which would make the directory 0700. */
  if (o->image && !o->dry_run && (code = image_prepare(o->cache_dir)) != 0)
    return code;
  code = warm_collect(o, res);
  if (code != CLI_EXIT_OK)
    return code;
  if (o->manifest) {
    char header[1024];
    manifest_header(o, res, header, sizeof header);
    if (cli_manifest_write(CMD, o->manifest, header, res->names,
                           res->nnames) != 0)
      return CLI_EXIT_FAILURE;
  }
  if (o->dry_run)
    return CLI_EXIT_OK;
  cli_cache_bytes_begin(&res->bytes, o->cache_dir);
  warm_compile(o, res);
  if (o->image && (code = image_finish(o->cache_dir, res)) != CLI_EXIT_OK)
    return code;
  const char *targets[MAX_TARGETS];
  for (size_t t = 0; t < o->ntargets; t++)
    targets[t] = res->canon[t];
  cli_cache_bytes_end(&res->bytes, o->cache_dir, targets, o->ntargets);
  res->dir_shown = o->cache_dir;
  if (res->dir_shown == NULL) {
    if (uq_cache_default_dir(&res->dir_owned) == 0)
      res->dir_shown = res->dir_owned;
    else
      res->dir_shown = "";
  }
  return CLI_EXIT_OK;
}

static void warm_result_free(const warm_options *o, warm_result *res) {
  for (size_t t = 0; t < o->ntargets; t++)
    uq_context_destroy(res->ctxs[t]);
  uq_free(res->dir_owned);
  cli_names_free(res->names, res->nnames);
  cli_cache_bytes_free(&res->bytes);
  free(res->all);
}

/* ---- print ---- */

/* The fields every JSON form shares: targets, batch sizes, the model. */
static void print_json_common(const warm_options *o, const warm_result *res) {
  printf("\"targets\": [");
  for (size_t t = 0; t < o->ntargets; t++) {
    printf("%s", t ? ", " : "");
    cli_json_string(stdout, res->canon[t]);
  }
  printf("], \"serves\": {");
  for (size_t t = 0; t < o->ntargets; t++) {
    char serves[256];
    target_serves(res->canon[t], serves, sizeof serves);
    printf("%s", t ? ", " : "");
    cli_json_string(stdout, res->canon[t]);
    printf(": ");
    cli_json_string(stdout, serves);
  }
  printf("}, \"added_targets\": [%s], \"batch_sizes\": [",
         o->added_sm90a ? "\"sm_90a\"" : "");
  for (size_t b = 0; b < o->nbatches; b++)
    printf("%s%lld", b ? ", " : "", (long long)o->batches[b]);
  printf("], \"manifest\": ");
  if (o->manifest)
    cli_json_string(stdout, o->manifest);
  else
    printf("null");
  if (o->hf_config) {
    const cli_hf_model *m = &o->model;
    printf(", \"model\": {\"config\": ");
    cli_json_string(stdout, o->hf_config);
    printf(", \"tp\": %d, \"num_q_heads\": %d, \"num_kv_heads\": %d, "
           "\"head_dim\": %d, \"query_group_size\": %d, \"scale\": %.8f, "
           "\"dtype\": \"%s\", \"block_size\": %d, \"max_blocks_per_seq\": "
           "%d, \"max_model_len\": %d, \"max_num_seqs\": %d}",
           m->tp, m->hq, m->hk, m->head_dim, m->qg,
           (double)o->in.shape.scale, cli_dtype_name(o->in.shape.q_dtype),
           o->in.shape.block_size, o->in.shape.max_blocks_per_seq,
           o->max_model_len, o->max_num_seqs);
  }
}

static void print_json(const warm_options *o, const warm_result *res) {
  const uq_compile_summary *total = &res->total;
  if (o->dry_run) {
    printf("{\"dry_run\": true, \"keys\": %zu, \"kernels\": [", res->nnames);
    for (size_t i = 0; i < res->nnames; i++) {
      printf("%s", i ? ", " : "");
      cli_json_string(stdout, res->names[i]);
    }
    printf("], ");
    print_json_common(o, res);
    printf("}\n");
    return;
  }
  printf("{\"keys\": %llu, \"compiled\": %llu, \"hits\": %llu, "
         "\"failed\": %llu, \"seconds\": %.3f, \"cache_dir\": ",
         (unsigned long long)total->keys, (unsigned long long)total->compiled,
         (unsigned long long)total->hits, (unsigned long long)total->failed,
         total->seconds);
  cli_json_string(stdout, res->dir_shown);
  printf(", \"dry_run\": false, \"image\": %s, \"bytes_written\": %llu, "
         "\"cache_bytes\": %llu, ",
         o->image ? "true" : "false", (unsigned long long)res->bytes.written,
         (unsigned long long)res->bytes.total);
  print_json_common(o, res);
  printf("}\n");
}

static void print_text(const warm_options *o, const warm_result *res) {
  if (o->dry_run) {
    for (size_t i = 0; i < res->nnames; i++)
      printf("%s\n", res->names[i]);
    return;
  }
  const uq_compile_summary *total = &res->total;
  if (o->hf_config) {
    const cli_hf_model *m = &o->model;
    printf("model:      %s, tp %d: Hq %d, Hk %d, D %d, QG %d, scale %.6g, "
           "%s, %d blocks of %d per sequence\n",
           o->hf_config, m->tp, m->hq, m->hk, m->head_dim, m->qg,
           (double)o->in.shape.scale, cli_dtype_name(o->in.shape.q_dtype),
           o->in.shape.max_blocks_per_seq, o->in.shape.block_size);
  }
  printf("targets:    ");
  for (size_t t = 0; t < o->ntargets; t++)
    printf("%s%s", t ? ", " : "", res->canon[t]);
  for (size_t t = 0; t < o->ntargets; t++) {
    char serves[256];
    target_serves(res->canon[t], serves, sizeof serves);
    printf("\n  %-22s serves %s", res->canon[t], serves);
  }
  printf("\nbatch sizes:");
  for (size_t b = 0; b < o->nbatches; b++)
    printf("%s%lld", b ? ", " : " ", (long long)o->batches[b]);
  printf("\nkernels:    %llu (%llu compiled, %llu from cache, %llu "
         "failed)\n",
         (unsigned long long)total->keys, (unsigned long long)total->compiled,
         (unsigned long long)total->hits, (unsigned long long)total->failed);
  char w[32], c[32];
  printf("time:       %.2f s\nbytes:      %s written, %s in the cache for "
         "these targets\ncache:      %s\n",
         total->seconds, cli_bytes(res->bytes.written, w, sizeof w),
         cli_bytes(res->bytes.total, c, sizeof c), res->dir_shown);
}

/* The summary on stdout, then any compile failure on stderr. The exit
 * status. */
static int warm_print(const warm_options *o, const warm_result *res) {
  if (o->json)
    print_json(o, res);
  else
    print_text(o, res);
  if (res->first_rc == 0)
    return CLI_EXIT_OK;
  fprintf(stderr, "uqjit warm: %llu kernel(s) failed: %s%s%s\n",
          (unsigned long long)res->total.failed, uq_strerror(res->first_rc),
          res->first_detail[0] ? ": " : "", res->first_detail);
  return CLI_EXIT_FAILURE;
}

int cli_cmd_warm(int argc, char **argv) {
  warm_options o;
  int code = warm_parse(argc, argv, &o);
  if (code != CLI_NEXT)
    return code;
  if (o.added_sm90a)
    fprintf(stderr, "uqjit warm: sm_90: also warming sm_90a, the target "
                    "H100/H200 report (--exact-target: sm_90 alone)\n");
  for (size_t t = 0; t < o.ntargets; t++)
    if (strncmp(o.targets[t], "gfx", 3) == 0 && strchr(o.targets[t], ':')) {
      char serves[256];
      target_serves(o.targets[t], serves, sizeof serves);
      fprintf(stderr, "uqjit warm: %s: serves %s\n", o.targets[t], serves);
    }
  warm_result res;
  code = warm_run(&o, &res);
  if (code == CLI_EXIT_OK)
    code = warm_print(&o, &res);
  warm_result_free(&o, &res);
  return code;
}
