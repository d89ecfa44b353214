/* What a warm wrote, from two listings of the cache (cli/warm_bytes.h).
 * The listing gives no key for an entry, so "the entries of the targets"
 * means every entry of those targets in the directory, including ones an
 * earlier warm of another shape left there. */
#include "cli/warm_bytes.h"

#include <stdlib.h>
#include <string.h>

#include "uqjit.h"

static int cmp_files(const void *a, const void *b) {
  return strcmp(((const cli_cache_file *)a)->path,
                ((const cli_cache_file *)b)->path);
}

static int keep_one(void *user, const uq_cache_entry *e) {
  cli_cache_bytes *b = user;
  if (b->nbefore == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    cli_cache_file *v = realloc(b->before, cap * sizeof *v);
    if (v == NULL)
      return 1; /* stop: a shorter listing only overcounts "written" */
    b->before = v;
    b->cap = cap;
  }
  cli_cache_file *f = &b->before[b->nbefore];
  if ((f->path = strdup(e->path)) == NULL)
    return 1;
  f->size = e->size;
  f->mtime = e->mtime;
  f->valid = e->valid;
  b->nbefore++;
  return 0;
}

void cli_cache_bytes_begin(cli_cache_bytes *b, const char *dir) {
  memset(b, 0, sizeof *b);
  (void)uq_cache_list(dir, keep_one, b);
  if (b->nbefore > 1)
    qsort(b->before, b->nbefore, sizeof *b->before, cmp_files);
}

typedef struct end_ctx {
  cli_cache_bytes *b;
  const char *const *targets;
  size_t ntargets;
} end_ctx;

static int count_one(void *user, const uq_cache_entry *e) {
  end_ctx *c = user;
  int ours = 0;
  for (size_t t = 0; t < c->ntargets && !ours; t++)
    ours = e->target != NULL && strcmp(e->target, c->targets[t]) == 0;
  if (!ours || !e->valid)
    return 0;
  c->b->total += e->size;
  cli_cache_file key = {(char *)e->path, 0, 0, 0};
  const cli_cache_file *old =
      c->b->nbefore ? bsearch(&key, c->b->before, c->b->nbefore,
                              sizeof key, cmp_files)
                    : NULL;
  if (old == NULL || !old->valid || old->size != e->size ||
      old->mtime != e->mtime)
    c->b->written += e->size;
  return 0;
}

void cli_cache_bytes_end(cli_cache_bytes *b, const char *dir,
                         const char *const *targets, size_t ntargets) {
  end_ctx c = {b, targets, ntargets};
  b->written = b->total = 0;
  if (uq_cache_list(dir, count_one, &c) != 0)
    b->written = b->total = 0;
}

void cli_cache_bytes_free(cli_cache_bytes *b) {
  for (size_t i = 0; i < b->nbefore; i++)
    free(b->before[i].path);
  free(b->before);
  memset(b, 0, sizeof *b);
}
