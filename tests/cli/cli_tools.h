/* What the two files of test_cli_tools share (cli_tools.c, the helpers,
 * the dump, info, demo and bench tests and main; cli_tools_cache.c, the
 * warm and cache tests). */
#ifndef UQ_TESTS_CLI_CLI_TOOLS_H
#define UQ_TESTS_CLI_CLI_TOOLS_H

#include "tests/support/cli_run.h"

/* W = 64 x 64 = 4096 tokens, B = 4: P = 32 (FORMAT.md section 6: required
 * 16, floor 32, cap 512, at most ceil(4096/192) = 22 -> next pow2 32). */
#define SHAPE_SMALL                                                         \
  "--batch", "4", "--q-heads", "16", "--kv-heads", "2", "--head-dim",     \
      "256", "--block-size", "64", "--max-blocks-per-seq", "64"

/* W = 64 x 2048 = 131072 tokens: B = 4 plans P = 512, B = 16 (cap 256)
 * plans P = 256 with 2 tile groups per partition. Two decode keys, two
 * reduce keys and one bf16 store key: 5 distinct kernels. */
#define SHAPE_WIDE                                                          \
  "--q-heads", "16", "--kv-heads", "2", "--head-dim", "256",              \
      "--block-size", "64", "--max-blocks-per-seq", "2048"

/* Fails unless r exited 0 (its stderr in the message). */
void expect_ok(const result *r, const char *what);
/* rm -rf dir. */
void rmtree(const char *dir);
/* A fresh temporary directory; caller frees the path. */
char *make_tmpdir(void);
/* Occurrences of needle in hay. */
int count_occurrences(const char *hay, const char *needle);
/* Lines of `out` that are not '#' comments (ls's entry lines). */
int entry_lines(const char *out);
/* Flips one byte in the middle of one entry (inside its payload). */
void corrupt_one_entry(const char *dir);

/* The tests of cli_tools_cache.c. */
void cache_admin_on_empty_directory(void **s);
void warm_fills_cache_hits_and_recompiles_corrupt_entry(void **s);
void cache_tools_see_a_read_only_layer_alone(void **s);
void warm_sm90_also_lists_sm90a_unless_exact_target(void **s);
void warm_manifest_in_shape_form_is_sorted_with_header(void **s);
void cache_commands_do_not_block_on_a_fifo_entry(void **s);
void cache_ls_names_kernels_and_verify_manifest_checks_each(void **s);
void warm_into_an_unusable_directory_exits_one_naming_the_cause(void **s);

#endif
