/* uqjit warm --hf-config as a user runs it. argv[1] is the uqjit binary,
 * argv[2] the group: "unit" (no compiler: --dry-run key lists checked
 * against plans made here through uqjit.h, the manifest, the vLLM batch
 * sizes, the tensor-parallel split, the refusals) or "compile" (NVRTC:
 * warm sm_90a, every manifest key compiled, then all hits from a new
 * process). argv[3] is "cjson" when the command was built with cJSON;
 * without it --hf-config must say so and the tests skip (exit 77). */
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/cli_run.h"
#include "uqjit.h"

#define NAME_LEN 512
#define MAX_NAMES 1024

static char config_dir[4096];
static const char *uqjit;

static const char *cfg(const char *name) {
  static char paths[8][4200];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, sizeof paths[0], "%s/%s", config_dir, name);
  return p;
}

/* ---- the keys a deployment needs, computed here through uqjit.h ---- */

typedef struct name_set {
  char *v[MAX_NAMES];
  size_t n;
} name_set;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void set_add(name_set *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i], name) == 0)
      return;
  assert_true(s->n < MAX_NAMES);
  s->v[s->n++] = strdup(name);
}

static void set_add_key(name_set *s, const uq_key *k) {
  char name[NAME_LEN];
  assert_true(uq_key_name(k, name, sizeof name) < NAME_LEN);
  set_add(s, name);
}

static void set_free(name_set *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i]);
  s->n = 0;
}

/* Every plan's kernels for each batch size plus the bf16 store key: what
 * uq_decode and uq_store ask for with this shape on this target. Scale is
 * left at the library's default 1/sqrt(D). */
static void expected_keys_d(name_set *s, const char *target, int32_t hq,
                            int32_t hk, int32_t d, int32_t block,
                            int32_t max_len, const int32_t *batches,
                            size_t nb) {
  int32_t padded = 0;
  for (size_t b = 0; b < nb; b++) {
    uq_shape sh;
    uq_shape_init(&sh);
    sh.batch = batches[b];
    sh.num_q_heads = hq;
    sh.num_kv_heads = hk;
    sh.head_dim = d;
    sh.block_size = block;
    sh.max_blocks_per_seq = (max_len + block - 1) / block;
    uq_plan plan;
    assert_int_equal(uq_plan_make(&sh, target, &plan), 0);
    assert_true(plan.eligible);
    for (int k = 0; k < plan.num_kernels; k++)
      set_add_key(s, &plan.kernels[k]);
    padded = plan.padded_slot;
  }
  uq_key sk;
  assert_int_equal(uq_store_key(d, hk, padded, UQ_DTYPE_BF16, target, &sk),
                   0);
  set_add_key(s, &sk);
  qsort(s->v, s->n, sizeof s->v[0], cmp_str);
}

static void expected_keys(name_set *s, const char *target, int32_t hq,
                          int32_t hk, int32_t block, int32_t max_len,
                          const int32_t *batches, size_t nb) {
  expected_keys_d(s, target, hq, hk, 256, block, max_len, batches, nb);
}

/* Lines of text (skipping '#' comments) into s, in order. */
static void lines_of(const char *text, name_set *s) {
  for (const char *p = text; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len > 0 && p[0] != '#') {
      assert_true(s->n < MAX_NAMES && len < NAME_LEN);
      s->v[s->n++] = strndup(p, len);
    }
    p += len + (e != NULL);
  }
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void assert_same_sets(const name_set *got, const name_set *want,
                             const char *what) {
  for (size_t i = 0; i < got->n && i < want->n; i++)
    if (strcmp(got->v[i], want->v[i]) != 0)
      fail_msg("%s: line %zu is %s, want %s", what, i, got->v[i],
               want->v[i]);
  if (got->n != want->n)
    fail_msg("%s: %zu names, want %zu", what, got->n, want->n);
}

static void expect_ok(const result *r, const char *what) {
  if (r->code != 0)
    fail_msg("%s: exit %d, stderr: %s", what, r->code, r->err);
}

