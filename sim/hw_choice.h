/* Which hardware profile prices a replay or a prediction (flashbed replay
 * --hw, predict --hw): the one given, or, when none is, this machine's own
 * as `flashbed calibrate` writes it, else the default (the paper's
 * m1max-cpu).
 *
 * The one rule for where a machine's profile lives (issue 47):
 * results/hw-HOST.json (hw_own_profile_path), relative to the working
 * folder, HOST this machine's host name. calibrate writes there unless
 * --out says otherwise (its --name labels the profile, not the file), and
 * replay and predict look there when --hw is not given. Issue 35: a replay
 * priced by another machine's profile recommends for that machine, so the
 * report says which profile priced it, and how to make this machine's.
 *
 * This machine's profile is looked for where calibrate puts it:
 * results/hw-HOST.json (its default --out, relative to the working
 * folder, as calibrate writes it), then configs/hw/HOST.json in the
 * settings' configs folder (the --out README suggests); HOST is the host
 * name cut to 63 characters, as calibrate names its profile. One measured
 * on an emulated device (calibrate --backend sim or PoCL) is passed over,
 * and the choice says so. No printing; no error: a profile that is found
 * but does not load is the loader's to refuse, naming it. */
#ifndef FLASHBED_SIM_HW_CHOICE_H
#define FLASHBED_SIM_HW_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/settings.h"

#define HW_DEFAULT_PROFILE "m1max-cpu"

struct hw_choice {
    char profile[4300];   /* what to load: the name or path given, the one found, or the default */
    bool given;           /* --hw given: profile is it */
    bool own;             /* this machine's own profile, found */
    char host[64];        /* the host name it was looked for under */
    char looked[2][4200]; /* where it was looked for */
    char passed_over[600];/* a profile found but not used, and why ("" when none) */
};

/* This machine's profile, results/hw-HOST.json, into buf; host NULL:
 * this machine's name (cut to 63 characters, as hw_choice's host). */
void hw_own_profile_path(const char *host, char *buf, size_t len);

/* Fills c for given (NULL or "": not given) on host (NULL: this machine's
 * name). */
void hw_choose(const struct fb_settings *set, const char *given, const char *host, struct hw_choice *c);

/* One or two sentences for a report: which profile priced the rows
 * (name, path, how it was chosen) and, when it is not this machine's,
 * how to make one with calibrate. */
void hw_choice_note(const struct hw_choice *c, const char *name, const char *path, char *buf, size_t len);

#endif
