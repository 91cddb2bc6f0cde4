#include "sim/hw_profile_names.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json_names.h"

/* Where calibrate writes a profile when --out is not given (cmd_calibrate). */
#define CALIBRATED_DIR "results"
#define CALIBRATED_PREFIX "hw-"

int hw_profile_missing(const struct fb_settings *set, const char *name, const char *path, const char *why, char *err,
                       size_t errlen)
{
    char dir[4200], shipped[1024], calibrated[1024], here[1100] = "";
    snprintf(dir, sizeof dir, "%s/hw", set->configs_dir);
    size_t n_shipped = json_names_list(dir, "", false, shipped, sizeof shipped);
    if (json_names_list(CALIBRATED_DIR, CALIBRATED_PREFIX, true, calibrated, sizeof calibrated))
        snprintf(here, sizeof here, "; calibrated here (give the path): %s", calibrated);
    return err_set(err, errlen,
                   "hardware profile '%s': no such profile (%s: %s); the profiles in %s: %s%s; make one for this "
                   "machine with flashbed calibrate (it writes results/hw-HOSTNAME.json; --hw that path)",
                   name, path, why, dir, n_shipped ? shipped : "none", here);
}
