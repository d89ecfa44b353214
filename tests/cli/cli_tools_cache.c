/* The warm and cache commands as a user runs them (part of test_cli_tools,
 * cli_tools.h). unit: cache admin on an empty directory, warm --dry-run
 * and --manifest in the shape-flag form, a FIFO at an entry's path.
 * compile (clang-22, gfx950 offline): warm into a temporary cache, hits on
 * the second run, a corrupted entry found by verify and recompiled alone,
 * prune, cache ls and verify --manifest, a read-only layer, an unusable
 * cache directory. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/cli/cli_tools.h"
#include "tests/support/cli_run.h"

void cache_admin_on_empty_directory(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  result r = RUN("cache", "ls", "--cache-dir", dir);
  expect_ok(&r, "ls");
  assert_int_equal(entry_lines(r.out), 0);
  assert_non_null(strstr(r.out, "(writable, argument)\n# 0 entries, 0 B\n"));
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir, "--json");
  expect_ok(&r, "ls --json");
  assert_json(r.out);
  assert_true(!strncmp(json_field(r.out, "entries"), "[]", 2));
  result_free(&r);
  r = RUN("cache", "verify", "--cache-dir", dir, "--json");
  expect_ok(&r, "verify");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "good"), 0);
  assert_int_equal(json_int(r.out, "bad"), 0);
  result_free(&r);
  r = RUN("cache", "stats", "--cache-dir", dir, "--json");
  expect_ok(&r, "stats");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "entries"), 0);
  assert_int_equal(json_int(r.out, "bytes"), 0);
  result_free(&r);
  r = RUN("cache", "prune", "--max-size", "1K", "--cache-dir", dir, "--json");
  expect_ok(&r, "prune");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "removed"), 0);
  assert_int_equal(json_int(r.out, "bytes_left"), 0);
  result_free(&r);
  /* A format v1 directory is ignored, with a note saying so. */
  char v1[1024];
  snprintf(v1, sizeof v1, "%s/v1", dir);
  assert_int_equal(mkdir(v1, 0700), 0);
  r = RUN("cache", "ls", "--cache-dir", dir);
  expect_ok(&r, "ls with a v1 directory");
  assert_int_equal(entry_lines(r.out), 0);
  assert_non_null(strstr(r.err, "cache format v1"));
  result_free(&r);
  rmtree(dir);
  free(dir);

  /* A directory that does not exist is a failure (exit 1), not a misuse. */
  r = RUN("cache", "verify", "--cache-dir", "/nonexistent/uq_cli_tools");
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "nonexistent"));
  result_free(&r);
}

/* ------------------------------------------------------------------ */
/* compile: needs clang-22 (gfx950 offline). */

static result warm(const char *dir) {
  return RUN("warm", SHAPE_WIDE, "--batch-sizes", "4,16", "--target",
             "gfx950", "--cache-dir", dir, "--jobs", "2", "--json");
}

static void expect_counts(const result *r, long long compiled,
                          long long hits) {
  assert_json(r->out);
  assert_int_equal(json_int(r->out, "keys"), 5);
  assert_int_equal(json_int(r->out, "compiled"), compiled);
  assert_int_equal(json_int(r->out, "hits"), hits);
  assert_int_equal(json_int(r->out, "failed"), 0);
}

static void verify_counts(const char *dir, int want_code, long long good,
                          long long bad) {
  result r = RUN("cache", "verify", "--cache-dir", dir, "--json");
  if (r.code != want_code)
    fail_msg("verify: exit %d, want %d; %s", r.code, want_code, r.err);
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "good"), good);
  assert_int_equal(json_int(r.out, "bad"), bad);
  result_free(&r);
}

