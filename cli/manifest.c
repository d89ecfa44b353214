/* Sorted key-name lists and the manifest file (cli/manifest.h). */
#include "cli/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_LEN 512

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void cli_names_free(char **names, size_t count) {
  if (names == NULL)
    return;
  for (size_t i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

int cli_key_names(const uq_key *keys, size_t n, char ***names,
                  size_t *count) {
  *names = NULL;
  *count = 0;
  char **v = calloc(n ? n : 1, sizeof *v);
  if (v == NULL)
    return UQ_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    char buf[NAME_LEN];
    int len = uq_key_name(&keys[i], buf, sizeof buf);
    if (len < 0 || (size_t)len >= sizeof buf || !(v[i] = strdup(buf))) {
      cli_names_free(v, i);
      return len < 0 ? len : UQ_ENOMEM;
    }
  }
  qsort(v, n, sizeof *v, cmp_names);
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    if (out > 0 && strcmp(v[out - 1], v[i]) == 0)
      free(v[i]);
    else
      v[out++] = v[i];
  }
  *names = v;
  *count = out;
  return 0;
}

int cli_manifest_write(const char *cmd, const char *path, const char *header,
                       char *const *names, size_t count) {
  size_t len = strlen(path) + 16;
  char *tmp = malloc(len);
  if (tmp == NULL) {
    fprintf(stderr, "uqjit %s: --manifest %s: out of memory\n", cmd, path);
    return -1;
  }
  snprintf(tmp, len, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  int ok = f != NULL;
  if (ok) {
    fprintf(f, "# %s\n", header);
    for (size_t i = 0; i < count; i++)
      fprintf(f, "%s\n", names[i]);
    ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
  }
  if (!ok) {
    fprintf(stderr, "uqjit %s: --manifest %s: %s\n", cmd, path,
            strerror(errno));
    remove(tmp);
  }
  free(tmp);
  return ok ? 0 : -1;
}