#define LLAMA "--hf-config", cfg("llama-like-gqa8.json")

/* ---- unit ---- */

/* vLLM's capture sizes up to 64: 1, 2, 4, 8, 16, ..., 64. */
static const int32_t sizes64[] = {1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64};

static void dry_run_and_manifest_list_exactly_the_planned_keys(void **s) {
  (void)s;
  char manifest[] = "/tmp/uq_hf_manifest_XXXXXX";
  int fd = mkstemp(manifest);
  assert_true(fd >= 0);
  result r = RUN("warm", LLAMA, "--tp", "1", "--block-size", "16",
                 "--max-model-len", "4096", "--max-num-seqs", "64",
                 "--target", "sm_90a,gfx950", "--dry-run", "--manifest",
                 manifest);
  expect_ok(&r, "dry run");
  name_set want = {0}, got = {0}, file = {0};
  expected_keys(&want, "gfx950", 32, 4, 16, 4096, sizes64, 11);
  expected_keys(&want, "sm_90a", 32, 4, 16, 4096, sizes64, 11);
  qsort(want.v, want.n, sizeof want.v[0], cmp_str);
  lines_of(r.out, &got);
  assert_same_sets(&got, &want, "--dry-run output");
  const char *text = slurp(manifest);
  assert_true(strncmp(text, "# uqjit manifest: ", 18) == 0);
  assert_non_null(strstr(text, "llama-like-gqa8.json, tp 1, block 16"));
  lines_of(text, &file);
  assert_same_sets(&file, &want, "manifest");
  result_free(&r);
  set_free(&want);
  set_free(&got);
  set_free(&file);
  remove(manifest);
}

static void dry_run_json_reports_model_and_vllm_batch_sizes(void **s) {
  (void)s;
  result r = RUN("warm", LLAMA, "--block-size", "16", "--max-model-len",
                 "4000", "--max-num-seqs", "20", "--target", "sm_90a",
                 "--dry-run", "--json");
  expect_ok(&r, "dry run json");
  assert_json(r.out);
  assert_true(json_bool(r.out, "dry_run"));
  assert_true(!strncmp(json_field(r.out, "batch_sizes"),
                       "[1, 2, 4, 8, 16, 20]", 20));
  assert_int_equal(json_int(r.out, "tp"), 1);
  assert_int_equal(json_int(r.out, "num_q_heads"), 32);
  assert_int_equal(json_int(r.out, "num_kv_heads"), 4);
  assert_int_equal(json_int(r.out, "query_group_size"), 8);
  assert_int_equal(json_int(r.out, "max_blocks_per_seq"), 250);
  assert_true(!strncmp(json_field(r.out, "scale"), "0.06250000", 10));
  assert_true(!strncmp(json_field(r.out, "dtype"), "\"bf16\"", 6));
  result_free(&r);
  /* At a capture size, no extra size; above 512, the list stops at 512. */
  r = RUN("warm", LLAMA, "--block-size", "16", "--max-model-len", "4096",
          "--max-num-seqs", "24", "--target", "sm_90a", "--dry-run",
          "--json");
  expect_ok(&r, "max-num-seqs 24");
  assert_true(!strncmp(json_field(r.out, "batch_sizes"),
                       "[1, 2, 4, 8, 16, 24]", 20));
  result_free(&r);
  r = RUN("warm", LLAMA, "--block-size", "16", "--max-model-len", "4096",
          "--max-num-seqs", "1024", "--target", "sm_90a", "--dry-run",
          "--json");
  expect_ok(&r, "max-num-seqs 1024");
  const char *bs = json_field(r.out, "batch_sizes");
  assert_true(!strncmp(bs, "[1, 2, 4, 8, 16, 24, 32,", 24));
  const char *end = strchr(bs, ']');
  assert_non_null(end);
  assert_true(end - bs > 9 && !strncmp(end - 8, "504, 512]", 9));
  int commas = 0;
  for (const char *p = bs; p < end; p++)
    commas += *p == ',';
  assert_int_equal(commas, 66); /* 1, 2, 4 and 8..512 by 8: 67 sizes */
  result_free(&r);
  r = RUN("warm", LLAMA, "--block-size", "16", "--max-model-len", "4096",
          "--max-num-seqs", "64", "--batch-sizes", "3,64", "--target",
          "sm_90a", "--dry-run", "--json");
  expect_ok(&r, "--batch-sizes");
  assert_true(!strncmp(json_field(r.out, "batch_sizes"), "[3, 64]", 7));
  result_free(&r);
}

