/* The .json files of a folder, as a message lists them: the shapes a
 * configs folder holds, the hardware profiles shipped and calibrated.
 *
 * Contract: json_names_list writes the names in dir that end in ".json"
 * and start with prefix (at most 64 of them), sorted, separated by ", ",
 * into buf (len bytes, always terminated; cut when full): each without
 * ".json", or with with_dir as "dir/<file>". Returns how many; 0 (buf "")
 * when dir cannot be opened. */
#ifndef FLASHBED_COMMON_JSON_NAMES_H
#define FLASHBED_COMMON_JSON_NAMES_H

#include <stdbool.h>
#include <stddef.h>

size_t json_names_list(const char *dir, const char *prefix, bool with_dir, char *buf, size_t len);

#endif
