/* SIGINT/SIGTERM handling, in two modes.
 *
 * By default (interrupt_exit_on_signal, which the program installs before
 * any command runs) a signal removes every temporary still registered in
 * common/cleanup.h and exits at once with status 128 + signal (130 for
 * Ctrl-C): a command that does not poll stops without leaving half-written
 * output behind.
 *
 * Long runs that poll call interrupt_install: then the first signal only
 * asks the run to stop at its next safe point (interrupted() turns true;
 * finished results are kept and written), and a second one cleans up and
 * exits as above.
 *
 * Threading: the handler runs on whichever thread gets the signal; it
 * touches only a sig_atomic_t flag and async-signal-safe calls. */
#ifndef FLASHBED_COMMON_INTERRUPT_H
#define FLASHBED_COMMON_INTERRUPT_H

#include <stdbool.h>

/* Default mode: clean up and exit on the first signal. */
void interrupt_exit_on_signal(void);
/* Polling mode: the first signal sets interrupted(), the second exits. */
void interrupt_install(void);
bool interrupted(void);

#endif