/* Models the portable layer serves (head_dim 128 from hidden_size, GQA 4,
 * MHA) warm that layer's kernels on every target, with the library's
 * plans; --variant portable asks for it where a faster one exists. */
static void other_head_dims_and_groups_warm_the_portable_layer(void **s) {
  (void)s;
  static const int32_t sizes4[] = {1, 2, 4};
  static const struct {
    const char *file;
    int32_t hq, hk, d;
  } cases[] = {
      {"head-dim-128.json", 32, 4, 128},
      {"gqa4.json", 16, 4, 256},
      {"mha.json", 16, 16, 256},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    result r = RUN("warm", "--hf-config", cfg(cases[i].file), "--block-size",
                   "16", "--max-model-len", "1024", "--max-num-seqs", "4",
                   "--target", "sm_90a,gfx950", "--dry-run");
    expect_ok(&r, cases[i].file);
    name_set want = {0}, got = {0};
    expected_keys_d(&want, "gfx950", cases[i].hq, cases[i].hk, cases[i].d,
                    16, 1024, sizes4, 3);
    expected_keys_d(&want, "sm_90a", cases[i].hq, cases[i].hk, cases[i].d,
                    16, 1024, sizes4, 3);
    qsort(want.v, want.n, sizeof want.v[0], cmp_str);
    lines_of(r.out, &got);
    assert_same_sets(&got, &want, cases[i].file);
    for (size_t k = 0; k < got.n; k++)
      if (strncmp(got.v[k], "uq_store_", 9) != 0 &&
          strstr(got.v[k], "_v0_") == NULL)
        fail_msg("%s: %s is not the portable layer's", cases[i].file,
                 got.v[k]);
    set_free(&want);
    set_free(&got);
    result_free(&r);
  }
  result r = RUN("warm", LLAMA, "--block-size", "16", "--max-model-len",
                 "1024", "--max-num-seqs", "4", "--target", "sm_90a",
                 "--variant", "portable", "--dry-run");
  expect_ok(&r, "--variant portable");
  assert_non_null(strstr(r.out, "uq_decode_sm_90a_bf16_v0_d256"));
  assert_null(strstr(r.out, "_v2_"));
  result_free(&r);
}

/* tp splits as vLLM does: KV heads divided while there are enough, else
 * replicated (one per rank), query heads always divided. */
