#include "sim/hw_profile_names.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

/* Where calibrate writes a profile when --out is not given (cmd_calibrate). */
#define CALIBRATED_DIR "results"
#define CALIBRATED_PREFIX "hw-"

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .json files of dir whose name starts with prefix, sorted, as
 * "LEAD<name without .json>" (with_dir: "dir/<file>") separated by ", ",
 * into buf; how many. */
static size_t list_json(const char *dir, const char *prefix, bool with_dir, char *buf, size_t len)
{
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[64];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 64;) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json") && !strncmp(e->d_name, prefix, strlen(prefix)) &&
            (names[n] = strdup(e->d_name)))
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        int l = (int)strlen(names[i]);
        if (used < len)
            used += (size_t)(with_dir ? snprintf(buf + used, len - used, "%s%s/%s", i ? ", " : "", dir, names[i])
                                      : snprintf(buf + used, len - used, "%s%.*s", i ? ", " : "", l - 5, names[i]));
        free(names[i]);
    }
    return n;
}

int hw_profile_missing(const struct fb_settings *set, const char *name, const char *path, const char *why, char *err,
                       size_t errlen)
{
    char dir[4200], shipped[1024], calibrated[1024], here[1100] = "";
    snprintf(dir, sizeof dir, "%s/hw", set->configs_dir);
    size_t n_shipped = list_json(dir, "", false, shipped, sizeof shipped);
    if (list_json(CALIBRATED_DIR, CALIBRATED_PREFIX, true, calibrated, sizeof calibrated))
        snprintf(here, sizeof here, "; calibrated here (give the path): %s", calibrated);
    return err_set(err, errlen,
                   "hardware profile '%s': no such profile (%s: %s); the profiles in %s: %s%s; make one for this "
                   "machine with flashbed calibrate (it writes results/hw-HOSTNAME.json; --hw that path)",
                   name, path, why, dir, n_shipped ? shipped : "none", here);
}
