/* Every result file carries where it came from: the command line, the git
 * commit of the code, the machine, the disk, the date and all parameters. */
#ifndef FLASHBED_COMMON_PROVENANCE_H
#define FLASHBED_COMMON_PROVENANCE_H

#include <cjson/cJSON.h>

/* Remembers argv for provenance_new(); call once from main. */
void provenance_set_argv(int argc, char **argv);

/* The settings that change what flashbed does without being a command's
 * option (where configs and plot scripts are read from, engine tuning):
 * copied into every provenance as "settings". Takes ownership; call from
 * main before the command runs. */
void provenance_set_settings(cJSON *settings);

/* {"tool", "command_line", "git_commit", "date", "machine": {...}, "settings": {...}} */
cJSON *provenance_new(void);

/* Adds "disk": {...} describing the device that holds path. */
void provenance_add_disk(cJSON *prov, const char *path);

/* The git commit of the source tree (with -dirty), or the commit at build time. */
const char *provenance_git_commit(void);

/* Current UTC time as "2026-11-22T10:30:00Z". */
void provenance_date(char *buf, unsigned len);

/* A compact timestamp for folder names: "20261122-103000". */
void provenance_stamp(char *buf, unsigned len);

#endif