void warm_fills_cache_hits_and_recompiles_corrupt_entry(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  result r = warm(dir);
  expect_ok(&r, "first warm");
  expect_counts(&r, 5, 0);
  assert_true(!strncmp(json_field(r.out, "cache_dir"), "\"/tmp/", 6));
  assert_true(!strncmp(json_field(r.out, "targets"), "[\"gfx950\"]", 10));
  result_free(&r);
  verify_counts(dir, 0, 5, 0);

  r = RUN("cache", "stats", "--cache-dir", dir, "--json");
  expect_ok(&r, "stats");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "entries"), 5);
  assert_non_null(strstr(r.out, "\"gfx950\": {\"entries\": 5"));
  result_free(&r);

  r = warm(dir);
  expect_ok(&r, "second warm");
  expect_counts(&r, 0, 5);
  result_free(&r);

  corrupt_one_entry(dir);
  verify_counts(dir, 1, 4, 1);
  r = RUN("cache", "ls", "--cache-dir", dir);
  expect_ok(&r, "ls");
  assert_int_equal(entry_lines(r.out), 5);
  assert_int_equal(count_occurrences(r.out, " BAD "), 1);
  result_free(&r);

  r = warm(dir);
  expect_ok(&r, "warm after corruption");
  expect_counts(&r, 1, 4);
  result_free(&r);
  verify_counts(dir, 0, 5, 0);

  /* dump --isa reads the warmed cache; resources always, ISA when a
   * disassembler exists. */
  r = RUN("dump", "--batch", "4", SHAPE_WIDE, "--target", "gfx950",
          "--kind", "decode", "--isa", "--cache-dir", dir);
  expect_ok(&r, "dump --isa");
  assert_non_null(strstr(r.out, "#define UQ_KERNEL_NAME uq_decode_gfx950_"));
  assert_non_null(strstr(r.out, "// ---- resource usage ----"));
  assert_non_null(strstr(r.out, "VGPRs"));
  if (strstr(r.err, "no disassembler") == NULL) {
    assert_non_null(strstr(r.out, "// ---- disassembly of uq_decode_gfx950"));
    assert_non_null(strstr(r.out, "s_endpgm"));
    assert_non_null(strstr(r.out, "// ---- instruction mix per 16-token tile"));
    assert_non_null(strstr(r.out, "  method     "));
    assert_non_null(strstr(r.out, "waves/CU"));
  }
  result_free(&r);
  r = RUN("dump", "--batch", "4", SHAPE_WIDE, "--target", "gfx950",
          "--kind", "decode", "--isa", "--json", "--cache-dir", dir);
  expect_ok(&r, "dump --isa --json");
  assert_true(r.out[0] == '[');
  char wrapped[8192]; /* an array of one kernel: checked as a member */
  assert_true(strlen(r.out) + 16 < sizeof wrapped);
  snprintf(wrapped, sizeof wrapped, "{\"kernels\": %s}", r.out);
  assert_json(wrapped);
  assert_true(json_int(r.out, "scratch_bytes") == 0);
  assert_non_null(strstr(r.out, "\"waves_per_cu\": "));
  if (strstr(r.err, "no disassembler") == NULL)
    assert_non_null(strstr(r.out, "\"per_tile\": {\"vmem\": "));
  result_free(&r);
  verify_counts(dir, 0, 5, 0); /* dump compiled nothing new */

  r = RUN("cache", "prune", "--max-size", "0", "--cache-dir", dir, "--json");
  expect_ok(&r, "prune");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "removed"), 5);
  assert_int_equal(json_int(r.out, "bytes_left"), 0);
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir);
  expect_ok(&r, "ls after prune");
  assert_int_equal(entry_lines(r.out), 0);
  result_free(&r);
  rmtree(dir);
  free(dir);
}

