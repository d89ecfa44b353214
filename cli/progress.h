/* A one-line progress bar on stderr, drawn only when stderr is a terminal
 * (piped or redirected stderr gets nothing but error lines). Uses only
 * uqjit.h. */
#ifndef CLI_PROGRESS_H
#define CLI_PROGRESS_H

#include <stddef.h>

typedef struct cli_progress {
  const char *cmd; /* "warm": prefixes error lines */
  int tty;         /* stderr is a terminal */
  size_t total;    /* items in the whole run */
  size_t offset;   /* items finished by earlier batches of the run */
} cli_progress;

/* Sets up a bar over `total` items; tty from isatty(stderr). */
void cli_progress_init(cli_progress *p, const char *cmd, size_t total);
/* Redraws the bar at offset + done items, with a word (e.g. "compiled")
 * and the item's name (cut to fit 80 columns). Nothing when not a tty. */
void cli_progress_draw(cli_progress *p, size_t done, const char *word,
                       const char *name);
/* An error line about one item, on its own line in any case. */
void cli_progress_error(cli_progress *p, const char *name, const char *what);
/* Clears the bar's line (when drawn). */
void cli_progress_end(cli_progress *p);

#endif