static void tp_splits_heads_like_vllm(void **s) {
  (void)s;
  static const struct {
    const char *file, *tp;
    long long hq, hk, qg;
  } cases[] = {
      {"heads64-kv8.json", "1", 64, 8, 8},
      {"heads64-kv8.json", "2", 32, 4, 8},
      {"heads64-kv8.json", "8", 8, 1, 8},
      {"heads64-kv4.json", "1", 64, 4, 16},
      {"heads64-kv4.json", "4", 16, 1, 16},
      {"heads64-kv4.json", "8", 8, 1, 8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    result r = RUN("warm", "--hf-config", cfg(cases[i].file), "--tp",
                   cases[i].tp, "--block-size", "16", "--max-model-len",
                   "1024", "--max-num-seqs", "4", "--target", "sm_90a",
                   "--dry-run", "--json");
    if (r.code != 0)
      fail_msg("%s tp %s: exit %d: %s", cases[i].file, cases[i].tp, r.code,
               r.err);
    assert_int_equal(json_int(r.out, "num_q_heads"), cases[i].hq);
    assert_int_equal(json_int(r.out, "num_kv_heads"), cases[i].hk);
    assert_int_equal(json_int(r.out, "query_group_size"), cases[i].qg);
    char hk[32];
    snprintf(hk, sizeof hk, "_hk%lld_", cases[i].hk);
    assert_non_null(strstr(json_field(r.out, "kernels"), hk));
    result_free(&r);
  }
}

/* Fields under text_config, float16 queries and query_pre_attn_scalar. */
static void text_config_dtype_and_attention_scalar_are_read(void **s) {
  (void)s;
  result r = RUN("warm", "--hf-config", cfg("multimodal-fp16.json"),
                 "--block-size", "32", "--max-model-len", "8192",
                 "--max-num-seqs", "2", "--target", "sm_90a", "--dry-run",
                 "--json");
  expect_ok(&r, "multimodal");
  assert_int_equal(json_int(r.out, "num_q_heads"), 16);
  assert_int_equal(json_int(r.out, "num_kv_heads"), 2);
  assert_true(!strncmp(json_field(r.out, "dtype"), "\"fp16\"", 6));
  /* 1/sqrt(144), not 1/sqrt(256) */
  assert_true(!strncmp(json_field(r.out, "scale"), "0.0833333", 9));
  assert_non_null(strstr(r.out, "_fp16_"));
  assert_non_null(strstr(r.out, "_s0.0833333"));
  result_free(&r);
  /* --dtype overrides torch_dtype, also one the kernels do not take. */
  r = RUN("warm", "--hf-config", cfg("float32.json"), "--dtype", "bf16",
          "--block-size", "32", "--max-model-len", "64", "--max-num-seqs",
          "1", "--target", "sm_90a", "--dry-run", "--json");
  expect_ok(&r, "float32 with --dtype");
  assert_true(!strncmp(json_field(r.out, "dtype"), "\"bf16\"", 6));
  result_free(&r);
}

/* exit 2, nothing on stdout, and stderr naming each of `words`. */
static void expect_refusal(const char *file, const char *tp,
                           const char *const *words) {
  result r = RUN("warm", "--hf-config", file, "--tp", tp, "--block-size",
                 "16", "--max-model-len", "1024", "--max-num-seqs", "4",
                 "--target", "sm_90a", "--dry-run");
  if (r.code != 2)
    fail_msg("%s tp %s: exit %d, want 2; stderr: %s", file, tp, r.code,
             r.err);
  assert_string_equal(r.out, "");
  for (const char *const *w = words; *w; w++)
    if (strstr(r.err, *w) == NULL)
      fail_msg("%s tp %s: stderr lacks '%s': %s", file, tp, *w, r.err);
  result_free(&r);
}

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void ineligible_or_malformed_configs_name_the_field(void **s) {
  (void)s;
  expect_refusal(cfg("missing-heads.json"), "1",
                 WORDS("missing-heads.json", "'num_attention_heads'"));
  expect_refusal(cfg("head-dim-96.json"), "1",
                 WORDS("head-dim-96.json", "head_dim 96",
                       "hidden_size 3072 / num_attention_heads 32",
                       "head_dim 96 is not served (head_dim 64, 128 or "
                       "256)"));
  expect_refusal(cfg("mqa32-head-dim-128.json"), "1",
                 WORDS("mqa32-head-dim-128.json", "num_key_value_heads 1",
                       "gives 32", "query group size",
                       "not served at head_dim 128 (1 to 16)"));
  expect_refusal(cfg("heads64-kv8.json"), "3",
                 WORDS("num_attention_heads 64 is not divisible by --tp 3"));
  expect_refusal(cfg("bad-json.json"), "1",
                 WORDS("bad-json.json", "not a JSON object"));
  expect_refusal(cfg("heads-string.json"), "1",
                 WORDS("'num_attention_heads' is not a positive integer"));
  expect_refusal(cfg("float32.json"), "1",
                 WORDS("'torch_dtype' is 'float32'", "--dtype"));
  expect_refusal(cfg("no-such-config.json"), "1",
                 WORDS("no-such-config.json", "No such file"));
}

static void hf_misuse_exits_two(void **s) {
  (void)s;
  expect_usage_error(RUN("warm", LLAMA, "--block-size", "16",
                         "--max-model-len", "64", "--max-num-seqs", "4",
                         "--q-heads", "32"),
                     "--q-heads with --hf-config");
  expect_usage_error(RUN("warm", LLAMA, "--block-size", "16",
                         "--max-num-seqs", "4"),
                     "no --max-model-len");
  expect_usage_error(RUN("warm", LLAMA, "--max-model-len", "64",
                         "--max-num-seqs", "4"),
                     "no --block-size");
  expect_usage_error(RUN("warm", LLAMA, "--block-size", "16",
                         "--max-model-len", "64", "--max-num-seqs", "0"),
                     "--max-num-seqs 0");
  expect_usage_error(RUN("warm", "--q-heads", "16", "--kv-heads", "2",
                         "--head-dim", "256", "--block-size", "64",
                         "--max-blocks-per-seq", "64", "--batch", "1",
                         "--tp", "2"),
                     "--tp without --hf-config");
}

/* ---- compile ---- */

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

/* The deployment check: the manifest of a warm equals the keys
 * planned here, each was compiled, and a second warm (a new process, so
 * from the disk) finds every one of them. */
static void warm_compiles_every_manifest_key_then_all_hit(void **s) {
  (void)s;
  char dir[] = "/tmp/uq_hf_cache_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char manifest[4200];
  snprintf(manifest, sizeof manifest, "%s/manifest.txt", dir);
  char cache[4200];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  const char *args[] = {"warm", LLAMA, "--tp", "1", "--block-size", "16",
                        "--max-model-len", "4096", "--max-num-seqs", "8",
                        "--target", "sm_90a", "--cache-dir", cache,
                        "--manifest", manifest, "--jobs", "2", "--json",
                        NULL};
  result r = run_to(NULL, args);
  if (r.code != 0 && (strstr(r.err, "NVRTC") || strstr(r.err, "nvrtc"))) {
    result_free(&r);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    skip();
  }
  expect_ok(&r, "first warm");
  assert_string_equal(r.err, ""); /* not a terminal: no progress bar */
  static const int32_t sizes8[] = {1, 2, 4, 8};
  name_set want = {0}, file = {0};
  expected_keys(&want, "sm_90a", 32, 4, 16, 4096, sizes8, 4);
  lines_of(slurp(manifest), &file);
  assert_same_sets(&file, &want, "manifest");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "keys"), (long long)want.n);
  assert_int_equal(json_int(r.out, "compiled"), (long long)want.n);
  assert_int_equal(json_int(r.out, "failed"), 0);
  assert_true(json_int(r.out, "bytes_written") > 0);
  assert_int_equal(json_int(r.out, "bytes_written"),
                   json_int(r.out, "cache_bytes"));
  long long bytes = json_int(r.out, "cache_bytes");
  result_free(&r);

  r = run_to(NULL, args);
  expect_ok(&r, "second warm");
  assert_int_equal(json_int(r.out, "keys"), (long long)want.n);
  assert_int_equal(json_int(r.out, "compiled"), 0);
  assert_int_equal(json_int(r.out, "hits"), (long long)want.n);
  assert_int_equal(json_int(r.out, "bytes_written"), 0);
  assert_int_equal(json_int(r.out, "cache_bytes"), bytes);
  result_free(&r);
  r = RUN("cache", "verify", "--cache-dir", cache, "--json");
  expect_ok(&r, "verify");
  assert_int_equal(json_int(r.out, "good"), (long long)want.n);
  result_free(&r);
  r = RUN("cache", "verify", "--cache-dir", cache, "--manifest", manifest);
  expect_ok(&r, "verify --manifest");
  result_free(&r);
  /* Each key the library will request, found in the warmed cache the way
   * a context with UQJIT_DISABLE_JIT=1 looks it up. */
  unsetenv("UQJIT_CACHE_PATH");
  for (size_t i = 0; i < want.n; i++) {
    uq_key k;
    assert_int_equal(uq_key_parse(want.v[i], &k), 0);
    if (uq_cache_find(cache, &k, NULL, NULL) != 0)
      fail_msg("planned kernel %s is not in the warmed cache", want.v[i]);
  }
  set_free(&want);
  set_free(&file);
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}