/* The name after the first "key_name": in `json` (static buffer). */
static const char *first_key_name(const char *json) {
  static char name[256];
  const char *p = strstr(json, "\"key_name\": \"");
  assert_non_null(p);
  p += strlen("\"key_name\": \"");
  size_t n = strcspn(p, "\"");
  assert_true(n > 0 && n < sizeof name);
  memcpy(name, p, n);
  name[n] = '\0';
  return name;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

void cache_ls_names_kernels_and_verify_manifest_checks_each(
    void **s) {
  (void)s;
  char *dir = make_tmpdir(), *empty = make_tmpdir();
  result r = warm(dir);
  expect_ok(&r, "warm");
  result_free(&r);

  r = RUN("cache", "ls", "--cache-dir", dir, "--key", "uq_decode_");
  expect_ok(&r, "ls --key");
  assert_int_equal(entry_lines(r.out), 2);
  assert_int_equal(count_occurrences(r.out, " uq_decode_gfx950_"), 2);
  assert_non_null(strstr(r.out, "clang")); /* the compiler column */
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir, "--target", "sm_90a");
  expect_ok(&r, "ls --target sm_90a");
  assert_int_equal(entry_lines(r.out), 0);
  result_free(&r);
  /* Product names are targets here too: h200 is sm_90a, mi355x gfx950. */
  r = RUN("cache", "ls", "--cache-dir", dir, "--target", "h200");
  expect_ok(&r, "ls --target h200");
  assert_int_equal(entry_lines(r.out), 0);
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir, "--target", "MI355X", "--key",
          "uq_decode_");
  expect_ok(&r, "ls --target MI355X");
  assert_int_equal(entry_lines(r.out), 2);
  result_free(&r);
  expect_usage_error(RUN("cache", "ls", "--cache-dir", dir, "--target",
                         "gfx9"), "unknown target");
  r = RUN("cache", "ls", "--cache-dir", dir, "--target", "gfx950", "--json",
          "--key", "uq_store_");
  expect_ok(&r, "ls --json");
  assert_json(r.out);
  assert_int_equal(count_occurrences(r.out, "\"key_name\": \"uq_store_gfx950_"),
                   1);
  assert_non_null(strstr(r.out, "\"status\": \"ok\""));
  assert_non_null(strstr(r.out, "\"created\": "));
  assert_non_null(strstr(r.out, "\"compiler\": \""));
  char store[256], manifest[512], text[1024];
  snprintf(store, sizeof store, "%s", first_key_name(r.out));
  result_free(&r);

  /* Every listed kernel present: 0, from the directory or a layer. */
  snprintf(manifest, sizeof manifest, "%s/manifest.txt", empty);
  snprintf(text, sizeof text, "# image kernels\n\n  %s\n", store);
  write_text(manifest, text);
  r = RUN("cache", "verify", "--cache-dir", dir, "--manifest", manifest);
  expect_ok(&r, "verify --manifest");
  assert_non_null(strstr(r.out, "1 of 1 kernels"));
  result_free(&r);
  setenv("UQJIT_CACHE_PATH", dir, 1);
  r = RUN("cache", "verify", "--cache-dir", empty, "--manifest", manifest);
  unsetenv("UQJIT_CACHE_PATH");
  expect_ok(&r, "verify --manifest through UQJIT_CACHE_PATH");
  result_free(&r);
  /* One missing: 1, named. */
  snprintf(text, sizeof text, "%s\nuq_store_gfx950_bf16_d256_hk7_ps272\n",
           store);
  write_text(manifest, text);
  r = RUN("cache", "verify", "--cache-dir", dir, "--manifest", manifest,
          "--json");
  assert_int_equal(r.code, 1);
  assert_json(r.out);
  assert_non_null(
      strstr(r.out, "\"missing\": [\"uq_store_gfx950_bf16_d256_hk7_ps272\"]"));
  assert_int_equal(json_int(r.out, "present"), 1);
  result_free(&r);
  /* A malformed name: 2, with its line. */
  snprintf(text, sizeof text, "%s\n# fine\nuq_nonsense\n", store);
  write_text(manifest, text);
  r = RUN("cache", "verify", "--cache-dir", dir, "--manifest", manifest);
  assert_int_equal(r.code, 2);
  assert_non_null(strstr(r.err, "manifest.txt:3:"));
  result_free(&r);
  rmtree(dir);
  rmtree(empty);
  free(dir);
  free(empty);
}


/* The production set-up: no writable directory, the image's warm cache
 * as a UQJIT_CACHE_PATH layer. ls, stats and verify exit 0 and report
 * each layer; verify --manifest credits the layer that holds the kernels;
 * plan marks each kernel cached in it. */
