/* Ctrl-C handling for long runs: the first SIGINT/SIGTERM asks the run to
 * stop at the next safe point (finished results are kept and written);
 * a second one exits at once. */
#ifndef FLASHBED_COMMON_INTERRUPT_H
#define FLASHBED_COMMON_INTERRUPT_H

#include <stdbool.h>

void interrupt_install(void);
bool interrupted(void);

#endif