/* On a terminal stderr the warm draws the bar: run with stderr on a
 * pseudo-terminal and read what it drew. */
static void warm_draws_progress_bar_on_a_terminal(void **s) {
  (void)s;
  char dir[] = "/tmp/uq_hf_tty_XXXXXX";
  assert_non_null(mkdtemp(dir));
  int master, slave;
  assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(slave, 2);
    close(master);
    execl(uqjit, uqjit, "warm", "--hf-config", cfg("llama-like-gqa8.json"),
          "--block-size", "16", "--max-model-len", "4096", "--max-num-seqs",
          "1", "--target", "sm_90a", "--cache-dir", dir, "--jobs", "1",
          (char *)NULL);
    _exit(127);
  }
  close(slave);
  char out[16384];
  size_t n = 0;
  for (;;) { /* EIO once the child closed the terminal */
    ssize_t got = read(master, out + n, sizeof out - 1 - n);
    if (got <= 0)
      break;
    n += (size_t)got;
  }
  out[n] = '\0';
  close(master);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (strstr(out, "NVRTC") || strstr(out, "nvrtc"))
      skip();
    fail_msg("warm on a terminal: status %d: %s", status, out);
  }
  /* One key of three done, then all three. */
  assert_non_null(strstr(out, "[######..............] 1/3 "));
  assert_non_null(strstr(out, "[####################] 3/3 "));
  assert_non_null(strstr(out, "\r\033[K"));
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s PATH-TO-UQJIT unit|compile cjson|no-cjson\n",
            argv[0]);
    return 1;
  }
  uqjit = argv[1];
  cli_run_init(argv[1], 120000);
  const char *data = getenv("UQ_TESTDATA");
  snprintf(config_dir, sizeof config_dir, "%s/hf", data ? data : "tests/data");
  /* Key names below spell the best layer of each target. */
  unsetenv("UQJIT_VARIANT");
  unsetenv("UQJIT_DISABLE_JIT");
  unsetenv("UQJIT_CACHE_PATH");
  if (strcmp(argv[3], "cjson") != 0) {
    /* The one check that applies without cJSON: a clear refusal. */
    const char *args[] = {"warm", LLAMA, "--block-size", "16",
                          "--max-model-len", "64", "--max-num-seqs", "1",
                          "--dry-run", NULL};
    result r = run_to(NULL, args);
    int ok = r.code == 1 && strstr(r.err, "built without cJSON") != NULL;
    result_free(&r);
    if (!ok)
      return 1;
    fprintf(stderr, "built without cJSON: skipping\n");
    return 77;
  }
  if (strcmp(argv[2], "compile") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(warm_compiles_every_manifest_key_then_all_hit),
        cmocka_unit_test(warm_draws_progress_bar_on_a_terminal),
    };
    return cmocka_run_group_tests_name("cli_warm_hf_compile", tests, NULL,
                                       NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dry_run_and_manifest_list_exactly_the_planned_keys),
      cmocka_unit_test(dry_run_json_reports_model_and_vllm_batch_sizes),
      cmocka_unit_test(tp_splits_heads_like_vllm),
      cmocka_unit_test(other_head_dims_and_groups_warm_the_portable_layer),
      cmocka_unit_test(text_config_dtype_and_attention_scalar_are_read),
      cmocka_unit_test(ineligible_or_malformed_configs_name_the_field),
      cmocka_unit_test(hf_misuse_exits_two),
  };
  return cmocka_run_group_tests_name("cli_warm_hf_unit", tests, NULL, NULL);
}
