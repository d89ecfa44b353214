/* The progress bar of uqjit warm: "[#####.....] 12/40 compiled NAME". */
#include "cli/progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BAR_WIDTH 20
#define LINE_COLUMNS 79

void cli_progress_init(cli_progress *p, const char *cmd, size_t total) {
  memset(p, 0, sizeof *p);
  p->cmd = cmd;
  p->total = total;
  p->tty = isatty(2);
}

void cli_progress_draw(cli_progress *p, size_t done, const char *word,
                       const char *name) {
  if (!p->tty)
    return;
  size_t at = p->offset + done;
  size_t fill = p->total ? at * BAR_WIDTH / p->total : BAR_WIDTH;
  if (fill > BAR_WIDTH)
    fill = BAR_WIDTH;
  char bar[BAR_WIDTH + 1];
  memset(bar, '#', fill);
  memset(bar + fill, '.', BAR_WIDTH - fill);
  bar[BAR_WIDTH] = '\0';
  char head[96];
  int len = snprintf(head, sizeof head, "[%s] %zu/%zu %s ", bar, at,
                     p->total, word);
  int room = LINE_COLUMNS - (len > 0 ? len : 0);
  fprintf(stderr, "\r\033[K%s%.*s", head, room > 0 ? room : 0, name);
  fflush(stderr);
}

void cli_progress_error(cli_progress *p, const char *name, const char *what) {
  fprintf(stderr, "%suqjit %s: %s: %s\n", p->tty ? "\r\033[K" : "", p->cmd,
          name, what);
}

void cli_progress_end(cli_progress *p) {
  if (p->tty) {
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
  }
}
