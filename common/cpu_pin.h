/* Pinning threads to CPUs.
 *
 * Why: a compute team sleeps while the engine waits for a batch of flash
 * reads; on a machine with few CPUs the scheduler then wakes its threads
 * onto one CPU (with the reader threads that just finished beside them)
 * and only moves one away milliseconds later, so the team computes at
 * about half speed. Issue 32 measured it on this 2-vCPU VM: `run --mode
 * naive` computed OPT-1.3B's weights at 0.36 of dense decode's speed, 0.86
 * with the team pinned one thread per CPU. Threads that only wait (reader
 * threads, a device's queue thread) are not pinned: they return to the
 * CPUs the process started with, wherever the team's caller was pinned.
 *
 * The allowed set is the calling thread's affinity the first time this
 * file is asked (before anything here pinned a thread), kept for the
 * process: what `taskset` or a cgroup gave the program.
 *
 * Return convention: 0, or an errno value (nothing changed). Threading:
 * every function may be called from any thread; each acts on the calling
 * thread only. */
#ifndef FLASHBED_COMMON_CPU_PIN_H
#define FLASHBED_COMMON_CPU_PIN_H

/* The allowed CPUs' numbers, ascending, the first max of them into cpus;
 * returns how many there are in all (0 when the system does not say). */
int cpu_pin_allowed(int *cpus, int max);

/* The calling thread onto one CPU. */
int cpu_pin_self(int cpu);

/* The calling thread back onto the allowed set. */
int cpu_pin_release_self(void);

#endif
