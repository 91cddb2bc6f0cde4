/* The hardware profiles a user can name (sim/hw_profile.h), for the error
 * of a --hw that names none: the configs folder's hw/NAME.json (the paper's
 * machines, and any calibrated profile put there) and what `flashbed
 * calibrate` wrote into ./results/ by default (results/hw-NAME.json), with
 * how to make one.
 *
 * A library: returns text in the caller's buffer; 0, or -1 with err set.
 * Reads directories only; safe from any thread that does not chdir. */
#ifndef FLASHBED_SIM_HW_PROFILE_NAMES_H
#define FLASHBED_SIM_HW_PROFILE_NAMES_H

#include <stddef.h>

#include "common/settings.h"

/* The reason a profile `name` whose file `path` cannot be read is no
 * profile, into err (always -1): "hardware profile 'NAME': no such
 * profile (no PATH); the profiles in DIR: a, b; calibrated here:
 * results/hw-x.json; make one for this machine with flashbed calibrate
 * ...". `why` is the read's strerror text. */
int hw_profile_missing(const struct fb_settings *set, const char *name, const char *path, const char *why, char *err,
                       size_t errlen);

#endif