void cache_tools_see_a_read_only_layer_alone(void **s) {
  (void)s;
  char *layer = make_tmpdir(), *home = make_tmpdir();
  result r = warm(layer);
  expect_ok(&r, "warm");
  result_free(&r);
  char manifest[1024];
  snprintf(manifest, sizeof manifest, "%s/MANIFEST", home);
  r = RUN("warm", SHAPE_WIDE, "--batch-sizes", "4,16", "--target", "gfx950",
          "--dry-run", "--manifest", manifest);
  expect_ok(&r, "warm --manifest");
  result_free(&r);

  const char *saved_home = getenv("HOME");
  char *old_home = saved_home ? strdup(saved_home) : NULL;
  setenv("HOME", home, 1); /* ~/.cache/uqjit: absent */
  unsetenv("UQJIT_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  setenv("UQJIT_CACHE_PATH", layer, 1);

  r = RUN("cache", "ls");
  expect_ok(&r, "ls, layer only");
  assert_int_equal(entry_lines(r.out), 5);
  assert_non_null(strstr(r.out, "/.cache/uqjit (writable, HOME): absent\n"));
  char head[1200];
  snprintf(head, sizeof head, "# %s (read-only, UQJIT_CACHE_PATH)\n", layer);
  assert_non_null(strstr(r.out, head));
  assert_non_null(strstr(r.out, "# 5 entries, "));
  result_free(&r);
  r = RUN("cache", "ls", "--json");
  expect_ok(&r, "ls --json, layer only");
  assert_json(r.out);
  assert_int_equal(count_occurrences(r.out, "\"layer\": "), 5);
  assert_non_null(strstr(r.out, "\"writable\": false, \"origin\": "
                                "\"UQJIT_CACHE_PATH\", \"exists\": true, "
                                "\"entries\": 5"));
  result_free(&r);
  r = RUN("cache", "stats", "--json");
  expect_ok(&r, "stats, layer only");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "entries"), 5);
  assert_non_null(strstr(r.out, "\"exists\": true, \"entries\": 5"));
  result_free(&r);
  r = RUN("cache", "verify", "--json");
  expect_ok(&r, "verify, layer only");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "good"), 5);
  result_free(&r);
  r = RUN("cache", "verify", "--manifest", manifest, "--json");
  expect_ok(&r, "verify --manifest, layer only");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "present"), 5);
  /* The layer, not the (absent) writable directory, serves all five. */
  assert_non_null(strstr(r.out, "\"origin\": \"HOME\", \"exists\": "
                                "false, \"kernels\": 0}"));
  assert_non_null(strstr(r.out, "\"origin\": \"UQJIT_CACHE_PATH\", "
                                "\"exists\": true, \"kernels\": 5}"));
  result_free(&r);
  r = RUN("plan", SHAPE_WIDE, "--batch", "4", "--target", "gfx950",
          "--json");
  expect_ok(&r, "plan --json");
  assert_json(r.out);
  snprintf(head, sizeof head, "\"cached\": true, \"layer\": \"%s\"}", layer);
  assert_int_equal(count_occurrences(r.out, head), 2);
  result_free(&r);

  unsetenv("UQJIT_CACHE_PATH");
  r = RUN("plan", SHAPE_WIDE, "--batch", "4", "--target", "gfx950",
          "--json");
  expect_ok(&r, "plan --json without the layer");
  assert_int_equal(count_occurrences(r.out, "\"cached\": false, "
                                            "\"layer\": null}"), 2);
  result_free(&r);
  if (old_home != NULL)
    setenv("HOME", old_home, 1);
  free(old_home);
  rmtree(layer);
  rmtree(home);
  free(layer);
  free(home);
}

/* ------------------------------------------------------------------ */
/* warm --dry-run and --manifest in the shape-flag form; sm_90 brings
 * sm_90a (what H100/H200 report) unless --exact-target. No compiler. */

void warm_sm90_also_lists_sm90a_unless_exact_target(void **s) {
  (void)s;
  result r = RUN("warm", SHAPE_SMALL, "--target", "sm_90", "--dry-run");
  expect_ok(&r, "warm sm_90 --dry-run");
  assert_int_equal(count_occurrences(r.out, "\n"), 6);
  assert_int_equal(count_occurrences(r.out, "_sm_90_"), 3);
  assert_int_equal(count_occurrences(r.out, "_sm_90a_"), 3);
  assert_int_equal(count_occurrences(r.err, "also warming sm_90a"), 1);
  result_free(&r);
  r = RUN("warm", SHAPE_SMALL, "--target", "sm_90", "--dry-run", "--json");
  expect_ok(&r, "warm sm_90 --dry-run --json");
  assert_json(r.out);
  assert_int_equal(json_int(r.out, "keys"), 6);
  assert_true(!strncmp(json_field(r.out, "targets"),
                       "[\"sm_90\", \"sm_90a\"]", 19));
  assert_true(!strncmp(json_field(r.out, "added_targets"), "[\"sm_90a\"]",
                       10));
  result_free(&r);
  r = RUN("warm", SHAPE_SMALL, "--target", "sm_90", "--exact-target",
          "--dry-run");
  expect_ok(&r, "warm sm_90 --exact-target");
  assert_int_equal(count_occurrences(r.out, "\n"), 3);
  assert_int_equal(count_occurrences(r.out, "_sm_90a_"), 0);
  assert_string_equal(r.err, "");
  result_free(&r);
  /* Named already: nothing added, nothing said. */
  r = RUN("warm", SHAPE_SMALL, "--target", "sm_90,sm_90a", "--dry-run");
  expect_ok(&r, "warm sm_90,sm_90a");
  assert_int_equal(count_occurrences(r.out, "\n"), 6);
  assert_string_equal(r.err, "");
  result_free(&r);
}

