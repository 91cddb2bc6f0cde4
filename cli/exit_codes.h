/* flashbed's exit statuses, one convention for every command (the one the
 * commands kept before it was written down):
 *
 *   0    done (also --help, and --check-args when the options parse)
 *   1    a failure: an input that cannot be used (a file missing, unreadable
 *        or malformed, a folder that is not a model, a --hw that names no
 *        profile), a resource that ran out, an I/O or device error
 *   2    a usage error: the command line is refused before anything runs
 *        (an unknown command, subcommand or option, a value that does not
 *        parse or lies out of range, options that do not go together)
 *   130  interrupted by Ctrl-C (128 + SIGINT; SIGTERM gives 143): finished
 *        results are kept, nothing half-written is left (common/interrupt.h)
 *
 * tests/integration/exit_codes.sh checks every command against it. */
#ifndef FLASHBED_CLI_EXIT_CODES_H
#define FLASHBED_CLI_EXIT_CODES_H

enum fb_exit {
    FB_EXIT_OK = 0,
    FB_EXIT_FAILURE = 1,
    FB_EXIT_USAGE = 2,
    FB_EXIT_INTERRUPTED = 130,
};

#endif
