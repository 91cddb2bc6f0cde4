#include "sim/hw_choice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/machine.h"
#include "sim/hw_profile.h"

/* Whether the profile at path loads and was measured on real hardware;
 * why not into why. */
static bool usable(const struct fb_settings *set, const char *path, char *why, size_t len)
{
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[1024] = "";
    bool ok = hw && hw_profile_load_flags(set, path, HW_LOAD_ALLOW_EMULATED, hw, err, sizeof err) == 0;
    if (!hw)
        snprintf(why, len, "%.300s: out of memory loading it", path);
    else if (!ok)
        snprintf(why, len, "%.300s does not load (%.250s)", path, err);
    else if (hw->emulated)
        snprintf(why, len, "%.300s was measured on an emulated device (give it with --hw and --allow-emulated)", path);
    ok = ok && !hw->emulated;
    free(hw);
    return ok;
}

void hw_own_profile_path(const char *host, char *buf, size_t len)
{
    struct machine_info mi;
    if (!host) {
        machine_info_get(&mi);
        host = mi.hostname;
    }
    snprintf(buf, len, "results/hw-%.63s.json", host);
}

void hw_choose(const struct fb_settings *set, const char *given, const char *host, struct hw_choice *c)
{
    memset(c, 0, sizeof *c);
    struct machine_info mi;
    if (!host) {
        machine_info_get(&mi);
        host = mi.hostname;
    }
    snprintf(c->host, sizeof c->host, "%.63s", host);
    if (given && given[0]) {
        c->given = true;
        snprintf(c->profile, sizeof c->profile, "%s", given);
        return;
    }
    hw_own_profile_path(c->host, c->looked[0], sizeof c->looked[0]);
    snprintf(c->looked[1], sizeof c->looked[1], "%s/hw/%s.json", set->configs_dir, c->host);
    for (int i = 0; i < 2 && !c->own; i++) {
        char why[sizeof c->passed_over] = "";
        if (!path_exists(c->looked[i]))
            continue;
        if (usable(set, c->looked[i], why, sizeof why)) {
            /* two fields of *c: memcpy (looked fits profile), where snprintf's
             * restrict makes gcc -O1 -fsanitize=address warn they may overlap */
            _Static_assert(sizeof c->looked[i] <= sizeof c->profile, "a path looked at fits profile");
            memcpy(c->profile, c->looked[i], strlen(c->looked[i]) + 1);
            c->own = true;
        } else if (!c->passed_over[0]) { /* the first found, as the note names one */
            snprintf(c->passed_over, sizeof c->passed_over, "%s", why);
        }
    }
    if (!c->own)
        snprintf(c->profile, sizeof c->profile, "%s", HW_DEFAULT_PROFILE);
}

void hw_choice_note(const struct hw_choice *c, const char *name, const char *path, char *buf, size_t len)
{
    if (c->own) {
        snprintf(buf, len, "Priced by this machine's own profile, %s (%s), measured by `flashbed calibrate`.", name,
                 path);
        return;
    }
    if (c->given && strcmp(c->profile, HW_DEFAULT_PROFILE) != 0) {
        snprintf(buf, len, "Priced by %s (%s), the profile given with --hw.", name, path);
        return;
    }
    char why[9000], own[200];
    hw_own_profile_path(c->host, own, sizeof own);
    if (c->given)
        snprintf(why, sizeof why, "given with --hw");
    else if (c->passed_over[0])
        snprintf(why, sizeof why, "the default: %s", c->passed_over);
    else
        snprintf(why, sizeof why, "the default: no profile of this machine at %s or %s", c->looked[0], c->looked[1]);
    snprintf(buf, len,
             "Priced by %s (%s), the paper's machine, not this one (%s). `flashbed calibrate --quick` measures "
             "this machine into %s (about a minute), which replay and predict then price with when run "
             "from the same folder.",
             name, path, why, own);
}