void warm_manifest_in_shape_form_is_sorted_with_header(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/m.txt", dir);
  result r = RUN("warm", SHAPE_SMALL, "--batch-sizes", "16,1,16", "--target",
                 "gfx950", "--dry-run", "--manifest", path);
  expect_ok(&r, "warm --manifest");
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  assert_true(!strncmp(text, "# uqjit manifest: shape hq ", 27));
  /* The manifest is the dry run's list under the comment line. */
  const char *body = strchr(text, '\n');
  assert_non_null(body);
  assert_string_equal(body + 1, r.out);
  char prev[512] = "";
  for (const char *p = body + 1; *p;) {
    const char *e = strchr(p, '\n');
    assert_non_null(e);
    char cur[512];
    snprintf(cur, sizeof cur, "%.*s", (int)(e - p), p);
    if (strcmp(prev, cur) >= 0)
      fail_msg("manifest not sorted and unique: %s then %s", prev, cur);
    snprintf(prev, sizeof prev, "%s", cur);
    p = e + 1;
  }
  result_free(&r);
  r = RUN("warm", SHAPE_SMALL, "--dry-run", "--manifest",
          "/nonexistent-dir/m.txt");
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.err, "/nonexistent-dir/m.txt"));
  result_free(&r);
  rmtree(dir);
  free(dir);
}

/* A FIFO at an entry's path: every cache command returns promptly (RUN's
 * poll limit would fail a hang), verify counts it bad and prune removes
 * it. */
void cache_commands_do_not_block_on_a_fifo_entry(void **s) {
  (void)s;
  char *dir = make_tmpdir();
  char path[4096];
  snprintf(path, sizeof path, "%s/v2", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/v2/gfx942", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/v2/gfx942/ab", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/v2/gfx942/ab/%s.%s.co", dir,
           "0123456789abcdef0123456789abcd", "0123456789abcdef");
  assert_int_equal(mkfifo(path, 0600), 0);
  result r = RUN("cache", "verify", "--cache-dir", dir);
  assert_int_equal(r.code, 1);
  assert_non_null(strstr(r.out, "0 good, 1 bad"));
  result_free(&r);
  r = RUN("cache", "ls", "--cache-dir", dir);
  assert_int_equal(r.code, 0);
  result_free(&r);
  r = RUN("cache", "stats", "--cache-dir", dir);
  assert_int_equal(r.code, 0);
  result_free(&r);
  r = RUN("cache", "prune", "--max-size", "1G", "--cache-dir", dir);
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "removed 1 file"));
  result_free(&r);
  rmtree(dir);
  free(dir);
}

/* Nothing stored means failure: a cache directory that cannot be made. */
void warm_into_an_unusable_directory_exits_one_naming_the_cause(
    void **s) {
  (void)s;
  char *dir = make_tmpdir();
  char file[4096], cache[4200];
  snprintf(file, sizeof file, "%s/file", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(cache, sizeof cache, "%s/cache", file);
  result r = RUN("warm", SHAPE_SMALL, "--cache-dir", cache, "--json");
  assert_int_equal(r.code, 1);
  assert_json(r.out);
  assert_true(json_int(r.out, "failed") > 0);
  assert_int_equal(json_int(r.out, "failed"), json_int(r.out, "keys"));
  assert_int_equal(json_int(r.out, "compiled"), 0);
  const char *why = strstr(r.err, "Not a directory");
  assert_non_null(why);
  assert_null(strstr(why + 1, "Not a directory")); /* named once */
  result_free(&r);
  rmtree(dir);
  free(dir);
}
