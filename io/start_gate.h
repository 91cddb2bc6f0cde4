/* A start gate for a team of I/O threads: each thread does its own set-up
 * (an engine's state often belongs to the thread that made it), reports at
 * the gate and waits; the thread that started the team waits until all of
 * them have reported, then lets them all go at once or calls the run off
 * (a set-up failed, or a thread could not be created).
 *
 * A gate rather than pthread_barrier: macOS has no barriers, and the
 * opener must cope with fewer threads than it meant to start and with a
 * verdict that depends on what the set-ups reported.
 *
 * Threading: what a thread writes before start_gate_arrive is visible to
 * the opener after start_gate_wait, and what the opener writes before
 * start_gate_open is visible to every thread the gate lets go. */
#ifndef FLASHBED_IO_START_GATE_H
#define FLASHBED_IO_START_GATE_H

#include <pthread.h>
#include <stdbool.h>

struct start_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned arrived;
    int verdict; /* 0 closed, 1 go, -1 called off */
};

void start_gate_init(struct start_gate *g);
/* Only once no thread waits at the gate (after joining them). */
void start_gate_destroy(struct start_gate *g);

/* A team thread: reports its set-up done and waits for the verdict; true
 * to go, false when the run is called off (the thread cleans up and ends). */
bool start_gate_arrive(struct start_gate *g);

/* The opener: waits until n threads have arrived. */
void start_gate_wait(struct start_gate *g, unsigned n);
/* The opener: lets every thread go (go = true) or calls the run off. */
void start_gate_open(struct start_gate *g, bool go);

#endif
